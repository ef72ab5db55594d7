// redisPresence() against a real redis-server (tests/_redis.ts starts one per test on a loopback
// port): the presence conformance suite with two nodes on two pairs of clients, then what is
// Redis's own: the key layout, reaping by several nodes at once, a flushed Redis, one PUBLISH per
// batch, a subscriber that reconnects, and the errors. Redis's clock (`TIME`) cannot be faked, so
// the suite's `advance` waits for real: a few hundred milliseconds per heartbeat test.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createCluster } from 'redis';
import { type RedisPresence, redisPresence } from 'muxws/redis';
import { MuxwsError, TimeoutError } from 'muxws';
import { Acceptor, type Peer } from 'muxws/acceptor';
import {
  memoryPresence,
  type PresenceBatch,
  type PresenceOp,
  type PresenceSink,
} from '../../lib/broadcast/presence.ts';
import { presenceSuite } from '../_presence_suite.ts';
import {
  type Client,
  connectClient,
  destroy,
  type RedisServer,
  startRedis,
  startRedisCluster,
} from '../_redis.ts';
import { waitFor, within } from '../_wait.ts';

const WAIT_MS = 5000;

/** One node's store on its own client and subscriber. */
interface Node {
  readonly store: RedisPresence;
  readonly client: Client;
  readonly subscriber: Client;
  readonly errors: MuxwsError[];
}

/** A Redis and `count` nodes' stores on it; `close()` releases them all. */
async function redisNodes(count: number): Promise<{
  redis: RedisServer;
  nodes: Node[];
  admin: Client;
  close(): Promise<void>;
}> {
  const redis = await startRedis();
  const clients: Client[] = [];
  const close = async () => {
    clients.forEach(destroy);
    await redis.stop();
  };
  try {
    const admin = await connectClient(redis.url);
    clients.push(admin);
    const nodes: Node[] = [];
    for (let i = 0; i < count; i++) {
      const client = await connectClient(redis.url);
      clients.push(client);
      const subscriber = await connectClient(redis.url);
      clients.push(subscriber);
      const errors: MuxwsError[] = [];
      const store = redisPresence({ client, subscriber, onError: (error) => errors.push(error) });
      nodes.push({ store, client, subscriber, errors });
    }
    return { redis, nodes, admin, close };
  } catch (error) {
    await close();
    throw error;
  }
}

presenceSuite('redisPresence()', async () => {
  const { nodes, admin, close } = await redisNodes(2);
  return {
    stores: [nodes[0].store, nodes[1].store] as const,
    now: () => Date.now(),
    advance: (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms)),
    async lose() {
      await admin.flushAll();
    },
    close,
  };
}, { loses: true });

function recorder(): PresenceSink & { batches: PresenceBatch[]; resyncs: number } {
  const batches: PresenceBatch[] = [];
  return {
    batches,
    resyncs: 0,
    batch: (batch) => void batches.push(batch),
    resync() {
      this.resyncs++;
    },
  };
}

const track = (tag: string, key: string, ref: string, peer = 'p-' + ref) =>
  ({ op: 'track', tag, key, ref, meta: '{}', peer }) as const;

