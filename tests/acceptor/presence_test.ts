// The acceptor's presence (lib/acceptor/_presence.ts, _presence_replica.ts): track(), untrack()
// and list(), the grace of a closed peer, adoption across nodes sharing one store, the follows of
// a `:presence` OPEN, and what one batch costs. On fake time, with raw peers fed JSON frames.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  Acceptor,
  type AcceptorOptions,
  memoryPresence,
  type PresenceOp,
  type PresenceStore,
} from 'muxws/acceptor';
import { jsonCodec } from 'muxws';
import { fakeTime } from '../_fake_time.ts';
import { raw, type RawPeer } from '../_raw_peer.ts';

const TAG = 'room:1';
/** Every presence frame: [9, tag, { ':presence': kind }, payload]. */
type PresenceFrame = [9, string, { ':presence': string }, unknown];

function acceptor(options: AcceptorOptions = {}): Acceptor {
  return new Acceptor({ idleTimeoutMs: 0, ...options });
}

/** The presence frames `peer` was sent, in order. */
function presenceFrames(peer: RawPeer): PresenceFrame[] {
  return peer.sent.filter((frame) =>
    frame[0] === 9 && (frame[2] as Record<string, unknown> | null)?.[':presence'] !== undefined
  ) as PresenceFrame[];
}

/** Sends the OPEN of a follow of `tag` on stream `id` (payload `true`, FLAG_END). */
function follow(peer: RawPeer, id: number, tag: string = TAG, payload: unknown = true): void {
  peer.send([1, id, 1, { ':presence': tag }, payload]);
}

/** Lets the microtasks of a follow (store open, END) run. */
async function settle(clock: { tickAsync(ms: number): Promise<number> }): Promise<void> {
  await clock.tickAsync(0);
}

/** The one ref of `key` in a snapshot payload. */
function refOf(payload: unknown, key: string): string {
  const refs = Object.keys((payload as Record<string, Record<string, unknown>>)[key]);
  assert.equal(refs.length, 1);
  return refs[0];
}

test('track() groups the peers of one key into one entry (WSM-PRS-001)', async () => {
  using clock = fakeTime();
  const a = acceptor();
  const [p1, p2, p3] = [raw(a), raw(a), raw(a)];
  assert.equal(clock.countTimers(), 0, 'no timer before the first track');
  a.presence.track(p1.handle.peer, TAG, 'ada', { tab: 1 });
  a.presence.track(p2.handle.peer, TAG, 'ada', { tab: 2 });
  a.presence.track(p3.handle.peer, TAG, 'bob', { tab: 1 });
  assert.deepEqual(a.presence.list(TAG), {}, 'nothing shows before the batch went out');
  await a.presence.flush();
  assert.deepEqual(a.presence.list(TAG), { ada: [{ tab: 1 }, { tab: 2 }], bob: [{ tab: 1 }] });
  assert.deepEqual(a.presence.list('room:2'), {});
  // A track again of the same peer and tag changes its meta; another key moves it.
  a.presence.track(p2.handle.peer, TAG, 'ada', { tab: 3 });
  a.presence.track(p3.handle.peer, TAG, 'cy', { tab: 1 });
  await a.presence.flush();
  assert.deepEqual(a.presence.list(TAG), { ada: [{ tab: 1 }, { tab: 3 }], cy: [{ tab: 1 }] });
  // The moved presence is this node's as any other: its peer's close leaves after the grace.
  p3.handle.closed(1000, '');
  await clock.tickAsync(5000);
  await a.presence.flush();
  assert.deepEqual(a.presence.list(TAG), { ada: [{ tab: 1 }, { tab: 3 }] });
  await a.close();
  assert.equal(clock.countTimers(), 0, 'no timer outlives close()');
});

test('untrack() leaves at once, with no grace (WSM-PRS-001)', async () => {
  using clock = fakeTime();
  const a = acceptor({ presence: { graceMs: 5000 } });
  const p = raw(a);
  a.presence.track(p.handle.peer, TAG, 'ada', { tab: 1 });
  await a.presence.flush();
  a.presence.untrack(p.handle.peer, TAG);
  a.presence.untrack(p.handle.peer, 'room:2'); // none there: nothing
  await a.presence.flush();
  assert.deepEqual(a.presence.list(TAG), {});
  assert.equal(clock.countTimers(), 0, 'no grace timer for an untrack');
  // A closed peer's presence in grace leaves at once too (from onPeerClose, say).
  const q = raw(a);
  a.presence.track(q.handle.peer, TAG, 'bob', {});
  await a.presence.flush();
  q.handle.closed(1000, '');
  a.presence.untrack(q.handle.peer, TAG);
  await a.presence.flush();
  assert.deepEqual(a.presence.list(TAG), {});
  assert.equal(clock.countTimers(), 0, 'its grace timer cleared');
  await a.close();
});

test('a closed peer leaves after graceMs (WSM-PRS-001)', async () => {
  using clock = fakeTime();
  const a = acceptor({ presence: { graceMs: 1000 } });
  const p = raw(a);
  const watcher = raw(a, [TAG]);
  a.presence.track(p.handle.peer, TAG, 'ada', { tab: 1 });
  await a.presence.flush();
  follow(watcher, 1);
  await settle(clock);
  p.handle.closed(1001, 'gone');
  await a.presence.flush();
  assert.deepEqual(a.presence.list(TAG), { ada: [{ tab: 1 }] }, 'still there in grace');
  // A closed peer is ignored.
  a.presence.track(p.handle.peer, TAG, 'bob', {});
  await clock.tickAsync(999);
  await a.presence.flush();
  assert.deepEqual(a.presence.list(TAG), { ada: [{ tab: 1 }] });
  await clock.tickAsync(1);
  await a.presence.flush();
  assert.deepEqual(a.presence.list(TAG), {});
  const frames = presenceFrames(watcher);
  assert.deepEqual(frames.map((f) => f[2][':presence']), ['sync', 'diff']);
  const ref = refOf(frames[0][3], 'ada');
  assert.deepEqual(frames[1][3], { leaves: { ada: [ref] }, joins: {} });
  await a.close();
  assert.equal(clock.countTimers(), 0);
});

