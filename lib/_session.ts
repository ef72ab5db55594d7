/**
 * The sans-IO multiplexer both sides share (SPEC §2, §3; contract: docs/design/session.md).
 *
 * A {@linkcode Session} is handed a sink (`send`, `close`, optional `bufferedAmount`) and fed
 * every received message through `receive()` and the transport's close through `closed()`. It
 * owns the stream table, id allocation by side, credit accounting, PING/PONG, GOAWAY and the
 * limits of WSM-ACC-006 with the close codes of WSM-WIRE-009. It uses `setTimeout` only for
 * `request()` timeouts and to poll `bufferedAmount` while a write waits; an idle session holds
 * no timer.
 *
 * Callback order: state is updated first, then user code runs through one containment point
 * (`#emit`), so a throwing callback is reported to `onError` (and a throwing `onError` to
 * `console.error`) and never breaks the session. When the session ends, every stream fails with
 * `connection_lost` first, then `onClose` fires once.
 *
 * @module
 */
import { type Codec, jsonCodec } from './codec.ts';
import { NotConnectedError, ProtocolError } from './errors.ts';
import { type Limits, resolveLimits } from './limits.ts';
import {
  CloseCode,
  closeCodeOf,
  type ProvokedResetCode,
  ResetCode,
  SESSION_CLOSE,
} from './_codes.ts';
import { describe } from './_describe.ts';
import {
  control,
  type OpenOptions,
  type PublishMessage,
  type RequestOptions,
  Stream,
  type StreamHost,
} from './stream.ts';
import {
  CREDIT,
  DATA,
  END,
  FLAG_END,
  FrameError,
  GOAWAY,
  hasEnd,
  isHeaders,
  isResetCode,
  isStreamId,
  isTag,
  OPEN,
  overLimit,
  parseFrame,
  PING,
  PONG,
  PUBLISH,
  RESET,
  tooDeep,
} from './_frame.ts';

/** Where a session's messages go: a WebSocket, or an adapter's socket. */
export interface SessionSink {
  /** Sends one message. */
  send(data: string | Uint8Array): void;
  /** Closes the transport. */
  close(code: number, reason: string): void;
  /** Bytes queued but not yet sent; read whenever a write decides whether to wait. */
  readonly bufferedAmount?: number;
}

/** A GOAWAY frame as received. */
export interface GoAway {
  /** The highest stream id the sender accepted. */
  lastId: number;
  /** Why: `restart`, `shutdown`, `overload`, ... */
  code: string;
  /** A message for humans. */
  message: string;
  /** The receiving dialer redials after a delay drawn from `[0, spreadMs)`. */
  spreadMs: number;
}

/** Options of {@linkcode Session}. */
export interface SessionOptions {
  /** Which side this is: the dialer opens odd ids, the acceptor even ones. */
  side: 'dialer' | 'acceptor';
  /** The connection's codec. */
  codec: Codec;
  /** Limits (WSM-ACC-006); the rest default. */
  limits?: Partial<Limits>;
  /**
   * Runs once per stream the other side opens; none set: RESET `refused`. Return value and
   * throws follow WSM-STR-003/004. The session contains the handler; the caller wraps it to
   * pass its own second argument (the Connection or the Peer).
   */
  onStream?: (stream: Stream) => unknown;
  /** PUBLISH frames (dialer side). */
  onPublish?: (message: PublishMessage) => void;
  /** A GOAWAY arrived. */
  onGoAway?: (goAway: GoAway) => void;
  /** Contained errors: malformed frames (ProtocolError), handler failures, decode failures. */
  onError?: (error: unknown) => void;
  /** Called once when the session ends, for any reason, after every stream has failed. */
  onClose?: (info: { code: number; reason: string; local: boolean }) => void;
  /** The clock for `lastReceivedAt` and the reset-rate window. @default {Date.now} */
  now?: () => number;
  /**
   * The id of the first stream this side opens: a positive safe integer of this side's parity.
   * A session restored over a socket that outlived it (a Durable Object woken from hibernation)
   * continues where the old one stopped, since the other side rejects an OPEN whose id it has
   * already seen (WSM-WIRE-004). @default {1 on the dialer, 2 on the acceptor}
   */
  firstStreamId?: number;
}