test(
  'redisPresence() keeps its keys under one hash tag and publishes on <prefix>diffs (WSM-PRS-003)',
  { timeout: 30_000 },
  async () => {
    const { nodes, admin, close } = await redisNodes(1);
    const { store } = nodes[0];
    try {
      assert.equal(store.prefix, '{muxws:presence}:');
      assert.equal(store.channel, '{muxws:presence}:diffs');
      const sink = recorder();
      await store.open('n1', sink);
      await store.apply('n1', [
        track('room:1', 'ada', 'r1'),
        { op: 'grace', tag: 'room:1', ref: 'r1', untilMs: Date.now() + 60_000 },
      ]);
      const keys = (await admin.keys('*')).sort();
      assert.deepEqual(keys, [
        '{muxws:presence}:epoch',
        '{muxws:presence}:g',
        '{muxws:presence}:gz',
        '{muxws:presence}:n',
        '{muxws:presence}:nodes',
        '{muxws:presence}:o:n1',
        '{muxws:presence}:t:room:1',
        '{muxws:presence}:tags',
        '{muxws:presence}:v',
      ]);
      const row = JSON.parse((await admin.hGet('{muxws:presence}:t:room:1', 'r1'))!);
      assert.deepEqual({ ...row, g: row.g > 0 }, {
        k: 'ada',
        m: '{}',
        n: 'n1',
        p: 'p-r1',
        g: true,
        s: 1,
      });
      assert.deepEqual(await admin.hGetAll('{muxws:presence}:g'), { '6:room:1ada': '["r1"]' });
      await waitFor(() => sink.batches.length === 1, WAIT_MS, 'the batch');
      // The version starts at Redis's clock times 1024, so a lost data set shows as a gap.
      const version = Number(await admin.get('{muxws:presence}:v'));
      assert.equal(sink.batches[0].version, version);
      assert.ok(version > (Date.now() - 60_000) * 1024, `version ${version}`);
      await store.close('n1');
      assert.equal(await admin.zScore('{muxws:presence}:nodes', 'n1'), 0);
    } finally {
      await close();
    }
  },
);

test(
  'redisPresence() two nodes reaping one dead node publish its leaves once (WSM-PRS-003)',
  { timeout: 30_000 },
  async () => {
    const { nodes, admin, close } = await redisNodes(3);
    const [a, b, c] = nodes.map((node) => node.store);
    const raw = admin.duplicate();
    raw.on('error', () => {});
    await raw.connect();
    const messages: string[] = [];
    try {
      await raw.subscribe('{muxws:presence}:diffs', (message) => void messages.push(message));
      await a.open('a', recorder());
      await b.open('b', recorder());
      await c.open('c', recorder());
      await c.apply('c', [track('room', 'cy', 'c1'), track('room', 'dee', 'c2')]);
      await waitFor(() => messages.length === 1, WAIT_MS, 'the join');
      const deadAfterMs = 300;
      await new Promise((resolve) => setTimeout(resolve, deadAfterMs + 50));
      // Every node but c beats at once, several times: c is reaped by exactly one script.
      for (let round = 0; round < 3; round++) {
        await Promise.all([
          a.beat('a', deadAfterMs, () => []),
          b.beat('b', deadAfterMs, () => []),
        ]);
      }
      await a.apply('a', [track('sentinel', 'x', 's1')]);
      await waitFor(() => messages.length === 3, WAIT_MS, 'the leaves and the sentinel');
      const leaves = JSON.parse(messages[1]);
      assert.deepEqual(leaves.c, { room: { j: {}, l: { cy: ['c1'], dee: ['c2'] } } });
      assert.equal(JSON.parse(messages[2]).c.sentinel.j.x.s1, '{}');
      assert.equal(await admin.zScore('{muxws:presence}:nodes', 'c'), null);
    } finally {
      raw.destroy();
      await close();
    }
  },
);