/** Two acceptors sharing one memoryPresence, each with a follower of `TAG`. */
function twoNodes(graceMs: number) {
  const store = memoryPresence();
  const a = acceptor({ presence: { store, graceMs } });
  const b = acceptor({ presence: { store, graceMs } });
  const watchA = raw(a, [TAG]);
  const watchB = raw(b, [TAG]);
  follow(watchA, 1);
  follow(watchB, 1);
  return { a, b, watchA, watchB };
}

test("a track within graceMs adopts: no diff, and the old owner's leave does nothing (WSM-PRS-001)", async () => {
  using clock = fakeTime();
  const { a, b, watchA, watchB } = twoNodes(1000);
  const pa = raw(a);
  a.presence.track(pa.handle.peer, TAG, 'ada', { tab: 1 });
  await a.presence.flush();
  await b.presence.flush();
  pa.handle.closed(1006, '');
  await a.presence.flush();
  await clock.tickAsync(500);
  const pb = raw(b); // the redial, on the other node
  b.presence.track(pb.handle.peer, TAG, 'ada', { tab: 1 });
  await b.presence.flush();
  await clock.tickAsync(1000); // past the grace the first node armed
  await a.presence.flush();
  await b.presence.flush();
  for (const node of [a, b]) assert.deepEqual(node.presence.list(TAG), { ada: [{ tab: 1 }] });
  for (const watcher of [watchA, watchB]) {
    const frames = presenceFrames(watcher);
    assert.deepEqual(frames.map((f) => f[2][':presence']), ['sync', 'diff'], 'one join only');
    const { leaves, joins } = frames[1][3] as { leaves: object; joins: Record<string, object> };
    assert.deepEqual(leaves, {});
    assert.deepEqual(Object.values(joins.ada), [{ tab: 1 }]);
  }
  // The adopted presence is the new node's: its peer's close puts it in grace there.
  pb.handle.closed(1006, '');
  await clock.tickAsync(1000);
  await b.presence.flush();
  await a.presence.flush();
  for (const node of [a, b]) assert.deepEqual(node.presence.list(TAG), {});
  assert.equal(presenceFrames(watchA).length, 3, 'then one leave');
  await a.close();
  await b.close();
  assert.equal(clock.countTimers(), 0);
});

test('a changed meta on adoption gives a leave and a join of the same ref (WSM-PRS-001)', async () => {
  using clock = fakeTime();
  const { a, b, watchB } = twoNodes(1000);
  const pa = raw(a);
  a.presence.track(pa.handle.peer, TAG, 'ada', { tab: 1 });
  await a.presence.flush();
  await b.presence.flush();
  pa.handle.closed(1006, '');
  await a.presence.flush();
  const pb = raw(b);
  b.presence.track(pb.handle.peer, TAG, 'ada', { tab: 2 });
  await b.presence.flush();
  await clock.tickAsync(1000);
  await a.presence.flush();
  const frames = presenceFrames(watchB);
  assert.deepEqual(frames.map((f) => f[2][':presence']), ['sync', 'diff', 'diff']);
  const ref = Object.keys((frames[1][3] as { joins: Record<string, object> }).joins.ada)[0];
  assert.deepEqual(frames[2][3], { leaves: { ada: [ref] }, joins: { ada: { [ref]: { tab: 2 } } } });
  for (const node of [a, b]) assert.deepEqual(node.presence.list(TAG), { ada: [{ tab: 2 }] });
  await a.close();
  await b.close();
  assert.equal(clock.countTimers(), 0);
});

test('track() and untrack() refuse bad arguments, naming the value found (WSM-PRS-001)', async () => {
  const a = acceptor();
  const { peer } = raw(a).handle;
  const track = (tag: unknown, key: unknown, meta: unknown, who: unknown = peer) => () =>
    a.presence.track(who as never, tag as string, key as string, meta);
  assert.throws(track('', 'ada', {}), {
    name: 'TypeError',
    message:
      'Cannot track a presence as the tag must be a string of 1 to 256 characters: current value is ""',
  });
  assert.throws(track(TAG, '', {}), {
    name: 'TypeError',
    message:
      'Cannot track a presence as "key" must be a string of 1 to 256 characters: current value is ""',
  });
  assert.throws(track(TAG, 'k'.repeat(257), {}), { name: 'TypeError', message: /"key" must be/ });
  assert.throws(track(TAG, 'ada', { n: 1n }), {
    name: 'TypeError',
    message: 'Cannot track a presence as "meta" must be JSON: BigInt at .n',
  });
  assert.throws(track(TAG, 'ada', { at: [1, new Map()] }), {
    name: 'TypeError',
    message: 'Cannot track a presence as "meta" must be JSON: Map at .at[1]',
  });
  assert.throws(track(TAG, 'ada', { text: 'x'.repeat(4096) }), {
    name: 'RangeError',
    message:
      'Cannot track a presence as "meta" must be at most 4096 characters once encoded as JSON: current length is 4107',
  });
  assert.throws(track(TAG, 'ada', {}, { id: 'x' }), {
    name: 'TypeError',
    message:
      'Cannot track a presence as "peer" must be a live Peer of this acceptor: current value is {"id":"x"}',
  });
  assert.throws(() => a.presence.untrack(peer, 'x'.repeat(257)), {
    name: 'TypeError',
    message: /^Cannot untrack a presence as the tag must be/,
  });
  assert.throws(() => a.presence.list(''), {
    name: 'TypeError',
    message: /^Cannot list the presences as the tag must be/,
  });
  await a.close();
});

