// The heartbeat as a unit (WSM-DIAL-009): a host that records PINGs and losses, a fake clock
// handed to the heartbeat, and fake timers for its one timer.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Heartbeat } from '../../lib/dialer/_heartbeat.ts';
import { TimeoutError } from 'muxws';
import { fakeTime } from '../_fake_time.ts';

const OPTIONS = { intervalMs: 1000, timeoutMs: 300 };

/** A heartbeat over a recording host; `heard()` marks a message received now. */
function setup(clock: { now: number }, options = OPTIONS) {
  const start = clock.now;
  let lastHeard = start;
  const pings: number[] = [];
  const losses: Error[] = [];
  const heartbeat = new Heartbeat(
    {
      ping: () => pings.push(clock.now - start),
      lost: (error) => losses.push(error),
      lastHeard: () => lastHeard,
    },
    options,
    () => clock.now,
  );
  const heard = () => {
    lastHeard = clock.now;
    heartbeat.received();
  };
  return { heartbeat, pings, losses, heard, elapsed: () => clock.now - start };
}

test('Heartbeat sends a PING after intervalMs of silence and nothing before (WSM-DIAL-009)', async () => {
  using clock = fakeTime();
  const h = setup(clock);
  h.heartbeat.check();
  await clock.tickAsync(999);
  assert.deepEqual(h.pings, []);
  await clock.tickAsync(1);
  assert.deepEqual(h.pings, [1000]);
  h.heartbeat.stop();
  assert.equal(clock.countTimers(), 0);
});

test('Heartbeat: anything heard answers the PING and the next is due intervalMs after it (WSM-DIAL-009)', async () => {
  using clock = fakeTime();
  const h = setup(clock);
  h.heartbeat.check();
  await clock.tickAsync(1000);
  await clock.tickAsync(100);
  h.heard();
  await clock.tickAsync(999);
  assert.deepEqual(h.pings, [1000]);
  await clock.tickAsync(1);
  assert.deepEqual(h.pings, [1000, 2100]);
  assert.equal(h.losses.length, 0);
  h.heartbeat.stop();
});

test('Heartbeat: traffic keeps it silent, re-armed from the clock rather than per message (WSM-DIAL-009)', async () => {
  using clock = fakeTime();
  const h = setup(clock);
  h.heartbeat.check();
  for (let i = 0; i < 10; i++) {
    await clock.tickAsync(500);
    h.heard();
  }
  assert.deepEqual(h.pings, []);
  assert.equal(clock.countTimers(), 1);
  h.heartbeat.stop();
});

test('Heartbeat loses the connection with a TimeoutError when nothing arrives within timeoutMs of a PING (WSM-DIAL-009)', async () => {
  using clock = fakeTime();
  const h = setup(clock);
  h.heartbeat.check();
  await clock.tickAsync(1299);
  assert.equal(h.losses.length, 0);
  await clock.tickAsync(1);
  assert.equal(h.losses.length, 1);
  assert(h.losses[0] instanceof TimeoutError);
  assert.equal((h.losses[0] as Error).message, 'Nothing was received within 300 ms of a PING');
  assert.equal(clock.countTimers(), 0);
  await clock.tickAsync(10_000);
  assert.equal(h.losses.length, 1);
  assert.deepEqual(h.pings, [1000]);
});

test('Heartbeat.sent() notices a deadline the paused timer missed, in a microtask (WSM-DIAL-009)', async () => {
  using clock = fakeTime();
  const h = setup(clock);
  h.heartbeat.check();
  clock.setSystemTime(clock.now + 5000); // the clock jumps; the timer has not fired
  h.heartbeat.sent();
  assert.deepEqual(h.pings, []);
  await Promise.resolve();
  assert.deepEqual(h.pings, [5000]);
  clock.setSystemTime(clock.now + 5000);
  h.heartbeat.sent();
  await Promise.resolve();
  assert.equal(h.losses.length, 1);
});

test('Heartbeat.sent() before the deadline does nothing (WSM-DIAL-009)', async () => {
  using clock = fakeTime();
  const h = setup(clock);
  h.heartbeat.check();
  await clock.tickAsync(500);
  h.heartbeat.sent();
  await Promise.resolve();
  assert.deepEqual(h.pings, []);
  h.heartbeat.stop();
});

test('Heartbeat.probe() sends a PING at once unless one is outstanding (WSM-DIAL-010)', async () => {
  using clock = fakeTime();
  const h = setup(clock);
  h.heartbeat.check();
  await clock.tickAsync(200);
  h.heartbeat.probe();
  h.heartbeat.probe();
  assert.deepEqual(h.pings, [200]);
  assert.equal(clock.countTimers(), 1);
  await clock.tickAsync(300);
  assert.equal(h.losses.length, 1);
});

test('Heartbeat.stop() clears its timer and later calls do nothing (WSM-DIAL-009)', async () => {
  using clock = fakeTime();
  const h = setup(clock);
  h.heartbeat.check();
  h.heartbeat.stop();
  assert.equal(clock.countTimers(), 0);
  h.heartbeat.check();
  h.heartbeat.probe();
  h.heard();
  await clock.tickAsync(10_000);
  assert.deepEqual(h.pings, []);
  assert.equal(h.losses.length, 0);
  assert.equal(clock.countTimers(), 0);
});