test(
  "redisPresence() a beat after FLUSHALL restores the node's own entries and the others resync (WSM-PRS-003)",
  { timeout: 30_000 },
  async () => {
    const { nodes, admin, close } = await redisNodes(2);
    const [a, b] = nodes.map((node) => node.store);
    const [atA, atB] = [recorder(), recorder()];
    try {
      await a.open('a', atA);
      await b.open('b', atB);
      const ownA = [track('room', 'ada', 'r1')];
      await a.apply('a', ownA);
      await b.apply('b', [track('room', 'bob', 'r2')]);
      await waitFor(() => atB.batches.length === 2, WAIT_MS, 'both joins');
      await admin.flushAll();
      await a.beat('a', 6000, () => ownA);
      assert.equal(atA.resyncs, 1, 'the node that found the data lost reloads');
      // A reload waits until every node put its entries back: the second beat after the loss.
      let reloaded = false;
      const reloadA = a.load().finally(() => reloaded = true); // as the acceptor's resync does
      // b hears a's restore as a skipped version (the version restarted from the clock) or
      // at its own beat, which finds the epoch changed: it reloads either way.
      await b.beat('b', 6000, () => []);
      await waitFor(() => atB.resyncs >= 1, WAIT_MS, 'b to reload');
      const reloadB = b.load();
      assert.equal(reloaded, false, 'no reload before the second beat');
      await a.beat('a', 6000, () => ownA);
      await b.beat('b', 6000, () => []);
      assert.deepEqual((await reloadA).entries.map((entry) => entry.ref), ['r1']);
      const snapshot = await reloadB;
      assert.deepEqual(snapshot.entries.map((entry) => entry.ref), ['r1']);
      // After the reloads, batches flow in order again on both nodes.
      const [fromA, fromB] = [atA.batches.length, atB.batches.length];
      await a.apply('a', [track('room', 'cy', 'r3')]);
      await waitFor(
        () => atA.batches.length > fromA && atB.batches.length > fromB,
        WAIT_MS,
        'the next batch on both nodes',
      );
      assert.equal(atB.batches.at(-1)!.version, snapshot.version + 1);
      assert.equal(atA.batches.at(-1)!.version, snapshot.version + 1);
    } finally {
      await close();
    }
  },
);

test(
  'redisPresence() sends one PUBLISH per apply() that changes something, none otherwise (WSM-PRS-004)',
  { timeout: 30_000 },
  async () => {
    const { nodes, admin, close } = await redisNodes(1);
    const { store } = nodes[0];
    const publishes = async () => {
      const match = /cmdstat_publish:calls=(\d+)/.exec(await admin.info('commandstats'));
      return match ? Number(match[1]) : 0;
    };
    try {
      await store.open('n1', recorder());
      const before = await publishes();
      for (let i = 0; i < 5; i++) {
        await store.apply('n1', [
          track('room', `user${i}`, `r${i}a`),
          track('room', `user${i}`, `r${i}b`),
          track('hall', `user${i}`, `r${i}c`),
        ]);
      }
      await store.apply('n1', [{ op: 'leave', tag: 'room', ref: 'nobody' }]);
      await store.apply('n1', [track('room', 'user0', 'r0a')]); // same meta: no change
      assert.equal(await publishes() - before, 5);
    } finally {
      await close();
    }
  },
);

test(
  'redisPresence() a subscriber that reconnects resyncs the node, then delivers in order (WSM-PRS-003)',
  { timeout: 30_000 },
  async () => {
    const { nodes, admin, close } = await redisNodes(1);
    const { store, errors } = nodes[0];
    const sink = recorder();
    try {
      await store.open('n1', sink);
      await admin.sendCommand(['CLIENT', 'KILL', 'TYPE', 'pubsub']);
      await waitFor(() => sink.resyncs === 1, WAIT_MS, 'the resync');
      assert.ok(errors.some((error) => /lost its connection/.test(error.message)));
      const snapshot = await store.load();
      await store.apply('n1', [track('room', 'ada', 'r1')]);
      await waitFor(() => sink.batches.length === 1, WAIT_MS, 'the batch after the resync');
      assert.equal(sink.batches[0].version, snapshot.version + 1);
    } finally {
      await close();
    }
  },
);

test(
  'redisPresence() asks own() once of a node that beats before it opens, not at every beat (WSM-PRS-003)',
  { timeout: 30_000 },
  async () => {
    const { nodes, close } = await redisNodes(1);
    const { store } = nodes[0];
    try {
      let asked = 0;
      const own = () => (asked++, [track('room', 'ada', 'r1')]);
      for (let i = 0; i < 3; i++) await store.beat('n1', 6000, own);
      assert.equal(asked, 1);
      assert.deepEqual((await store.load()).entries.map((entry) => entry.ref), ['r1']);
    } finally {
      await close();
    }
  },
);

