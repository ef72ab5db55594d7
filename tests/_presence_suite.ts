/**
 * The conformance suite every {@linkcode PresenceStore} passes, registered once per store:
 *
 * ```ts ignore
 * presenceSuite('redisPresence()', async () => ({
 *   stores: [storeOfNodeA, storeOfNodeB], // two clients of one Redis
 *   now: () => Date.now(),
 *   advance: (ms) => new Promise((resolve) => setTimeout(resolve, ms)),
 *   close: async () => { ...; await redis.stop(); },
 * }));
 * // A store of one process, on a clock the test moves: the same object twice.
 * presenceSuite('memoryPresence()', handClockFixture((now) => memoryPresence({ now })));
 * ```
 *
 * The fixture gives two handles on one shared table (two nodes' stores, or one object twice),
 * the clock the store reads graces and heartbeats on (`now`, epoch ms), `advance(ms)` that lets
 * `ms` pass on it (a fake clock moves; a store on a real clock, such as Redis's `TIME`, waits),
 * optionally `lose()` (the store loses every entry, as a restart without persistence does), and
 * `close()`, called in `finally`. The suite opens node `a` on `stores[0]` and node `b` on
 * `stores[1]` and records what each sink receives; batches may arrive after `apply` resolves, so
 * every wait is bounded by `WAIT_MS`. The heartbeat tests are registered unless `beats` is false
 * (a store of one node, without `beat`), the data-loss test when `loses` is true. A change
 * that must publish nothing is checked with a sentinel: the next batch, of a sentinel tag, must
 * carry the very next version.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type {
  PresenceBatch,
  PresenceOp,
  PresenceSink,
  PresenceSnapshot,
  PresenceStore,
} from '../lib/broadcast/presence.ts';
import { waitFor } from './_wait.ts';

/** Two handles on one table, its clock, and how to release it. */
export interface PresenceFixture {
  readonly stores: readonly [PresenceStore, PresenceStore];
  /** The store's clock, in epoch milliseconds. */
  now(): number;
  /** Lets `ms` pass on the store's clock. */
  advance(ms: number): Promise<void>;
  /** Optional: the store loses every entry (a restart without persistence). */
  lose?(): Promise<void>;
  close(): Promise<void>;
}

/** Opens the store of one test. */
export type OpenPresence = () => Promise<PresenceFixture>;

/**
 * The fixture of a store of one process, made by `make` on a clock the test moves by hand: the
 * two nodes share the one store object, as the acceptors of one process do.
 */
export function handClockFixture(make: (now: () => number) => PresenceStore): OpenPresence {
  return () => {
    let time = 1_700_000_000_000;
    const now = () => time;
    const store = make(now);
    return Promise.resolve({
      stores: [store, store] as const,
      now,
      advance: (ms: number) => {
        time += ms;
        return Promise.resolve();
      },
      close: () => Promise.resolve(),
    });
  };
}

const WAIT_MS = 5000;
/** How long a node may stay silent in the heartbeat tests; `advance` goes by 3/5 of it. */
const DEAD_AFTER_MS = 1000;
const SENTINEL = '~sentinel';

/** A sink that records the batches and resyncs one node receives. */
interface Recorder extends PresenceSink {
  readonly batches: PresenceBatch[];
  resyncs: number;
}

function recorder(): Recorder {
  const batches: PresenceBatch[] = [];
  return {
    batches,
    resyncs: 0,
    batch(batch) {
      batches.push(batch);
    },
    resync() {
      this.resyncs++;
    },
  };
}

const track = (tag: string, key: string, ref: string, meta: unknown, peer = 'p-' + ref) =>
  ({ op: 'track', tag, key, ref, meta: JSON.stringify(meta), peer }) as const;
const grace = (tag: string, ref: string, untilMs: number, orphan?: boolean) =>
  ({ op: 'grace', tag, ref, untilMs, ...(orphan ? { orphan } : {}) }) as const;
const leave = (tag: string, ref: string) => ({ op: 'leave', tag, ref }) as const;