test('a follower is sent the snapshot before END, then each batch as a diff, leaves first (WSM-PRS-002)', async () => {
  using clock = fakeTime();
  const streams: unknown[] = [];
  const a = acceptor({ onStream: (stream) => void streams.push(stream.headers) });
  const [p1, p2] = [raw(a), raw(a)];
  a.presence.track(p1.handle.peer, TAG, 'ada', { tab: 1 });
  await a.presence.flush();
  const f = raw(a, [TAG]);
  follow(f, 1);
  await settle(clock);
  const ada = refOf(presenceFrames(f)[0][3], 'ada');
  assert.deepEqual(f.sent, [
    [9, TAG, { ':presence': 'sync' }, { ada: { [ada]: { tab: 1 } } }],
    [3, 1],
  ]);
  assert.deepEqual(streams, [], 'a follow never reaches onStream');
  a.presence.track(p2.handle.peer, TAG, 'bob', { tab: 1 });
  a.presence.track(p1.handle.peer, TAG, 'ada', { tab: 2 });
  await clock.tickAsync(50);
  a.presence.untrack(p2.handle.peer, TAG);
  await clock.tickAsync(50);
  const diffs = presenceFrames(f).slice(1);
  assert.equal(diffs.length, 2);
  const bob = Object.keys((diffs[0][3] as { joins: Record<string, object> }).joins.bob)[0];
  assert.deepEqual(diffs[0], [9, TAG, { ':presence': 'diff' }, {
    leaves: { ada: [ada] },
    joins: { ada: { [ada]: { tab: 2 } }, bob: { [bob]: { tab: 1 } } },
  }]);
  assert.deepEqual(diffs[1][3], { leaves: { bob: [bob] }, joins: {} });
  // Payload false stops the follow: END, and no more frames.
  follow(f, 3, TAG, false);
  await settle(clock);
  assert.deepEqual(f.sent.at(-1), [3, 3]);
  a.presence.untrack(p1.handle.peer, TAG);
  await a.presence.flush();
  assert.equal(presenceFrames(f).length, 3);
  await a.close();
});

test('a follow of a tag the peer does not hold is refused (WSM-PRS-002)', async () => {
  using clock = fakeTime();
  const a = acceptor();
  const f = raw(a, ['room:2']);
  follow(f, 1);
  await settle(clock);
  assert.deepEqual(f.sent, [[
    4,
    1,
    'refused',
    'Cannot follow the presence of "room:1": the peer does not hold the tag',
  ]]);
  follow(f, 3, '');
  await settle(clock);
  assert.deepEqual(f.sent[1].slice(0, 3), [4, 3, 'invalid']);
  assert.equal(clock.countTimers(), 0, 'a refused follow arms nothing');
  await a.close();
});

test('a follow whose snapshot is over the message limits is refused, naming the limit, not sent to close the dialer (WSM-PRS-002)', async () => {
  using clock = fakeTime();
  const a = acceptor({ limits: { maxMessageBytes: 4096, maxMessageItems: 200 } });
  const tracked = Array.from({ length: 30 }, () => raw(a, [TAG]));
  tracked.forEach((p, i) =>
    a.presence.track(p.handle.peer, TAG, `user-${i}`, { pad: 'x'.repeat(100) })
  );
  await a.presence.flush();
  const f = raw(a, [TAG]);
  follow(f, 1);
  await settle(clock);
  assert.equal(f.sent.length, 1, 'no snapshot');
  assert.deepEqual(f.sent[0].slice(0, 3), [4, 1, 'refused']);
  assert.match(
    String(f.sent[0][3]),
    /^Cannot follow the presence of "room:1": its snapshot has more than the 4096 bytes a message may have \(maxMessageBytes, on both sides\)$/,
  );
  a.presence.track(f.handle.peer, TAG, 'late', { pad: '' });
  await a.presence.flush();
  assert.equal(f.sent.length, 1, 'a refused follower gets no diffs');
  // Many small entries: the item count refuses it.
  const b = acceptor({ limits: { maxMessageItems: 50 } });
  const small = Array.from({ length: 100 }, () => raw(b, [TAG]));
  small.forEach((p, i) => b.presence.track(p.handle.peer, TAG, `u${i}`, 1));
  await b.presence.flush();
  const g = raw(b, [TAG]);
  follow(g, 1);
  await settle(clock);
  assert.match(String(g.sent[0][3]), /more than the 50 items a message may have/);
  const closing = Promise.all([a.close(), b.close()]);
  await clock.tickAsync(10_000);
  await closing;
});