test(
  'redisPresence() reports a message that is not a batch, and reloads a node on a skipped version (WSM-PRS-003)',
  { timeout: 30_000 },
  async () => {
    const { nodes, admin, close } = await redisNodes(1);
    const { store, errors } = nodes[0];
    const sink = recorder();
    try {
      const { version } = await store.open('n1', sink);
      await admin.publish(store.channel, 'not json');
      await admin.publish(store.channel, JSON.stringify({ v: 7, c: {} }));
      await waitFor(() => errors.length === 2, WAIT_MS, 'two reports');
      assert.match(errors[0].message, /carried a message that is not a presence batch/);
      assert.match(errors[1].message, /expected a version "v"/);
      assert.equal(sink.resyncs, 0);
      // A batch two versions ahead: one was missed, so the node reloads.
      await admin.publish(store.channel, JSON.stringify({ v: String(version + 2), c: {}, mv: [] }));
      await waitFor(() => sink.resyncs === 1, WAIT_MS, 'the resync');
      // Batches are held until the node's load, which includes them: they are dropped then.
      await store.apply('n1', [track('room', 'ada', 'r1')]);
      await store.apply('n1', [track('room', 'bob', 'r2')]);
      const loaded = await store.load();
      assert.equal(loaded.version, version + 2);
      await store.apply('n1', [track('room', 'cy', 'r3')]);
      await waitFor(() => sink.batches.length === 1, WAIT_MS, 'the batch after the load');
      assert.equal(sink.batches[0].version, version + 3);
      assert.equal(sink.resyncs, 1);
    } finally {
      await close();
    }
  },
);

test(
  'redisPresence() runs on a Redis Cluster, every key on the slot of the prefix (WSM-PRS-003)',
  { timeout: 30_000 },
  async () => {
    const redis = await startRedisCluster();
    let cluster: ReturnType<typeof createCluster> | undefined;
    let subscriber: Client | undefined;
    try {
      cluster = createCluster({ rootNodes: [{ url: redis.url }] });
      cluster.on('error', () => {});
      await within(cluster.connect(), 5000, 'the cluster client to connect');
      subscriber = await connectClient(redis.url);
      const store = redisPresence({ client: cluster, subscriber });
      const sink = recorder();
      await store.open('n1', sink);
      await store.apply('n1', [
        track('room:1', 'ada', 'r1'),
        { op: 'grace', tag: 'room:1', ref: 'r1', untilMs: 1, orphan: true },
      ]);
      await store.beat('n1', 6000, () => []); // the orphan's grace ended: swept
      await waitFor(() => sink.batches.length === 2, WAIT_MS, 'the join and the sweep');
      assert.deepEqual(sink.batches[1].changes, [
        { tag: 'room:1', joins: {}, leaves: { ada: ['r1'] } },
      ]);
      assert.deepEqual((await store.load()).entries, []);
      await store.close('n1');
    } finally {
      await cluster?.destroy();
      destroy(subscriber);
      await redis.stop();
    }
  },
);

test(
  'redisPresence() never applies a call that timed out, when it reaches Redis later (WSM-PRS-003)',
  { timeout: 30_000 },
  async () => {
    const { nodes, close } = await redisNodes(1);
    const { client, subscriber } = nodes[0];
    // A client that holds the second call for 1500 ms, as an offline queue sends it after a
    // reconnect; the store waits 1000 ms.
    let calls = 0;
    const late: Promise<unknown>[] = [];
    const slow = {
      eval(script: string, options: { keys: string[]; arguments: string[] }) {
        if (++calls !== 2) return client.eval(script, options);
        const sent = new Promise((resolve) => setTimeout(resolve, 1500)).then(() =>
          client.eval(script, options)
        );
        late.push(sent);
        return sent;
      },
    };
    const store = redisPresence({ client: slow, subscriber, commandTimeoutMs: 1000 });
    try {
      await store.apply('n1', [track('room', 'ada', 'r1')]);
      await assert.rejects(
        store.apply('n1', [track('room', 'bob', 'r2')]),
        (error: unknown) => error instanceof TimeoutError,
      );
      await store.apply('n1', [{ op: 'leave', tag: 'room', ref: 'r1' }]);
      const [reply] = (await Promise.all(late)) as [number, number][];
      assert.equal(reply[0], -1, 'Redis refused it: too late');
      assert.deepEqual((await store.load()).entries, []);
    } finally {
      await close();
    }
  },
);

