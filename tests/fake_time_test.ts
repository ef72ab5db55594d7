import { test } from 'node:test';
import assert from 'node:assert/strict';
import { fakeTime } from './_fake_time.ts';

test('fakeTime() fakes setTimeout and Date, and restores them on dispose', async () => {
  const realSetTimeout = globalThis.setTimeout;
  {
    using clock = fakeTime(1000);
    assert.notEqual(globalThis.setTimeout, realSetTimeout);
    let fired = 0;
    setTimeout(() => fired++, 500);
    assert.equal(Date.now(), 1000);
    await clock.tickAsync(499);
    assert.equal(fired, 0);
    await clock.tickAsync(1);
    assert.equal(fired, 1);
    assert.equal(Date.now(), 1500);
    assert.equal(clock.countTimers(), 0);
  }
  assert.equal(globalThis.setTimeout, realSetTimeout);
});