test('a change over the message limits reaches a follower in diffs that each fit, to the same state (WSM-PRS-002)', async () => {
  using clock = fakeTime();
  const a = acceptor({ limits: { maxMessageBytes: 4096, maxMessageItems: 200 } });
  const f = raw(a, [TAG]);
  follow(f, 1);
  await settle(clock);
  const tracked = Array.from({ length: 60 }, () => raw(a, [TAG]));
  // one batch: 60 joins of ~120 bytes each, 7 KiB and more than 200 items together
  tracked.forEach((p, i) =>
    a.presence.track(p.handle.peer, TAG, `user-${i}`, { pad: 'x'.repeat(100) })
  );
  await a.presence.flush();
  const diffs = presenceFrames(f).slice(1);
  assert.ok(diffs.length > 1, 'cut into pieces');
  for (const frame of diffs) {
    const text = JSON.stringify(frame);
    assert.ok(text.length <= 4096, `${text.length} bytes`);
    assert.equal(frame[2][':presence'], 'diff');
  }
  assert.deepEqual(f.closes, [], 'the follower is not closed');
  const state: Record<string, Record<string, unknown>> = {};
  for (const frame of diffs) {
    const joins = (frame[3] as { joins: Record<string, Record<string, unknown>> }).joins;
    for (const key in joins) state[key] = { ...state[key], ...joins[key] };
  }
  const metas = Object.fromEntries(
    Object.entries(state).map(([key, refs]) => [key, Object.values(refs)]),
  );
  assert.deepEqual(metas, a.presence.list(TAG));
  assert.equal(Object.keys(metas).length, 60);
  const closing = a.close();
  await clock.tickAsync(10_000);
  await closing;
});

test('a peer that follows and unfollows a large tag in a loop is refused once its snapshots pass 8 × maxMessageBytes in 10 s (WSM-PRS-002)', async () => {
  using clock = fakeTime();
  const a = acceptor({ limits: { maxMessageBytes: 4096 } });
  const tracked = Array.from({ length: 24 }, () => raw(a, [TAG]));
  tracked.forEach((p, i) =>
    a.presence.track(p.handle.peer, TAG, `user-${i}`, { pad: 'x'.repeat(100) })
  );
  await a.presence.flush();
  const f = raw(a, [TAG]);
  let id = 1;
  /** Follows then unfollows; whether the follow was refused. */
  const toggle = async () => {
    const followed = id;
    follow(f, followed);
    follow(f, followed + 2, TAG, false);
    id += 4;
    await settle(clock);
    return f.sent.some((frame) => frame[0] === 4 && frame[1] === followed);
  };
  for (let i = 0; i < 12; i++) await toggle();
  const snapshots = presenceFrames(f).filter((frame) => frame[2][':presence'] === 'sync');
  const size = JSON.stringify(snapshots[0]).length;
  assert.ok(size > 3000 && size <= 4096, `${size} bytes`);
  assert.equal(snapshots.length, Math.floor((8 * 4096) / size), 'as many as 32 KiB pays for');
  const refusals = f.sent.filter((frame) => frame[0] === 4);
  assert.equal(refusals.length, 12 - snapshots.length);
  assert.match(
    String(refusals[0][3]),
    /^Cannot follow the presence of "room:1": the snapshots sent to this connection would exceed 32768 bytes in 10 s \(8 × maxMessageBytes\): follow again in \d+ ms$/,
  );
  assert.deepEqual(f.closes, []);
  // the budget refills evenly over 10 s: the refusal says when a follow is paid for again
  const waitMs = Number(/in (\d+) ms$/.exec(String(refusals.at(-1)![3]))![1]);
  assert.ok(waitMs > 0 && waitMs <= 10_000, `${waitMs} ms`);
  await clock.tickAsync(waitMs - 2);
  assert.equal(await toggle(), true, 'still refused just before');
  await clock.tickAsync(2);
  assert.equal(await toggle(), false);
  assert.equal(
    presenceFrames(f).filter((frame) => frame[2][':presence'] === 'sync').length,
    snapshots.length + 1,
  );
  // another connection has a budget of its own
  const g = raw(a, [TAG]);
  follow(g, 1);
  await settle(clock);
  assert.equal(presenceFrames(g).length, 1);
  const closing = a.close();
  await clock.tickAsync(10_000);
  await closing;
});

test('a peer that loses the tag is sent end, and no more diffs (WSM-PRS-002)', async () => {
  using clock = fakeTime();
  const a = acceptor();
  const p = raw(a);
  const f = raw(a, [TAG]);
  follow(f, 1);
  await settle(clock);
  f.handle.peer.tags.delete(TAG);
  assert.deepEqual(f.sent.at(-1), [9, TAG, { ':presence': 'end' }, null]);
  a.presence.track(f.handle.peer, TAG, 'me', {}); // its own presence stays tracked
  a.presence.track(p.handle.peer, TAG, 'ada', {});
  await a.presence.flush();
  assert.deepEqual(presenceFrames(f).map((x) => x[2][':presence']), ['sync', 'end']);
  assert.deepEqual(Object.keys(a.presence.list(TAG)), ['me', 'ada']);
  // Holding the tag again, a new follow gets a new snapshot.
  f.handle.peer.tags.add(TAG);
  follow(f, 3);
  await settle(clock);
  assert.deepEqual(presenceFrames(f).map((x) => x[2][':presence']), ['sync', 'end', 'sync']);
  await a.close();
});

/** A memoryPresence whose apply() calls are counted. */
function countingStore(): { store: PresenceStore; applies: PresenceOp[][] } {
  const inner = memoryPresence();
  const applies: PresenceOp[][] = [];
  const store: PresenceStore = {
    ...inner,
    apply(node, ops) {
      applies.push([...ops]);
      return inner.apply(node, ops);
    },
    beat: undefined,
  };
  return { store, applies };
}

