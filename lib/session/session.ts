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
 * This file composes the session's parts and checks what the caller hands it:
 * - `_session_options.ts`: the sink, options and GOAWAY types (re-exported here);
 * - `_session_streams.ts`: the stream table, ids, the socket (sending, congestion), the window
 *   and reset budgets, containment and the end;
 * - `_receive.ts`: decoding a received message and dispatching its frame;
 * - `socket_wait.ts`: writes and PONGs waiting for `bufferedAmount` to fall;
 * - `_reset_budget.ts`: the reset-rate ring.
 *
 * The layers stack: `Session` extends `Receiver`, which extends `SessionStreams`, so each
 * layer's state and methods are the session's own, with no forwarding between them.
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
import { closeCodeOf } from '../wire/codes.ts';
import { describe, mustBe } from '../util/describe.ts';
import {
  FLAG_END,
  FLAG_HELLO,
  GOAWAY,
  isHeaders,
  isResetCode,
  isStreamId,
  OPEN,
  overLimit,
  PING,
} from '../wire/frame.ts';
import { Receiver, type SessionPolicy } from './_receive.ts';
import { MUXWS, reservedKeyMessage, reservedKeyOf, type WithMuxws } from '../wire/reserved.ts';
import type { SessionOptions, SessionSink } from './_session_options.ts';
import type { Codec } from '../wire/codec.ts';
import { control, type OpenOptions, type RequestOptions, Stream } from './stream.ts';
import { encodeError } from '../util/value_path.ts';

export type { GoAway, SessionOptions, SessionSink } from './_session_options.ts';
export type { SessionPolicy } from './_receive.ts';
export { encodePublish } from '../wire/publish.ts';
export { SOCKET_POLL_MS } from './socket_wait.ts';
export { WINDOW_BUDGET } from './_session_streams.ts';

const EMPTY = Promise.resolve();
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
  return limits !== undefined && RESOLVED.has(limits)
    ? limits as Readonly<Limits>
    : sessionLimits(limits);
}

/**
 * The multiplexer both sides run (see the module doc and docs/design/session.md). It extends
 * {@linkcode Receiver} (receiving and dispatching), which extends `SessionStreams` (the stream
 * table and the socket), and adds the API that opens streams and sends PING. Its streams hold
 * the session itself as their host. It checks nothing its constructor is handed (the parameters
 * are `Receiver`'s: the sink, the options, the resolved limits and the first stream id): the
 * dialer builds one from options it checked itself, so a `connect` bundle carries neither the
 * checks nor the acceptor's API of {@linkcode Session}.
 */
export class SessionCore extends Receiver {
  /**
   * The transport closed. Every open stream fails with `connection_lost`; `onClose` fires. A
   * code of 0 or none (some runtimes report a failed connection so) counts as 1006
   * (WSM-WIRE-009).
   */
  closed(code: number, reason: string): void {
    this.end(closeCodeOf(code), typeof reason === 'string' ? reason : '', false);
  }

