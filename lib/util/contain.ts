/**
 * Containment of user code: what a callback throws, and what the thenable it returns rejects with,
 * goes to the component's report and never escapes into its state machine or becomes an unhandled
 * rejection (which ends a Deno or Node process by default). A report is user code too: when it
 * throws or rejects, `console.error` gets the error.
 *
 * Internal: imported from `lib/` only, never re-exported.
 *
 * @module
 */

/** Where a contained error goes; may throw or return a thenable that rejects (both contained). */
export type Report = (error: unknown) => unknown;

/**
 * Calls `fn(a, b)` and contains it: a synchronous throw, or the rejection of a thenable it
 * returns, is handed to `report`. Does nothing when `fn` is undefined; never throws, and does not
 * wait for a returned thenable.
 *
 * @param report Receives what `fn` throws or rejects with.
 * @param fn The user's callback, or `undefined` when none is set.
 * @param a The callback's first argument.
 * @param b The callback's second argument, if it takes one.
 */
export function callContained<A, B = undefined>(
  report: Report,
  fn: ((a: A, b: B) => unknown) | undefined,
  a: A,
  b?: B,
): void {
  if (fn !== undefined) run(fn, a, b as B, report);
}

/**
 * Reports `error` to `onError(error, context)`, or to `console.error` when `onError` is not set.
 * An `onError` that throws or returns a thenable that rejects has that error go to
 * `console.error`. Never throws.
 *
 * @param onError The user's error callback, or `undefined` when none is set.
 * @param error The contained error.
 * @param context The callback's second argument (the acceptor's peer), if any.
 */
export function reportTo<C = undefined>(
  onError: ((error: unknown, context: C) => unknown) | undefined,
  error: unknown,
  context?: C,
): void {
  if (onError === undefined) lastResort(error);
  else run(onError, error, context as C, lastResort);
}

/** Calls `fn(a, b)`, handing a throw or a rejection to `report` (itself contained). */
function run<A, B>(fn: (a: A, b: B) => unknown, a: A, b: B, report: Report): void {
  try {
    const result = fn(a, b);
    // Reading `then` may throw too (a getter): it is inside the try.
    if (
      result !== null && (typeof result === 'object' || typeof result === 'function') &&
      typeof (result as PromiseLike<unknown>).then === 'function'
    ) {
      Promise.resolve(result as PromiseLike<unknown>).then(
        undefined,
        (error) => escalate(report, error),
      );
    }
  } catch (error) {
    escalate(report, error);
  }
}

/** Hands `error` to `report`; what `report` throws or rejects with goes to `console.error`. */
function escalate(report: Report, error: unknown): void {
  if (report === lastResort) lastResort(error);
  else run(report, error, undefined, lastResort);
}

/** Where a contained error goes when no `onError` is set: `console.error`. */
export function lastResort(error: unknown): void {
  console.error(error);
}