test('one store.apply() and one encode per tag per batch, whatever the followers (WSM-PRS-004)', async () => {
  using clock = fakeTime();
  const diffs: string[] = [];
  const codec = {
    name: jsonCodec.name,
    binary: false,
    decode: jsonCodec.decode,
    encode(frame: readonly unknown[]) {
      const headers = frame[2] as Record<string, unknown> | null;
      if (frame[0] === 9 && headers?.[':presence'] === 'diff') diffs.push(frame[1] as string);
      return jsonCodec.encode(frame);
    },
  };
  const { store, applies } = countingStore();
  const a = acceptor({ codec, presence: { store } });
  const followers = Array.from({ length: 20 }, () => raw(a, [TAG, 'room:2']));
  for (const f of followers) {
    follow(f, 1);
    follow(f, 3, 'room:2');
  }
  await settle(clock);
  const peers = Array.from({ length: 10 }, () => raw(a));
  peers.forEach((p, i) => {
    a.presence.track(p.handle.peer, TAG, `u${i}`, { i });
    a.presence.track(p.handle.peer, 'room:2', `u${i}`, { i });
  });
  await clock.tickAsync(50);
  assert.equal(applies.length, 1, 'one store call for the batch');
  assert.equal(applies[0].length, 20);
  assert.deepEqual(diffs.sort(), ['room:1', 'room:2'], 'one encode per tag');
  for (const f of followers) {
    assert.deepEqual(presenceFrames(f).map((x) => x[2][':presence']), [
      'sync',
      'sync',
      'diff',
      'diff',
    ]);
  }
  await a.close();
});

test('a second follow of a followed tag sends no second snapshot (WSM-PRS-004)', async () => {
  using clock = fakeTime();
  const a = acceptor();
  const f = raw(a, [TAG]);
  follow(f, 1);
  follow(f, 3);
  await settle(clock);
  follow(f, 5);
  await settle(clock);
  assert.deepEqual(f.sent.map((x) => x[0]), [9, 3, 3, 3]);
  await a.close();
  assert.equal(clock.countTimers(), 0);
});

test("close() turns this node's presences into orphans in grace and closes the store (WSM-PRS-001)", async () => {
  using clock = fakeTime();
  const store = memoryPresence();
  const a = acceptor({ presence: { store, graceMs: 1000 } });
  const b = acceptor({ presence: { store, graceMs: 1000 } });
  const p = raw(a);
  a.presence.track(p.handle.peer, TAG, 'ada', { tab: 1 });
  await a.presence.flush();
  await a.close();
  assert.equal(clock.countTimers(), 0, 'no timer outlives close()');
  const entries = (await store.load()).entries;
  assert.equal(entries.length, 1);
  assert.equal(entries[0].node, '');
  assert.ok(entries[0].untilMs > Date.now());
  // A redial to the other node within the grace adopts it.
  const q = raw(b);
  b.presence.track(q.handle.peer, TAG, 'ada', { tab: 1 });
  await b.presence.flush();
  assert.equal((await store.load()).entries[0].ref, entries[0].ref);
  await b.close();
});

/** A memoryPresence seen through a wrapper: the nodes that opened, their sinks, each call. */
function watchedStore() {
  const inner = memoryPresence();
  const nodes: string[] = [];
  const beats: Array<{ node: string; deadAfterMs: number; own: readonly PresenceOp[] }> = [];
  let opens = 0;
  let dropFor: string | undefined;
  let failApply: Error | undefined;
  const store: PresenceStore = {
    open(node, sink) {
      opens++;
      nodes.push(node);
      return inner.open(node, {
        batch: (batch) => {
          if (node !== dropFor) sink.batch(batch);
        },
        resync: () => sink.resync(),
      });
    },
    apply(node, ops) {
      if (failApply) return Promise.reject(failApply);
      return inner.apply(node, ops);
    },
    beat(node, deadAfterMs, own) {
      beats.push({ node, deadAfterMs, own: own() });
      return inner.beat!(node, deadAfterMs, own);
    },
    load: () => inner.load(),
    close: (node) => inner.close(node),
  };
  return {
    store,
    inner,
    nodes,
    beats,
    get opens() {
      return opens;
    },
    drop(node: string | undefined) {
      dropFor = node;
    },
    failApply(error: Error | undefined) {
      failApply = error;
    },
  };
}

test('nothing opens the store or arms a timer before the first track or follow (WSM-PRS-001)', async () => {
  using clock = fakeTime();
  const watched = watchedStore();
  const a = acceptor({ presence: { store: watched.store } });
  const p = raw(a, [TAG]);
  p.send([1, 1, 1, null, 'hi']); // an ordinary stream, refused with no handler
  await settle(clock);
  assert.deepEqual(p.sent, [[4, 1, 'refused', 'No stream handler']]);
  p.handle.closed(1000, '');
  await clock.tickAsync(60_000);
  assert.equal(watched.opens, 0);
  assert.deepEqual(a.presence.list(TAG), {});
  await a.presence.ready(); // opens and loads, still without a timer
  assert.equal(watched.opens, 1);
  assert.equal(clock.countTimers(), 0);
  await a.close();
  assert.equal(clock.countTimers(), 0);
});

