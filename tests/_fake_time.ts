/**
 * Fake time for tests: `@sinonjs/fake-timers` installed over the globals, restored on dispose.
 *
 * ```ts ignore
 * using clock = fakeTime();
 * const done = later(1000);
 * await clock.tickAsync(1000);
 * assert.equal(clock.countTimers(), 0);
 * ```
 *
 * Fakes `setTimeout`, `clearTimeout`, `setInterval`, `clearInterval` and `Date`, starting at
 * `now` (default 1_700_000_000_000, so epoch arithmetic is visible in assertions). Microtasks,
 * `queueMicrotask` and `performance` stay real, so promises settle as usual.
 */
import * as FakeTimers from '@sinonjs/fake-timers';

/** A fake clock that restores the real timers when disposed. */
export type FakeClock = FakeTimers.Clock & Disposable;

/** Installs fake timers over the globals; `using clock = fakeTime()` restores them. */
export function fakeTime(now: number = 1_700_000_000_000): FakeClock {
  const clock = FakeTimers.install({
    now,
    toFake: ['setTimeout', 'clearTimeout', 'setInterval', 'clearInterval', 'Date'],
  }) as FakeClock;
  clock[Symbol.dispose] = () => clock.uninstall();
  return clock;
}
