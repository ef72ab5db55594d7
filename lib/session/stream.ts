/**
 * {@linkcode Stream}: one logical exchange inside a muxws session, with its own
 * ordered messages in each direction, flow control and half-close.
 *
 * Streams are made by the session: `connection.open()`, `peer.open()`, or handed to an
 * `onStream` handler.
 *
 * @module
 */
import type { Codec } from '../wire/codec.ts';
import { StreamError, StreamResetError, type TimeoutError } from '../errors.ts';
import { type ProvokedResetCode, ResetCode } from '../wire/codes.ts';
import { describe } from '../util/describe.ts';
import { CREDIT, END, FLAG_END, INITIAL_WINDOW, isResetCode, resetFrame } from '../wire/frame.ts';
import { PendingRequest, type RequestDeadlines } from './_request.ts';
import { DONE_PROMISE, iteratorOf, readableOf, ReadQueue } from './stream_reads.ts';
import { type Write, WriteQueue } from './_stream_writes.ts';
import { encodeData, RETURNED } from './_encode_data.ts';
import type { Issue } from '../util/issues.ts';

/**
 * Options of `open()`.
 *
 * @example Open with headers, keeping a way to cancel
 * ```ts
 * import type { OpenOptions } from '@muxws/core';
 * import assert from 'node:assert/strict';
 *
 * const controller = new AbortController();
 * const options: OpenOptions = { headers: { room: 'lobby' }, signal: controller.signal };
 * // connection.open(payload, options); later controller.abort() resets the stream with `cancel`
 * assert.equal(options.end ?? false, false);
 * ```
 */
export interface OpenOptions {
  /** Sent with OPEN; the other side reads them as `stream.headers`. @default {null} */
  headers?: Record<string, unknown> | null;
  /** Ends this side's direction with the OPEN itself. @default {false} */
  end?: boolean;
  /** Aborting it resets the stream with `cancel`. */
  signal?: AbortSignal;
}

/**
 * Options of `request()`.
 *
 * @example A request that gives up after five seconds
 * ```ts
 * import type { RequestOptions } from '@muxws/core';
 * import assert from 'node:assert/strict';
 *
 * const options: RequestOptions = { headers: { trace: 'abc' }, timeoutMs: 5000 };
 * // await connection.request({ op: 'get' }, options) rejects with TimeoutError after 5000 ms
 * assert.equal(options.timeoutMs, 5000);
 * ```
 */
export interface RequestOptions {
  /** Sent with OPEN; the other side reads them as `stream.headers`. @default {null} */
  headers?: Record<string, unknown> | null;
  /**
   * Milliseconds to wait for the answer; then the request rejects with `TimeoutError` and the
   * stream is reset with `timeout`. Undefined waits as long as the connection lives. It times
   * out no earlier than this, and up to 100 ms late when the event loop is busy or the wall clock
   * went back (a wall clock set forward times it out by as much early).
   */
  timeoutMs?: number;
  /** Aborting it resets the stream with `cancel` and rejects with `StreamResetError`. */
  signal?: AbortSignal;
}

/**
 * A PUBLISH frame as the dialer's `onPublish` receives it.
 *
 * @example
 * ```ts
 * import type { PublishMessage } from '@muxws/core';
 * import assert from 'node:assert/strict';
 *
 * const seen: PublishMessage[] = [];
 * const onPublish = (message: PublishMessage) => void seen.push(message);
 * onPublish({ tag: 'room:lobby', headers: null, payload: { text: 'hi' } });
 * assert.equal(seen[0].tag, 'room:lobby');
 * ```
 */
export interface PublishMessage {
  /** The tag the acceptor broadcast to. */
  tag: string;
  /**
   * The headers sent with it, or `null`. The reserved ones (keys starting with `:`, such as
   * `:seq`) are muxws's and are left out.
   */
  headers: Record<string, unknown> | null;
  /** The payload. */
  payload: unknown;
  /**
   * The tag's sequence number of this broadcast when the acceptor keeps a `history`:
   * increasing per tag, across every node sharing the store; absent otherwise.
   */
  readonly seq?: number;
  /**
   * The event's name when the acceptor emitted it (`acceptor.emit()`, sent in the reserved
   * header `:event`); absent for a plain broadcast.
   */
  readonly event?: string;
}

