import { test } from 'node:test';
import assert from 'node:assert/strict';
import { TimeoutError } from '../../lib/errors.ts';
import { DEADLINE_TICK_MS, PendingRequest, RequestDeadlines } from '../../lib/session/_request.ts';
import { fakeTime } from '../_fake_time.ts';
import { sessionPair } from '../_session_pair.ts';

const T = DEADLINE_TICK_MS;

/** A request on `deadlines` whose timeouts are recorded as `id@ms`; its rejection is handled. */
function requestOn(
  deadlines: RequestDeadlines,
  id: number,
  timeoutMs: number | undefined,
  timeouts: string[] = [],
): PendingRequest {
  const request = new PendingRequest(
    id,
    timeoutMs,
    () => timeouts.push(`${id}@${Date.now()}`),
    deadlines,
  );
  request.promise.catch(() => {});
  return request;
}

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
  test(`PendingRequest ${name}, and no timer is left one tick later (WSM-STR-005)`, async () => {
    using clock = fakeTime();
    const timeouts: string[] = [];
    const request = new PendingRequest(
      3,
      timeoutMs,
      (message) => timeouts.push(message),
      new RequestDeadlines(() => Date.now()),
    );
    settle(request);
    if ('value' in expect) assert.equal(await request.promise, expect.value);
    else await assert.rejects(request.promise, (error) => error === expect.error);
    await clock.tickAsync(T);
    assert.equal(clock.countTimers(), 0);
    await clock.tickAsync(5000);
    assert.deepEqual(timeouts, []);
  });
}

test('PendingRequest rejects with TimeoutError after timeoutMs, then asks for the reset (WSM-STR-005)', async () => {
  using clock = fakeTime();
  const timeouts: string[] = [];
  const request = new PendingRequest(
    3,
    250,
    (message) => timeouts.push(message),
    new RequestDeadlines(() => Date.now()),
  );
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
  const request = new PendingRequest(
    1,
    undefined,
    () => assert.fail('no timeout expected'),
    undefined,
  );
  assert.equal(clock.countTimers(), 0);
  request.fail('done');
  request.promise.catch(() => {});
});

test('RequestDeadlines times each request out no earlier than its timeoutMs and at most one tick later, whenever it was made (WSM-STR-005)', async () => {
  using clock = fakeTime();
  const deadlines = new RequestDeadlines(() => Date.now());
  const timeouts: string[] = [];
  const made = new Map<number, { at: number; timeoutMs: number }>();
  // Made at every phase of the tick, while the timer is armed for earlier or later.
  const timeoutsMs = [1, 37, T - 1, T, T + 1, 250, 999, 30_000];
  let id = 1;
  for (let step = 0; step < 12; step++) {
    for (const timeoutMs of timeoutsMs) {
      made.set(id, { at: Date.now(), timeoutMs });
      requestOn(deadlines, id, timeoutMs, timeouts);
      id += 2;
    }
    await clock.tickAsync(17);
  }
  await clock.tickAsync(30_000 + T);
  assert.equal(timeouts.length, made.size, 'every request timed out');
  for (const timeout of timeouts) {
    const [id, at] = timeout.split('@').map(Number);
    const { at: madeAt, timeoutMs } = made.get(id)!;
    const late = at - madeAt - timeoutMs;
    assert.ok(late >= 0 && late <= T, `request ${id} (${timeoutMs} ms) timed out ${late} ms late`);
  }
  assert.equal(clock.countTimers(), 0);
});

