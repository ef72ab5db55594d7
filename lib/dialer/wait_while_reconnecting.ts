/**
 * Requests that wait for the connection, imported by name: {@linkcode waitWhileReconnecting}
 * makes the value of `connect()`'s `whileReconnecting` option. A bundle that never calls it
 * carries none of its code.
 *
 * @module
 */
import type { WaitWhileReconnecting, WaitWhileReconnectingOptions } from './dialer_types.ts';
import { featureValue, type WaitingFactory } from './_features.ts';
import { WaitingRequests } from './_waiting.ts';
import { mustBe } from '../util/describe.ts';

/**
 * Requests that wait for the connection, for `connect()`'s `whileReconnecting` option. A
 * `request()` (or `call()`) made while the connection is `connecting` or `reconnecting`, or
 * drains after a GOAWAY, is held until the next establishment and sent then, bounded by its
 * timeout (on expiry it rejects with `TimeoutError` and nothing is sent) and by `maxWaiting`;
 * aborting its signal removes it. A request already sent is never sent again: lost with its
 * connection, it rejects with `StreamResetError` `connection_lost` (the acceptor may have
 * processed it). `open()` is synchronous, so a stream cannot wait: it throws
 * `NotConnectedError`. Without the option, such a request rejects at once with
 * `NotConnectedError`.
 *
 * @param options `maxWaiting`, optional.
 * @returns The value of the `whileReconnecting` option.
 * @throws {TypeError} When `maxWaiting` is not a number.
 * @throws {RangeError} When `maxWaiting` is not a safe integer of at least 0.
 *
 * @example Hold requests while reconnecting, at most 100 at once
 * ```ts
 * import { connect, waitWhileReconnecting } from '@muxws/core';
 * import assert from 'node:assert/strict';
 *
 * const whileReconnecting = waitWhileReconnecting({ maxWaiting: 100 });
 * assert.equal(whileReconnecting.feature, 'whileReconnecting');
 * // await connect('wss://example.com/ws', { whileReconnecting });
 * assert.throws(() => waitWhileReconnecting({ maxWaiting: -1 }), RangeError);
 * assert.equal(typeof connect, 'function');
 * ```
 */
export function waitWhileReconnecting(
  options: WaitWhileReconnectingOptions = {},
): WaitWhileReconnecting {
  const what = 'wait while reconnecting';
  if (options === null || typeof options !== 'object') {
    throw new TypeError(mustBe(what, 'options', 'an object', options));
  }
  const maxWaiting = options.maxWaiting ?? 1000;
  if (typeof maxWaiting !== 'number') {
    throw new TypeError(mustBe(what, 'maxWaiting', 'a number', maxWaiting));
  }
  if (!Number.isSafeInteger(maxWaiting) || maxWaiting < 0) {
    throw new RangeError(mustBe(what, 'maxWaiting', 'a safe integer of at least 0', maxWaiting));
  }
  const factory: WaitingFactory = (now) => new WaitingRequests(maxWaiting, now);
  return featureValue<WaitWhileReconnecting>('whileReconnecting', factory);
}
