/**
 * The sans-IO multiplexer both sides share (SPEC §2, §3; contract: docs/design/session.md).
 *
 * A {@linkcode Session} is handed a sink (`send`, `close`, optional `bufferedAmount`) and fed every
 * received message through `receive()` and the transport's close through `closed()`. It owns the
 * stream table, id allocation by side, credit accounting, PING/PONG, GOAWAY and the per-connection
 * `limits` with their close codes. It uses `setTimeout` only for `request()` timeouts and to poll
 * `bufferedAmount` while a write waits; a session idle for one tick of the request deadlines
 * (100 ms) holds no timer.
 *
 * This file is the session: its checks, the stream table and both sides' ids, the socket
 * (sending, congestion, replies capped at `maxBufferedBytes`), the window and reset budgets,
 * containment of user code and the end, and the API that opens streams and sends PING. Its parts
 * are objects it owns or helpers it calls, none a class it extends:
 * - `_session_options.ts`: the sink, options and GOAWAY types (re-exported here);
 * - `_receive.ts`: receiving, functions over the session (their host): decoding a received
 *   message and dispatching its frame;
 * - `socket_wait.ts`: writes and PONGs waiting for `bufferedAmount` to fall;
 * - `_reset_budget.ts`: the reset-rate ring;
 * - `_request.ts`: the deadlines of requests;
 * - `acceptor_api.ts`: the API only an acceptor uses, functions over the session: GOAWAY
 *   (`goAway()`), a PUBLISH encoded once (`sendEncoded()`) and `idle()`.
 *
 * Callback order: state is updated first, then user code runs through one containment point
 * (`lib/util/contain.ts`), so a callback that throws or returns a thenable that rejects is reported to
 * `onError` (and an `onError` that throws or rejects to `console.error`; without `onError`,
 * errors go to `console.error`) and never breaks the session. When the session ends, every
 * stream fails with `connection_lost` first, then `onClose` fires once.
 *
 * @module
 */
import { NotConnectedError } from '../errors.ts';
import { type Limits, resolveLimits } from './limits.ts';
import { CloseCode, closeCodeOf, SESSION_CLOSE } from '../wire/codes.ts';
import { callContained, lastResort, reportTo } from '../util/contain.ts';
import { mustBe } from '../util/describe.ts';
import { FLAG_END, FLAG_HELLO, OPEN, overLimit, PING, PONG } from '../wire/frame.ts';
import { depthSkipOf, receive, type ReceiverHost, type SessionPolicy } from './_receive.ts';
import { decode as jsonDecode } from '../wire/json.ts';
import { RequestDeadlines } from './_request.ts';
import { ResetBudget } from './_reset_budget.ts';
import { SocketWait, type SocketWaitHost } from './socket_wait.ts';
import { checkOwnHeaders, MUXWS, type WithMuxws } from '../wire/reserved.ts';
import type { GoAway, SessionOptions, SessionSink } from './_session_options.ts';
import type { Codec } from '../wire/codec.ts';
import {
  control,
  type OpenOptions,
  type RequestOptions,
  Stream,
  type StreamHost,
} from './stream.ts';
import { encodeError } from '../util/value_path.ts';

export type { GoAway, SessionOptions, SessionSink } from './_session_options.ts';
export type { SessionPolicy } from './_receive.ts';
// The receiving steps a policy hands an OPEN or a PUBLISH to (`lib/acceptor/_policy.ts`).
export { accept, malformed, published, refuse } from './_receive.ts';

/**
 * Units of receive window one session's streams may grow, together, past `INITIAL_WINDOW` while
 * their readers keep up with bulk senders: bounds what a peer can make this side buffer beyond
 * the SPEC's per-stream window (docs/protocol.md, "Window growth").
 */
export const WINDOW_BUDGET: number = 1024 * 1024;

/**
 * Limits objects {@linkcode sessionLimits} made: `new Session()` takes one as it is, neither
 * checking nor copying it again. So the construction of a session (an acceptor's accept, a
 * dialer's redial) does no check of its own, and every session of one acceptor shares one limits
 * object instead of holding a copy each (an idle peer's memory, docs/performance.md).
 */
const RESOLVED = new WeakSet<object>();

/**
 * Resolves and checks limits once, for a caller that creates many sessions with the same ones
 * (the acceptor, the dialer's redials): the result is frozen, and `new Session()` takes it as it
 * is. Anything else passed as `limits` is checked and copied by `new Session()`.
 *
 * @throws {TypeError | RangeError} {@linkcode resolveLimits}'s errors.
 */