/** How often a write waiting for `bufferedAmount` to fall re-checks, in ms. */
export const SOCKET_POLL_MS = 10;

/**
 * Units of receive window one session's streams may grow, together, past `INITIAL_WINDOW` while
 * their readers keep up with bulk senders: bounds what a peer can make this side buffer beyond
 * the SPEC's per-stream window (docs/protocol.md, "Window growth").
 */
export const WINDOW_BUDGET: number = 1024 * 1024;

const EMPTY = Promise.resolve();

/**
 * Limits objects {@linkcode sessionLimits} made: `new Session()` takes one as it is, neither
 * checking nor copying it again. This keeps the construction of a session (an acceptor's accept,
 * a dialer's redial) at about half its cost with a check per session, and lets every session of
 * one acceptor share one limits object instead of holding a copy each (an idle peer's memory,
 * docs/performance.md).
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
function sharedLimits(limits: Partial<Limits> | undefined): Readonly<Limits> {
  return limits !== undefined && RESOLVED.has(limits)
    ? limits as Readonly<Limits>
    : sessionLimits(limits);
}

/**
 * One connection's multiplexer (see the module doc and docs/design/session.md).
 */
export class Session {
  /** Which side this is. */
  readonly side: 'dialer' | 'acceptor';
  #sink: SessionSink;
  #codec: Codec;
  #limits: Readonly<Limits>;
  #options: SessionOptions;
  #now: () => number;
  #host: StreamHost;
  /** Open streams by id: made by the first stream, dropped when the last one finishes. */
  #streams: Map<number, Stream> | undefined;
  #nextId: number;
  #highestRemote = 0;
  #remoteParity: number;
  #remoteActive = 0;
  #protocolErrors = 0;
  #resetTimes: number[] | undefined;
  #resetIndex = 0;
  #closed = false;
  #goingAway = false;
  #goAway: GoAway | undefined;
  /** Streams whose write waits for the socket: made by the first that waits, dropped by a poll. */
  #waiting: Set<Stream> | undefined;
  #pongOwed = false;
  #pollTimer: ReturnType<typeof setTimeout> | undefined;
  #idle: (() => void)[] | undefined;
  #lastReceivedAt: number;
  #depthSkip: number;

  /**
   * Creates the session over an open transport.
   *
   * @throws {TypeError} When `side` or `codec` is invalid; {@linkcode resolveLimits}'s errors.
   */
  constructor(sink: SessionSink, options: SessionOptions) {
    if (options?.side !== 'dialer' && options?.side !== 'acceptor') {
      throw new TypeError(
        `Cannot create Session as "side" must be "dialer" or "acceptor": current value is ${
          describe(options?.side)
        }`,
      );
    }
    const codec = options.codec;
    if (
      typeof codec !== 'object' || codec === null || typeof codec.encode !== 'function' ||
      typeof codec.decode !== 'function'
    ) {
      throw new TypeError(
        `Cannot create Session as "codec" must be a Codec: current value is ${describe(codec)}`,
      );
    }
    this.side = options.side;
    this.#sink = sink;
    this.#codec = codec;
    const limits = options.limits;
    this.#limits = sharedLimits(limits);
    this.#options = options;
    this.#now = options.now ?? Date.now;
    const parity = this.side === 'dialer' ? 1 : 0;
    const first = options.firstStreamId ?? 2 - parity;
    if (!isStreamId(first) || first % 2 !== parity) {
      throw new RangeError(
        `Cannot create Session as "firstStreamId" must be a positive safe integer of the ${this.side}'s parity (${
          parity === 1 ? 'odd' : 'even'
        }): current value is ${describe(first)}`,
      );
    }
    this.#nextId = first;
    this.#remoteParity = this.side === 'dialer' ? 0 : 1;
    this.#lastReceivedAt = this.#now();
    this.#depthSkip = depthSkipOf(codec, this.#limits.maxDepth);
    const maxMessageBytes = this.#limits.maxMessageBytes;
    this.#host = new Session.#Host(this, codec, maxMessageBytes);
  }

