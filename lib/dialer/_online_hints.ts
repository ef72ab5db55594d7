/**
 * Online/offline hints: where the global scope has `navigator.onLine` and `addEventListener`
 * (browsers, workers), `online` and `offline` events reach the dialer, which shortens a redial wait
 * or probes the heartbeat. Elsewhere nothing is listened to. Internal.
 *
 * @module
 */

/**
 * Listens for the global `online` and `offline` events, when this runtime has them.
 *
 * @param onOnline Called on each `online` event.
 * @param onOffline Called on each `offline` event.
 * @returns A function that removes both listeners, or `undefined` when none was added.
 */
export function watchOnline(
  onOnline: () => void,
  onOffline: () => void,
): (() => void) | undefined {
  const scope = globalThis as {
    addEventListener?: (type: string, listener: () => void) => void;
    removeEventListener?: (type: string, listener: () => void) => void;
    navigator?: { onLine?: unknown };
  };
  const add = scope.addEventListener;
  const remove = scope.removeEventListener;
  if (
    typeof add !== 'function' || typeof remove !== 'function' ||
    typeof scope.navigator?.onLine !== 'boolean'
  ) return undefined;
  add.call(scope, 'online', onOnline);
  add.call(scope, 'offline', onOffline);
  return () => {
    remove.call(scope, 'online', onOnline);
    remove.call(scope, 'offline', onOffline);
  };
}
