// The presence store's rules in pure form (WSM-PRS-001, WSM-PRS-003): the table every store runs
// or mirrors. The store conformance suite runs the same rules through each store.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { type PresenceOp, PresenceTable } from '../../lib/broadcast/presence_table.ts';

const track = (key: string, ref: string, meta = '{}', peer = 'p-' + ref): PresenceOp => ({
  op: 'track',
  tag: 'room',
  key,
  ref,
  meta,
  peer,
});

test('tracks of one key group into one key with several refs, and a batch says the net change (WSM-PRS-001)', () => {
  const table = new PresenceTable();
  const batch = table.apply('a', [
    track('ada', 'r1', '{"tab":1}'),
    track('ada', 'r2', '{"tab":2}'),
  ]);
  assert.deepEqual(batch, {
    version: 1,
    changes: [{ tag: 'room', joins: { ada: { r1: '{"tab":1}', r2: '{"tab":2}' } }, leaves: {} }],
    moved: [],
  });
  assert.equal(
    table.apply('a', [track('bob', 'r3'), { op: 'leave', tag: 'room', ref: 'r3' }]),
    undefined,
  );
  assert.equal(table.version, 1);
  assert.deepEqual(table.apply('a', [{ op: 'leave', tag: 'room', ref: 'r1' }])?.changes, [
    { tag: 'room', joins: {}, leaves: { ada: ['r1'] } },
  ]);
});

test('a track of a key in grace adopts its entry from any node: its ref, no change, a move (WSM-PRS-001)', () => {
  const table = new PresenceTable();
  table.apply('a', [track('ada', 'r1', '{"tab":1}', 'p1')]);
  table.apply('a', [{ op: 'grace', tag: 'room', ref: 'r1', untilMs: 5000 }]);
  const adopted = table.apply('b', [track('ada', 'fresh', '{"tab":1}', 'p2')]);
  assert.deepEqual(adopted, {
    version: 2,
    changes: [],
    moved: [{ tag: 'room', ref: 'r1', node: 'b', peer: 'p2', key: 'ada' }],
  });
  // The old owner's leave at the end of its grace compares the owner and does nothing.
  assert.equal(table.apply('a', [{ op: 'leave', tag: 'room', ref: 'r1' }]), undefined);
  assert.deepEqual(table.snapshot().entries, [
    { tag: 'room', ref: 'r1', key: 'ada', meta: '{"tab":1}', node: 'b', peer: 'p2', untilMs: 0 },
  ]);
});

test('an adoption with a changed meta is a leave and a join of the same ref (WSM-PRS-001)', () => {
  const table = new PresenceTable();
  table.apply('a', [track('ada', 'r1', '{"tab":1}'), {
    op: 'grace',
    tag: 'room',
    ref: 'r1',
    untilMs: 9,
  }]);
  assert.deepEqual(table.apply('b', [track('ada', 'r5', '{"tab":2}')])?.changes, [
    { tag: 'room', joins: { ada: { r1: '{"tab":2}' } }, leaves: { ada: ['r1'] } },
  ]);
});

test('a grace or a leave by a node that does not own the entry changes nothing (WSM-PRS-001)', () => {
  const table = new PresenceTable();
  table.apply('a', [track('ada', 'r1')]);
  assert.equal(table.apply('b', [{ op: 'grace', tag: 'room', ref: 'r1', untilMs: 1 }]), undefined);
  assert.equal(table.apply('b', [{ op: 'leave', tag: 'room', ref: 'r1' }]), undefined);
  assert.equal(table.snapshot().entries[0].untilMs, 0);
});

test('a silent node is reaped once, and an orphan leaves when its grace ends (WSM-PRS-003)', () => {
  const table = new PresenceTable();
  table.beat('a', 0);
  table.beat('b', 0);
  table.apply('a', [track('ada', 'r1')]);
  table.apply('b', [track('bob', 'r2'), track('cy', 'r3')]);
  table.apply('b', [{ op: 'grace', tag: 'room', ref: 'r3', untilMs: 8000, orphan: true }]);
  table.beat('a', 5000);
  const reaped = table.reap(7000, 6000);
  assert.deepEqual(reaped?.changes, [{ tag: 'room', joins: {}, leaves: { bob: ['r2'] } }]);
  assert.equal(table.alive('b'), false);
  assert.equal(table.reap(7000, 6000), undefined, 'reaped once');
  assert.deepEqual(table.reap(8000, 6000)?.changes, [{
    tag: 'room',
    joins: {},
    leaves: { cy: ['r3'] },
  }]);
  assert.deepEqual(table.snapshot().entries.map((e) => e.key), ['ada']);
});

test('a key named like an Object.prototype member is a key like any other (WSM-PRS-001)', () => {
  const table = new PresenceTable();
  const batch = table.apply('a', [
    track('__proto__', 'r1'),
    track('toString', 'r2'),
    track('constructor', 'r3'),
  ]);
  assert.deepEqual(Object.keys(batch!.changes[0].joins), ['__proto__', 'toString', 'constructor']);
  const left = table.apply(
    'a',
    ['r1', 'r2', 'r3'].map((ref): PresenceOp => ({ op: 'leave', tag: 'room', ref })),
  );
  assert.deepEqual(left!.changes[0].leaves.toString, ['r2']);
  assert.deepEqual(Object.keys(left!.changes[0].leaves), ['__proto__', 'toString', 'constructor']);
});