/**
 * What a stream needs from its session. Internal: implemented by the session only.
 *
 * @internal
 */
export interface StreamHost {
  /** The connection's codec. */
  readonly codec: Codec;
  /** The largest message this side sends. */
  readonly maxMessageBytes: number;
  /**
   * Sends one message. Never throws: false when it was not handed to the socket (the session
   * had ended, or the send failed and ended it).
   */
  send(data: string | Uint8Array): boolean;
  /**
   * Sends a frame that does not wait for the socket (RESET, an END with no value, CREDIT); when
   * the socket's `bufferedAmount` is above `maxBufferedBytes`, closes the session instead. False
   * when it was not handed to the socket.
   */
  reply(data: string | Uint8Array): boolean;
  /** True while the socket's `bufferedAmount` is above the high-water mark. */
  congested(): boolean;
  /** A write of `stream` waits for the socket to drain: poll until it can go. */
  waitForSocket(stream: Stream): void;
  /**
   * `stream` finished (both directions ended, or reset, or lost). Called once. `provoked`: the
   * other side reset it, or sent input this side had to reset it for (`decode`, `flow`).
   */
  finished(stream: Stream, provoked: boolean): void;
  /** Reports a contained error through `onError`. */
  report(error: unknown): void;
  /** The session's clock, in ms: paces window growth. */
  now(): number;
  /**
   * Takes up to `units` (or gives back, when negative) of the session's shared budget for
   * receive windows grown past `INITIAL_WINDOW`; returns what was taken (or given back).
   */
  growWindow(units: number): number;
  /** The session's one timer for the deadlines of its requests. */
  requestDeadlines(): RequestDeadlines;
}

/**
 * The session's handle on a stream's internals. Internal.
 *
 * @internal
 */
interface StreamControl {
  /** DATA arrived; false when it breaks the protocol (after END). */
  data(stream: Stream, value: unknown, size: number, end: boolean): boolean;
  /** END arrived; false when it breaks the protocol (a second END). */
  end(stream: Stream): boolean;
  /** RESET arrived, with the issues of its `:issues` header. */
  reset(stream: Stream, code: string, message: string, issues: readonly Issue[]): void;
  /**
   * CREDIT arrived: waiting writes go while they may. With 0 units, the socket may have drained:
   * waiting writes retry.
   */
  credit(stream: Stream, units: number): void;
  /**
   * The session ended. With `refusedAbove` (the `lastId` of a GOAWAY the other side sent), a
   * stream of this side's above it fails with `refused`: the other side never processed it.
   */
  lost(stream: Stream, refusedAbove?: number): void;
  /** Turns a just-opened stream into a request. */
  request(stream: Stream, timeoutMs: number | undefined): Promise<unknown>;
  /** Resets the stream with `cancel` when `signal` aborts. */
  watch(stream: Stream, signal: AbortSignal): void;
  /** The handler returned `value`. */
  settle(stream: Stream, value: unknown): void;
  /** The handler threw `error`. */
  failHandler(stream: Stream, error: unknown): void;
  /**
   * Resets the stream from this side (sending RESET, with `issues` in its `:issues` header when
   * there are some) because the other side's input forced it; counted toward `maxResetRate`.
   */
  fail(stream: Stream, code: ProvokedResetCode, message: string, issues?: readonly Issue[]): void;
  /** Fails a stream that was never sent (its signal was already aborted) with `cancel`. */
  cancelUnsent(stream: Stream): void;
  /** Marks a received stream as the dialer's hello (its OPEN carried FLAG_HELLO). */
  markHello(stream: Stream): void;
  /** Sends one message as `write()` does, with `headers` as its DATA's trailing headers. */
  write(stream: Stream, value: unknown, headers: Record<string, unknown>): Promise<void>;
}

