/**
 * Writes that wait for the socket: while `bufferedAmount` is above `highWaterMark`, a stream's
 * write and an owed PONG wait here, and one session-wide timer re-checks every
 * {@linkcode SOCKET_POLL_MS} (a Bun `drain` re-checks at once). The timer exists only while
 * something waits, so an idle session holds none.
 *
 * Internal: imported from `lib/` only.
 *
 * @module
 */
import { control, type Stream } from './stream.ts';

/** How often a write waiting for `bufferedAmount` to fall re-checks, in ms. */
export const SOCKET_POLL_MS = 10;

/** What the wait needs from its session. */
export interface SocketWaitHost {
  /** True once the session ended: nothing more is flushed. */
  readonly isClosed: boolean;
  /** True while the socket's `bufferedAmount` is above the high-water mark. */
  congested(): boolean;
  /** Sends the PONG that was owed. */
  sendPong(): void;
}

/** The streams and the PONG waiting for one session's socket, and the timer that re-checks. */
export class SocketWait {
  readonly #host: SocketWaitHost;
  /** Streams whose write waits: made by the first that waits, dropped by a poll. */
  #waiting: Set<Stream> | undefined;
  #pongOwed = false;
  #timer: ReturnType<typeof setTimeout> | undefined;

  constructor(host: SocketWaitHost) {
    this.#host = host;
  }

  /** A write of `stream` waits: flush it once the socket drained. */
  wait(stream: Stream): void {
    (this.#waiting ??= new Set()).add(stream);
    this.#arm();
  }

  /**
   * A PING arrived while the socket is congested: one PONG is owed, sent once it falls. Every
   * PING is answered, but a peer that floods PINGs and never reads cannot grow this side's send
   * buffer by a PONG each.
   */
  owePong(): void {
    this.#pongOwed = true;
    this.#arm();
  }

  /** `stream` finished: it no longer waits. */
  forget(stream: Stream): void {
    this.#waiting?.delete(stream);
  }

  /** `bufferedAmount` may have fallen: re-check now, if anything waits. */
  drain(): void {
    if (this.#writesWait() || this.#pongOwed) this.#poll();
  }

  /** The session ended: clears the timer and forgets every waiting stream. */
  stop(): void {
    if (this.#timer !== undefined) {
      clearTimeout(this.#timer);
      this.#timer = undefined;
    }
    this.#waiting = undefined;
  }

  /** True while some stream's write waits for the socket. */
  #writesWait(): boolean {
    return this.#waiting !== undefined && this.#waiting.size > 0;
  }

  /** Re-checks in SOCKET_POLL_MS: armed only while a write or a PONG waits. */
  #arm(): void {
    this.#timer ??= setTimeout(() => {
      this.#timer = undefined;
      this.#poll();
    }, SOCKET_POLL_MS);
  }

  #poll(): void {
    const host = this.#host;
    if (this.#pongOwed) {
      if (host.congested()) this.#arm();
      else {
        this.#pongOwed = false;
        host.sendPong();
      }
    }
    const waiting = this.#waiting;
    this.#waiting = undefined;
    if (waiting !== undefined) {
      for (const stream of waiting) {
        if (host.isClosed) return;
        // No credit: the stream's waiting writes retry.
        control.credit(stream, 0);
      }
    }
    // Called by drain() with nothing left waiting: the armed re-check has nothing to do.
    if (!this.#pongOwed && !this.#writesWait() && this.#timer !== undefined) {
      clearTimeout(this.#timer);
      this.#timer = undefined;
    }
  }
}
