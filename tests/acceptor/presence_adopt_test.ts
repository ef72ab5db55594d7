// An adoption whose echo comes back late (as with Redis, over pub/sub): the tracking node learns
// of it from apply()'s answer, so its next batches reach the adopted entry, and the echo that
// follows changes nothing. On fake time, with a memory store whose echoes to one node are held.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Acceptor, memoryPresence, type PresenceStore } from 'muxws/acceptor';
import { fakeTime } from '../_fake_time.ts';
import { raw } from '../_raw_peer.ts';

const TAG = 'room:1';

/** Two acceptors on one memory store; the second's echoes wait while `hold` is true. */
function lateEcho() {
  const store = memoryPresence();
  const held: (() => void)[] = [];
  const state = { hold: false };
  const late: PresenceStore = {
    ...store,
    open: (node, sink) =>
      store.open(node, {
        batch: (batch) => state.hold ? held.push(() => sink.batch(batch)) : sink.batch(batch),
        resync: () => sink.resync(),
      }),
  };
  const options = { idleTimeoutMs: 0 };
  const a = new Acceptor({ ...options, presence: { store, graceMs: 1000, batchMs: 0 } });
  const b = new Acceptor({ ...options, presence: { store: late, graceMs: 1000, batchMs: 0 } });
  const release = () => {
    state.hold = false;
    for (const deliver of held.splice(0)) deliver();
  };
  const entries = async () => (await store.load()).entries.map(({ key, meta }) => ({ key, meta }));
  return { a, b, state, release, entries, store };
}

/** `node` tracks `ada` for a peer that then closes: the entry waits in grace, to be adopted. */
async function inGraceOn(node: Acceptor): Promise<void> {
  const peer = raw(node);
  node.presence.track(peer.handle.peer, TAG, 'ada', { tab: 1 });
  await node.presence.flush();
  peer.handle.closed(1006, '');
  await node.presence.flush();
}

test('a node that adopted, untracked and tracked again before the echo keeps one entry (WSM-PRS-001)', async () => {
  using clock = fakeTime();
  const { a, b, state, release, entries } = lateEcho();
  await b.presence.ready();
  await inGraceOn(a);
  state.hold = true;
  const pb = raw(b);
  b.presence.track(pb.handle.peer, TAG, 'ada', { tab: 1 }); // adopts
  await clock.tickAsync(0);
  b.presence.track(pb.handle.peer, TAG, 'ada', { tab: 2 });
  await clock.tickAsync(0);
  assert.deepEqual(await entries(), [{ key: 'ada', meta: '{"tab":2}' }]);
  b.presence.untrack(pb.handle.peer, TAG);
  await clock.tickAsync(0);
  assert.deepEqual(await entries(), []);
  b.presence.track(pb.handle.peer, TAG, 'ada', { tab: 3 }); // a fresh presence
  await clock.tickAsync(0);
  release(); // the echo of the adoption comes now: it must not take the fresh presence over
  await b.presence.flush();
  assert.deepEqual(await entries(), [{ key: 'ada', meta: '{"tab":3}' }]);
  assert.deepEqual(b.presence.list(TAG), { ada: [{ tab: 3 }] });
  b.presence.untrack(pb.handle.peer, TAG);
  await b.presence.flush();
  await a.presence.flush();
  assert.deepEqual(await entries(), [], 'no entry left behind');
  for (const node of [a, b]) assert.deepEqual(node.presence.list(TAG), {});
  await a.close();
  await b.close();
  assert.equal(clock.countTimers(), 0);
});

test('a peer that adopts and closes within one batch puts the adopted entry in grace before the echo (WSM-PRS-001)', async () => {
  using clock = fakeTime();
  const { a, b, state, release, entries, store } = lateEcho();
  await b.presence.ready();
  await inGraceOn(a);
  state.hold = true;
  const pb = raw(b);
  b.presence.track(pb.handle.peer, TAG, 'ada', { tab: 2 }); // adopts
  pb.handle.closed(1006, ''); // and goes into grace, in the same batch
  await clock.tickAsync(0);
  await clock.tickAsync(0);
  assert.deepEqual(await entries(), [{ key: 'ada', meta: '{"tab":2}' }]);
  const [entry] = (await store.load()).entries;
  assert.ok(entry.untilMs > 0, 'in grace');
  release();
  await clock.tickAsync(1000); // the grace ends on the node that adopted
  await b.presence.flush();
  assert.deepEqual(await entries(), []);
  await a.close();
  await b.close();
  assert.equal(clock.countTimers(), 0);
});

test('a node that closes while its adopting batch is in flight puts the adopted entry in grace (WSM-PRS-001)', async () => {
  using clock = fakeTime();
  const { a, store, entries } = lateEcho();
  let open = () => {};
  const gate = new Promise<void>((resolve) => open = resolve);
  const gated: PresenceStore = {
    ...store,
    apply: async (node, ops) => (await gate, store.apply(node, ops)),
  };
  const b = new Acceptor({
    idleTimeoutMs: 0,
    presence: { store: gated, graceMs: 1000, batchMs: 0 },
  });
  await b.presence.ready();
  await inGraceOn(a);
  const pb = raw(b);
  b.presence.track(pb.handle.peer, TAG, 'ada', { tab: 2 }); // adopts, once the store answers
  await clock.tickAsync(0);
  let closed = false;
  const closing = b.close({ drainMs: 0, spreadMs: 0 }).then(() => closed = true);
  for (let i = 0; i < 10; i++) await clock.tickAsync(0); // the peers drained: the presence closes
  assert.ok(!closed, 'the adopting batch holds the close');
  open();
  await closing;
  assert.deepEqual(await entries(), [{ key: 'ada', meta: '{"tab":2}' }]);
  const [entry] = (await store.load()).entries;
  assert.ok(entry.untilMs > 0, 'the adopted entry is in grace, not live with its node gone');
  await a.close();
  assert.equal(clock.countTimers(), 0);
});

test('a peer that adopts, untracks and tracks the same key again within one batch keeps one entry when the echo comes inside apply() (WSM-PRS-001)', async () => {
  using clock = fakeTime();
  const { a, store, entries } = lateEcho();
  const b = new Acceptor({ idleTimeoutMs: 0, presence: { store, graceMs: 1000, batchMs: 0 } });
  await b.presence.ready();
  await inGraceOn(a);
  const pb = raw(b);
  b.presence.track(pb.handle.peer, TAG, 'ada', { tab: 2 }); // adopts
  b.presence.untrack(pb.handle.peer, TAG); // its leave names the fresh ref: no entry has it
  b.presence.track(pb.handle.peer, TAG, 'ada', { tab: 3 }); // a fresh presence
  await clock.tickAsync(0);
  await b.presence.flush();
  assert.deepEqual(await entries(), [{ key: 'ada', meta: '{"tab":3}' }]);
  b.presence.untrack(pb.handle.peer, TAG);
  await b.presence.flush();
  assert.deepEqual(await entries(), [], 'no entry left behind');
  await a.close();
  await b.close();
  assert.equal(clock.countTimers(), 0);
});
