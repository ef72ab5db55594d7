import { test } from 'node:test';
import assert from 'node:assert/strict';
import { workerRoundTrip } from '../_backplane_workers.ts';

test('WSM-BP-002 broadcastChannelBackplane() connects a Deno worker and the main isolate: a 100-message burst and a binary one arrive complete, once, in order', async () => {
  const result = await workerRoundTrip(100);
  assert.equal(result.echoed, 101);
  assert.equal(result.echoes, 101);
});

// Deno's BroadcastChannel between isolates is a 256-message ring for the whole process, and an
// isolate that falls further behind loses messages silently (ext/broadcast_channel: "Backlogged,
// messages dropped"). The backplane's sequence numbers turn that into reported gaps.
test('WSM-BP-002 broadcastChannelBackplane() on Deno reports every message a 1,000-message burst to a worker loses, delivering the rest once and in order', async () => {
  const result = await workerRoundTrip(1000);
  console.log(`Deno worker burst of 1,001: ${JSON.stringify(result)}`);
  assert.equal(result.echoed + result.missedByWorker, 1001);
});