  /**
   * Opens a stream (WSM-STR-001): the OPEN is sent before this returns. Reserved headers (keys
   * starting with `:`) come only from the options' {@linkcode MUXWS} part.
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
   * Opens the dialer's hello: stream 1 with END and the HELLO flag (WSM-APP-001), as
   * {@linkcode Session.open} does otherwise; `reserved` headers (a redial's `:resume`) are
   * muxws's own, sent with the application's.
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
    if (this.isClosed) {
      throw new NotConnectedError('Cannot open a stream: the connection has ended');
    }
    if (this.goAwayReceived !== undefined) {
      throw new NotConnectedError('Cannot open a stream: the other side sent GOAWAY');
    }
    let headers = options?.headers ?? null;
    if (headers !== null) {
      if (!isHeaders(headers)) {
        throw new TypeError(
          mustBe('open a stream', 'headers', 'a plain object or null', headers),
        );
      }
      const reserved = reservedKeyOf(headers);
      if (reserved !== undefined) {
        throw new TypeError(reservedKeyMessage('Cannot open a stream', reserved));
      }
    }
    if (muxws?.headers !== undefined) headers = { ...muxws.headers, ...headers };
    const end = endOption ?? false;
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
    const id = this.nextStreamId;
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
   * Opens a stream with END and resolves with the first message of the answer (WSM-STR-005).
   *
   * @returns The first message, or `undefined` when the other side ended without one.
   * @throws Rejects with `StreamResetError` on reset or loss, `TimeoutError` after
   * `timeoutMs`, and what {@linkcode Session.open} throws.
   */
  request(payload: unknown, options?: WithMuxws<RequestOptions>): Promise<unknown> {
    const timeoutMs = options?.timeoutMs;
    if (
      timeoutMs !== undefined &&
      (typeof timeoutMs !== 'number' || !(timeoutMs >= 0) || !Number.isFinite(timeoutMs))
    ) {
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

/**
 * One connection's multiplexer as the acceptor (and a test) makes it: {@linkcode SessionCore}
 * with its options checked, and the acceptor's API: GOAWAY, `idle()` and a PUBLISH encoded once.
 * What it refuses of what arrives beyond the frame checks and limits (after its GOAWAY, before
 * the hello, a PUBLISH from a dialer) is the {@linkcode SessionPolicy} its maker hands it.
 */
export class Session extends SessionCore {
  /** True once this side sent GOAWAY. */
  #goingAway = false;
  #idle: (() => void)[] | undefined;

  /**
   * Creates the session over an open transport, with `policy`'s rules for what arrives (the
   * acceptor's); without one, every OPEN and PUBLISH that passes the frame checks is taken.
   *
   * @throws {TypeError} When `side` or `codec` is invalid; {@linkcode resolveLimits}'s errors.
   */
  constructor(sink: SessionSink, options: SessionOptions, policy?: SessionPolicy) {
    if (options?.side !== 'dialer' && options?.side !== 'acceptor') {
      throw new TypeError(
        mustBe('create Session', 'side', '"dialer" or "acceptor"', options?.side),
      );
    }
    const codec: Codec = options.codec;
    if (
      // An object or a function (`jsonCodec` is both) with `encode` and `decode`.
      typeof codec?.encode !== 'function' || typeof codec.decode !== 'function'
    ) {
      throw new TypeError(
        mustBe('create Session', 'codec', 'a Codec', codec),
      );
    }
    const limits = sharedLimits(options.limits);
    const parity = options.side === 'dialer' ? 1 : 0;
    const first = options.firstStreamId ?? 2 - parity;
    if (!isStreamId(first) || first % 2 !== parity) {
      throw new RangeError(
        mustBe(
          'create Session',
          'firstStreamId',
          `a positive safe integer of the ${options.side}'s parity (${
            parity === 1 ? 'odd' : 'even'
          })`,
          first,
        ),
      );
    }
    super(sink, options, limits, first, policy);
  }

  /** True once this side sent GOAWAY: a policy refuses the other side's later OPENs. */
  get goingAway(): boolean {
    return this.#goingAway;
  }

  /** Resolves when no stream is open (at once when none is) or the session ends. */
  idle(): Promise<void> {
    if (this.isClosed || this.activeStreams === 0) return EMPTY;
    return new Promise<void>((resolve) => (this.#idle ??= []).push(resolve));
  }

  override finished(stream: Stream, provoked: boolean): void {
    super.finished(stream, provoked);
    if (this.activeStreams === 0) this.#wakeIdle();
  }

  override end(code: number, reason: string, local: boolean): void {
    super.end(code, reason, local);
    this.#wakeIdle();
  }

  /**
   * Sends GOAWAY with `lastId` = the highest id the other side opened; the policy refuses the
   * other side's later OPENs with `refused`.
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
        mustBe('send GOAWAY', 'message', 'a string', message),
      );
    }
    if (!Number.isSafeInteger(spreadMs) || spreadMs < 0) {
      throw new RangeError(
        mustBe('send GOAWAY', 'spreadMs', 'a non-negative integer', spreadMs),
      );
    }
    this.#goingAway = true;
    this.send(this.codec.encode([GOAWAY, this.highestRemote, code, message, spreadMs]));
  }

  #wakeIdle(): void {
    const idle = this.#idle;
    if (idle === undefined) return;
    this.#idle = undefined;
    for (const resolve of idle) resolve();
  }

  /**
   * Sends one already-encoded message (a PUBLISH encoded once for many peers).
   *
   * @returns False, sending nothing, when the session ended or the sink's `bufferedAmount` is
   * above `highWaterMark`.
   */
  sendEncoded(data: string | Uint8Array): boolean {
    if (this.isClosed || this.congested()) return false;
    this.send(data);
    return true;
  }
}