/** A batch without the order of its changes: tag → { joins, leaves }, and its moves. */
function shape(batch: PresenceBatch) {
  const changes: Record<string, unknown> = {};
  for (const change of batch.changes) {
    const leaves: Record<string, string[]> = {};
    for (const [key, refs] of Object.entries(change.leaves)) leaves[key] = [...refs].sort();
    changes[change.tag] = { joins: change.joins, leaves };
  }
  const moved = [...batch.moved].sort((x, y) => x.ref < y.ref ? -1 : 1);
  return { changes, moved };
}

/** The batches without the sentinel's changes, and without those that carried only them. */
function withoutSentinels(batches: readonly PresenceBatch[]): PresenceBatch[] {
  return batches.map((batch) => ({
    ...batch,
    changes: batch.changes.filter((change) => change.tag !== SENTINEL),
  })).filter((batch) => batch.changes.length > 0 || batch.moved.length > 0);
}

/** tag → key → ref → meta, from a snapshot. */
function tableOf(
  snapshot: PresenceSnapshot,
): Record<string, Record<string, Record<string, string>>> {
  const table: Record<string, Record<string, Record<string, string>>> = {};
  for (const entry of snapshot.entries) {
    if (entry.tag === SENTINEL) continue;
    ((table[entry.tag] ??= {})[entry.key] ??= {})[entry.ref] = entry.meta;
  }
  return table;
}

/** Applies `batch` to a replica built as `tableOf` does. */
function replay(
  table: Record<string, Record<string, Record<string, string>>>,
  batch: PresenceBatch,
): void {
  for (const change of batch.changes) {
    if (change.tag === SENTINEL) continue;
    const keys = table[change.tag] ??= {};
    for (const [key, refs] of Object.entries(change.leaves)) {
      for (const ref of refs) delete keys[key]?.[ref];
      if (keys[key] && Object.keys(keys[key]).length === 0) delete keys[key];
    }
    for (const [key, refs] of Object.entries(change.joins)) Object.assign(keys[key] ??= {}, refs);
    if (Object.keys(keys).length === 0) delete table[change.tag];
  }
}

/** One test's two open nodes. */
interface Nodes {
  readonly fixture: PresenceFixture;
  readonly a: PresenceStore;
  readonly b: PresenceStore;
  readonly atA: Recorder;
  readonly atB: Recorder;
  readonly openedAt: PresenceSnapshot;
  /** Waits until both nodes received a batch of `version` (or later). */
  seen(version?: number): Promise<void>;
  /** The batches both nodes received after `from` batches, sentinels left out; asserts they agree. */
  since(from: number): PresenceBatch[];
  /**
   * Applies a sentinel on `a` and waits for it on both nodes: resolves with the batches in
   * between (none when nothing was published), checking the sentinel's version follows theirs.
   */
  settle(): Promise<PresenceBatch[]>;
}

let sentinels = 0;

/** Registers one test on a fresh fixture with nodes `a` and `b` open. */
function withNodes(
  open: OpenPresence,
  body: (nodes: Nodes) => Promise<void>,
): () => Promise<void> {
  return async () => {
    const fixture = await open();
    const [a, b] = fixture.stores;
    const atA = recorder();
    const atB = recorder();
    try {
      const openedAt = await a.open('a', atA);
      await b.open('b', atB);
      let mark = 0;
      const last = (sink: Recorder) => sink.batches.at(-1)?.version ?? -1;
      const nodes: Nodes = {
        fixture,
        a,
        b,
        atA,
        atB,
        openedAt,
        async seen(version) {
          const want = version ?? Math.max(last(atA), last(atB));
          await waitFor(
            () => last(atA) >= want && last(atB) >= want,
            WAIT_MS,
            `batch ${want} on both nodes`,
          );
        },
        since(from) {
          const strip = (sink: Recorder) => withoutSentinels(sink.batches.slice(from));
          const [onA, onB] = [strip(atA), strip(atB)];
          assert.deepEqual(onA.map(shape), onB.map(shape), 'both nodes receive the same batches');
          assert.deepEqual(onA.map((x) => x.version), onB.map((x) => x.version));
          return onA;
        },
        async settle() {
          const ref = `s${++sentinels}`;
          await a.apply('a', [track(SENTINEL, 'sentinel', ref, 0)]);
          const isMine = (batch: PresenceBatch) =>
            batch.changes.some((change) => change.tag === SENTINEL && change.joins.sentinel?.[ref]);
          await waitFor(
            () => atA.batches.some(isMine) && atB.batches.some(isMine),
            WAIT_MS,
            'the sentinel on both nodes',
          );
          const end = atA.batches.findIndex(isMine);
          const between = withoutSentinels(atA.batches.slice(mark, end));
          const before = atA.batches[end - 1]?.version ?? openedAt.version;
          assert.equal(atA.batches[end].version, before + 1, 'the sentinel follows at once');
          mark = end + 1;
          return between;
        },
      };
      await nodes.settle(); // both subscribed and the version known
      await body(nodes);
    } finally {
      await Promise.allSettled([a.close('a'), b.close('b')]);
      await fixture.close();
    }
  };
}

