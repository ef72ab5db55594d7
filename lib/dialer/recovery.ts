/**
 * The dialer's side of recovery, imported by name: {@linkcode recovery} makes the value of
 * `connect()`'s `recovery` option. A bundle that never calls it carries none of its code.
 *
 * @module
 */
import type { DialerRecovery, DialerRecoveryOptions } from './dialer_types.ts';
import { featureValue, type RecoveryFactory } from './_features.ts';
import { Positions } from './_resume.ts';
import { callContained } from '../util/contain.ts';
import { mustBe } from '../util/describe.ts';

/**
 * The dialer's side of recovery, for `connect()`'s `recovery` option. With an acceptor that keeps
 * a `history`, a redial's hello says, per tag, the last broadcast this connection received; the
 * acceptor replays what it missed, in order, before live ones; every broadcast is handed to
 * `onPublish` at most once across reconnects (one whose `seq` is at or below its tag's last is
 * dropped); and `onRecovered` says, per tag, how many were replayed and whether some were lost.
 * Without the option, each broadcast goes to `onPublish` as it arrives (its `seq` still shown)
 * and a redial resumes nothing.
 *
 * @param options `onRecovered`, optional.
 * @returns The value of the `recovery` option.
 * @throws {TypeError} When `onRecovered` is not a function.
 *
 * @example Resume broadcasts across reconnects
 * ```ts
 * import { connect, recovery } from '@muxws/core';
 * import assert from 'node:assert/strict';
 *
 * const recovered: string[] = [];
 * const options = {
 *   recovery: recovery({ onRecovered: ({ tag, gap }) => void recovered.push(`${tag} ${gap}`) }),
 *   onPublish: ({ tag, seq }: { tag: string; seq?: number }) => console.log(tag, seq),
 * };
 * assert.equal(options.recovery.feature, 'recovery');
 * // await connect('wss://example.com/ws', options);
 * assert.equal(typeof connect, 'function');
 * ```
 */
export function recovery(options: DialerRecoveryOptions = {}): DialerRecovery {
  if (options === null || typeof options !== 'object') {
    throw new TypeError(mustBe('create recovery', 'options', 'an object', options));
  }
  const onRecovered = options.onRecovered;
  if (onRecovered !== undefined && typeof onRecovered !== 'function') {
    throw new TypeError(mustBe('create recovery', 'onRecovered', 'a function', onRecovered));
  }
  const factory: RecoveryFactory = (deliver, report) => {
    const positions = new Positions(
      deliver,
      (info) => callContained(report, onRecovered, info),
    );
    return {
      receive: (message) => positions.receive(message),
      // Nothing is known before the first connection, so only a redial resumes.
      resume: () => positions.resume(true),
    };
  };
  return featureValue<DialerRecovery>('recovery', factory);
}
