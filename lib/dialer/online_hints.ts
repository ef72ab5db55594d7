/**
 * Online and offline hints, imported by name: {@linkcode onlineHints} makes the value of
 * `connect()`'s `onlineHints` option. A bundle that never calls it carries none of its code.
 *
 * @module
 */
import type { OnlineHints } from './dialer_types.ts';
import { featureValue, type HintsFactory } from './_features.ts';
import { watchOnline } from './_online_hints.ts';

/**
 * Online and offline hints, for `connect()`'s `onlineHints` option. Where the global scope has
 * `navigator.onLine` and `addEventListener` (browsers, workers), an `online` event while
 * reconnecting replaces a longer redial wait with a short jittered one (`serviceRestartDelayMs`),
 * and an `offline` event while open probes the heartbeat at once. Elsewhere nothing is listened
 * to. The listeners are removed when the connection closes for good.
 *
 * @returns The value of the `onlineHints` option.
 *
 * @example Redial as soon as the browser is back online
 * ```ts
 * import { connect, onlineHints } from '@muxws/core';
 * import assert from 'node:assert/strict';
 *
 * const options = { onlineHints: onlineHints() };
 * assert.equal(options.onlineHints.feature, 'onlineHints');
 * // await connect('wss://example.com/ws', options);
 * assert.equal(typeof connect, 'function');
 * ```
 */
export function onlineHints(): OnlineHints {
  const factory: HintsFactory = watchOnline;
  return featureValue<OnlineHints>('onlineHints', factory);
}