/** What a store can be tested for beyond the table's rules. */
export interface PresenceSuiteFeatures {
  /** It has `beat()` (heartbeats, reaping, restore). @default {true} */
  readonly beats?: boolean;
  /** Its fixture has `lose()`. @default {false} */
  readonly loses?: boolean;
}

/**
 * Registers the suite for one store. `open` is called once per test.
 */
export function presenceSuite(
  name: string,
  open: OpenPresence,
  { beats = true, loses = false }: PresenceSuiteFeatures = {},
): void {
  const T = { timeout: 30_000 };

  test(
    `${name} groups the refs of one key, and a re-track changes the meta (WSM-PRS-001)`,
    T,
    () =>
      withNodes(open, async ({ a, settle }) => {
        await a.apply('a', [
          track('room', 'ada', 'r1', { tab: 1 }),
          track('room', 'ada', 'r2', { tab: 2 }),
          track('room', 'bob', 'r3', {}),
        ]);
        const [joined] = await settle();
        assert.deepEqual(shape(joined), {
          changes: {
            room: {
              joins: { ada: { r1: '{"tab":1}', r2: '{"tab":2}' }, bob: { r3: '{}' } },
              leaves: {},
            },
          },
          moved: [],
        });
        await a.apply('a', [track('room', 'ada', 'r1', { tab: 9 })]);
        const [updated] = await settle();
        assert.deepEqual(shape(updated).changes, {
          room: { joins: { ada: { r1: '{"tab":9}' } }, leaves: { ada: ['r1'] } },
        });
        // The same meta again: nothing to publish.
        await a.apply('a', [track('room', 'ada', 'r1', { tab: 9 })]);
        assert.deepEqual(await settle(), []);
      })(),
  );

  test(
    `${name} adopts an entry in grace from another node: same ref, no change when the meta is equal (WSM-PRS-001)`,
    T,
    () =>
      withNodes(open, async ({ a, b, fixture, settle }) => {
        await a.apply('a', [track('room', 'ada', 'r1', { tab: 1 }, 'pa')]);
        await settle();
        await a.apply('a', [grace('room', 'r1', fixture.now() + 60_000)]);
        assert.deepEqual(await settle(), [], 'a grace changes nothing followers see');
        await b.apply('b', [track('room', 'ada', 'r9', { tab: 1 }, 'pb')]);
        const [adopted] = await settle();
        assert.deepEqual(shape(adopted), {
          changes: {},
          moved: [{ tag: 'room', ref: 'r1', node: 'b', peer: 'pb', key: 'ada' }],
        });
        const entries = (await b.load()).entries.filter((entry) => entry.tag === 'room');
        assert.deepEqual(entries, [{
          tag: 'room',
          key: 'ada',
          ref: 'r1',
          meta: '{"tab":1}',
          node: 'b',
          peer: 'pb',
          untilMs: 0,
        }]);
        // The old owner's leave after its grace does nothing: compare and delete.
        await a.apply('a', [leave('room', 'r1')]);
        assert.deepEqual(await settle(), []);
        await b.apply('b', [leave('room', 'r1')]);
        const [left] = await settle();
        assert.deepEqual(shape(left).changes, { room: { joins: {}, leaves: { ada: ['r1'] } } });
      })(),
  );

  test(
    `${name} adopts with a changed meta as a leave and a join of the same ref (WSM-PRS-001)`,
    T,
    () =>
      withNodes(open, async ({ a, b, fixture, settle }) => {
        await a.apply('a', [track('room', 'ada', 'r1', { tab: 1 }, 'pa')]);
        await a.apply('a', [grace('room', 'r1', fixture.now() + 60_000)]);
        await settle();
        await b.apply('b', [track('room', 'ada', 'r9', { tab: 2 }, 'pb')]);
        const [adopted] = await settle();
        assert.deepEqual(shape(adopted), {
          changes: { room: { joins: { ada: { r1: '{"tab":2}' } }, leaves: { ada: ['r1'] } } },
          moved: [{ tag: 'room', ref: 'r1', node: 'b', peer: 'pb', key: 'ada' }],
        });
      })(),
  );

  test(
    `${name} ignores a leave by a node that does not own the entry (WSM-PRS-001)`,
    T,
    () =>
      withNodes(open, async ({ a, b, settle }) => {
        await a.apply('a', [track('room', 'ada', 'r1', {})]);
        await settle();
        await b.apply('b', [leave('room', 'r1'), leave('room', 'nobody')]);
        assert.deepEqual(await settle(), []);
        assert.equal((await b.load()).entries.filter((e) => e.tag === 'room').length, 1);
      })(),
  );

  test(
    `${name} publishes the net change of a batch per ref (WSM-PRS-004)`,
    T,
    () =>
      withNodes(open, async ({ a, settle }) => {
        await a.apply('a', [track('room', 'ada', 'r1', {}), leave('room', 'r1')]);
        assert.deepEqual(await settle(), [], 'a join and a leave of one ref in one batch');
        await a.apply('a', [
          track('room', 'bob', 'r2', { v: 1 }),
          track('room', 'bob', 'r2', { v: 2 }),
        ]);
        const [joined] = await settle();
        assert.deepEqual(shape(joined).changes, {
          room: { joins: { bob: { r2: '{"v":2}' } }, leaves: {} },
        });
        await a.apply('a', [leave('room', 'r2'), track('room', 'bob', 'r2', { v: 3 })]);
        const [updated] = await settle();
        assert.deepEqual(shape(updated).changes, {
          room: { joins: { bob: { r2: '{"v":3}' } }, leaves: { bob: ['r2'] } },
        });
      })(),
  );

  test(
    `${name} numbers batches one by one, in the same order on both nodes (WSM-PRS-003)`,
    T,
    () =>
      withNodes(open, async ({ a, b, atA, since, seen }) => {
        const from = atA.batches.length;
        await Promise.all([
          a.apply('a', [track('room', 'ada', 'r1', {})]),
          b.apply('b', [track('room', 'bob', 'r2', {})]),
          a.apply('a', [track('other', 'cy', 'r3', {})]),
          b.apply('b', [track('room', 'dee', 'r4', {})]),
        ]);
        await waitFor(() => atA.batches.length >= from + 4, WAIT_MS, 'four batches');
        await seen();
        const batches = since(from);
        assert.equal(batches.length, 4);
        const versions = batches.map((batch) => batch.version);
        assert.deepEqual(versions, versions.map((_, i) => versions[0] + i));
        assert.equal(versions[0], atA.batches[from - 1].version + 1);
      })(),
  );

  test(
    `${name} load() equals the replica built from the open snapshot and the batches (WSM-PRS-003)`,
    T,
    () =>
      withNodes(open, async ({ a, b, atB, fixture, settle }) => {
        const replica = tableOf(await b.load());
        const from = atB.batches.length;
        await a.apply('a', [track('room', 'ada', 'r1', { n: 1 }), track('room', 'ada', 'r2', 2)]);
        await b.apply('b', [track('room', 'bob', 'r3', 'x'), track('hall', 'cy', 'r4', null)]);
        await a.apply('a', [leave('room', 'r2'), grace('room', 'r1', fixture.now() + 60_000)]);
        await b.apply('b', [track('room', 'ada', 'r5', { n: 2 }), leave('hall', 'r4')]);
        await a.apply('a', [track('hall', 'dee', 'r6', [1, 'ü"\\'])]);
        await settle();
        for (const batch of atB.batches.slice(from)) replay(replica, batch);
        assert.deepEqual(replica, tableOf(await a.load()));
        assert.deepEqual(replica, {
          room: { ada: { r1: '{"n":2}' }, bob: { r3: '"x"' } },
          hall: { dee: { r6: '[1,"ü\\"\\\\"]' } },
        });
      })(),
  );

  if (!beats) return;

  test(
    `${name} reaps a node silent longer than deadAfterMs once, whichever nodes beat (WSM-PRS-003)`,
    T,
    () =>
      withNodes(open, async ({ a, b, atA, atB, fixture, settle }) => {
        assert.ok(a.beat && b.beat, 'the store has beat()');
        const c = fixture.stores[1];
        const atC = recorder();
        await c.open('c', atC);
        await c.apply('c', [track('room', 'cy', 'c1', {}), track('hall', 'cy', 'c2', {})]);
        await a.apply('a', [track('room', 'ada', 'a1', {})]);
        await settle();
        const none = () => [];
        await Promise.all([a.beat('a', DEAD_AFTER_MS, none), b.beat('b', DEAD_AFTER_MS, none)]);
        await fixture.advance(DEAD_AFTER_MS * 0.6);
        await Promise.all([a.beat('a', DEAD_AFTER_MS, none), b.beat('b', DEAD_AFTER_MS, none)]);
        await fixture.advance(DEAD_AFTER_MS * 0.6);
        // c is silent for 6/5 of deadAfterMs; a and b for 3/5: both beat, one of them reaps c.
        await Promise.all([a.beat('a', DEAD_AFTER_MS, none), b.beat('b', DEAD_AFTER_MS, none)]);
        await Promise.all([a.beat('a', DEAD_AFTER_MS, none), b.beat('b', DEAD_AFTER_MS, none)]);
        const between = await settle();
        assert.equal(between.length, 1, 'one batch of leaves');
        assert.deepEqual(shape(between[0]).changes, {
          room: { joins: {}, leaves: { cy: ['c1'] } },
          hall: { joins: {}, leaves: { cy: ['c2'] } },
        });
        const left = (await a.load()).entries.filter((e) => e.tag !== SENTINEL);
        assert.deepEqual(left.map((e) => e.ref), ['a1']);
        assert.equal(atA.resyncs + atB.resyncs, 0);
        await c.close('c');
      })(),
  );

  test(
    `${name} removes an orphan once its grace ended, and keeps a live node's entry until it leaves (WSM-PRS-003)`,
    T,
    () =>
      withNodes(open, async ({ a, b, fixture, settle }) => {
        assert.ok(a.beat && b.beat, 'the store has beat()');
        const none = () => [];
        const until = fixture.now() + DEAD_AFTER_MS / 2;
        await a.apply('a', [track('room', 'ada', 'r1', {}), track('room', 'bob', 'r2', {})]);
        await a.apply('a', [grace('room', 'r1', until, true), grace('room', 'r2', until)]);
        await settle();
        await b.beat('b', DEAD_AFTER_MS, none);
        assert.deepEqual(await settle(), [], 'nothing is due yet');
        await fixture.advance(DEAD_AFTER_MS * 0.6);
        await Promise.all([a.beat('a', DEAD_AFTER_MS, none), b.beat('b', DEAD_AFTER_MS, none)]);
        await b.beat('b', DEAD_AFTER_MS, none);
        const [swept, ...more] = await settle();
        assert.deepEqual(more, []);
        assert.deepEqual(shape(swept).changes, { room: { joins: {}, leaves: { ada: ['r1'] } } });
        // r2's owner is alive: its own leave removes it.
        await a.apply('a', [leave('room', 'r1'), leave('room', 'r2')]);
        const [left] = await settle();
        assert.deepEqual(shape(left).changes, { room: { joins: {}, leaves: { bob: ['r2'] } } });
      })(),
  );

  test(
    `${name} puts a reaped node's own entries back at its next beat (WSM-PRS-003)`,
    T,
    () =>
      withNodes(open, async ({ a, b, fixture, settle }) => {
        assert.ok(a.beat && b.beat, 'the store has beat()');
        const ops: PresenceOp[] = [track('room', 'ada', 'r1', { tab: 1 })];
        await a.apply('a', ops);
        await settle();
        await fixture.advance(DEAD_AFTER_MS * 1.2);
        await b.beat('b', DEAD_AFTER_MS, () => []);
        const [reaped] = await settle();
        assert.deepEqual(shape(reaped).changes, { room: { joins: {}, leaves: { ada: ['r1'] } } });
        let asked = 0;
        await a.beat('a', DEAD_AFTER_MS, () => (asked++, ops));
        assert.equal(asked, 1);
        const [restored] = await settle();
        assert.deepEqual(shape(restored).changes, {
          room: { joins: { ada: { r1: '{"tab":1}' } }, leaves: {} },
        });
        await a.beat('a', DEAD_AFTER_MS, () => (asked++, ops));
        assert.equal(asked, 1, 'own() is asked only after a loss');
      })(),
  );

  test(
    `${name} reaps what a reaped node tracked before it learnt so, when it never beats again (WSM-PRS-003)`,
    T,
    () =>
      withNodes(open, async ({ a, b, fixture, settle }) => {
        assert.ok(a.beat && b.beat, 'the store has beat()');
        await a.apply('a', [track('room', 'ada', 'r1', {})]);
        await settle();
        await fixture.advance(DEAD_AFTER_MS * 1.2);
        await b.beat('b', DEAD_AFTER_MS, () => []);
        const [reaped] = await settle();
        assert.deepEqual(shape(reaped).changes, { room: { joins: {}, leaves: { ada: ['r1'] } } });
        // a is reaped but does not know it yet: it tracks once more, then falls silent for good
        await a.apply('a', [track('room', 'bob', 'r2', {})]);
        await settle();
        await b.beat('b', DEAD_AFTER_MS, () => []);
        const [late] = await settle();
        assert.deepEqual(
          late === undefined ? {} : shape(late).changes,
          { room: { joins: {}, leaves: { bob: ['r2'] } } },
          'the next beat of another node removes it',
        );
        const left = (await b.load()).entries.filter((e) => e.tag !== SENTINEL);
        assert.deepEqual(left, []);
      })(),
  );

  test(
    `${name} a reaped node that tracked before its next beat still learns at that beat that it was reaped (WSM-PRS-003)`,
    T,
    () =>
      withNodes(open, async ({ a, b, fixture, settle }) => {
        assert.ok(a.beat && b.beat, 'the store has beat()');
        const ops: PresenceOp[] = [track('room', 'ada', 'r1', {})];
        await a.apply('a', ops);
        await settle();
        await fixture.advance(DEAD_AFTER_MS * 1.2);
        await b.beat('b', DEAD_AFTER_MS, () => []);
        await settle();
        ops.push(track('room', 'bob', 'r2', {}));
        await a.apply('a', [ops[1]]);
        await settle();
        let asked = 0;
        await a.beat('a', DEAD_AFTER_MS, () => (asked++, ops));
        assert.equal(asked, 1, 'own() is asked: the node was reaped');
        const [restored] = await settle();
        assert.deepEqual(shape(restored).changes, {
          room: { joins: { ada: { r1: '{}' } }, leaves: {} },
        });
        await b.beat('b', DEAD_AFTER_MS, () => []);
        assert.deepEqual(await settle(), [], 'alive again: nothing of it is reaped');
      })(),
  );

  if (!loses) return;

  test(
    `${name} puts each node's own entries back after the store lost its data, and the nodes reload (WSM-PRS-003)`,
    T,
    () =>
      withNodes(open, async ({ a, b, atA, atB, fixture }) => {
        assert.ok(a.beat && b.beat && fixture.lose, 'the store has beat() and lose()');
        const ownA: PresenceOp[] = [track('room', 'ada', 'r1', {})];
        const ownB: PresenceOp[] = [track('room', 'bob', 'r2', {}), grace('room', 'r2', 1)];
        await a.apply('a', ownA);
        await b.apply('b', [track('room', 'bob', 'r2', {})]);
        await fixture.lose();
        await a.beat('a', DEAD_AFTER_MS, () => ownA);
        await b.beat('b', DEAD_AFTER_MS, () => ownB);
        assert.ok(atA.resyncs >= 1 && atB.resyncs >= 1, 'both nodes reload');
        // A reload may wait for the second beat after the loss, when every node put its own back.
        await a.beat('a', DEAD_AFTER_MS, () => ownA);
        await b.beat('b', DEAD_AFTER_MS, () => ownB);
        const entries = (await a.load()).entries.map((e) => [e.ref, e.key, e.node, e.untilMs]);
        assert.deepEqual(entries.sort(), [['r1', 'ada', 'a', 0], ['r2', 'bob', 'b', 1]]);
      })(),
  );
}