test("the heartbeat runs every nodeTimeoutMs / 5, passes 3/5 of it, and hands over this node's table (WSM-PRS-003)", async () => {
  using clock = fakeTime();
  const watched = watchedStore();
  const a = acceptor({ presence: { store: watched.store, nodeTimeoutMs: 1000, graceMs: 500 } });
  const p = raw(a);
  await clock.tickAsync(1000);
  assert.equal(watched.beats.length, 0, 'no beat before the first track');
  a.presence.track(p.handle.peer, TAG, 'ada', { tab: 1 });
  await clock.tickAsync(200);
  assert.equal(watched.beats.length, 1);
  const [beat] = watched.beats;
  assert.equal(beat.deadAfterMs, 600);
  assert.equal(beat.node, watched.nodes[0]);
  assert.equal(beat.own.length, 1);
  assert.deepEqual({ ...beat.own[0], ref: undefined }, {
    op: 'track',
    tag: TAG,
    key: 'ada',
    ref: undefined,
    meta: '{"tab":1}',
    peer: p.handle.peer.id,
  });
  p.handle.closed(1006, '');
  await clock.tickAsync(200);
  assert.equal(watched.beats.length, 2);
  assert.deepEqual(watched.beats[1].own.map((op) => op.op), ['track', 'grace']);
  await clock.tickAsync(400);
  assert.equal(watched.beats.length, 4);
  assert.deepEqual(watched.beats[3].own, [], 'gone after its grace');
  await a.close();
  assert.equal(clock.countTimers(), 0);
});

test('a node declared dead puts its presences back at its next beat (WSM-PRS-003)', async () => {
  using clock = fakeTime();
  const watched = watchedStore();
  const a = acceptor({ presence: { store: watched.store, nodeTimeoutMs: 1000 } });
  const b = acceptor({ presence: { store: watched.store, nodeTimeoutMs: 1000 } });
  const p = raw(a);
  a.presence.track(p.handle.peer, TAG, 'ada', { tab: 1 });
  await a.presence.flush();
  const watcher = raw(b, [TAG]);
  follow(watcher, 1);
  await settle(clock);
  // The store forgets node a (as a partition longer than 3/5 of nodeTimeoutMs would), and b reaps.
  await watched.inner.close(watched.nodes[0]);
  await watched.inner.beat!(watched.nodes[1], 600, () => []);
  assert.deepEqual(b.presence.list(TAG), {});
  await clock.tickAsync(200);
  await b.presence.flush();
  for (const node of [a, b]) assert.deepEqual(node.presence.list(TAG), { ada: [{ tab: 1 }] });
  const kinds = presenceFrames(watcher).map((f) => f[2][':presence']);
  assert.deepEqual(kinds, ['sync', 'diff', 'diff'], 'a leave, then the same ref again');
  await a.close();
  await b.close();
  assert.equal(clock.countTimers(), 0);
});

test('a skipped batch reloads the table and sends the difference as one diff (WSM-PRS-003)', async () => {
  using clock = fakeTime();
  const watched = watchedStore();
  const a = acceptor({ presence: { store: watched.store } });
  const b = acceptor({ presence: { store: watched.store } });
  const watcher = raw(b, [TAG]);
  follow(watcher, 1);
  await settle(clock);
  await a.presence.ready();
  const [p1, p2] = [raw(a), raw(a)];
  watched.drop(watched.nodes[0]); // b's node: it opened first, for its follower
  a.presence.track(p1.handle.peer, TAG, 'ada', { tab: 1 });
  await a.presence.flush();
  watched.drop(undefined);
  assert.deepEqual(b.presence.list(TAG), {}, 'b missed that batch');
  a.presence.track(p2.handle.peer, TAG, 'bob', { tab: 1 });
  await clock.tickAsync(50);
  await settle(clock);
  assert.deepEqual(b.presence.list(TAG), a.presence.list(TAG));
  assert.deepEqual(Object.keys(b.presence.list(TAG)).sort(), ['ada', 'bob']);
  const frames = presenceFrames(watcher);
  assert.deepEqual(frames.map((f) => f[2][':presence']), ['sync', 'diff']);
  assert.deepEqual(Object.keys((frames[1][3] as { joins: object }).joins).sort(), ['ada', 'bob']);
  await a.close();
  await b.close();
});

test('a store call that rejects is reported, and the node keeps its own table (WSM-PRS-003)', async () => {
  using clock = fakeTime();
  const watched = watchedStore();
  const errors: unknown[] = [];
  const a = acceptor({
    presence: { store: watched.store, nodeTimeoutMs: 1000 },
    onError: (error) => errors.push(error),
  });
  const p = raw(a);
  const down = new Error('store down');
  watched.failApply(down);
  a.presence.track(p.handle.peer, TAG, 'ada', { tab: 1 });
  await a.presence.flush();
  assert.deepEqual(errors, [down]);
  assert.deepEqual(a.presence.list(TAG), {});
  watched.failApply(undefined);
  // The store lost nothing it knows of; a store that did would take it back from beat().
  await clock.tickAsync(200);
  assert.equal(watched.beats.at(-1)!.own.length, 1);
  await a.close();
});

