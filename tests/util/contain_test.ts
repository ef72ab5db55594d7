import { test } from 'node:test';
import assert from 'node:assert/strict';
import { callContained, reportTo } from '../../lib/util/contain.ts';
import { watchUnhandled } from '../_unhandled.ts';

/** Replaces console.error for the scope, recording its first argument. */
function captureConsoleError(): { logged: unknown[] } & Disposable {
  const logged: unknown[] = [];
  const original = console.error;
  console.error = (...args: unknown[]) => logged.push(args[0]);
  return { logged, [Symbol.dispose]: () => console.error = original };
}

const boom = (message: string) => () => {
  throw new Error(message);
};
const reject = (message: string) => () => Promise.reject(new Error(message));
const messages = (errors: unknown[]) => errors.map((e) => (e as Error).message);

test('callContained() passes its arguments and reports nothing for a callback that returns', async () => {
  using unhandled = watchUnhandled();
  const reported: unknown[] = [];
  const calls: unknown[][] = [];
  callContained((e) => reported.push(e), (a: number, b: string) => calls.push([a, b]), 1, 'two');
  callContained((e) => reported.push(e), async (a: number) => calls.push([await a]), 3);
  callContained((e) => reported.push(e), undefined, 4);
  await unhandled.settle();
  assert.deepEqual(calls, [[1, 'two'], [3]]);
  assert.deepEqual(reported, []);
  assert.deepEqual(unhandled.reasons, []);
});

test('callContained() reports a synchronous throw at once (WSM-DIAL-008)', () => {
  const reported: unknown[] = [];
  callContained((e) => reported.push(e), boom('sync'), undefined);
  assert.deepEqual(messages(reported), ['sync']);
});

test('callContained() reports the rejection of a returned promise, leaving none unhandled (WSM-DIAL-008, WSM-ACC-009)', async () => {
  using unhandled = watchUnhandled();
  const reported: unknown[] = [];
  callContained((e) => reported.push(e), async () => {
    await Promise.resolve();
    throw new Error('async');
  }, undefined);
  callContained((e) => reported.push(e), reject('rejected'), undefined);
  assert.deepEqual(reported, [], 'a rejection is reported later, not synchronously');
  await unhandled.settle();
  assert.deepEqual(messages(reported).sort(), ['async', 'rejected']);
  assert.deepEqual(unhandled.reasons, []);
});

test('callContained() reports the rejection of a returned non-native thenable and of a throwing then()', async () => {
  using unhandled = watchUnhandled();
  const reported: unknown[] = [];
  const thenable = {
    then(_: unknown, onRejected: (error: unknown) => void) {
      onRejected(new Error('thenable'));
    },
  };
  const throwingThen = {
    then() {
      throw new Error('then threw');
    },
  };
  const throwingGetter = {
    get then() {
      throw new Error('getter threw');
    },
  };
  callContained((e) => reported.push(e), () => thenable, undefined);
  callContained((e) => reported.push(e), () => throwingThen, undefined);
  callContained((e) => reported.push(e), () => throwingGetter, undefined);
  await unhandled.settle();
  assert.deepEqual(messages(reported).sort(), ['getter threw', 'then threw', 'thenable']);
  assert.deepEqual(unhandled.reasons, []);
});

test('callContained() sends what a throwing or rejecting report fails with to console.error', async () => {
  using unhandled = watchUnhandled();
  using console = captureConsoleError();
  callContained(boom('report threw'), boom('first'), undefined);
  callContained(reject('report rejected'), boom('second'), undefined);
  callContained(boom('report threw late'), reject('third'), undefined);
  callContained(reject('report rejected late'), reject('fourth'), undefined);
  await unhandled.settle();
  assert.deepEqual(messages(console.logged).sort(), [
    'report rejected',
    'report rejected late',
    'report threw',
    'report threw late',
  ]);
  assert.deepEqual(unhandled.reasons, []);
});

test('reportTo() hands the error and context to onError, or to console.error without one', () => {
  using console = captureConsoleError();
  const reported: unknown[][] = [];
  const error = new Error('contained');
  reportTo((e, peer: string) => reported.push([e, peer]), error, 'peer-1');
  reportTo((e) => reported.push([e]), error);
  reportTo(undefined, error, 'peer-2');
  assert.deepEqual(reported, [[error, 'peer-1'], [error]]);
  assert.deepEqual(console.logged, [error]);
});

test('reportTo() sends what a throwing or rejecting onError fails with to console.error (WSM-ACC-009)', async () => {
  using unhandled = watchUnhandled();
  using console = captureConsoleError();
  reportTo(boom('onError threw'), new Error('first'));
  reportTo(async () => {
    await Promise.resolve();
    throw new Error('onError rejected');
  }, new Error('second'));
  await unhandled.settle();
  assert.deepEqual(messages(console.logged), ['onError threw', 'onError rejected']);
  assert.deepEqual(unhandled.reasons, []);
});
