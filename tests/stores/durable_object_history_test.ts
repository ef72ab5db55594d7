// durableObjectHistory() over an in-memory stand-in for a Durable Object's storage (WSM-REC-001,
// WSM-REC-004, WSM-REC-005): numbers that outlive the object's memory, trimming by count and age,
// a storage that lost everything, and a replay through the acceptor.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Acceptor } from 'muxws/acceptor';
import { durableObjectHistory } from 'muxws/cloudflare';
import * as cloudflare from '../../lib/adapters/cloudflare.ts';
import { fakeTime } from '../_fake_time.ts';
import { historySuite } from '../_history_suite.ts';
import { fakeStorage } from '../_durable_object_storage.ts';

test('the ./cloudflare entry exports durableObjectHistory() from the stores', () => {
  assert.equal(cloudflare.durableObjectHistory, durableObjectHistory);
});

test('durableObjectHistory() numbers on across a new store over the same storage, per tag (WSM-REC-001)', async () => {
  const storage = fakeStorage();
  let time = 1_700_000_000_000;
  const now = () => time;
  const first = durableObjectHistory(storage, { now });
  const base = 1_700_000_000_000 * 1024; // the first number is floor(now) * 1024 + 1
  assert.deepEqual(await Promise.all([first.append('a', 'a1'), first.append('a', 'a2')]), [
    base + 1,
    base + 2,
  ]);
  time += 1;
  assert.equal(
    await first.append('a:b', 'other'),
    base + 1024 + 1,
    'a tag that extends another is its own',
  );
  const woken = durableObjectHistory(storage, { now });
  assert.equal(await woken.head('a'), base + 2);
  assert.equal(await woken.append('a', new Uint8Array([7])), base + 3);
  const range = await woken.range('a', base + 1, 10);
  assert.deepEqual(range.entries, [
    { seq: base + 2, data: 'a2' },
    { seq: base + 3, data: new Uint8Array([7]) },
  ]);
  assert.equal(range.gap, false);
  assert.equal(range.head, base + 3);
  const all = await woken.range('a', 0, 10);
  assert.deepEqual(all.entries.map((entry) => entry.seq), [base + 1, base + 2, base + 3]);
  assert.equal(all.gap, false, 'the first number of the counter follows position 0');
});

test('durableObjectHistory() trims by count and by age and reports what is gone as a gap (WSM-REC-004)', async () => {
  using clock = fakeTime();
  const storage = fakeStorage();
  const history = durableObjectHistory(storage, { maxEntries: 3, maxAgeMs: 1000 });
  const base = await history.append('count', '1') - 1;
  for (let i = 2; i <= 5; i++) await history.append('count', String(i));
  assert.deepEqual((await history.range('count', 0, 10)).entries.map((e) => e.seq), [
    base + 3,
    base + 4,
    base + 5,
  ]);
  assert.equal((await history.range('count', 0, 10)).gap, true);
  assert.equal((await history.range('count', base + 2, 10)).gap, false);
  assert.equal([...storage.map.keys()].filter((k) => k.includes(':count:e')).length, 3);
  const old = await history.append('age', 'old');
  clock.tick(600);
  await history.append('age', 'new');
  clock.tick(600);
  const head = old + 1;
  const aged = await history.range('age', 0, 1);
  assert.deepEqual(aged, { entries: [{ seq: head, data: 'new' }], gap: true, head });
  assert.equal([...storage.map.keys()].filter((k) => k.includes(':age:e')).length, 1);
  assert.deepEqual(await history.range('age', head, 10), { entries: [], gap: false, head });
  clock.tick(1000); // everything aged: the read ends on the counter alone
  assert.deepEqual(await history.range('age', 0, 10), { entries: [], gap: true, head });
  assert.deepEqual(await history.range('age', 0, 10), { entries: [], gap: true, head }); // and again, once they are deleted
});

test('durableObjectHistory() over a storage that lost everything reports the gap (WSM-REC-004)', async () => {
  const history = durableObjectHistory(fakeStorage());
  assert.deepEqual(await history.range('room', 5, 10), { entries: [], gap: true, head: 0 });
  assert.throws(() => durableObjectHistory({} as never), /current value has no get\(\)/);
  assert.throws(
    () => durableObjectHistory(fakeStorage(), { maxEntries: 0 }),
    /"maxEntries" must be a positive integer: current value is 0/,
  );
});

test('an acceptor over durableObjectHistory() replays what a redialled peer missed (WSM-REC-003)', async () => {
  const history = durableObjectHistory(fakeStorage());
  const acceptor = new Acceptor({ idleTimeoutMs: 0, history });
  for (let i = 1; i <= 300; i++) await acceptor.broadcast('room', i);
  const base = await history.head('room') - 300;
  const got: unknown[][] = [];
  const handle = acceptor.attach({
    send: (data) => got.push(JSON.parse(String(data))),
    close() {},
  }, { tags: ['room'] });
  handle.message(JSON.stringify([1, 1, 3, { ':resume': { room: base + 10 } }, null]));
  for (let i = 0; i < 200; i++) await Promise.resolve();
  const frames = got.filter((f) => f[0] === 9);
  assert.equal(frames.length, 291);
  assert.deepEqual(frames[0], [9, 'room', { ':seq': base + 11 }, 11]);
  assert.deepEqual(frames.at(-1), [
    9,
    'room',
    { ':seq': base + 300, ':recovered': { replayed: 290, gap: false } },
    null,
  ]);
  await acceptor.close({ drainMs: 0 });
});

// The conformance suite every History store passes; one object, so both "nodes" of the suite are
// the same store over one storage.
historySuite('durableObjectHistory()', (options) => {
  const history = durableObjectHistory(fakeStorage(), options);
  return Promise.resolve({
    stores: [history, history],
    // The object's storage lost: a new object over an empty storage, on the same clock.
    lose: () => {
      const fresh = durableObjectHistory(fakeStorage(), options);
      return Promise.resolve([fresh, fresh] as const);
    },
    close: () => Promise.resolve(),
  });
});