test('a batch that failed is made good by the next: what was tracked, and what left, reach the store (WSM-PRS-003)', async () => {
  using clock = fakeTime();
  const watched = watchedStore();
  const errors: unknown[] = [];
  const a = acceptor({
    presence: { store: watched.store },
    onError: (error) => errors.push(error),
  });
  const [p1, p2] = [raw(a), raw(a)];
  a.presence.track(p1.handle.peer, TAG, 'ada', { tab: 1 });
  await a.presence.flush();
  watched.failApply(new Error('store down'));
  a.presence.track(p2.handle.peer, TAG, 'bob', { tab: 1 });
  a.presence.untrack(p1.handle.peer, TAG);
  await a.presence.flush();
  assert.equal(errors.length, 1);
  assert.deepEqual(a.presence.list(TAG), { ada: [{ tab: 1 }] }, 'the store still holds ada');
  watched.failApply(undefined);
  // No new change: the heartbeat of a store with one sends the repair; here the next batch does.
  a.presence.track(p2.handle.peer, TAG, 'bob', { tab: 2 });
  await a.presence.flush();
  assert.deepEqual(a.presence.list(TAG), { bob: [{ tab: 2 }] });
  assert.deepEqual((await watched.inner.load()).entries.map((e) => e.key), ['bob']);
  await a.close();
  await clock.tickAsync(0);
});

test('a redial that adopts and changes its meta within one batch leaves one entry, not two (WSM-PRS-001)', async () => {
  using clock = fakeTime();
  const { a, b, watchA } = twoNodes(1000);
  const pa = raw(a);
  a.presence.track(pa.handle.peer, TAG, 'ada', { tab: 1 });
  await a.presence.flush();
  pa.handle.closed(1006, '');
  await a.presence.flush();
  const pb = raw(b); // the redial: tracked once on arrival, then again with its real meta
  b.presence.track(pb.handle.peer, TAG, 'ada', { tab: 1 });
  b.presence.track(pb.handle.peer, TAG, 'ada', { tab: 1, away: false });
  await b.presence.flush();
  await clock.tickAsync(1000);
  await a.presence.flush();
  for (const node of [a, b]) {
    assert.deepEqual(node.presence.list(TAG), { ada: [{ tab: 1, away: false }] });
  }
  b.presence.untrack(pb.handle.peer, TAG);
  await b.presence.flush();
  await a.presence.flush();
  for (const node of [a, b]) assert.deepEqual(node.presence.list(TAG), {}, 'no entry left behind');
  assert.equal(presenceFrames(watchA).at(-1)![2][':presence'], 'diff');
  await a.close();
  await b.close();
});

/** A memory store with no heartbeat whose open() waits until `release()` is called. */
function gatedStore(): { store: PresenceStore; release: () => void } {
  const inner = memoryPresence();
  let release!: () => void;
  const gate = new Promise<void>((resolve) => release = resolve);
  const store: PresenceStore = {
    ...inner,
    open: async (node, sink) => {
      await gate;
      return inner.open(node, sink);
    },
    beat: undefined,
  };
  return { store, release };
}

test('a follow before the store is open is answered once it is: the snapshot, then END (WSM-PRS-002)', async () => {
  using clock = fakeTime();
  const { store, release } = gatedStore();
  const a = acceptor({ presence: { store } });
  const f = raw(a, [TAG]);
  follow(f, 1);
  await settle(clock);
  assert.deepEqual(f.sent, []);
  release();
  await settle(clock);
  assert.deepEqual(f.sent, [[9, TAG, { ':presence': 'sync' }, {}], [3, 1]]);
  await a.close();
});

test('an unfollow while the follow waits for the store cancels it; a new follow then gets the snapshot (WSM-PRS-002)', async () => {
  using clock = fakeTime();
  const { store, release } = gatedStore();
  const a = acceptor({ presence: { store } });
  const f = raw(a, [TAG]);
  const other = raw(a, [TAG]);
  follow(f, 1);
  follow(f, 3, TAG, false);
  await settle(clock);
  release();
  await settle(clock);
  assert.deepEqual(f.sent, [[3, 3], [3, 1]], 'no snapshot for a cancelled follow');
  a.presence.track(other.handle.peer, TAG, 'ada', { tab: 1 });
  await a.presence.flush();
  assert.equal(presenceFrames(f).length, 0, 'and no diffs');
  follow(f, 5);
  await settle(clock);
  assert.deepEqual(presenceFrames(f).map((frame) => frame[2][':presence']), ['sync']);
  await a.close();
});

test('presence frames reach a follower over highWaterMark, where a broadcast is dropped (WSM-PRS-002)', async () => {
  using clock = fakeTime();
  const a = acceptor();
  const sent: unknown[][] = [];
  let bufferedAmount = 0;
  const { peer, message } = a.attach({
    send: (data) => void sent.push(JSON.parse(String(data))),
    close() {},
    get bufferedAmount() {
      return bufferedAmount;
    },
  }, { tags: [TAG] });
  message(JSON.stringify([1, 1, 1, { ':presence': TAG }, true]));
  await settle(clock);
  bufferedAmount = 2 * 1024 * 1024; // above highWaterMark (1 MiB), below maxBufferedBytes
  assert.equal(await a.broadcast(TAG, 'dropped'), 0);
  const p = raw(a);
  a.presence.track(p.handle.peer, TAG, 'ada', {});
  await a.presence.flush();
  assert.deepEqual(sent.map((frame) => frame[0]), [9, 3, 9]);
  assert.equal((sent[2][2] as Record<string, string>)[':presence'], 'diff');
  assert.equal(peer.isClosed, false);
  assert.equal(a.stats.dropped, 1);
  await a.close();
});

test('acceptor.presence takes and lists the metas the Api types (WSM-PRS-001)', async () => {
  type Api = { ':presence': { name: string } };
  const a = new Acceptor<Api, { user: string }>({ idleTimeoutMs: 0 });
  const { peer } = a.attach({ send() {}, close() {} });
  a.presence.track(peer, TAG, 'ada', { name: 'Ada' });
  // @ts-expect-error: a meta the Api does not declare
  a.presence.track(peer, TAG, 'ada', { name: 1 });
  await a.presence.flush();
  const listed: Record<string, { name: string }[]> = a.presence.list(TAG);
  assert.deepEqual(listed, { ada: [{ name: 1 }] });
  await a.close();
});

