import { test } from 'node:test';
import assert from 'node:assert/strict';
import { workerRoundTrip } from '../_backplane_workers.ts';

test('WSM-BP-002 broadcastChannelBackplane() connects a Bun worker and the main thread: a 1,000-message burst and a binary one arrive complete, once, in order, each way', async () => {
  const result = await workerRoundTrip(1000);
  assert.deepEqual(result, {
    published: 1001,
    echoed: 1001,
    missedByWorker: 0,
    echoes: 1001,
    missedByMain: 0,
  });
});
