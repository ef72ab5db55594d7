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
 * - `_socket_wait.ts`: writes and PONGs waiting for `bufferedAmount` to fall;
 * - `_reset_budget.ts`: the reset-rate ring.
 *
 * Callback order: state is updated first, then user code runs through one containment point
 * (`_contain.ts`), so a callback that throws or returns a thenable that rejects is reported to
 * `onError` (and an `onError` that throws or rejects to `console.error`; without `onError`,
 * errors go to `console.error`) and never breaks the session. When the session ends, every
 * stream fails with `connection_lost` first, then `onClose` fires once.
 *
 * @module
 */
import { NotConnectedError } from './errors.ts';
import { type Limits, resolveLimits } from './limits.ts';
import { closeCodeOf } from './_codes.ts';
import { describe } from './_describe.ts';
import {
  FLAG_END,
  FLAG_HELLO,
  GOAWAY,
  isHeaders,
  isResetCode,
  isStreamId,
  isTag,
  OPEN,
  overLimit,
  PING,
  PUBLISH,
} from './_frame.ts';
import { Receiver } from './_receive.ts';
import type { GoAway, SessionOptions, SessionSink } from './_session_options.ts';
import { SessionStreams } from './_session_streams.ts';
import type { Codec } from './codec.ts';
import { control, type OpenOptions, type RequestOptions, Stream } from './stream.ts';

