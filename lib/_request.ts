/**
 * {@linkcode PendingRequest}: the answer a `request()` waits for (WSM-STR-005): the first message
 * of the stream, or `undefined` when the other side ends it without one; with `timeoutMs`, one
 * timer that rejects with `TimeoutError` and has the stream reset with `timeout`. The stream makes
 * one when a request must wait; the timer is cleared on every outcome.
 *
 * Internal: imported from `lib/` only.
 *
 * @module
 */
import { TimeoutError } from './errors.ts';

/** One request waiting for its answer (see the module doc). */
export class PendingRequest {
  /** Settles with the answer, or rejects with the stream's error or `TimeoutError`. */
  readonly promise: Promise<unknown>;
  #resolve!: (value: unknown) => void;
  #reject!: (error: unknown) => void;
  #timer: ReturnType<typeof setTimeout> | undefined;

  /**
   * @param id The stream's id, for the timeout's message.
   * @param timeoutMs Milliseconds to wait; undefined waits as long as the stream lives.
   * @param onTimeout Called after the promise rejected with `error` (the `TimeoutError`): resets
   * the stream with `message`.
   */
  constructor(
    id: number,
    timeoutMs: number | undefined,
    onTimeout: (message: string, error: TimeoutError) => void,
  ) {
    this.promise = new Promise<unknown>((resolve, reject) => {
      this.#resolve = resolve;
      this.#reject = reject;
    });
    if (timeoutMs !== undefined) {
      this.#timer = setTimeout(() => {
        this.#timer = undefined;
        const error = new TimeoutError(`Stream ${id} got no answer within ${timeoutMs} ms`);
        this.#reject(error);
        onTimeout(`No answer within ${timeoutMs} ms`, error);
      }, timeoutMs);
    }
  }

  /** The answer arrived (`undefined` for an END without a message). */
  answer(value: unknown): void {
    clearTimeout(this.#timer);
    this.#resolve(value);
  }

  /** The stream failed first: the request rejects with `error`. */
  fail(error: unknown): void {
    clearTimeout(this.#timer);
    this.#reject(error);
  }
}
