/**
 * Counts the timers and the global `online`/`offline` listeners created while installed, for the
 * hostile-input tests and the chaos run that assert none is left after every connection closed.
 * It wraps `setTimeout`, `clearTimeout`, `setInterval`, `clearInterval`, `addEventListener` and
 * `removeEventListener` on `globalThis`; disposing restores them.
 *
 * ```ts ignore
 * using timers = trackTimers();
 * // ... connect, fault, close ...
 * assert.equal(timers.pending, 0);
 * ```
 */

/** Tracks timers created through the globals while installed; dispose restores them. */
export interface TimerTracker extends Disposable {
  /** Timers created since install that neither fired nor were cleared. */
  readonly pending: number;
  /** Global `online`/`offline` listeners added minus removed since install. */
  readonly listeners: number;
}

export function trackTimers(): TimerTracker {
  const g = globalThis as unknown as Record<string, unknown>;
  const saved = {
    setTimeout: g.setTimeout,
    clearTimeout: g.clearTimeout,
    setInterval: g.setInterval,
    clearInterval: g.clearInterval,
    addEventListener: g.addEventListener,
    removeEventListener: g.removeEventListener,
  };
  const live = new Set<unknown>();
  let listeners = 0;
  const realSet = saved.setTimeout as (fn: () => void, ms?: number) => unknown;
  const realClear = saved.clearTimeout as (handle: unknown) => void;
  const realSetInterval = saved.setInterval as (fn: () => void, ms?: number) => unknown;
  const realClearInterval = saved.clearInterval as (handle: unknown) => void;
  g.setTimeout = (fn: (...args: unknown[]) => void, ms?: number, ...args: unknown[]) => {
    const handle: unknown = realSet(() => {
      live.delete(handle);
      fn(...args);
    }, ms);
    live.add(handle);
    return handle;
  };
  g.clearTimeout = (handle: unknown) => {
    live.delete(handle);
    realClear(handle);
  };
  g.setInterval = (fn: (...args: unknown[]) => void, ms?: number, ...args: unknown[]) => {
    const handle = realSetInterval(() => fn(...args), ms);
    live.add(handle);
    return handle;
  };
  g.clearInterval = (handle: unknown) => {
    live.delete(handle);
    realClearInterval(handle);
  };
  if (typeof saved.addEventListener === 'function') {
    const add = saved.addEventListener as (...args: unknown[]) => void;
    const remove = saved.removeEventListener as (...args: unknown[]) => void;
    g.addEventListener = function (this: unknown, type: string, ...rest: unknown[]) {
      if (type === 'online' || type === 'offline') listeners++;
      return add.call(this ?? globalThis, type, ...rest);
    };
    g.removeEventListener = function (this: unknown, type: string, ...rest: unknown[]) {
      if (type === 'online' || type === 'offline') listeners--;
      return remove.call(this ?? globalThis, type, ...rest);
    };
  }
  return {
    get pending() {
      return live.size;
    },
    get listeners() {
      return listeners;
    },
    [Symbol.dispose]() {
      Object.assign(g, saved);
    },
  };
}