/** Filled in by the static block of {@linkcode Stream}. @internal */
export const control: StreamControl = {} as StreamControl;

const HALF_WINDOW = INITIAL_WINDOW / 2;
/** The largest receive window a stream grows to when its reader keeps up (docs/protocol.md). */
const MAX_WINDOW = 256 * 1024;
/** A half window consumed within this long after the last credit counts as a bulk transfer. */
const GROW_WITHIN_MS = 1000;
const RESOLVED: Promise<void> = Promise.resolve();
const GENERIC_HANDLER_MESSAGE = 'The stream handler failed';

function noop(): void {}

/**
 * One stream of a session: the OPEN's `id`, `headers` and `payload`; `readable` (or async
 * iteration) for the messages the other side sends after the OPEN; `write`, `end` and `reset`
 * for this side's direction; `closed` for the outcome.
 *
 * Each direction ends on its own (half-close). `closed` resolves once both have ended and
 * rejects with {@linkcode StreamResetError} when either side resets the stream or the
 * connection is lost (`connection_lost`). Every pending read, write and request settles on every
 * path.
 *
 * Flow control is automatic: `write()` waits while the other side has not granted
 * credit or the socket is congested, and reading returns credit. A message is consumed when it
 * is read; a reader that stops (`break` out of `for await`, or `readable.cancel()`) stops
 * queueing: later messages are discarded and their credit returned at once, so the other side is
 * never stuck. Breaking out does not reset the stream.
 *
 * @example A handler that answers each message of a stream, then returns a last one
 * ```ts
 * import { Acceptor } from '@muxws/core/acceptor';
 * import type { Stream } from '@muxws/core';
 * import assert from 'node:assert/strict';
 *
 * const acceptor = new Acceptor({
 *   idleTimeoutMs: 0,
 *   onStream: async (stream: Stream) => {
 *     assert.equal(stream.payload, 'start');
 *     for await (const message of stream) await stream.write(String(message).toUpperCase());
 *     return 'bye'; // sent with END once the handler returns
 *   },
 * });
 * const sent: unknown[] = [];
 * const peer = acceptor.attach({ send: (data) => sent.push(JSON.parse(String(data))), close() {} });
 * // The dialer's side, written out frame by frame: OPEN stream 1, DATA, DATA with END.
 * peer.message(JSON.stringify([1, 1, 0, null, 'start']));
 * peer.message(JSON.stringify([2, 1, 0, 'a']));
 * peer.message(JSON.stringify([2, 1, 1, 'b']));
 * await new Promise((resolve) => setTimeout(resolve, 0));
 * assert.deepEqual(sent, [[2, 1, 0, 'A'], [2, 1, 0, 'B'], [2, 1, 1, 'bye']]);
 * await acceptor.close();
 * ```
 */
export class Stream<R = unknown, W = unknown> {
  /** The stream id: odd when the dialer opened it, even when the acceptor did. */
  readonly id: number;
  /** The headers of the OPEN frame (`null` when none were sent). */
  readonly headers: Record<string, unknown> | null;
  /** The payload of the OPEN frame: the opener's first message. */
  readonly payload: unknown;

