// durableObjectPresence() over an in-memory stand-in for a Durable Object's storage (WSM-PRS-001,
// WSM-PRS-003): the table's rules with each change written and echoed at once, the table read
// back by a new store (the object woke), and graces ended on the object's alarm.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { durableObjectPresence } from 'muxws/cloudflare';
import * as cloudflare from '../../lib/adapters/cloudflare.ts';
import type { PresenceBatch, PresenceOp, PresenceSink } from '../../lib/broadcast/presence.ts';
import { fakeStorage } from '../_durable_object_storage.ts';
import { handClockFixture, presenceSuite } from '../_presence_suite.ts';

const T0 = 1_700_000_000_000;

function track(ref: string, key: string, peer: string, meta = '{}', tag = 'room'): PresenceOp {
  return { op: 'track', tag, key, ref, meta, peer };
}

/** A sink that records each batch, and whether `resync` was called. */
function recorder(): PresenceSink & { batches: PresenceBatch[]; resyncs: number } {
  const sink = {
    batches: [] as PresenceBatch[],
    resyncs: 0,
    batch: (batch: PresenceBatch) => void sink.batches.push(batch),
    resync: () => void sink.resyncs++,
  };
  return sink;
}

/** The stored entries, as key → value, without the prefix. */
function entries(map: Map<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [key, value] of map) {
    if (key.startsWith('muxws:presence:e:')) out[key.slice(17)] = value;
  }
  return out;
}

// The object is the only node: the suite's two nodes share one store, with no heartbeat.
presenceSuite(
  'durableObjectPresence()',
  handClockFixture((now) => durableObjectPresence(fakeStorage(), { now })),
  { beats: false },
);

test('the ./cloudflare entry exports durableObjectPresence() from the stores', () => {
  assert.equal(cloudflare.durableObjectPresence, durableObjectPresence);
});

test('durableObjectPresence() echoes each apply() at once and writes the entries it changed (WSM-PRS-001)', async () => {
  const storage = fakeStorage();
  const store = durableObjectPresence(storage);
  const sink = recorder();
  assert.deepEqual(await store.open('n1', sink), { version: 0, entries: [] });
  const applied = store.apply('n1', [
    track('r1', 'ada', 'p1', '{"tab":1}'),
    track('r2', 'ada', 'p2', '{"tab":2}'),
  ]);
  await applied;
  assert.deepEqual(sink.batches, [{
    version: 1,
    changes: [{
      tag: 'room',
      joins: { ada: { r1: '{"tab":1}', r2: '{"tab":2}' } },
      leaves: {},
    }],
    moved: [],
  }]);
  assert.deepEqual(entries(storage.map), {
    'room\0r1': { k: 'ada', m: '{"tab":1}', p: 'p1', g: 0, o: 0 },
    'room\0r2': { k: 'ada', m: '{"tab":2}', p: 'p2', g: 0, o: 1 },
  });
  assert.equal(storage.calls.put, 1, 'one put for the batch');

  // A meta update, a leave, and a leave of what is not there: one put and one delete.
  await store.apply('n1', [
    track('r1', 'ada', 'p1', '{"tab":3}'),
    { op: 'leave', tag: 'room', ref: 'r2' },
    { op: 'leave', tag: 'room', ref: 'nothing' },
  ]);
  assert.deepEqual(sink.batches[1].changes, [{
    tag: 'room',
    joins: { ada: { r1: '{"tab":3}' } },
    leaves: { ada: ['r1', 'r2'] },
  }]);
  assert.deepEqual(entries(storage.map), {
    'room\0r1': { k: 'ada', m: '{"tab":3}', p: 'p1', g: 0, o: 0 },
  });
  assert.deepEqual([storage.calls.put, storage.calls.delete], [2, 1]);

  // Nothing changed: no batch, no write.
  await store.apply('n1', [track('r1', 'ada', 'p1', '{"tab":3}')]);
  assert.equal(sink.batches.length, 2);
  assert.deepEqual([storage.calls.put, storage.calls.delete], [2, 1]);
  assert.equal(sink.resyncs, 0);
});