export type { GoAway, SessionOptions, SessionSink } from './_session_options.ts';
export { SOCKET_POLL_MS } from './_socket_wait.ts';
export { WINDOW_BUDGET } from './_session_streams.ts';

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
  readonly #streams: SessionStreams;
  readonly #receiver: Receiver;
  #lastReceivedAt: number;

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
    const codec: Codec = options.codec;
    if (
      typeof codec !== 'object' || codec === null || typeof codec.encode !== 'function' ||
      typeof codec.decode !== 'function'
    ) {
      throw new TypeError(
        `Cannot create Session as "codec" must be a Codec: current value is ${describe(codec)}`,
      );
    }
    this.side = options.side;
    const limits = sharedLimits(options.limits);
    const parity = this.side === 'dialer' ? 1 : 0;
    const first = options.firstStreamId ?? 2 - parity;
    if (!isStreamId(first) || first % 2 !== parity) {
      throw new RangeError(
        `Cannot create Session as "firstStreamId" must be a positive safe integer of the ${this.side}'s parity (${
          parity === 1 ? 'odd' : 'even'
        }): current value is ${describe(first)}`,
      );
    }
    this.#streams = new SessionStreams(sink, options, limits, first);
    this.#receiver = new Receiver(this.#streams, options);
    this.#lastReceivedAt = this.#streams.now();
  }

  /** True once the session ended (closed by either side or the transport). */
  get isClosed(): boolean {
    return this.#streams.isClosed;
  }

  /** The GOAWAY the other side sent, if any. */
  get goAwayReceived(): GoAway | undefined {
    return this.#receiver.goAwayReceived;
  }

  /** Streams not yet finished in both directions nor reset (both sides' streams). */
  get activeStreams(): number {
    return this.#streams.size;
  }

  /** `now()` when the last message arrived (at construction before any). */
  get lastReceivedAt(): number {
    return this.#lastReceivedAt;
  }

  /** The id the next stream this side opens will take. */
  get nextStreamId(): number {
    return this.#streams.nextId;
  }

  /** Malformed messages counted so far on this connection. */
  get protocolErrors(): number {
    return this.#receiver.protocolErrors;
  }

  /** The resolved limits. */
  get limits(): Readonly<Limits> {
    return this.#streams.limits;
  }

  /**
   * Feeds one received WebSocket message. Never throws: malformed input is reported through
   * `onError` and counted, and the limits close the connection.
   */
  receive(data: string | ArrayBuffer | ArrayBufferView): void {
    if (this.#streams.isClosed) return;
    try {
      this.#lastReceivedAt = this.#streams.now();
      this.#receiver.receive(data);
    } catch (error) {
      // Only a bug lands here: every expected failure is handled where it happens.
      this.#streams.report(error);
    }
  }

  /** Closes the transport from this side, then ends the session as `closed()` does. */
  close(code: number, reason: string): void {
    this.#streams.close(code, reason);
  }

  /**
   * The transport closed. Every open stream fails with `connection_lost`; `onClose` fires. A
   * code of 0 or none (some runtimes report a failed connection so) counts as 1006
   * (WSM-WIRE-009).
   */
  closed(code: number, reason: string): void {
    this.#streams.end(closeCodeOf(code), typeof reason === 'string' ? reason : '', false);
  }

  /**
   * Opens a stream (WSM-STR-001): the OPEN is sent before this returns.
   *
   * @throws {NotConnectedError} After a GOAWAY was received or once the session ended.
   * @throws {TypeError} For bad options or a payload the codec cannot encode.
   * @throws {RangeError} When the OPEN is larger than `maxMessageBytes`.
   */
  open(payload: unknown, options?: OpenOptions): Stream {
    return this.#open(payload, options?.headers, options?.end, options?.signal, 0);
  }

  /**
   * Opens the dialer's hello: stream 1 with END and the HELLO flag (WSM-APP-001), as
   * {@linkcode Session.open} does otherwise.
   */
  openHello(payload: unknown, headers: Record<string, unknown> | null): Stream {
    return this.#open(payload, headers, true, undefined, FLAG_HELLO);
  }

  #open(
    payload: unknown,
    headersOption: Record<string, unknown> | null | undefined,
    endOption: boolean | undefined,
    signal: AbortSignal | undefined,
    flags: number,
  ): Stream {
    const streams = this.#streams;
    if (streams.isClosed) {
      throw new NotConnectedError('Cannot open a stream: the connection has ended');
    }
    if (this.#receiver.goAwayReceived !== undefined) {
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
    const id = streams.nextId;
    if (!Number.isSafeInteger(id)) {
      throw new NotConnectedError('Cannot open a stream: stream ids are exhausted');
    }
    if (signal?.aborted) {
      // Nothing is sent and no id is used: the stream is born reset with `cancel`.
      const stream = new Stream(streams, id, headers, payload, true, true);
      control.cancelUnsent(stream);
      return stream;
    }
    const data = streams.codec.encode([OPEN, id, (end ? FLAG_END : 0) + flags, headers, payload]);
    if (overLimit(data, streams.maxMessageBytes)) {
      throw new RangeError(
        `Cannot open a stream as its OPEN is larger than limits.maxMessageBytes (${streams.maxMessageBytes})`,
      );
    }
    const stream = new Stream(streams, id, headers, payload, end, false);
    streams.addLocal(stream);
    streams.send(data);
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
      stream = this.#open(payload, options?.headers, true, options?.signal, 0);
    } catch (error) {
      return Promise.reject(error);
    }
    return control.request(stream, timeoutMs);
  }

  /** Sends PING. A received PING is always answered with PONG by the session. */
  ping(): void {
    this.#streams.send(this.#streams.codec.encode([PING]));
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
    const streams = this.#streams;
    this.#receiver.goingAway();
    streams.send(streams.codec.encode([GOAWAY, streams.highestRemote, code, message, spreadMs]));
  }

  /**
   * Sends one already-encoded message (a PUBLISH encoded once for many peers).
   *
   * @returns False, sending nothing, when the session ended or the sink's `bufferedAmount` is
   * above `highWaterMark`.
   */
  sendEncoded(data: string | Uint8Array): boolean {
    const streams = this.#streams;
    if (streams.isClosed || streams.congested()) return false;
    streams.send(data);
    return true;
  }

  /** Tells the session `bufferedAmount` may have fallen (Bun `drain`); waiting writes re-check. */
  drain(): void {
    this.#streams.drain();
  }

  /** Resolves when `activeStreams` reaches 0 (at once when it is 0) or the session ends. */
  idle(): Promise<void> {
    return this.#streams.idle();
  }
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
