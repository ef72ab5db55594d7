// The figures the reconnect schedule and the hello are held to, each checked in process with
// nothing read from outside the repository: the delays of given schedules, jitter at its bounds,
// the retry limit, the hello's copy by value, and the messages of rejected settings.
// (tests/seed_examples_test.ts also runs the reference page's own examples, where the page is.)
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  backoffDelay,
  Hello,
  type HelloOptions,
  Reconnect,
  type ReconnectOptions,
  shouldRetry,
  unjitteredDelay,
} from '@muxws/core';

const attempts = (n: number): number[] => Array.from({ length: n }, (_, i) => i);

test('unjitteredDelay() doubles 250 ms per attempt and holds the 30000 ms cap', () => {
  const schedule = new Reconnect({ initialDelayMs: 250, factor: 2, maxDelayMs: 30_000 });
  assert.deepEqual(
    attempts(10).map((n) => unjitteredDelay(n, schedule)),
    [250, 500, 1000, 2000, 4000, 8000, 16000, 30000, 30000, 30000],
  );
  assert.equal(unjitteredDelay(50, schedule), 30_000);
  const jittered = new Reconnect({
    initialDelayMs: 250,
    factor: 2,
    maxDelayMs: 30_000,
    jitter: 0.3,
  });
  assert.deepEqual(
    attempts(9).map((n) => unjitteredDelay(n, jittered)),
    [250, 500, 1000, 2000, 4000, 8000, 16000, 30000, 30000],
    'jitter leaves the unjittered delays alone',
  );
});

test('unjitteredDelay() of a factor-10 schedule reaches its 5000 ms cap at the second attempt', () => {
  const capped = new Reconnect({ initialDelayMs: 1000, factor: 10, maxDelayMs: 5000 });
  assert.deepEqual(attempts(4).map((n) => unjitteredDelay(n, capped)), [1000, 5000, 5000, 5000]);
});

test('new Reconnect() rejects a factor below 1, naming the setting and the value', () => {
  assert.throws(() => new Reconnect({ factor: 0.5 }), {
    message: 'Cannot create Reconnect as "factor" must be at least 1: current value is 0.5',
  });
});

test('new Reconnect() keeps the options given and defaults the rest: 250 ms, unlimited attempts', () => {
  const patient: ReconnectOptions = { initialDelayMs: 500, maxDelayMs: 60_000, jitter: 0.5 };
  const impatient: ReconnectOptions = { initialDelayMs: 50, maxAttempts: 3 };
  assert.equal(new Reconnect(patient).maxDelayMs, 60_000);
  assert.equal(new Reconnect(impatient).maxAttempts, 3);
  assert.equal(new Reconnect({}).initialDelayMs, 250);
  assert.equal(new Reconnect().maxAttempts, Infinity);
});

test('backoffDelay() multiplies the capped delay by 1 + draw × jitter, at both bounds and past the cap', () => {
  const schedule = new Reconnect({
    initialDelayMs: 1000,
    factor: 2,
    maxDelayMs: 30_000,
    jitter: 0.5,
  });
  assert.deepEqual(attempts(4).map((n) => backoffDelay(n, schedule, () => 0)), [
    1000,
    2000,
    4000,
    8000,
  ]);
  assert.equal(backoffDelay(0, schedule, () => -1), 500);
  assert.equal(backoffDelay(0, schedule, () => 1), 1500);
  assert.equal(backoffDelay(20, schedule, () => -1), 15_000, 'the cap is jittered too');
});

test('backoffDelay() rejects a negative attempt count, naming the value', () => {
  const schedule = new Reconnect();
  assert.throws(() => backoffDelay(-1, schedule), {
    message:
      'Cannot compute a backoff delay as "attempts" must not be negative: current value is -1',
  });
});

test('shouldRetry() allows as many redials as maxAttempts, none for 0, and any number by default', () => {
  const limited = new Reconnect({ maxAttempts: 3 });
  assert.deepEqual(attempts(5).map((n) => shouldRetry(n, limited)), [
    true,
    true,
    true,
    false,
    false,
  ]);
  assert.equal(shouldRetry(1_000_000, new Reconnect()), true);
  assert.equal(shouldRetry(0, new Reconnect({ maxAttempts: 0 })), false);
});

test('Hello copies its payload by value, hands out a fresh copy each time, and keeps its headers', () => {
  const identity = { client: 'docs', rooms: ['general'] };
  const hello = new Hello({ payload: identity, headers: { v: 1 }, timeoutMs: 10_000 });
  assert.equal(hello.configured, true);
  assert.equal(hello.timeoutMs, 10_000);
  identity.rooms.push('secret');
  assert.deepEqual(hello.payloadForWire(), { client: 'docs', rooms: ['general'] });
  assert.notEqual(hello.payloadForWire(), hello.payloadForWire());
  assert.deepEqual(hello.headersForWire(), { v: 1 });
});

test('Hello is not configured without a payload, waits 10000 ms by default, and refuses a function payload at construction', () => {
  const options: HelloOptions = {
    payload: { client: 'docs' },
    headers: { v: 1 },
    timeoutMs: 10_000,
  };
  const none: HelloOptions = {};
  assert.equal(new Hello(options).configured, true);
  assert.equal(new Hello(none).configured, false);
  assert.equal(new Hello().configured, false);
  assert.equal(new Hello(none).timeoutMs, 10_000);
  assert.throws(() => new Hello({ payload: () => undefined }), { name: 'DataCloneError' });
});