  #host: StreamHost;
  #sendCredit = INITIAL_WINDOW;
  #sendEnded: boolean;
  #endSent: boolean;
  /** Writes waiting for credit or the socket: made by the first write that waits. */
  #writes: WriteQueue | undefined;
  #recvAllowed = INITIAL_WINDOW;
  /** The receive window: INITIAL_WINDOW, grown while the reader keeps up with a bulk sender. */
  #window = INITIAL_WINDOW;
  /** When credit was last returned (or the first message consumed): paces window growth. */
  #creditAt: number | undefined;
  #unacked = 0;
  #recvEnded: boolean;
  /** Unread messages and waiting reads: made by the first message or read that must wait. */
  #reads: ReadQueue | undefined;
  /** Messages are consumed as they arrive, unread: the reader stopped, or this is a request. */
  #discard = false;
  #error: StreamResetError | undefined;
  #done = false;
  #closed: Promise<void> | undefined;
  #closedSettle: ((error?: StreamResetError) => void) | undefined;
  #readable: ReadableStream<R> | undefined;
  /** The unanswered `request()` of this stream. */
  #request: PendingRequest | undefined;
  #signal: AbortSignal | undefined;
  #onAbort: (() => void) | undefined;
  /** Behind `signal`: made by its first read, so a stream nobody asks holds none. */
  #aborter: AbortController | undefined;
  /** The request's timeout, when that is what failed the stream: the reason `signal` gives. */
  #timeout: TimeoutError | undefined;
  #isHello = false;

  /**
   * Made by the session; applications get streams from `open()` and `onStream`.
   *
   * @internal
   */
  constructor(
    host: StreamHost,
    id: number,
    headers: Record<string, unknown> | null,
    payload: unknown,
    sendEnded: boolean,
    recvEnded: boolean,
  ) {
    this.#host = host;
    this.id = id;
    this.headers = headers;
    this.payload = payload;
    this.#sendEnded = sendEnded;
    this.#endSent = sendEnded;
    this.#recvEnded = recvEnded;
  }

  /**
   * True for the stream the dialer's hello opened (its OPEN of stream 1 with the HELLO flag),
   * as an acceptor without `onHello` receives it; false for every other stream.
   */
  get isHello(): boolean {
    return this.#isHello;
  }

  /**
   * The messages the other side sends after the OPEN, as a `ReadableStream` (made on first use).
   * It closes when the other side ends its direction and errors with
   * {@linkcode StreamResetError} on reset or loss. Reading a message returns its credit.
   */
  get readable(): ReadableStream<R> {
    return this.#readable ??= readableOf(() => this.#read<R>(), () => this.#stopReading());
  }

