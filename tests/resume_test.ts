// The dialer's positions (lib/_resume.ts) on their own: what a redial's replay hands to the
// application when the log it comes from was trimmed, and when the store lost its log.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Positions } from '../lib/_resume.ts';
import type { RecoveredInfo } from '../lib/dialer_types.ts';
import type { PublishMessage } from '../lib/stream.ts';

function positions() {
  const delivered: number[] = [];
  const recovered: (RecoveredInfo & { after: number })[] = [];
  const p = new Positions(
    (message) => void delivered.push(message.seq ?? -1),
    (info) => void recovered.push({ ...info, after: delivered.length }),
  );
  const publish = (seq: number, extra: Record<string, unknown> = {}): PublishMessage => ({
    tag: 'room',
    headers: { ':seq': seq, ...extra },
    payload: seq,
  });
  return { p, delivered, recovered, publish };
}

test('Positions hands on a replay that starts after a gap, before its marker (WSM-REC-004)', () => {
  const { p, delivered, recovered, publish } = positions();
  for (const seq of [1, 2, 3]) p.receive(publish(seq));
  assert.deepEqual(p.resume(true), { room: 3 });
  // The log kept only 8 to 10: the replay starts there, then its marker says so.
  for (const seq of [8, 9, 10]) p.receive(publish(seq));
  p.receive(publish(10, { ':recovered': { replayed: 3, gap: true } }));
  p.receive(publish(11));
  assert.deepEqual(delivered, [1, 2, 3, 8, 9, 10, 11]);
  assert.deepEqual(recovered, [{ tag: 'room', replayed: 3, gap: true, after: 6 }]);
});

test('Positions drops what the replay repeats and takes the marker of a reset store as the position (WSM-REC-004)', () => {
  const { p, delivered, recovered, publish } = positions();
  for (const seq of [1, 2, 3, 4, 5]) p.receive(publish(seq));
  p.resume(true);
  p.receive(publish(5));
  p.receive(publish(2, { ':recovered': { replayed: 0, gap: true } }));
  p.receive(publish(3));
  assert.deepEqual(delivered, [1, 2, 3, 4, 5, 3]);
  assert.deepEqual(recovered, [{ tag: 'room', replayed: 0, gap: true, after: 5 }]);
});