test('a follow on an acceptor with routes never reaches them (WSM-PRS-002)', async () => {
  using clock = fakeTime();
  const called: unknown[] = [];
  const a = acceptor({ routes: { echo: (input: unknown) => void called.push(input) } });
  const f = raw(a, [TAG]);
  follow(f, 1);
  await settle(clock);
  assert.deepEqual(f.sent, [[9, TAG, { ':presence': 'sync' }, {}], [3, 1]]);
  f.send([1, 3, 1, { ':route': 'echo' }, 'hi']);
  await settle(clock);
  assert.deepEqual(called, ['hi'], 'a routed stream still reaches its route');
  await a.close();
});

test('a peer restored with its id gets its presences back when the store opens (WSM-PRS-001)', async () => {
  using clock = fakeTime();
  const store = memoryPresence();
  // What the acceptor before a Durable Object slept left in the store.
  await store.open('before', { batch() {}, resync() {} });
  await store.apply('before', [
    { op: 'track', tag: TAG, key: 'ada', ref: 'r1', meta: '{"tab":1}', peer: 'peer-1' },
  ]);
  await store.close('before');
  const a = acceptor({ presence: { store, graceMs: 1000 } });
  const restored = a.attach({ send() {}, close() {} }, { id: 'peer-1', tags: [TAG] });
  await a.presence.ready();
  await a.presence.flush();
  assert.deepEqual(a.presence.list(TAG), { ada: [{ tab: 1 }] });
  assert.notEqual((await store.load()).entries[0].node, 'before', 'this node owns it now');
  restored.closed(1001, '');
  await clock.tickAsync(1000);
  await a.presence.flush();
  assert.deepEqual(a.presence.list(TAG), {});
  await a.close();
  assert.equal(clock.countTimers(), 0);
});

test('new Acceptor() refuses bad presence options, naming the field and the value found (WSM-PRS-001)', () => {
  const create = (presence: unknown) => () => acceptor({ presence: presence as never });
  assert.throws(create(7), {
    name: 'TypeError',
    message: 'Cannot create Acceptor as "presence" must be an object: current value is 7',
  });
  assert.throws(create({ store: { open() {} } }), {
    name: 'TypeError',
    message:
      /^Cannot create Acceptor as "presence.store" must have open\(\), apply\(\), load\(\) and close\(\): current value is /,
  });
  assert.throws(create({ store: { ...memoryPresence(), beat: 1 } }), { name: 'TypeError' });
  assert.throws(create({ graceMs: -1 }), {
    name: 'RangeError',
    message:
      'Cannot create Acceptor as "presence.graceMs" must be a finite number of at least 0: current value is -1',
  });
  assert.throws(create({ batchMs: Infinity }), {
    name: 'RangeError',
    message: /"presence.batchMs"/,
  });
  assert.throws(create({ nodeTimeoutMs: 0 }), {
    name: 'RangeError',
    message:
      'Cannot create Acceptor as "presence.nodeTimeoutMs" must be a finite number above 0: current value is 0',
  });
  assert.throws(create({ nodeTimeoutMs: '10' }), {
    name: 'RangeError',
    message: /current value is "10"/,
  });
});

test('a node that opened the store long before its first track beats at once, so nothing it tracks is reaped (WSM-PRS-003)', async () => {
  using clock = fakeTime();
  const store = memoryPresence();
  const a = acceptor({ presence: { store, nodeTimeoutMs: 1000 } });
  const b = acceptor({ presence: { store, nodeTimeoutMs: 1000 } });
  await a.presence.ready(); // opened, with no heartbeat yet
  const watcher = raw(b, [TAG]);
  follow(watcher, 1); // b beats from now on
  await clock.tickAsync(5100);
  const p = raw(a);
  a.presence.track(p.handle.peer, TAG, 'ada', { tab: 1 });
  await clock.tickAsync(1000);
  assert.deepEqual(presenceFrames(watcher).map((f) => f[2][':presence']), ['sync', 'diff']);
  assert.deepEqual(b.presence.list(TAG), { ada: [{ tab: 1 }] });
  await a.close();
  await b.close();
  assert.equal(clock.countTimers(), 0);
});

test('a follower over maxBufferedBytes is closed with 1008 rather than sent more diffs (WSM-PRS-002)', async () => {
  using clock = fakeTime();
  const a = acceptor();
  const closes: number[] = [];
  let bufferedAmount = 0;
  const sent: unknown[] = [];
  const { peer, message, closed } = a.attach({
    send: (data) => void sent.push(data),
    close: (code) => {
      closes.push(code);
      queueMicrotask(() => closed(code, ''));
    },
    get bufferedAmount() {
      return bufferedAmount;
    },
  }, { tags: [TAG] });
  message(JSON.stringify([1, 1, 1, { ':presence': TAG }, true]));
  await settle(clock);
  bufferedAmount = 9 * 1024 * 1024; // above maxBufferedBytes (8 MiB): it reads nothing
  const p = raw(a);
  a.presence.track(p.handle.peer, TAG, 'ada', {});
  await a.presence.flush();
  await settle(clock);
  assert.deepEqual(closes, [1008]);
  assert.equal(sent.length, 2, 'the snapshot and END only');
  assert.equal(peer.isClosed, true);
  await a.close();
});