export function sessionLimits(limits?: Partial<Limits>): Readonly<Limits> {
  const resolved = Object.freeze(resolveLimits(limits));
  RESOLVED.add(resolved);
  return resolved;
}

/** The limits a session keeps: one {@linkcode sessionLimits} made as it is, else a checked copy. */
export function sharedLimits(limits: Partial<Limits> | undefined): Readonly<Limits> {
  // `has()` of a value that is not an object (`undefined`) is false.
  return RESOLVED.has(limits as object) ? limits as Readonly<Limits> : sessionLimits(limits);
}

/**
 * The multiplexer both sides run (see the module doc and docs/design/session.md): the one
 * session class of the dialer, the acceptor and the tests. It checks its limits, opens streams
 * and sends PING; GOAWAY and a PUBLISH encoded once are `goAway()` and `sendEncoded()` of
 * `lib/session/acceptor_api.ts`, functions over it. The check of its other options and what it
 * refuses of what arrives beyond the frame checks and limits (after its GOAWAY, before the hello, a
 * PUBLISH from a dialer) are the {@linkcode SessionPolicy} its maker hands it (the acceptor's);
 * without one, the options are taken as checked (the dialer's, by `connect()`) and every OPEN and
 * PUBLISH that passes the frame checks is taken. Its streams hold the session itself as their
 * host.
 */
export class Session implements StreamHost, SocketWaitHost, ReceiverHost {
  // A field the constructor always sets is `declare`d: created there, in one order, no field list.
  /** Which side this is. */
  declare readonly side: 'dialer' | 'acceptor';
  /** The connection's codec. */
  declare readonly codec: Codec;
  /** The resolved limits. */
  declare readonly limits: Readonly<Limits>;
  /** The largest message this side sends. */
  declare readonly maxMessageBytes: number;
  /** The parity of the ids the other side opens: 0 (even) on the dialer, 1 on the acceptor. */
  declare readonly remoteParity: number;
  /** The options the session was made with. */
  declare readonly options: SessionOptions;
  readonly #sink: SessionSink;
  readonly #now: () => number;
  #closed = false;
  /**
   * Open streams by id: made when a second stream opens beside the first, dropped when the last
   * one finishes.
   */
  #table: Map<number, Stream> | undefined;
  /**
   * The one open stream while no table is made: a session with one request at a time makes no
   * Map per request.
   */
  #only: Stream | undefined;
  #nextId: number;
  #remoteActive = 0;
  /** Made by the first write or PONG that waits for the socket. */
  #wait: SocketWait | undefined;
  /** Made by the first counted reset. */
  #resets: ResetBudget | undefined;
  /** Made by the first request with a timeout. */
  #deadlines: RequestDeadlines | undefined;
  /** What receive windows may grow past INITIAL_WINDOW, all streams together. */
  #windowBudget = WINDOW_BUDGET;

  /** True once `goAway()` (`acceptor_api.ts`) sent GOAWAY: a policy refuses later OPENs. */
  goingAway = false;
  /** The hook of `idle()` (`acceptor_api.ts`), run when no stream is open or the session ends. */
  onIdle: (() => void) | undefined;
  // Receiving's state, written only by `_receive.ts` ({@linkcode ReceiverHost}).
  /** The side's rules for what arrives; none on the dialer. */
  declare readonly policy: SessionPolicy | undefined;
  /** The message length up to which no payload can nest deeper than `maxDepth`. */
  declare readonly depthSkip: number;
  /** True for the JSON wire, where every item takes at least one unit. */
  declare readonly unitPerItem: boolean;
  /** Malformed messages counted so far on this connection. */
  protocolErrors = 0;
  /** `now()` when the last message arrived (at construction before any). */
  declare lastReceivedAt: number;
  /** The highest id the other side opened, refused OPENs included (0 before any). */
  highestRemote = 0;
  /** The GOAWAY the other side sent, if any. */
  goAwayReceived: GoAway | undefined;

