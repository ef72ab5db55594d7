/**
 * The `ready` of a feature that waits for its first answer (a subscription, a presence follower):
 * a promise settled once, and the listener of the feature's abort signal, removed once.
 *
 * Internal: imported from `lib/dialer/` only.
 *
 * @module
 */

/** A `ready` promise and an abort signal's listener: see the module's documentation. */
export class Ready {
  /** Resolves at the first answer; rejects when the feature ends before it. Never unhandled. */
  readonly promise: Promise<void>;
  #settle: ((error?: unknown) => void) | undefined;
  #removeSignal: (() => void) | undefined;

  /** Calls `onAbort` once `signal` aborts, until {@linkcode Ready.detach}. */
  constructor(signal: AbortSignal | undefined, onAbort: () => void) {
    this.promise = new Promise<void>((resolve, reject) => {
      this.#settle = (error?: unknown) => error === undefined ? resolve() : reject(error);
    });
    this.promise.catch(() => {});
    if (signal) {
      signal.addEventListener('abort', onAbort, { once: true });
      this.#removeSignal = () => signal.removeEventListener('abort', onAbort);
    }
  }

  /** Whether `promise` has not settled yet. */
  get pending(): boolean {
    return this.#settle !== undefined;
  }

  /** Resolves `promise`, or rejects it with `error`; only the first call counts. */
  settle(error?: unknown): void {
    const settle = this.#settle;
    this.#settle = undefined;
    settle?.(error);
  }

  /** Stops listening to the abort signal. */
  detach(): void {
    this.#removeSignal?.();
    this.#removeSignal = undefined;
  }
}
