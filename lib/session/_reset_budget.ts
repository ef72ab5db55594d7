/**
 * The reset budget of one session (`maxResetRate` within any 1000 ms; docs/security.md, "The
 * reset budget"): every reset the other side can cause at will is counted here, and one more
 * than the budget within a second tells the session to close (1008 on the acceptor, 4002 on the
 * dialer). What counts is decided by the session's parts (`session.ts` for resets of
 * live streams, `_receive.ts` for refused OPENs); this file only keeps the times.
 *
 * Private to `lib/session/`.
 *
 * @module
 */

/** How long the budget's window is, in ms. */
export const RESET_WINDOW_MS = 1000;

/**
 * The times of the last `max` counted resets, as a ring: the oldest is overwritten by the newest,
 * so the budget costs `max` numbers at most, allocated as resets are counted.
 */
export class ResetBudget {
  readonly #max: number;
  readonly #now: () => number;
  readonly #times: number[] = [];
  /** Where the oldest time sits once the ring is full. */
  #oldest = 0;

  /**
   * @param max The resets allowed within {@linkcode RESET_WINDOW_MS}: a positive integer.
   * @param now The clock, in ms.
   */
  constructor(max: number, now: () => number = Date.now) {
    this.#max = max;
    this.#now = now;
  }

  /**
   * Counts one reset now.
   *
   * @returns True when it is one more than `max` within {@linkcode RESET_WINDOW_MS}.
   */
  count(): boolean {
    const now = this.#now();
    const times = this.#times;
    if (times.length < this.#max) {
      times.push(now);
      return false;
    }
    const oldest = times[this.#oldest];
    times[this.#oldest] = now;
    this.#oldest = (this.#oldest + 1) % this.#max;
    return now - oldest < RESET_WINDOW_MS;
  }
}