  /**
   * Creates the session over an open transport, with `policy`'s rules for what arrives and its
   * check of `options` ({@linkcode SessionPolicy.check}).
   *
   * @throws {TypeError | RangeError} What `policy.check()` throws; {@linkcode resolveLimits}'s
   * errors.
   */
  constructor(sink: SessionSink, options: SessionOptions, policy?: SessionPolicy) {
    // The acceptor's policy checks the options first; the dialer's are the ones connect() checked.
    policy?.check(options);
    const codec: Codec = options.codec;
    const limits = sharedLimits(options.limits);
    const parity = options.side === 'dialer' ? 1 : 0;
    const first = options.firstStreamId ?? 2 - parity;
    this.side = options.side;
    this.codec = codec;
    this.limits = limits;
    this.maxMessageBytes = limits.maxMessageBytes;
    this.remoteParity = 1 - parity;
    this.#sink = sink;
    this.options = options;
    this.#now = options.now ?? Date.now;
    this.#nextId = first;
    this.policy = policy;
    this.depthSkip = depthSkipOf(codec, limits.maxDepth);
    this.unitPerItem = codec.decode === jsonDecode;
    this.lastReceivedAt = this.#now();
  }

  /**
   * Feeds one received WebSocket message. Never throws: malformed input is reported through
   * `onError` and counted, and the limits close the connection.
   */
  receive(data: string | ArrayBuffer | ArrayBufferView): void {
    receive(this, data);
  }

  /** True once the session ended (closed by either side or the transport). */
  get isClosed(): boolean {
    return this.#closed;
  }

  /** Streams not yet finished in both directions nor reset (both sides' streams). */
  get activeStreams(): number {
    return this.#table?.size ?? (this.#only === undefined ? 0 : 1);
  }

  /** Open streams the other side opened: what `maxStreams` bounds. */
  get remoteActive(): number {
    return this.#remoteActive;
  }

  /** The id the next stream this side opens will take. */
  get nextStreamId(): number {
    return this.#nextId;
  }

  /** The session's clock, in ms. */
  now(): number {
    return this.#now();
  }

  /** The open stream `id` names, if any. */
  get(id: number): Stream | undefined {
    const only = this.#only;
    if (only !== undefined) return only.id === id ? only : undefined;
    return this.#table?.get(id);
  }