test('durableObjectPresence() read back by a new store belongs to the node that opens it (WSM-PRS-003)', async () => {
  const storage = fakeStorage();
  const first = durableObjectPresence(storage);
  await first.open('n1', recorder());
  await first.apply('n1', [
    track('r1', 'ada', 'p1', '{"tab":1}'),
    track('r2', 'bob', 'p2', '{"tab":2}', 'room:2'),
  ]);

  // The object slept: its memory is gone, its storage stays.
  const woken = durableObjectPresence(storage);
  const sink = recorder();
  const snapshot = await woken.open('n2', sink);
  assert.deepEqual(
    snapshot.entries.map((e) => [e.tag, e.key, e.ref, e.meta, e.node, e.peer, e.untilMs]),
    [['room', 'ada', 'r1', '{"tab":1}', 'n2', 'p1', 0], [
      'room:2',
      'bob',
      'r2',
      '{"tab":2}',
      'n2',
      'p2',
      0,
    ]],
  );
  // The new node owns them: its leave removes the entry.
  await woken.apply('n2', [{ op: 'leave', tag: 'room:2', ref: 'r2' }]);
  assert.deepEqual(sink.batches.map((b) => b.changes), [[{
    tag: 'room:2',
    joins: {},
    leaves: { bob: ['r2'] },
  }]]);
  assert.deepEqual(Object.keys(entries(storage.map)), ['room\0r1']);
  assert.equal(storage.calls.list, 2, 'each store lists the entries once');
  assert.equal((await woken.load()).entries.length, 1);
  assert.equal(storage.calls.list, 2);
});

test('durableObjectPresence() read back keeps the metas of a key in the order they joined', async () => {
  const storage = fakeStorage();
  const store = durableObjectPresence(storage);
  await store.open('n1', recorder());
  // The refs sort against the order they join in, as random refs may.
  await store.apply('n1', [track('z', 'ada', 'p1', '1'), track('m', 'bob', 'p2', '2')]);
  await store.apply('n1', [track('a', 'ada', 'p3', '3')]);
  const order = (snapshot: { entries: readonly { ref: string }[] }) =>
    snapshot.entries.map((e) => e.ref);
  assert.deepEqual(order(await store.load()), ['z', 'm', 'a']);
  const woken = durableObjectPresence(storage);
  assert.deepEqual(order(await woken.open('n2', recorder())), ['z', 'm', 'a']);
  // A new entry after the wake comes after them.
  await woken.apply('n2', [track('b', 'cy', 'p4', '4')]);
  assert.deepEqual(order(await durableObjectPresence(storage).load()), ['z', 'm', 'a', 'b']);
});

test('durableObjectPresence() keys a tag holding NUL and a ref apart', async () => {
  const storage = fakeStorage();
  const store = durableObjectPresence(storage);
  await store.open('n1', recorder());
  await store.apply('n1', [track('r1', 'ada', 'p1', '1', 'a\0b')]);
  const woken = durableObjectPresence(storage);
  assert.deepEqual(
    (await woken.open('n1', recorder())).entries.map((e) => [e.tag, e.ref]),
    [['a\0b', 'r1']],
  );
});

test('durableObjectPresence() adopts an entry in grace and stores its new peer (WSM-PRS-001)', async () => {
  const storage = fakeStorage();
  const store = durableObjectPresence(storage, { now: () => T0 });
  const sink = recorder();
  await store.open('n1', sink);
  await store.apply('n1', [track('r1', 'ada', 'p1', '{"tab":1}')]);
  await store.apply('n1', [{ op: 'grace', tag: 'room', ref: 'r1', untilMs: T0 + 5000 }]);
  assert.equal(sink.batches.length, 1, 'a grace alone changes nothing followers see');
  assert.deepEqual(entries(storage.map), {
    'room\0r1': { k: 'ada', m: '{"tab":1}', p: 'p1', g: T0 + 5000, o: 0 },
  });
  // ada redials: a fresh ref adopts the old one, with the same meta.
  await store.apply('n1', [track('fresh', 'ada', 'p9', '{"tab":1}')]);
  assert.deepEqual(sink.batches[1], {
    version: 2,
    changes: [],
    moved: [{ tag: 'room', ref: 'r1', node: 'n1', peer: 'p9', key: 'ada' }],
  });
  assert.deepEqual(entries(storage.map), {
    'room\0r1': { k: 'ada', m: '{"tab":1}', p: 'p9', g: 0, o: 0 },
  });
  // The adopted entry is no longer in grace: the alarm ends nothing.
  await store.expire();
  assert.equal(sink.batches.length, 2);
  assert.equal(Object.keys(entries(storage.map)).length, 1);
});

