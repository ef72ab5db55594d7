/**
 * What the streams of one session share, and what they call: the socket (a send that fails ends
 * the session; congestion against `highWaterMark`, and the wait of `socket_wait.ts`; replies
 * capped at `maxBufferedBytes`), the table
 * of open streams and the ids of both sides, the shared window budget, the reset budget of
 * `_reset_budget.ts`, containment of user code (`lib/util/contain.ts`), and the session's end (every
 * stream lost first, then `onClose` once).
 *
 * {@linkcode SessionStreams} is the {@linkcode StreamHost} every stream of the session holds:
 * one object per session, whose methods live on one shared prototype, rather than a closure per
 * host method per connection (an idle peer's memory, docs/performance.md).
 *
 * Private to `lib/session/`.
 *
 * @module
 */
import type { Codec } from '../wire/codec.ts';
import type { Limits } from './limits.ts';
import { CloseCode, SESSION_CLOSE } from '../wire/codes.ts';
import { callContained, lastResort, reportTo } from '../util/contain.ts';
import { PONG } from '../wire/frame.ts';
import { RequestDeadlines } from './_request.ts';
import { ResetBudget } from './_reset_budget.ts';
import type { SessionOptions, SessionSink } from './_session_options.ts';
import { SocketWait, type SocketWaitHost } from './socket_wait.ts';
import { control, type Stream, type StreamHost } from './stream.ts';

/**
 * Units of receive window one session's streams may grow, together, past `INITIAL_WINDOW` while
 * their readers keep up with bulk senders: bounds what a peer can make this side buffer beyond
 * the SPEC's per-stream window (docs/protocol.md, "Window growth").
 */
export const WINDOW_BUDGET: number = 1024 * 1024;

/** The stream table, the socket and the end of one session (see the module doc). */
export class SessionStreams implements StreamHost, SocketWaitHost {
  /** Which side this is. */
  readonly side: 'dialer' | 'acceptor';
  /** The connection's codec. */
  readonly codec: Codec;
  /** The resolved limits. */
  readonly limits: Readonly<Limits>;
  /** The largest message this side sends. */
  readonly maxMessageBytes: number;
  /** The parity of the ids the other side opens: 0 (even) on the dialer, 1 on the acceptor. */
  readonly remoteParity: number;
  /** The options the session was made with. */
  readonly options: SessionOptions;
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

  constructor(
    sink: SessionSink,
    options: SessionOptions,
    limits: Readonly<Limits>,
    firstStreamId: number,
  ) {
    this.side = options.side;
    this.codec = options.codec;
    this.limits = limits;
    this.maxMessageBytes = limits.maxMessageBytes;
    this.remoteParity = this.side === 'dialer' ? 0 : 1;
    this.#sink = sink;
    this.options = options;
    this.#now = options.now ?? Date.now;
    this.#nextId = firstStreamId;
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
    if (table === undefined || table.size === 0) this.#table = undefined;
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

  /** Ends the session: every open stream fails with `connection_lost`, then `onClose` fires. */
  end(code: number, reason: string, local: boolean): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#wait?.stop();
    // Taken first: the lost streams' finished() calls find no table and change nothing.
    const table = this.#table;
    const only = this.#only;
    this.#table = undefined;
    this.#only = undefined;
    if (only !== undefined) control.lost(only);
    if (table !== undefined) { for (const stream of table.values()) control.lost(stream); }
    this.#remoteActive = 0;
    this.emit(this.options.onClose, { code, reason, local });
  }
}