  /**
   * The {@linkcode StreamHost} every stream of a session calls: one small object per session
   * whose methods live on one shared prototype, rather than five closures per connection (an
   * idle peer's memory, docs/performance.md). Declared here so it reaches the private methods.
   */
  static readonly #Host = class implements StreamHost {
    readonly codec: Codec;
    readonly maxMessageBytes: number;
    readonly #session: Session;

    constructor(session: Session, codec: Codec, maxMessageBytes: number) {
      this.#session = session;
      this.codec = codec;
      this.maxMessageBytes = maxMessageBytes;
    }

    send(data: string | Uint8Array): boolean {
      return this.#session.#send(data);
    }

    congested(): boolean {
      return this.#session.#congested();
    }

    waitForSocket(stream: Stream): void {
      this.#session.#waitForSocket(stream);
    }

    finished(stream: Stream, provoked: boolean): void {
      this.#session.#finished(stream, provoked);
    }

    report(error: unknown): void {
      this.#session.#report(error);
    }

    now(): number {
      return this.#session.#now();
    }

    /** What receive windows may grow past INITIAL_WINDOW, all streams together. */
    #windowBudget = WINDOW_BUDGET;

    growWindow(units: number): number {
      const taken = Math.min(units, this.#windowBudget);
      this.#windowBudget -= taken;
      return taken;
    }
  };

  /** True once the session ended (closed by either side or the transport). */
  get isClosed(): boolean {
    return this.#closed;
  }

  /** The GOAWAY the other side sent, if any. */
  get goAwayReceived(): GoAway | undefined {
    return this.#goAway;
  }

  /** Streams not yet finished in both directions nor reset (both sides' streams). */
  get activeStreams(): number {
    return this.#streams?.size ?? 0;
  }

  /** `now()` when the last message arrived (at construction before any). */
  get lastReceivedAt(): number {
    return this.#lastReceivedAt;
  }

  /** The id the next stream this side opens will take. */
  get nextStreamId(): number {
    return this.#nextId;
  }

  /** Malformed messages counted so far on this connection. */
  get protocolErrors(): number {
    return this.#protocolErrors;
  }

  /** The resolved limits. */
  get limits(): Readonly<Limits> {
    return this.#limits;
  }