test("durableObjectPresence() ends graces on the object's alarm, earliest first, and arms the next (WSM-PRS-001)", async () => {
  const storage = fakeStorage();
  let now = T0;
  const store = durableObjectPresence(storage, { now: () => now });
  const sink = recorder();
  await store.open('n1', sink);
  await store.apply('n1', [
    track('r1', 'ada', 'p1'),
    track('r2', 'bob', 'p2'),
    track('r3', 'cy', 'p3'),
  ]);
  assert.equal(storage.alarm, null, 'no grace, no alarm');
  await store.apply('n1', [{ op: 'grace', tag: 'room', ref: 'r2', untilMs: T0 + 5000 }]);
  assert.equal(storage.alarm, T0 + 5000);
  await store.apply('n1', [{ op: 'grace', tag: 'room', ref: 'r1', untilMs: T0 + 3000 }]);
  assert.equal(storage.alarm, T0 + 3000, 'an earlier grace moves the alarm earlier');
  await store.apply('n1', [{ op: 'grace', tag: 'room', ref: 'r3', untilMs: T0 + 9000 }]);
  assert.equal(storage.alarm, T0 + 3000, 'a later grace leaves the alarm');
  assert.equal(storage.calls.setAlarm, 2);

  // The alarm goes off (late, as alarms may): r1 leaves, and the alarm moves to r2's end.
  now = T0 + 3100;
  await store.expire();
  assert.deepEqual(sink.batches.at(-1)!.changes, [{
    tag: 'room',
    joins: {},
    leaves: { ada: ['r1'] },
  }]);
  assert.equal(storage.alarm, T0 + 5000);
  // Woken by its alarm after a sleep: a new store reads the graces back and ends r2, then r3.
  now = T0 + 9000;
  const woken = durableObjectPresence(storage, { now: () => now });
  const after = recorder();
  await woken.open('n2', after);
  await woken.expire();
  assert.deepEqual(after.batches.map((b) => b.changes), [[{
    tag: 'room',
    joins: {},
    leaves: { bob: ['r2'], cy: ['r3'] },
  }]]);
  assert.deepEqual(entries(storage.map), {});
  assert.equal(storage.alarm, T0 + 5000, 'nothing left: no new alarm');
  // An alarm with nothing due changes nothing.
  await woken.expire();
  assert.equal(after.batches.length, 1);
});

test('durableObjectPresence() ends the graces of orphans an acceptor left as it closed', async () => {
  const storage = fakeStorage();
  let now = T0;
  const store = durableObjectPresence(storage, { now: () => now });
  const sink = recorder();
  await store.open('n1', sink);
  await store.apply('n1', [track('r1', 'ada', 'p1')]);
  await store.apply('n1', [
    { op: 'grace', tag: 'room', ref: 'r1', untilMs: T0 + 1000, orphan: true },
  ]);
  await store.close('n1');
  const second = recorder();
  await store.open('n2', second);
  now = T0 + 1000;
  await store.expire();
  assert.deepEqual(second.batches.map((b) => b.changes[0].leaves), [{ ada: ['r1'] }]);
  assert.equal(sink.batches.length, 1, 'a closed node gets no more batches');
});

test('durableObjectPresence() writes at most 128 keys per storage call', async () => {
  const storage = fakeStorage();
  const store = durableObjectPresence(storage);
  await store.open('n1', recorder());
  const ops = Array.from({ length: 300 }, (_, i) => track(`r${i}`, `k${i}`, `p${i}`));
  await store.apply('n1', ops);
  assert.equal(storage.calls.put, 3);
  assert.equal(Object.keys(entries(storage.map)).length, 300);
  await store.apply('n1', ops.map((op) => ({ op: 'leave', tag: op.tag, ref: op.ref })));
  assert.equal(storage.calls.delete, 3);
  assert.equal(storage.map.size, 0);
});

test('durableObjectPresence() checks its storage and clock', () => {
  const { setAlarm: _, ...noAlarm } = fakeStorage();
  assert.throws(
    // deno-lint-ignore no-explicit-any
    () => durableObjectPresence(noAlarm as any),
    {
      name: 'TypeError',
      message:
        `Cannot create durableObjectPresence as "storage" must be a Durable Object's storage: current value has no setAlarm()`,
    },
  );
  assert.throws(
    // deno-lint-ignore no-explicit-any
    () => durableObjectPresence(fakeStorage(), { now: 5 as any }),
    {
      name: 'TypeError',
      message:
        'Cannot create durableObjectPresence as "now" must be a function: current value is 5',
    },
  );
});