  /**
   * Adds a stream: one the other side opened counts toward `remoteActive`; one this side just
   * opened took the next id, which moves on.
   */
  add(stream: Stream): void {
    const id = stream.id;
    const only = this.#only;
    if (this.#table === undefined && (only === undefined || only.id === id)) this.#only = stream;
    else {
      (this.#table ??= new Map([[only!.id, only!]])).set(id, stream);
      this.#only = undefined;
    }
    if (id % 2 === this.remoteParity) this.#remoteActive++;
    else this.#nextId = id + 2;
  }

  send(data: string | Uint8Array): boolean {
    if (this.#closed) return false;
    try {
      this.#sink.send(data);
      return true;
    } catch (error) {
      // The transport is broken: report, close it (best effort) and end with 1006.
      this.report(error);
      try {
        this.#sink.close(
          this.side === 'acceptor' ? CloseCode.Internal : CloseCode.Normal,
          'send failed',
        );
      } catch {
        // Already closed: nothing more to do.
      }
      this.end(CloseCode.Abnormal, 'send failed', true);
      return false;
    }
  }

  /**
   * Sends a frame this side owes the other side and does not wait for the socket to send (a
   * RESET, a refusal included; an END with no value; a CREDIT), unless the socket's
   * `bufferedAmount` is above `maxBufferedBytes`: then, rather than queue it behind what a peer
   * that never reads left unread, the session closes with 1008 (acceptor) / 4002 (dialer).
   *
   * @returns False when nothing was handed to the socket (the session ended, or closes now).
   */
  reply(data: string | Uint8Array): boolean {
    const max = this.limits.maxBufferedBytes;
    if (!this.#over(max)) return this.send(data);
    this.close(SESSION_CLOSE[this.side].flood, `more than ${max} bytes buffered unread`);
    return false;
  }

  congested(): boolean {
    return this.#over(this.limits.highWaterMark);
  }

  /** True when the sink's `bufferedAmount` is above `bytes` (never when it has none). */
  #over(bytes: number): boolean {
    // `undefined > bytes` is false: a sink without `bufferedAmount` is never congested.
    return this.#sink.bufferedAmount! > bytes;
  }

  waitForSocket(stream: Stream): void {
    if (this.#closed) return;
    (this.#wait ??= new SocketWait(this)).wait(stream);
  }

  /** Answers a PING: at once, or once the socket falls below the high-water mark. */
  pong(): void {
    if (this.congested()) (this.#wait ??= new SocketWait(this)).owePong();
    else this.sendPong();
  }

  sendPong(): void {
    this.send(this.codec.encode([PONG]));
  }

  /** `bufferedAmount` may have fallen (Bun `drain`): waiting writes re-check. */
  drain(): void {
    this.#wait?.drain();
  }

  finished(stream: Stream, provoked: boolean): void {
    if (this.get(stream.id) !== stream) return;
    const table = this.#table;
    if (table === undefined) this.#only = undefined;
    else table.delete(stream.id);
    this.#wait?.forget(stream);
    if (stream.id % 2 === this.remoteParity) {
      this.#remoteActive--;
      if (provoked) this.countReset();
    }
    // An idle session (an idle peer's memory) holds no table.
    if (table === undefined || table.size === 0) {
      this.#table = undefined;
      this.onIdle?.();
    }
  }

  /**
   * Counts one reset the other side caused at will (docs/security.md, "The reset budget"); one
   * more than `maxResetRate` within a second closes with 1008 (acceptor) / 4002 (dialer).
   * Counted:
   * - a RESET the other side sent on a live stream it opened (Rapid Reset, CVE-2023-44487);
   * - a reset this side sent on a live stream the other side opened because of its input, through
   *   `control.fail(stream, code, message)`: `decode`, `flow` (MadeYouReset, CVE-2025-8671);
   * - a refusal of an OPEN through the receiver's `refuse`: `decode` (undecodable or too deep),
   *   `refused` (no handler, over `maxStreams`).
   * A new reset code provoked by the other side joins with one line: `control.fail(…)` for a
   * stream that exists, the receiver's `refuse(…)` for an OPEN that never becomes one.
   */
  countReset(): void {
    const max = this.limits.maxResetRate;
    if ((this.#resets ??= new ResetBudget(max, this.#now)).count()) {
      this.close(
        SESSION_CLOSE[this.side].flood,
        `more than ${max} streams reset within one second`,
      );
    }
  }

  requestDeadlines(): RequestDeadlines {
    return this.#deadlines ??= new RequestDeadlines(this.#now);
  }

  growWindow(units: number): number {
    const taken = Math.min(units, this.#windowBudget);
    this.#windowBudget -= taken;
    return taken;
  }

  /** Reports a contained error to `onError`, or to `console.error` without one. */
  report(error: unknown): void {
    reportTo(this.options.onError, error);
  }

  /** Calls a user callback with `value`, containing a throw or a rejection as `report` does. */
  emit<T>(callback: ((value: T) => unknown) | undefined, value: T): void {
    callContained(this.options.onError ?? lastResort, callback, value);
  }

  /** Closes the transport from this side, then ends the session. */
  close(code: number, reason: string): void {
    if (this.#closed) return;
    try {
      this.#sink.close(code, reason);
    } catch (error) {
      this.report(error);
    }
    this.end(code, reason, true);
  }

  /**
   * Ends the session: every open stream fails with `connection_lost` (one this side opened above
   * the `lastId` of a GOAWAY received with `refused`: it was never processed), then `onClose`
   * fires.
   */
  end(code: number, reason: string, local: boolean): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#wait?.stop();
    this.#deadlines?.stop();
    // Taken first: the lost streams' finished() calls find no table and change nothing.
    const table = this.#table;
    const only = this.#only;
    this.#table = undefined;
    this.#only = undefined;
    // Only this side's streams above a GOAWAY's lastId went unprocessed; the other side's ids are
    // of the other parity and are never compared with it.
    const lastId = this.goAwayReceived?.lastId;
    const lose = (stream: Stream) =>
      control.lost(stream, stream.id % 2 === this.remoteParity ? undefined : lastId);
    if (only !== undefined) lose(only);
    table?.forEach(lose);
    this.#remoteActive = 0;
    this.onIdle?.();
    this.emit(this.options.onClose, { code, reason, local });
  }

  /**
   * The transport closed. Every open stream fails with `connection_lost`; `onClose` fires. A code
   * of 0 or none (some runtimes report a failed connection so) counts as 1006.
   */
  closed(code: number, reason: string): void {
    this.end(closeCodeOf(code), typeof reason === 'string' ? reason : '', false);
  }

  /**
   * Opens a stream: the OPEN is sent before this returns. Reserved headers (keys starting with `:`)
   * come only from the options' {@linkcode MUXWS} part.
   *
   * @throws {NotConnectedError} After a GOAWAY was received or once the session ended.
   * @throws {TypeError} For bad options, a reserved key in `headers`, or a payload or headers
   * value the codec cannot encode (naming the operation, the stream and the value's path).
   * @throws {RangeError} When the OPEN is larger than `maxMessageBytes`.
   */
  open(payload: unknown, options?: WithMuxws<OpenOptions>): Stream {
    return this.#open(payload, options, options?.end, 'open()', 0);
  }

  /**
   * Opens the dialer's hello: stream 1 with END and the HELLO flag, as {@linkcode open} does
   * otherwise; `reserved` headers (a redial's `:resume`) are muxws's own, sent with the
   * application's.
   */
  openHello(
    payload: unknown,
    headers: Record<string, unknown> | null,
    reserved?: Readonly<Record<string, unknown>>,
  ): Stream {
    return this.#open(
      payload,
      { headers, [MUXWS]: { headers: reserved } },
      true,
      'the hello',
      FLAG_HELLO,
    );
  }

  #open(
    payload: unknown,
    options: WithMuxws<OpenOptions | RequestOptions> | undefined,
    endOption: boolean | undefined,
    operation: string,
    flags: number,
  ): Stream {
    const signal = options?.signal;
    const muxws = options?.[MUXWS];
    if (this.#closed) {
      throw new NotConnectedError('Cannot open a stream: the connection has ended');
    }
    if (this.goAwayReceived !== undefined) {
      throw new NotConnectedError('Cannot open a stream: the other side sent GOAWAY');
    }
    const end = endOption ?? false;
    let headers = options?.headers ?? null;
    checkOwnHeaders(headers, 'open a stream');
    if (muxws?.headers !== undefined) headers = { ...muxws.headers, ...headers };
    if (typeof end !== 'boolean') {
      throw new TypeError(
        mustBe('open a stream', 'end', 'a boolean', end),
      );
    }
    if (
      signal !== undefined &&
      (typeof signal !== 'object' || signal === null || typeof signal.aborted !== 'boolean' ||
        typeof signal.addEventListener !== 'function')
    ) {
      throw new TypeError(
        mustBe('open a stream', 'signal', 'an AbortSignal', signal),
      );
    }
    const id = this.#nextId;
    if (!Number.isSafeInteger(id)) {
      throw new NotConnectedError('Cannot open a stream: stream ids are exhausted');
    }
    if (signal?.aborted) {
      // Nothing is sent and no id is used: the stream is born reset with `cancel`.
      const stream = new Stream(this, id, headers, payload, true, true);
      control.cancelUnsent(stream);
      return stream;
    }
    const codec = this.codec;
    let data: string | Uint8Array;
    try {
      data = codec.encode([OPEN, id, (end ? FLAG_END : 0) + flags, headers, payload]);
    } catch (error) {
      throw encodeError(
        (frame) => codec.encode(frame),
        `of ${muxws?.operation ?? operation} on stream ${id}`,
        [['headers', headers], ['payload', payload]],
        error,
      );
    }
    if (overLimit(data, this.maxMessageBytes)) {
      throw new RangeError(
        `Cannot open a stream as its OPEN is larger than limits.maxMessageBytes (${this.maxMessageBytes})`,
      );
    }
    const stream = new Stream(this, id, headers, payload, end, false);
    this.add(stream);
    this.send(data);
    if (signal !== undefined) control.watch(stream, signal);
    return stream;
  }

  /**
   * Opens a stream with END and resolves with the first message of the answer.
   *
   * @returns The first message, or `undefined` when the other side ended without one.
   * @throws Rejects with `StreamResetError` on reset or loss, `TimeoutError` after
   * `timeoutMs`, and what {@linkcode Session.open} throws.
   */
  request(payload: unknown, options?: WithMuxws<RequestOptions>): Promise<unknown> {
    const timeoutMs = options?.timeoutMs;
    // `Number.isFinite()` is false for anything but a finite number.
    if (timeoutMs !== undefined && (!Number.isFinite(timeoutMs) || timeoutMs < 0)) {
      return Promise.reject(
        new RangeError(
          mustBe('send a request', 'timeoutMs', 'a non-negative number', timeoutMs),
        ),
      );
    }
    let stream: Stream;
    try {
      stream = this.#open(payload, options, true, 'request()', 0);
    } catch (error) {
      return Promise.reject(error);
    }
    return control.request(stream, timeoutMs);
  }

  /** Sends PING. A received PING is always answered with PONG by the session. */
  ping(): void {
    this.send(this.codec.encode([PING]));
  }
}
