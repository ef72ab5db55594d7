import { test } from 'node:test';
import assert from 'node:assert/strict';
import { TimeoutError } from '../lib/errors.ts';
import { PendingRequest } from '../lib/_request.ts';
import { fakeTime } from './_fake_time.ts';

const outcomes: {
  name: string;
  timeoutMs: number | undefined;
  settle: (request: PendingRequest) => void;
  expect: { value: unknown } | { error: unknown };
}[] = [
  {
    name: 'resolves with the answer',
    timeoutMs: 1000,
    settle: (request) => request.answer('pong'),
    expect: { value: 'pong' },
  },
  {
    name: 'resolves with undefined for an END without a message',
    timeoutMs: undefined,
    settle: (request) => request.answer(undefined),
    expect: { value: undefined },
  },
  {
    name: 'rejects with the error of the stream',
    timeoutMs: 1000,
    settle: (request) => request.fail('lost'),
    expect: { error: 'lost' },
  },
];

for (const { name, timeoutMs, settle, expect } of outcomes) {
  test(`PendingRequest ${name} and leaves no timer (WSM-STR-005)`, async () => {
    using clock = fakeTime();
    const timeouts: string[] = [];
    const request = new PendingRequest(3, timeoutMs, (message) => timeouts.push(message));
    settle(request);
    assert.equal(clock.countTimers(), 0);
    if ('value' in expect) assert.equal(await request.promise, expect.value);
    else await assert.rejects(request.promise, (error) => error === expect.error);
    await clock.tickAsync(5000);
    assert.deepEqual(timeouts, []);
  });
}

test('PendingRequest rejects with TimeoutError after timeoutMs, then asks for the reset (WSM-STR-005)', async () => {
  using clock = fakeTime();
  const timeouts: string[] = [];
  const request = new PendingRequest(3, 250, (message) => timeouts.push(message));
  const rejected = assert.rejects(request.promise, (error) => {
    assert.ok(error instanceof TimeoutError);
    assert.equal(error.message, 'Stream 3 got no answer within 250 ms');
    return true;
  });
  await clock.tickAsync(249);
  assert.deepEqual(timeouts, []);
  await clock.tickAsync(1);
  assert.deepEqual(timeouts, ['No answer within 250 ms']);
  await rejected;
  assert.equal(clock.countTimers(), 0);
});

test('PendingRequest without timeoutMs holds no timer and waits', () => {
  using clock = fakeTime();
  const request = new PendingRequest(1, undefined, () => assert.fail('no timeout expected'));
  assert.equal(clock.countTimers(), 0);
  request.fail('done');
  request.promise.catch(() => {});
});