test(
  'redisPresence() tries a restore that failed again at the next beat (WSM-PRS-003)',
  { timeout: 30_000 },
  async () => {
    const { nodes, admin, close } = await redisNodes(1);
    const { client, subscriber } = nodes[0];
    let failApply = false;
    const failing = {
      eval(script: string, options: { keys: string[]; arguments: string[] }) {
        if (failApply && script.includes("op.op == 'track'")) {
          return Promise.reject(new Error("READONLY You can't write against a read only replica."));
        }
        return client.eval(script, options);
      },
    };
    const store = redisPresence({ client: failing, subscriber });
    try {
      const own = [track('room', 'ada', 'r1')];
      let asked = 0;
      await store.beat('n1', 6000, () => (asked++, own));
      await admin.flushAll();
      failApply = true;
      await assert.rejects(
        store.beat('n1', 6000, () => (asked++, own)),
        /Cannot apply presence changes of node "n1" in Redis: READONLY/,
      );
      failApply = false;
      await store.beat('n1', 6000, () => (asked++, own));
      assert.equal(asked, 3);
      assert.deepEqual((await store.load()).entries.map((entry) => entry.ref), ['r1']);
      await store.beat('n1', 6000, () => (asked++, own));
      assert.equal(asked, 3, 'nothing more to restore');
    } finally {
      await close();
    }
  },
);

/**
 * Two acceptors on one Redis, the second one's subscriber holding what the channel brings while
 * `hold` is true; `applied` counts the store calls of the second that resolved.
 */
async function heldNodes() {
  const redis = await startRedis();
  const clients: Client[] = [];
  const acceptors: Acceptor[] = [];
  const held: (() => void)[] = [];
  const state = { hold: false, applied: 0 };
  const close = async () => {
    state.hold = false;
    for (const deliver of held.splice(0)) deliver();
    for (const acceptor of acceptors) await acceptor.close();
    clients.forEach(destroy);
    await redis.stop();
  };
  try {
    for (let i = 0; i < 4; i++) clients.push(await connectClient(redis.url));
    const [clientA, subscriberA, clientB, subscriberB] = clients;
    type Listener = (message: string, channel: string) => void;
    const listeners = new Map<Listener, Listener>();
    const holding = {
      on: subscriberB.on.bind(subscriberB),
      off: subscriberB.off.bind(subscriberB),
      subscribe(channel: string, listener: Listener) {
        const wrapped: Listener = (message, from) => {
          if (state.hold) held.push(() => listener(message, from));
          else listener(message, from);
        };
        listeners.set(listener, wrapped);
        return subscriberB.subscribe(channel, wrapped);
      },
      unsubscribe(channel: string, listener: Listener) {
        return subscriberB.unsubscribe(channel, listeners.get(listener) ?? listener);
      },
    };
    const inner = redisPresence({ client: clientB, subscriber: holding });
    const storeB = {
      ...inner,
      async apply(node: string, ops: readonly PresenceOp[]) {
        const result = await inner.apply(node, ops);
        state.applied++;
        return result;
      },
    };
    const presence = { graceMs: 60_000, batchMs: 0 };
    const a = new Acceptor({
      idleTimeoutMs: 0,
      presence: { ...presence, store: redisPresence({ client: clientA, subscriber: subscriberA }) },
    });
    acceptors.push(a);
    const b = new Acceptor({ idleTimeoutMs: 0, presence: { ...presence, store: storeB } });
    acceptors.push(b);
    await Promise.all([a.presence.ready(), b.presence.ready()]);
    const entries = async () =>
      (await inner.load()).entries.map(({ key, meta }) => ({ key, meta }));
    /** Ada's peer on the first node closes: her presence is in grace there. */
    const graced = async () => {
      const pa = a.attach({ send() {}, close() {} });
      a.presence.track(pa.peer, 'room:1', 'ada', { tab: 1 });
      await a.presence.flush();
      pa.closed(1006);
      await a.presence.flush();
    };
    /** Ada redials to the second node, which adopts her presence, its echo held. */
    const adopted = async (): Promise<Peer> => {
      const { peer } = b.attach({ send() {}, close() {} });
      state.hold = true;
      b.presence.track(peer, 'room:1', 'ada', { tab: 1 });
      await waitFor(() => state.applied === 1, WAIT_MS, 'the adoption');
      return peer;
    };
    const release = () => {
      state.hold = false;
      for (const deliver of held.splice(0)) deliver();
    };
    return { a, b, state, entries, graced, adopted, release, close };
  } catch (error) {
    await close();
    throw error;
  }
}

