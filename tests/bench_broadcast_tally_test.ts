// How a scale client process tells that its peers received a broadcast (bench/_broadcast_tally.ts),
// on fake time. No SPEC rule covers benchmarks, so the names cite no rule id.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { BroadcastTally } from '../bench/_broadcast_tally.ts';
import { fakeTime } from './_fake_time.ts';

test('bench tally: a broadcast is reported at once when every peer received it', () => {
  using clock = fakeTime();
  const reports: number[][] = [];
  const tally = new BroadcastTally(() => 3, (k, _at, got) => reports.push([k, got]));
  const peers = [tally.counter(), tally.counter(), tally.counter()];
  for (const peer of peers) peer();
  assert.deepEqual(reports, [[1, 3]]);
  for (const peer of peers) peer();
  assert.deepEqual(reports, [[1, 3], [2, 3]]);
  assert.equal(clock.countTimers(), 0);
});

test('bench tally: a broadcast one peer missed is still reported, with how many received it', async () => {
  using clock = fakeTime();
  const reports: number[][] = [];
  const tally = new BroadcastTally(() => 3, (k, _at, got) => reports.push([k, got]), 5_000);
  const [a, b, c] = [tally.counter(), tally.counter(), tally.counter()];
  a();
  b();
  await clock.tickAsync(4_999);
  assert.deepEqual(reports, []);
  await clock.tickAsync(1);
  assert.deepEqual(reports, [[1, 2]]);
  // The late copy of the first broadcast is not counted again.
  c();
  assert.deepEqual(reports, [[1, 2]]);
  a();
  b();
  await clock.tickAsync(5_000);
  assert.deepEqual(reports, [[1, 2], [2, 2]]);
  assert.equal(clock.countTimers(), 0);
});
