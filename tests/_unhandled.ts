/**
 * Makes an unhandled promise rejection show inside the test that caused it, and records it.
 *
 * ```ts ignore
 * using unhandled = watchUnhandled();
 * somethingThatMayLeaveARejection();
 * await unhandled.settle();
 * assert.deepEqual(unhandled.reasons, []);
 * ```
 *
 * Deno, Bun and node:test fail the running test on an unhandled rejection, but only once it is
 * detected: after the microtasks of the current turn. A test that ends before then passes, and
 * the rejection lands on a later test or nowhere. {@linkcode UnhandledWatch.settle} lets a few
 * rounds of microtasks run and waits two turns of the event loop (zero-delay timeouts on the real
 * timers), so a rejection left by the code under test is detected while its test still runs;
 * `reasons` (Deno: the `unhandledrejection` event of `globalThis`; Node and Bun: the
 * `unhandledRejection` event of `process`) names it in the test's own assertion as well.
 */
import process from 'node:process';

/** The watch {@linkcode watchUnhandled} returns. */
export interface UnhandledWatch extends Disposable {
  /** The reasons of the rejections nobody handled, in order. */
  readonly reasons: unknown[];
  /** Lets pending microtasks run and waits one event-loop turn, so every report has arrived. */
  settle(): Promise<void>;
}

const realSetTimeout = globalThis.setTimeout;

/** Starts recording unhandled rejections; disposing the watch stops it. */
export function watchUnhandled(): UnhandledWatch {
  const reasons: unknown[] = [];
  let stop: () => void;
  if ('Deno' in globalThis) {
    const listener = (event: Event) => {
      event.preventDefault();
      reasons.push((event as PromiseRejectionEvent).reason);
    };
    globalThis.addEventListener('unhandledrejection', listener);
    stop = () => globalThis.removeEventListener('unhandledrejection', listener);
  } else {
    const listener = (reason: unknown) => reasons.push(reason);
    process.on('unhandledRejection', listener);
    stop = () => process.off('unhandledRejection', listener);
  }
  return {
    reasons,
    async settle() {
      for (let turn = 0; turn < 2; turn++) {
        for (let i = 0; i < 10; i++) await Promise.resolve();
        await new Promise((resolve) => realSetTimeout(resolve, 0));
      }
    },
    [Symbol.dispose]: stop,
  };
}