test(
  'redisPresence() a new meta sent before the echo of its adoption changes the adopted entry, leaving one (WSM-PRS-001)',
  { timeout: 30_000 },
  async () => {
    const nodes = await heldNodes();
    const { a, b, state, entries } = nodes;
    try {
      await nodes.graced();
      const peer = await nodes.adopted();
      b.presence.track(peer, 'room:1', 'ada', { tab: 2 });
      await waitFor(() => state.applied === 2, WAIT_MS, 'the new meta');
      assert.deepEqual(await entries(), [{ key: 'ada', meta: '{"tab":2}' }]);
      nodes.release();
      await b.presence.flush();
      await a.presence.flush();
      assert.deepEqual(await entries(), [{ key: 'ada', meta: '{"tab":2}' }]);
      for (const node of [a, b]) {
        assert.deepEqual(node.presence.list('room:1'), { ada: [{ tab: 2 }] });
      }
      b.presence.untrack(peer, 'room:1');
      await b.presence.flush();
      await a.presence.flush();
      assert.deepEqual(await entries(), []);
      for (const node of [a, b]) assert.deepEqual(node.presence.list('room:1'), {});
    } finally {
      await nodes.close();
    }
  },
);

test(
  'redisPresence() an untrack sent before the echo of its adoption removes the adopted entry (WSM-PRS-001)',
  { timeout: 30_000 },
  async () => {
    const nodes = await heldNodes();
    const { a, b, state, entries } = nodes;
    try {
      await nodes.graced();
      const peer = await nodes.adopted();
      b.presence.untrack(peer, 'room:1');
      await waitFor(() => state.applied === 2, WAIT_MS, 'the untrack');
      assert.deepEqual(await entries(), []);
      nodes.release();
      await b.presence.flush();
      await a.presence.flush();
      assert.deepEqual(await entries(), []);
      for (const node of [a, b]) assert.deepEqual(node.presence.list('room:1'), {});
    } finally {
      await nodes.close();
    }
  },
);

test('redisPresence() rejects bad options with a TypeError naming what it expected', () => {
  const subscriber = { subscribe() {}, unsubscribe() {}, on() {} };
  const client = { eval() {} };
  const make = (options: unknown) => () =>
    redisPresence(options as Parameters<typeof redisPresence>[0]);
  assert.throws(make(null), /"options" must be an object: current value is null/);
  assert.throws(
    make({ subscriber }),
    /"client" must be a Redis client: current value is undefined/,
  );
  assert.throws(make({ client: {}, subscriber }), /"client" must have a eval\(\) method/);
  assert.throws(
    make({ client, subscriber: { on() {} } }),
    /"subscriber" must have a subscribe\(\)/,
  );
  assert.throws(make({ client, subscriber, prefix: '' }), /"prefix" must be a non-empty string/);
  assert.throws(
    make({ client, subscriber, commandTimeoutMs: 0 }),
    (error: unknown) =>
      error instanceof RangeError && /positive integer: current value is 0/.test(error.message),
  );
  assert.throws(make({ client, subscriber, onError: 1 }), /"onError" must be a function/);
});