  /**
   * Aborted when the stream fails: reset by either side, timed out (a `request()`), or lost with
   * its connection. Its `reason` is the {@linkcode StreamResetError} the stream
   * failed with, or the `TimeoutError` of a request that timed out. A stream that ends normally
   * never aborts it. A handler hands it to the work it starts (`fetch(url, { signal })`) so that
   * work stops when the caller gave up. Made on first read: read after the stream failed, it is
   * aborted already.
   */
  get signal(): AbortSignal {
    if (this.#aborter === undefined) {
      this.#aborter = new AbortController();
      if (this.#error !== undefined) this.#aborter.abort(this.#timeout ?? this.#error);
    }
    return this.#aborter.signal;
  }

  /**
   * Settles when the stream is finished: resolves once both directions have ended, rejects with
   * {@linkcode StreamResetError} when it was reset (by either side) or lost with its connection.
   * A rejection nobody awaits is not reported as unhandled.
   */
  get closed(): Promise<void> {
    if (this.#closed === undefined) {
      if (this.#done) {
        this.#closed = this.#error === undefined ? RESOLVED : Promise.reject(this.#error);
      } else {
        this.#closed = new Promise<void>((resolve, reject) => {
          this.#closedSettle = (error) => error === undefined ? resolve() : reject(error);
        });
      }
      this.#closed.catch(noop);
    }
    return this.#closed;
  }

  /**
   * Sends one message. Resolves when it was handed to the socket; waits first while the other
   * side's credit is used up or the socket's `bufferedAmount` is above the high-water mark.
   *
   * @param value The message; the codec must be able to encode it.
   * @returns Resolves once sent.
   * @throws Rejects with `TypeError` after `end()` or when the codec cannot encode `value`,
   * with `RangeError` when the encoded message is over `limits.maxMessageBytes`, and with
   * {@linkcode StreamResetError} once the stream is reset or lost.
   */
  write(value: W): Promise<void> {
    return this.#write(value);
  }

  #write(value: unknown, headers?: Record<string, unknown>): Promise<void> {
    if (this.#error !== undefined) return Promise.reject(this.#error);
    if (this.#sendEnded) {
      return Promise.reject(
        new TypeError(`Cannot write to stream ${this.id} as its direction has ended`),
      );
    }
    let data: string | Uint8Array;
    try {
      data = encodeData(this.#host, this.id, 0, value, 'of write()', headers);
    } catch (error) {
      return Promise.reject(error);
    }
    return this.#enqueue(data, true, false);
  }

  /**
   * Ends this side's direction, after any writes still waiting: with `value` as a last message
   * (a DATA with END, which costs credit like any write), or a bare END when `value` is
   * `undefined`. A second `end()` without a value does nothing.
   *
   * @param value An optional last message.
   * @returns Resolves once the END was handed to the socket.
   * @throws Rejects as {@linkcode Stream.write} does, and with `TypeError` for a value after
   * the direction ended.
   */
  end(value?: W): Promise<void> {
    if (this.#error !== undefined) return Promise.reject(this.#error);
    if (this.#sendEnded) {
      if (value === undefined) return RESOLVED;
      return Promise.reject(
        new TypeError(`Cannot end stream ${this.id} with a value as its direction has ended`),
      );
    }
    let data: string | Uint8Array;
    try {
      data = value === undefined
        ? this.#host.codec.encode([END, this.id])
        : encodeData(this.#host, this.id, FLAG_END, value, 'of end()');
    } catch (error) {
      return Promise.reject(error);
    }
    return this.#enqueue(data, value !== undefined, true);
  }

  /**
   * Aborts the stream in both directions: sends RESET with `code` and `message`, and fails every
   * pending read and write here with {@linkcode StreamResetError} (`remote: false`). Does nothing
   * once the stream is finished.
   *
   * @param code A reset code matching `^[a-z][a-z0-9_.-]{0,63}$` (`cancel`, or your own).
   * @param message A short message for the other side; keep server detail out of it.
   * @throws {TypeError} When `code` or `message` is not valid.
   */
  reset(code: string, message: string = ''): void {
    if (!isResetCode(code)) {
      throw new TypeError(
        `Cannot reset stream ${this.id} as "code" must match ^[a-z][a-z0-9_.-]{0,63}$: current value is ${
          describe(code)
        }`,
      );
    }
    if (typeof message !== 'string') {
      throw new TypeError(
        `Cannot reset stream ${this.id} as "message" must be a string: current value is ${
          describe(message)
        }`,
      );
    }
    if (this.#done) return;
    this.#reset(code, message, false);
  }

  /**
   * Iterates the messages the other side sends after the OPEN (the same queue as `readable`).
   * Ends when the other side ends its direction; throws {@linkcode StreamResetError} on reset or
   * loss. Leaving the loop early stops queueing (later messages are discarded) but does not
   * reset the stream.
   *
   * @returns An async iterator over the incoming messages.
   */
  [Symbol.asyncIterator](): AsyncIterableIterator<R> {
    return iteratorOf(() => this.#read<R>(), () => this.#stopReading());
  }

  #enqueue(data: string | Uint8Array, costs: boolean, end: boolean): Promise<void> {
    if (end) this.#sendEnded = true;
    if (!this.#writes?.waiting && this.#ready(costs)) {
      // A send that fails ends the session, which fails this stream: the write fails too.
      return this.#transmit(data, costs, end) ? RESOLVED : Promise.reject(this.#error);
    }
    return new Promise<void>((resolve, reject) => {
      (this.#writes ??= new WriteQueue()).push({ data, costs, end, resolve, reject });
    });
  }

  /**
   * True when a write may go now: always for a bare END; a DATA waits while the other side's
   * credit is used up or the socket is congested (then the session polls until it drains).
   */
  #ready(costs: boolean): boolean {
    if (!costs) return true;
    if (this.#sendCredit <= 0) return false;
    if (!this.#host.congested()) return true;
    this.#host.waitForSocket(this);
    return false;
  }

  #transmit(data: string | Uint8Array, costs: boolean, end: boolean): boolean {
    if (costs) this.#sendCredit -= size(data);
    if (end) this.#endSent = true;
    if (!(costs ? this.#host.send(data) : this.#host.reply(data))) return false;
    if (end) this.#finishIfDone();
    return true;
  }

  /** Credit arrived or the socket drained: waiting writes go, oldest first, while they may. */
  #flush(): void {
    const writes = this.#writes;
    if (writes === undefined) return;
    const ready = (costs: boolean) => this.#ready(costs);
    for (let write: Write | undefined; (write = writes.take(ready)) !== undefined;) {
      if (this.#transmit(write.data, write.costs, write.end)) write.resolve();
      else write.reject(this.#error);
    }
  }

  /** The next message, as the reader declared it (`R`): the session cannot check that type. */
  #read<T>(): Promise<IteratorResult<T>> {
    if (this.#error !== undefined) return Promise.reject(this.#error);
    const reads = this.#reads;
    if (reads?.queued) return Promise.resolve({ value: reads.take() as T, done: false });
    if (this.#recvEnded || this.#discard) return DONE_PROMISE as Promise<IteratorResult<T>>;
    return this.#readQueue().wait() as Promise<IteratorResult<T>>;
  }

  #readQueue(): ReadQueue {
    return this.#reads ??= new ReadQueue((units) => this.#consume(units));
  }

  #stopReading(): void {
    this.#discard = true;
    this.#reads?.discard();
  }

  /**
   * The application took `units` worth of messages: return credit at half the initial window.
   * When the reader has caught up (nothing queued) and that half window took less than
   * GROW_WITHIN_MS, the window grows to MAX_WINDOW, as far as the session's shared budget allows: a
   * bulk transfer is then not held to one window per round trip (nor, on a sender whose socket
   * delays small writes, to one delayed ACK per half window).
   */
  #consume(units: number): void {
    if (this.#recvEnded || this.#error !== undefined) return;
    this.#creditAt ??= this.#host.now();
    this.#unacked += units;
    if (this.#unacked >= HALF_WINDOW) {
      let grant = this.#unacked;
      this.#unacked = 0;
      const now = this.#host.now();
      if (
        this.#window < MAX_WINDOW && now - this.#creditAt! < GROW_WITHIN_MS && !this.#reads?.queued
      ) {
        const extra = this.#host.growWindow(MAX_WINDOW - this.#window);
        this.#window += extra;
        grant += extra;
      }
      this.#creditAt = now;
      this.#recvAllowed += grant;
      this.#host.reply(this.#host.codec.encode([CREDIT, this.id, grant]));
    }
  }

  /** Gives the window grown past INITIAL_WINDOW back to the session's budget. */
  #shrinkWindow(): void {
    if (this.#window === INITIAL_WINDOW) return;
    this.#host.growWindow(INITIAL_WINDOW - this.#window);
    this.#window = INITIAL_WINDOW;
  }

  #onData(value: unknown, units: number, end: boolean): boolean {
    if (this.#recvEnded) return false;
    if (this.#recvAllowed <= 0) {
      this.#host.report(overCredit(this.id));
      // Provoked by the other side: counts toward maxResetRate (MadeYouReset, CVE-2025-8671).
      this.#reset(ResetCode.Flow, OVER_CREDIT, true);
      return true;
    }
    this.#recvAllowed -= units;
    if (end) this.#recvEnded = true;
    if (!this.#discard) this.#readQueue().put(value, units);
    else {
      this.#consume(units);
      this.#answer(value);
    }
    if (end) this.#ended();
    return true;
  }

  #onEnd(): boolean {
    if (this.#recvEnded) return false;
    this.#recvEnded = true;
    this.#ended();
    return true;
  }

  /** The other side's direction has just ended. */
  #ended(): void {
    this.#answer(undefined);
    this.#reads?.ended();
    this.#finishIfDone();
  }

  /** The first message (or the end) answers a waiting request; later ones are discarded. */
  #answer(value: unknown): void {
    const request = this.#request;
    if (request === undefined) return;
    this.#request = undefined;
    request.answer(value);
  }

  #finishIfDone(): void {
    if (this.#done || !this.#endSent || !this.#recvEnded) return;
    this.#done = true;
    this.#unwatch();
    this.#shrinkWindow();
    this.#host.finished(this, false);
    this.#closedSettle?.();
  }

  /** Resets the stream from this side: sends RESET (`issues` in `:issues`), then fails it. */
  #reset(code: string, message: string, provoked: boolean, issues?: readonly Issue[]): void {
    this.#fail(resetError(this.id, code, message, false, issues), code, message, provoked);
  }

  /** Fails the stream: optionally sends RESET, then rejects everything pending. */
  #fail(
    error: StreamResetError,
    code: string | undefined,
    message: string,
    provoked: boolean,
  ): void {
    if (this.#done) return;
    this.#done = true;
    this.#error = error;
    if (code !== undefined) {
      this.#host.reply(this.#host.codec.encode(resetFrame(this.id, code, message, error.issues)));
    }
    this.#unwatch();
    const request = this.#request;
    this.#request = undefined;
    this.#shrinkWindow();
    this.#host.finished(this, provoked);
    // Every entry point checks #error first: what still waits settles now, in this order.
    this.#writes?.fail(error);
    this.#reads?.fail(error);
    request?.fail(error);
    this.#closedSettle?.(error);
    // Last: an abort listener runs user code, and finds the stream settled.
    this.#aborter?.abort(this.#timeout ?? error);
  }

  #unwatch(): void {
    this.#signal?.removeEventListener('abort', this.#onAbort!);
    this.#signal = undefined;
  }

  #startRequest(timeoutMs: number | undefined): Promise<unknown> {
    if (this.#error !== undefined) return Promise.reject(this.#error);
    const reads = this.#reads;
    if (reads?.queued) {
      // Answered synchronously (a direct pipe): the first message wins, the rest are discarded.
      const value = reads.take();
      this.#stopReading();
      return Promise.resolve(value);
    }
    this.#discard = true;
    if (this.#recvEnded) return Promise.resolve(undefined);
    this.#request = new PendingRequest(this.id, timeoutMs, (message, error) => {
      this.#request = undefined;
      this.#timeout = error;
      this.reset(ResetCode.Timeout, message);
    }, timeoutMs === undefined ? undefined : this.#host.requestDeadlines());
    return this.#request.promise;
  }

  #watch(signal: AbortSignal): void {
    if (this.#done) return;
    if (signal.aborted) {
      this.reset(ResetCode.Cancel, 'Aborted');
      return;
    }
    this.#signal = signal;
    this.#onAbort = () => this.reset(ResetCode.Cancel, 'Aborted');
    signal.addEventListener('abort', this.#onAbort, { once: true });
  }

  #settle(value: unknown): void {
    if (this.#error !== undefined || this.#sendEnded) return;
    let data: string | Uint8Array;
    try {
      data = value === undefined
        ? this.#host.codec.encode([END, this.id])
        : encodeData(this.#host, this.id, FLAG_END, value, RETURNED);
    } catch (error) {
      this.#failHandler(error);
      return;
    }
    const sent = this.#enqueue(data, value !== undefined, true);
    if (sent !== RESOLVED) sent.catch(noop); // a reset or loss already reached everyone else
  }

  /**
   * The handler threw or rejected with `error`. A `StreamError` is an
   * outcome the handler chose: the stream resets with its code and message, and nothing is
   * reported. Anything else is a failure: reported through `onError`, and the stream resets with
   * `internal` and a generic message (no server detail reaches the other side).
   */
  #failHandler(error: unknown): void {
    const chosen = error instanceof StreamError;
    if (!chosen) this.#host.report(error);
    if (this.#done) return;
    if (chosen) this.#reset(error.code, error.message, false, error.issues);
    else this.reset(ResetCode.Internal, GENERIC_HANDLER_MESSAGE);
  }

  static {
    control.data = (stream, value, units, end) => stream.#onData(value, units, end);
    control.end = (stream) => stream.#onEnd();
    control.reset = (stream, code, message, issues) =>
      stream.#fail(resetError(stream.id, code, message, true, issues), undefined, '', true);
    control.credit = (stream, units) => {
      if (stream.#endSent) return;
      stream.#sendCredit = Math.min(stream.#sendCredit + units, Number.MAX_SAFE_INTEGER);
      stream.#flush();
    };
    control.lost = (stream, refusedAbove) =>
      stream.#fail(lostError(stream.id, refusedAbove), undefined, '', false);
    control.request = (stream, timeoutMs) => stream.#startRequest(timeoutMs);
    control.watch = (stream, signal) => stream.#watch(signal);
    control.settle = (stream, value) => stream.#settle(value);
    control.failHandler = (stream, error) => stream.#failHandler(error);
    control.fail = (stream, code, message, issues) => stream.#reset(code, message, true, issues);
    control.cancelUnsent = (stream) =>
      stream.#fail(resetError(stream.id, ResetCode.Cancel, 'Aborted', false), undefined, '', false);
    control.write = (stream, value, headers) => stream.#write(value, headers);
    control.markHello = (stream) => {
      stream.#isHello = true;
    };
  }
}

/** Why a stream is reset with `flow` when DATA arrives beyond its credit. */
const OVER_CREDIT = "More data arrived than the stream's credit allows";

/** What a stream reports when DATA arrives beyond its credit, before resetting it with `flow`. */
function overCredit(id: number): StreamResetError {
  return new StreamResetError(`Stream ${id}: ${OVER_CREDIT}`, {
    code: ResetCode.Flow,
    remote: false,
  });
}

/** What a dialer that sent no hello reads when the acceptor requires one. */
export const NO_HELLO =
  'the acceptor requires a hello and none was sent: pass "hello" to connect()';

/**
 * The error of a stream reset with `code`, `message` and `issues`: by the other side (`remote`),
 * or by this side (the application, a handler, a timeout, an abort, or the other side's input).
 */
function resetError(
  id: number,
  code: string,
  message: string,
  remote: boolean,
  issues?: readonly Issue[],
): StreamResetError {
  // The only side that receives `hello_required` is a dialer that sent no hello.
  if (remote && code === ResetCode.HelloRequired) message = NO_HELLO;
  return new StreamResetError(
    `Stream ${id} was reset${remote ? ' by the other side' : ''} with "${code}"${
      message === '' ? '' : `: ${message}`
    }`,
    { code, remote, issues },
  );
}

/**
 * The error of a stream lost with its connection (the session ended): `connection_lost`, or
 * `refused` for a stream above `refusedAbove`, the `lastId` of the other side's GOAWAY, when the
 * session ended before the other side's `refused` came: that side accepts no stream above it, so
 * it never processed this one, and the stream can be retried on the next connection.
 */
function lostError(id: number, refusedAbove: number | undefined): StreamResetError {
  if (refusedAbove !== undefined && id > refusedAbove) {
    return new StreamResetError(
      `Stream ${id} was refused: the connection closed after a GOAWAY that accepted no stream above ${refusedAbove}, so the other side did not process it`,
      { code: ResetCode.Refused, remote: false },
    );
  }
  return new StreamResetError(`Stream ${id} was lost with its connection`, {
    code: ResetCode.ConnectionLost,
    remote: false,
  });
}

function size(data: string | Uint8Array): number {
  return typeof data === 'string' ? data.length : data.byteLength;
}
