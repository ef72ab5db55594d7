import { test } from 'node:test';
import assert from 'node:assert/strict';
import { TimeoutError } from '../../lib/errors.ts';
import { PendingRequest, RequestDeadlines } from '../../lib/session/_request.ts';
import { fakeTime } from '../_fake_time.ts';

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

test('RequestDeadlines times requests out in deadline order with one timer, and clears it once none waits (WSM-STR-005)', async () => {
  using clock = fakeTime();
  const deadlines = new RequestDeadlines();
  const timeouts: string[] = [];
  const make = (id: number, timeoutMs: number) => {
    const request = new PendingRequest(
      id,
      timeoutMs,
      () => timeouts.push(`${id}@${Date.now()}`),
      deadlines,
    );
    request.promise.catch(() => {});
    return request;
  };
  const t0 = Date.now();
  make(1, 300);
  const answered = make(3, 100);
  make(5, 200);
  make(7, 200);
  assert.equal(clock.countTimers(), 1, 'one timer for every request');
  answered.answer('in time');
  await clock.tickAsync(199);
  assert.deepEqual(timeouts, []);
  await clock.tickAsync(1);
  assert.deepEqual(timeouts, [`5@${t0 + 200}`, `7@${t0 + 200}`]);
  assert.equal(clock.countTimers(), 1);
  await clock.tickAsync(100);
  assert.deepEqual(timeouts.slice(2), [`1@${t0 + 300}`]);
  assert.equal(clock.countTimers(), 0, 'no timer once none waits');
});

test('RequestDeadlines clears its timer when the last waiting request is answered (WSM-STR-005)', () => {
  using clock = fakeTime();
  const deadlines = new RequestDeadlines();
  const first = new PendingRequest(1, 1000, () => assert.fail('no timeout expected'), deadlines);
  const second = new PendingRequest(3, 1000, () => assert.fail('no timeout expected'), deadlines);
  first.answer(1);
  assert.equal(clock.countTimers(), 1, 'armed while the second waits');
  second.fail('lost');
  second.promise.catch(() => {});
  assert.equal(clock.countTimers(), 0);
});

test('RequestDeadlines keeps each timeout on time when the wall clock goes back while requests wait (WSM-STR-005)', async () => {
  using clock = fakeTime();
  const deadlines = new RequestDeadlines();
  const timedOut: number[] = [];
  for (const [id, timeoutMs] of [[1, 100], [3, 300]]) {
    const request = new PendingRequest(id, timeoutMs, () => timedOut.push(id), deadlines);
    request.promise.catch(() => {});
  }
  await clock.tickAsync(50);
  clock.setSystemTime(Date.now() - 10_000);
  await clock.tickAsync(50);
  assert.deepEqual(timedOut, [1]);
  await clock.tickAsync(200);
  assert.deepEqual(timedOut, [1, 3]);
  assert.equal(clock.countTimers(), 0);
});

test("RequestDeadlines reads deadlines on the clock it is given, the session's, not the global one (WSM-STR-005)", () => {
  using _clock = fakeTime();
  let now = 5_000_000;
  const deadlines = new RequestDeadlines(() => now);
  const request = new PendingRequest(1, 250, () => assert.fail('no timeout expected'), deadlines);
  assert.equal(request.deadline, 5_000_250);
  now += 100;
  const later = new PendingRequest(3, 250, () => assert.fail('no timeout expected'), deadlines);
  assert.equal(later.deadline, 5_000_350);
  request.answer(1);
  later.answer(2);
});