test('redisPresence() rejects, never throws, when the client is not connected or an op is bad', async () => {
  const subscriber = {
    subscribe: () => Promise.resolve(),
    unsubscribe: () => Promise.resolve(),
    on() {},
  };
  const client = { isReady: false, eval: () => Promise.resolve(0) };
  const store = redisPresence({ client, subscriber });
  await assert.rejects(
    store.load(),
    (error: unknown) =>
      error instanceof MuxwsError &&
      /Cannot load the presences in Redis: the client is not connected/.test(error.message),
  );
  await assert.rejects(
    store.apply('n1', [{ op: 'track', tag: 'room', key: 'ada', ref: 'r1', meta: 1 } as never]),
    /ops\[0\] must be a track with string tag, key, ref, meta and peer/,
  );
  await assert.rejects(store.apply('', []), /the node must be a non-empty string/);
  await assert.rejects(store.beat('n1', 0, () => []), /"deadAfterMs" must be a positive integer/);
});

/** A seeded generator of floats in [0, 1) (mulberry32), so a failing sequence can be replayed. */
function random(seed: number): () => number {
  return () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** A batch with its changes and moves in a fixed order, leaves sorted. */
function normal(batch: PresenceBatch) {
  return {
    changes: [...batch.changes].sort((x, y) => x.tag < y.tag ? -1 : 1).map((change) => ({
      tag: change.tag,
      joins: change.joins,
      leaves: Object.fromEntries(
        Object.entries(change.leaves).map(([key, refs]) => [key, [...refs].sort()]),
      ),
    })),
    moved: [...batch.moved].sort((x, y) => x.tag + x.ref < y.tag + y.ref ? -1 : 1),
  };
}

test(
  'redisPresence() publishes the same batches and ends with the same table as the pure rules on random operations (WSM-PRS-001 WSM-PRS-003)',
  { timeout: 60_000 },
  async () => {
    const { nodes, close } = await redisNodes(1);
    const { store } = nodes[0];
    const memory = memoryPresence();
    const [inRedis, inMemory] = [recorder(), recorder()];
    try {
      await store.open('n1', inRedis);
      await memory.open('n1', inMemory);
      const next = random(25);
      const pick = <T>(list: readonly T[]): T => list[Math.floor(next() * list.length)];
      const until = Date.now() + 600_000;
      for (let round = 0; round < 400; round++) {
        const node = pick(['n1', 'n2', 'n3']);
        const ops: PresenceOp[] = [];
        for (let i = 1 + Math.floor(next() * 3); i > 0; i--) {
          const tag = pick(['room', 'hall']);
          const ref = `r${Math.floor(next() * 12)}`;
          const kind = next();
          if (kind < 0.5) {
            ops.push({
              op: 'track',
              tag,
              key: pick(['ada', 'bob']),
              ref,
              meta: pick(['{}', '{"tab":1}', '"x"']),
              peer: pick(['p1', 'p2']),
            });
          } else if (kind < 0.8) {
            ops.push({ op: 'grace', tag, ref, untilMs: until + round, orphan: next() < 0.2 });
          } else {
            ops.push({ op: 'leave', tag, ref });
          }
        }
        await Promise.all([store.apply(node, ops), memory.apply(node, ops)]);
      }
      await waitFor(
        () => inRedis.batches.length >= inMemory.batches.length,
        WAIT_MS,
        `${inMemory.batches.length} batches from Redis`,
      );
      const moves = inMemory.batches.reduce((sum, batch) => sum + batch.moved.length, 0);
      assert.ok(moves > 20, `${moves} moves in ${inMemory.batches.length} batches`);
      assert.deepEqual(inRedis.batches.map(normal), inMemory.batches.map(normal));
      const first = inRedis.batches[0].version;
      assert.deepEqual(
        inRedis.batches.map((batch) => batch.version - first),
        inMemory.batches.map((batch) => batch.version - 1),
      );
      const table = async (from: typeof memory) =>
        (await from.load()).entries.map((entry) => ({ ...entry })).sort((x, y) =>
          x.tag + x.ref < y.tag + y.ref ? -1 : 1
        );
      assert.deepEqual(await table(store), await table(memory));
    } finally {
      await close();
    }
  },
);