test('RequestDeadlines times requests out in deadline order with one timer, and holds none one tick after none waits (WSM-STR-005)', async () => {
  using clock = fakeTime();
  const deadlines = new RequestDeadlines(() => Date.now());
  const timeouts: string[] = [];
  const t0 = Date.now();
  requestOn(deadlines, 1, 300, timeouts);
  const answered = requestOn(deadlines, 3, 100, timeouts);
  requestOn(deadlines, 5, 200, timeouts);
  requestOn(deadlines, 7, 200, timeouts);
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

test('RequestDeadlines arms no timer per request for requests made one after another, and none is left one tick after the last (WSM-STR-005)', async () => {
  using clock = fakeTime();
  const deadlines = new RequestDeadlines(() => Date.now());
  let armed = 0;
  const setTimeoutOf = globalThis.setTimeout;
  globalThis.setTimeout = ((...args: Parameters<typeof setTimeout>) => {
    armed++;
    return setTimeoutOf(...args);
  }) as typeof setTimeout;
  try {
    // 1,000 requests, one in flight at a time, each answered 1 ms after it was made.
    for (let id = 1; id < 2000; id += 2) {
      const request = requestOn(deadlines, id, 30_000);
      await clock.tickAsync(1);
      request.answer(id);
      assert.equal(clock.countTimers(), 1, `one timer while requests come (request ${id})`);
    }
  } finally {
    globalThis.setTimeout = setTimeoutOf;
  }
  assert.ok(armed <= 1000 / T + 1, `${armed} timers armed for 1,000 requests over 1,000 ms`);
  await clock.tickAsync(T);
  assert.equal(clock.countTimers(), 0, 'no timer one tick after the last request settled');
});

test('RequestDeadlines shares one timer between many requests waiting together (WSM-STR-005)', async () => {
  using clock = fakeTime();
  const deadlines = new RequestDeadlines(() => Date.now());
  const timeouts: string[] = [];
  const requests: PendingRequest[] = [];
  for (let id = 1; id < 20_000; id += 2) {
    requests.push(requestOn(deadlines, id, 1000 + (id % 7) * 100, timeouts));
  }
  assert.equal(clock.countTimers(), 1);
  for (const request of requests.slice(0, 5000)) request.answer('in time');
  await clock.tickAsync(999);
  assert.equal(clock.countTimers(), 1);
  assert.deepEqual(timeouts, []);
  await clock.tickAsync(1600 + T);
  assert.equal(timeouts.length, 5000, 'every request not answered timed out');
  assert.equal(clock.countTimers(), 0);
});

test('RequestDeadlines times no request out early, and none more than a tick late, when the wall clock goes back while requests wait (WSM-STR-005)', async () => {
  using clock = fakeTime();
  const deadlines = new RequestDeadlines(() => Date.now());
  const timedOut: number[] = [];
  const hasTimedOut = (id: number): boolean => timedOut.includes(id);
  const make = (id: number, timeoutMs: number) =>
    new PendingRequest(id, timeoutMs, () => timedOut.push(id), deadlines).promise.catch(() => {});
  // Real time is counted from here: 1 is due at 100 ms, 3 at 300 ms.
  make(1, 100);
  make(3, 300);
  await clock.tickAsync(50);
  clock.setSystemTime(Date.now() - 10_000);
  // Made after the clock went back, at 50 ms: due at 250 ms, neither early nor 10 s late.
  make(5, 200);
  await clock.tickAsync(49); // 99 ms
  assert.deepEqual(timedOut, []);
  await clock.tickAsync(150); // 249 ms: 1 is due by one tick past 100 ms; 3 and 5 not yet
  assert.deepEqual(timedOut, [1]);
  await clock.tickAsync(50); // 299 ms
  assert.ok(!hasTimedOut(3), `3 timed out before its 300 ms: ${timedOut}`);
  await clock.tickAsync(51); // 350 ms: 5 is due by one tick past 250 ms
  assert.ok(hasTimedOut(5), `5 waited over a tick past its 250 ms: ${timedOut}`);
  await clock.tickAsync(50); // 400 ms: 3 is due by one tick past 300 ms
  assert.deepEqual([...timedOut].sort(), [1, 3, 5]);
  await clock.tickAsync(T);
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

test('A session that ends clears its deadline timer, and every request it had settles (WSM-STR-005)', async () => {
  using clock = fakeTime();
  // The acceptor never answers: each request waits for its deadline.
  using pair = sessionPair({ acceptor: { onStream: () => {} } });
  const answers = [1, 2, 3].map((n) =>
    pair.dialer.request(n, { timeoutMs: 1000 * n }).then(() => 'answered', (e) => e.name)
  );
  const answered = pair.dialer.request(4, { timeoutMs: 1000 });
  assert.equal(clock.countTimers(), 1);
  pair.dialer.close(1000, 'done');
  assert.equal(clock.countTimers(), 0, 'no timer once the session ended');
  assert.deepEqual(await Promise.all(answers), Array(3).fill('StreamResetError'));
  await assert.rejects(answered, { name: 'StreamResetError' });
});