  /**
   * Feeds one received WebSocket message. Never throws: malformed input is reported through
   * `onError` and counted, and the limits close the connection.
   */
  receive(data: string | ArrayBuffer | ArrayBufferView): void {
    if (this.#closed) return;
    try {
      this.#receive(data);
    } catch (error) {
      // Only a bug lands here: every expected failure is handled where it happens.
      this.#report(error);
    }
  }

  #receive(raw: string | ArrayBuffer | ArrayBufferView): void {
    this.#lastReceivedAt = this.#now();
    let data: string | Uint8Array;
    if (typeof raw === 'string') data = raw;
    else if (raw instanceof Uint8Array) data = raw;
    else if (ArrayBuffer.isView(raw)) {
      data = new Uint8Array(raw.buffer, raw.byteOffset, raw.byteLength);
    } else if (raw instanceof ArrayBuffer) data = new Uint8Array(raw);
    else {
      this.#malformed(
        new FrameError(`Malformed message: expected text or bytes: found ${describe(raw)}`),
      );
      return;
    }
    if (overLimit(data, this.#limits.maxMessageBytes)) {
      this.close(
        SESSION_CLOSE[this.side].tooLarge,
        `message larger than ${this.#limits.maxMessageBytes} bytes`,
      );
      return;
    }
    const units = typeof data === 'string' ? data.length : data.byteLength;
    let value: unknown;
    try {
      value = this.#codec.decode(data);
    } catch (error) {
      this.#undecodable(data, error);
      return;
    }
    let frame;
    try {
      frame = parseFrame(value);
    } catch (error) {
      this.#malformed(error);
      return;
    }
    switch (frame[0]) {
      case OPEN:
        this.#onOpen(frame[1], frame[2], frame[3], frame[4], units);
        return;
      case DATA: {
        const stream = this.#lookup(frame[1], 'DATA');
        if (stream === undefined) return;
        if (units > this.#depthSkip && tooDeep(frame[3], this.#limits.maxDepth)) {
          this.#decodeReset(stream, `its payload nests deeper than ${this.#limits.maxDepth}`);
          return;
        }
        if (!control.data(stream, frame[3], units, hasEnd(frame[2]))) {
          this.#malformed(new FrameError(`Malformed frame: DATA on stream ${frame[1]} after END`));
        }
        return;
      }
      case END: {
        const stream = this.#lookup(frame[1], 'END');
        if (stream !== undefined && !control.end(stream)) {
          this.#malformed(new FrameError(`Malformed frame: a second END on stream ${frame[1]}`));
        }
        return;
      }
      case RESET: {
        const stream = this.#lookup(frame[1], 'RESET');
        if (stream !== undefined) control.reset(stream, frame[2], frame[3]);
        return;
      }
      case CREDIT: {
        const stream = this.#lookup(frame[1], 'CREDIT');
        if (stream !== undefined) control.credit(stream, frame[2]);
        return;
      }
      case PING:
        // While the socket is over highWaterMark, PINGs are owed one PONG, sent once it falls:
        // every PING is answered, but a peer that floods PINGs and never reads cannot grow this
        // side's send buffer by a PONG each.
        if (this.#congested()) {
          this.#pongOwed = true;
          this.#armPoll();
        } else {
          this.#send(this.#codec.encode([PONG]));
        }
        return;
      case PONG:
        return;
      case GOAWAY: {
        const goAway: GoAway = {
          lastId: frame[1],
          code: frame[2],
          message: frame[3],
          spreadMs: frame[4],
        };
        this.#goAway = goAway;
        const onGoAway = this.#options.onGoAway;
        if (onGoAway !== undefined) this.#emit(onGoAway, goAway);
        return;
      }
      case PUBLISH: {
        if (this.side === 'acceptor') {
          this.#malformed(new FrameError('Malformed frame: PUBLISH sent by a dialer'));
          return;
        }
        const max = this.#limits.maxDepth;
        if (units > this.#depthSkip && (tooDeep(frame[2], max) || tooDeep(frame[3], max))) {
          this.#report(
            new ProtocolError(
              `Cannot decode a PUBLISH to ${describe(frame[1])}: it nests deeper than ${max}`,
            ),
          );
          return;
        }
        const onPublish = this.#options.onPublish;
        if (onPublish !== undefined) {
          this.#emit(onPublish, { tag: frame[1], headers: frame[2], payload: frame[3] });
        }
        return;
      }
    }
  }

  /**
   * The stream `id` names, for a frame other than OPEN: undefined when the frame is to be
   * ignored (a finished id) or was malformed (never opened).
   */
  #lookup(id: number, kind: string): Stream | undefined {
    const stream = this.#streams?.get(id);
    if (stream !== undefined) return stream;
    if (id % 2 === this.#remoteParity ? id > this.#highestRemote : id >= this.#nextId) {
      this.#malformed(new FrameError(`Malformed frame: ${kind} for stream ${id}, never opened`));
    }
    return undefined;
  }

  #onOpen(
    id: number,
    flags: number,
    headers: Record<string, unknown> | null,
    payload: unknown,
    units: number,
  ): void {
    if (id % 2 !== this.#remoteParity) {
      this.#malformed(
        new FrameError(`Malformed frame: OPEN of stream ${id} has this side's parity`),
      );
      return;
    }
    if (id <= this.#highestRemote) {
      this.#malformed(
        new FrameError(
          `Malformed frame: OPEN of stream ${id} is not above the highest id seen, ${this.#highestRemote}`,
        ),
      );
      return;
    }
    this.#highestRemote = id;
    const max = this.#limits.maxDepth;
    if (units > this.#depthSkip && (tooDeep(headers, max) || tooDeep(payload, max))) {
      this.#report(
        new ProtocolError(`Cannot decode the OPEN of stream ${id}: it nests deeper than ${max}`),
      );
      this.#refuse(id, ResetCode.Decode, `The OPEN nests deeper than ${max}`);
      return;
    }
    const onStream = this.#options.onStream;
    if (
      this.#goingAway ||
      (this.#goAway !== undefined && this.side === 'acceptor' && id > this.#goAway.lastId)
    ) {
      // Not counted: a conforming peer stops opening once the GOAWAY arrives, so these are the
      // OPENs already in flight, and the side that sent GOAWAY closes once its streams drained.
      this.#sendReset(id, ResetCode.Refused, 'The connection is going away');
      return;
    }
    if (onStream === undefined) {
      this.#refuse(id, ResetCode.Refused, 'No stream handler');
      return;
    }
    if (this.#remoteActive >= this.#limits.maxStreams) {
      this.#refuse(
        id,
        ResetCode.Refused,
        `Too many streams: the limit is ${this.#limits.maxStreams}`,
      );
      return;
    }
    const stream = new Stream(this.#host, id, headers, payload, false, hasEnd(flags));
    (this.#streams ??= new Map()).set(id, stream);
    this.#remoteActive++;
    let result: unknown;
    try {
      result = onStream(stream);
      if (
        result !== null && (typeof result === 'object' || typeof result === 'function') &&
        typeof (result as PromiseLike<unknown>).then === 'function'
      ) {
        Promise.resolve(result as PromiseLike<unknown>).then(
          (value) => control.settle(stream, value),
          (error) => control.failHandler(stream, error),
        );
        return;
      }
    } catch (error) {
      control.failHandler(stream, error);
      return;
    }
    control.settle(stream, result);
  }

  /**
   * Refuses an OPEN the other side sent (`decode`, or `refused` for want of a handler or over
   * `maxStreams`): the refusal counts toward the reset budget first (`#countReset`),
   * so the OPEN that exceeds it closes the connection instead of drawing one more RESET.
   */
  #refuse(id: number, code: ProvokedResetCode, message: string): void {
    this.#countReset();
    this.#sendReset(id, code, message);
  }

  #sendReset(id: number, code: string, message: string): void {
    this.#send(this.#codec.encode([RESET, id, code, message]));
  }

  #decodeReset(stream: Stream, why: string): void {
    this.#report(new ProtocolError(`Cannot decode a message of stream ${stream.id}: ${why}`));
    control.fail(stream, ResetCode.Decode, 'A payload could not be decoded');
  }

  /** `decode` threw: reset the stream the prefix names, or count a malformed message. */
  #undecodable(data: string | Uint8Array, error: unknown): void {
    let named: readonly [number, number] | undefined;
    try {
      named = this.#codec.identify?.(data);
    } catch {
      named = undefined;
    }
    if (named !== undefined && isStreamId(named[1])) {
      const [kind, id] = named;
      if (kind === OPEN) {
        if (id % 2 === this.#remoteParity && id > this.#highestRemote) {
          this.#highestRemote = id;
          this.#report(
            new ProtocolError(`Cannot decode the OPEN of stream ${id}`, { cause: error }),
          );
          this.#refuse(id, ResetCode.Decode, 'The OPEN could not be decoded');
          return;
        }
      } else if (kind === DATA) {
        const stream = this.#streams?.get(id);
        if (stream !== undefined) {
          this.#report(
            new ProtocolError(`Cannot decode a message of stream ${id}`, { cause: error }),
          );
          control.fail(stream, ResetCode.Decode, 'A payload could not be decoded');
          return;
        }
        const finished = id % 2 === this.#remoteParity
          ? id <= this.#highestRemote
          : id < this.#nextId;
        if (finished) return;
      }
    }
    this.#malformed(
      new FrameError('Malformed message: the codec cannot decode it', { cause: error }),
    );
  }

  #malformed(error: unknown): void {
    this.#protocolErrors++;
    this.#report(error);
    if (this.#protocolErrors > this.#limits.maxProtocolErrors && !this.#closed) {
      this.close(
        SESSION_CLOSE[this.side].protocol,
        `more than ${this.#limits.maxProtocolErrors} malformed messages`,
      );
    }
  }

  /** Closes the transport from this side, then ends the session as `closed()` does. */
  close(code: number, reason: string): void {
    if (this.#closed) return;
    try {
      this.#sink.close(code, reason);
    } catch (error) {
      this.#report(error);
    }
    this.#end(code, reason, true);
  }

  /**
   * The transport closed. Every open stream fails with `connection_lost`; `onClose` fires. A
   * code of 0 or none (some runtimes report a failed connection so) counts as 1006
   * (WSM-WIRE-009).
   */
  closed(code: number, reason: string): void {
    this.#end(closeCodeOf(code), typeof reason === 'string' ? reason : '', false);
  }

  #end(code: number, reason: string, local: boolean): void {
    if (this.#closed) return;
    this.#closed = true;
    if (this.#pollTimer !== undefined) {
      clearTimeout(this.#pollTimer);
      this.#pollTimer = undefined;
    }
    this.#waiting = undefined;
    // Taken first: the lost streams' finished() calls find no table and change nothing.
    const streams = this.#streams;
    this.#streams = undefined;
    if (streams !== undefined) { for (const stream of streams.values()) control.lost(stream); }
    this.#remoteActive = 0;
    this.#wakeIdle();
    const onClose = this.#options.onClose;
    if (onClose !== undefined) this.#emit(onClose, { code, reason, local });
  }

  /**
   * Opens a stream (WSM-STR-001): the OPEN is sent before this returns.
   *
   * @throws {NotConnectedError} After a GOAWAY was received or once the session ended.
   * @throws {TypeError} For bad options or a payload the codec cannot encode.
   * @throws {RangeError} When the OPEN is larger than `maxMessageBytes`.
   */
  open(payload: unknown, options?: OpenOptions): Stream {
    return this.#open(payload, options?.headers, options?.end, options?.signal);
  }

  #open(
    payload: unknown,
    headersOption: Record<string, unknown> | null | undefined,
    endOption: boolean | undefined,
    signal: AbortSignal | undefined,
  ): Stream {
    if (this.#closed) {
      throw new NotConnectedError('Cannot open a stream: the connection has ended');
    }
    if (this.#goAway !== undefined) {
      throw new NotConnectedError('Cannot open a stream: the other side sent GOAWAY');
    }
    const headers = headersOption ?? null;
    if (headers !== null && !isHeaders(headers)) {
      throw new TypeError(
        `Cannot open a stream as "headers" must be a plain object or null: current value is ${
          describe(headers)
        }`,
      );
    }
    const end = endOption ?? false;
    if (typeof end !== 'boolean') {
      throw new TypeError(
        `Cannot open a stream as "end" must be a boolean: current value is ${describe(end)}`,
      );
    }
    if (
      signal !== undefined &&
      (typeof signal !== 'object' || signal === null || typeof signal.aborted !== 'boolean' ||
        typeof signal.addEventListener !== 'function')
    ) {
      throw new TypeError(
        `Cannot open a stream as "signal" must be an AbortSignal: current value is ${
          describe(signal)
        }`,
      );
    }
    const id = this.#nextId;
    if (!Number.isSafeInteger(id)) {
      throw new NotConnectedError('Cannot open a stream: stream ids are exhausted');
    }
    if (signal?.aborted) {
      // Nothing is sent and no id is used: the stream is born reset with `cancel`.
      const stream = new Stream(this.#host, id, headers, payload, true, true);
      control.cancelUnsent(stream);
      return stream;
    }
    const data = this.#codec.encode([OPEN, id, end ? FLAG_END : 0, headers, payload]);
    if (overLimit(data, this.#limits.maxMessageBytes)) {
      throw new RangeError(
        `Cannot open a stream as its OPEN is larger than limits.maxMessageBytes (${this.#limits.maxMessageBytes})`,
      );
    }
    this.#nextId = id + 2;
    const stream = new Stream(this.#host, id, headers, payload, end, false);
    (this.#streams ??= new Map()).set(id, stream);
    this.#send(data);
    if (signal !== undefined) control.watch(stream, signal);
    return stream;
  }

  /**
   * Opens a stream with END and resolves with the first message of the answer (WSM-STR-005).
   *
   * @returns The first message, or `undefined` when the other side ended without one.
   * @throws Rejects with `StreamResetError` on reset or loss, `TimeoutError` after
   * `timeoutMs`, and what {@linkcode Session.open} throws.
   */
  request(payload: unknown, options?: RequestOptions): Promise<unknown> {
    const timeoutMs = options?.timeoutMs;
    if (
      timeoutMs !== undefined &&
      (typeof timeoutMs !== 'number' || !(timeoutMs >= 0) || !Number.isFinite(timeoutMs))
    ) {
      return Promise.reject(
        new RangeError(
          `Cannot send a request as "timeoutMs" must be a non-negative number: current value is ${
            describe(timeoutMs)
          }`,
        ),
      );
    }
    let stream: Stream;
    try {
      stream = this.#open(payload, options?.headers, true, options?.signal);
    } catch (error) {
      return Promise.reject(error);
    }
    return control.request(stream, timeoutMs);
  }

  /** Sends PING. A received PING is always answered with PONG by the session. */
  ping(): void {
    this.#send(this.#codec.encode([PING]));
  }

  /**
   * Sends GOAWAY with `lastId` = the highest id the other side opened, and refuses its later
   * OPENs with `refused`.
   *
   * @throws {TypeError} When `code` is not a reset code or `message` not a string.
   * @throws {RangeError} When `spreadMs` is not a non-negative integer.
   */
  goAway(code: string, message: string, spreadMs: number): void {
    if (!isResetCode(code)) {
      throw new TypeError(
        `Cannot send GOAWAY as "code" must match ^[a-z][a-z0-9_.-]{0,63}$: current value is ${
          describe(code)
        }`,
      );
    }
    if (typeof message !== 'string') {
      throw new TypeError(
        `Cannot send GOAWAY as "message" must be a string: current value is ${describe(message)}`,
      );
    }
    if (!Number.isSafeInteger(spreadMs) || spreadMs < 0) {
      throw new RangeError(
        `Cannot send GOAWAY as "spreadMs" must be a non-negative integer: current value is ${
          describe(spreadMs)
        }`,
      );
    }
    this.#goingAway = true;
    this.#send(this.#codec.encode([GOAWAY, this.#highestRemote, code, message, spreadMs]));
  }

  /**
   * Sends one already-encoded message (a PUBLISH encoded once for many peers).
   *
   * @returns False, sending nothing, when the session ended or the sink's `bufferedAmount` is
   * above `highWaterMark`.
   */
  sendEncoded(data: string | Uint8Array): boolean {
    if (this.#closed || this.#congested()) return false;
    this.#send(data);
    return true;
  }

  /** Tells the session `bufferedAmount` may have fallen (Bun `drain`); waiting writes re-check. */
  drain(): void {
    if (this.#writesWait() || this.#pongOwed) this.#poll();
  }

  /** Resolves when `activeStreams` reaches 0 (at once when it is 0) or the session ends. */
  idle(): Promise<void> {
    if (this.#closed || this.#streams === undefined) return EMPTY;
    return new Promise<void>((resolve) => (this.#idle ??= []).push(resolve));
  }

  #wakeIdle(): void {
    const idle = this.#idle;
    if (idle === undefined) return;
    this.#idle = undefined;
    for (const resolve of idle) resolve();
  }

  #send(data: string | Uint8Array): boolean {
    if (this.#closed) return false;
    try {
      this.#sink.send(data);
      return true;
    } catch (error) {
      // The transport is broken: report, close it (best effort) and end with 1006.
      this.#report(error);
      try {
        this.#sink.close(
          this.side === 'acceptor' ? CloseCode.Internal : CloseCode.Normal,
          'send failed',
        );
      } catch {
        // Already closed: nothing more to do.
      }
      this.#end(CloseCode.Abnormal, 'send failed', true);
      return false;
    }
  }

  /** True while some stream's write waits for the socket. */
  #writesWait(): boolean {
    return this.#waiting !== undefined && this.#waiting.size > 0;
  }

  #congested(): boolean {
    const buffered = this.#sink.bufferedAmount;
    return typeof buffered === 'number' && buffered > this.#limits.highWaterMark;
  }

  #waitForSocket(stream: Stream): void {
    if (this.#closed) return;
    (this.#waiting ??= new Set()).add(stream);
    this.#armPoll();
  }

  /** Re-checks `bufferedAmount` in SOCKET_POLL_MS: armed only while a write or a PONG waits. */
  #armPoll(): void {
    this.#pollTimer ??= setTimeout(() => {
      this.#pollTimer = undefined;
      this.#poll();
    }, SOCKET_POLL_MS);
  }

  #poll(): void {
    if (this.#pongOwed) {
      if (this.#congested()) this.#armPoll();
      else {
        this.#pongOwed = false;
        this.#send(this.#codec.encode([PONG]));
      }
    }
    const waiting = this.#waiting;
    this.#waiting = undefined;
    if (waiting !== undefined) {
      for (const stream of waiting) {
        if (this.#closed) return;
        control.flush(stream);
      }
    }
    // Called by drain() with nothing left waiting: the armed re-check has nothing to do.
    if (!this.#pongOwed && !this.#writesWait() && this.#pollTimer !== undefined) {
      clearTimeout(this.#pollTimer);
      this.#pollTimer = undefined;
    }
  }

  #finished(stream: Stream, provoked: boolean): void {
    const streams = this.#streams;
    if (streams?.get(stream.id) !== stream) return;
    streams.delete(stream.id);
    this.#waiting?.delete(stream);
    if (stream.id % 2 === this.#remoteParity) {
      this.#remoteActive--;
      if (provoked) this.#countReset();
    }
    if (streams.size === 0) {
      // An idle session (an idle peer's memory) holds no table.
      this.#streams = undefined;
      this.#wakeIdle();
    }
  }

  /**
   * The reset budget (`maxResetRate` within any 1000 ms; docs/security.md, "The reset budget"):
   * every reset the other side can cause at will counts here, and one more than the budget
   * closes with 1008 (acceptor) / 4002 (dialer). Counted:
   * - a RESET the other side sent on a live stream it opened (Rapid Reset, CVE-2023-44487);
   * - a reset this side sent on a live stream the other side opened because of its input, through
   *   `control.fail(stream, code, message, true)`: `decode`, `flow` (MadeYouReset,
   *   CVE-2025-8671);
   * - a refusal of an OPEN through `#refuse`: `decode` (undecodable or too deep),
   *   `refused` (no handler, over `maxStreams`).
   * A new reset code provoked by the other side joins with one line: `control.fail(…, true)` for
   * a stream that exists, `this.#refuse(…)` for an OPEN that never becomes one.
   */
  #countReset(): void {
    const max = this.#limits.maxResetRate;
    const now = this.#now();
    const times = (this.#resetTimes ??= []);
    if (times.length < max) {
      times.push(now);
      return;
    }
    // A ring of the last `max` reset times: the oldest is at #resetIndex.
    const oldest = times[this.#resetIndex];
    times[this.#resetIndex] = now;
    this.#resetIndex = (this.#resetIndex + 1) % max;
    if (now - oldest < 1000) {
      this.close(
        SESSION_CLOSE[this.side].flood,
        `more than ${max} streams reset within one second`,
      );
    }
  }

  #report(error: unknown): void {
    const onError = this.#options.onError;
    if (onError === undefined) return;
    try {
      onError(error);
    } catch (thrown) {
      console.error('muxws: onError threw', thrown);
    }
  }

  #emit<T>(callback: (value: T) => unknown, value: T): void {
    try {
      callback(value);
    } catch (error) {
      this.#report(error);
    }
  }
}

/**
 * The message length (characters or bytes) up to which no payload of it can nest deeper than
 * `maxDepth`, so the session skips the depth walk for such messages: most messages are short, and
 * the walk is a visible part of their cost. The JSON codec spends at least 2 characters per level
 * (`[` and `]`); every other codec gets every payload walked (0), since the session cannot know
 * what one level costs in its encoding.
 */
function depthSkipOf(codec: Codec, maxDepth: number): number {
  return codec === jsonCodec ? 2 * maxDepth : 0;
}

/**
 * Encodes a PUBLISH frame once, for `sendEncoded()` to every peer.
 *
 * @throws {TypeError} When `tag` is not 1 to 256 characters, `headers` not a plain object or
 * null, or the codec cannot encode the payload.
 */
export function encodePublish(
  codec: Codec,
  tag: string,
  payload: unknown,
  headers?: Record<string, unknown> | null,
): string | Uint8Array {
  if (!isTag(tag)) {
    throw new TypeError(
      `Cannot publish as "tag" must be a string of 1 to 256 characters: current value is ${
        describe(tag)
      }`,
    );
  }
  const h = headers ?? null;
  if (!isHeaders(h)) {
    throw new TypeError(
      `Cannot publish as "headers" must be a plain object or null: current value is ${describe(h)}`,
    );
  }
  return codec.encode([PUBLISH, tag, h, payload]);
}
