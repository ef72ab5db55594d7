/**
 * The rules of a presence store, in pure form: what tracking, grace,
 * leaving, a node's heartbeat and a dead node's reaping do to the shared table of presences, and
 * the net change each step publishes. `memoryPresence()` and the Durable Object store run this
 * table; the Redis scripts mirror it rule for rule, and one suite runs the same steps on all.
 *
 * - **track** (tag, key, ref, meta, peer): adds the presence, or changes its meta. When an entry
 *   of the same tag and key is in grace (its peer closed), on any node, the track adopts it
 *   instead: the entry keeps its ref, moves to the tracking node and peer (a `moved` record), and
 *   changes nothing followers see unless its meta text differs (then a leave and a join).
 * - **grace** (tag, ref, untilMs, orphan): marks the entry as in grace until `untilMs`; an
 *   orphan's owner becomes `""` (its node is closing), so any live node's sweep removes it.
 * - **leave** (tag, ref): removes the entry, only when `node` still owns it (compare and delete).
 * - **beat** (node, now): the node is alive at `now`; **reap** (now, deadAfterMs): every node
 *   silent longer than `deadAfterMs` loses all it owns, and each orphan past its grace goes.
 *
 * Internal: imported from `lib/` only.
 *
 * @module
 */
import { ownSlot, setOwn } from '../wire/presence.ts';

/**
 * One change a node asks of the store. `meta` is JSON text; the store never parses it.
 *
 * @example A node tracks two presences, puts one in grace (its peer closed) and ends the other
 * ```ts
 * import { memoryPresence, type PresenceOp } from '@muxws/core/acceptor';
 * import assert from 'node:assert/strict';
 *
 * const store = memoryPresence();
 * await store.open('node-a', { batch() {}, resync() {} });
 * const ops: PresenceOp[] = [
 *   { op: 'track', tag: 'room:1', key: 'ada', ref: 'r1', meta: '{"tab":1}', peer: 'p1' },
 *   { op: 'track', tag: 'room:1', key: 'bob', ref: 'r2', meta: '{"tab":1}', peer: 'p2' },
 *   { op: 'grace', tag: 'room:1', ref: 'r1', untilMs: Date.now() + 5000 },
 *   { op: 'leave', tag: 'room:1', ref: 'r2' },
 * ];
 * await store.apply('node-a', ops);
 * const { entries } = await store.load();
 * assert.deepEqual(entries.map((entry) => [entry.key, entry.untilMs > 0]), [['ada', true]]);
 * ```
 */
export type PresenceOp =
  | {
    readonly op: 'track';
    readonly tag: string;
    readonly key: string;
    readonly ref: string;
    readonly meta: string;
    readonly peer: string;
  }
  | {
    readonly op: 'grace';
    readonly tag: string;
    readonly ref: string;
    readonly untilMs: number;
    readonly orphan?: boolean;
  }
  | { readonly op: 'leave'; readonly tag: string; readonly ref: string };

/**
 * The net change of one tag in a batch: refs that joined (with meta text) and that left.
 *
 * @example A new meta for a presence is a leave and a join of its ref
 * ```ts
 * import { memoryPresence, type PresenceChange } from '@muxws/core/acceptor';
 * import assert from 'node:assert/strict';
 *
 * const store = memoryPresence();
 * const changes: PresenceChange[] = [];
 * await store.open('node-a', { batch: (batch) => changes.push(...batch.changes), resync() {} });
 * const ada = { op: 'track', tag: 'room:1', key: 'ada', ref: 'r1', peer: 'p1' } as const;
 * await store.apply('node-a', [{ ...ada, meta: '{"tab":1}' }]);
 * await store.apply('node-a', [{ ...ada, meta: '{"tab":2}' }]);
 * assert.deepEqual(changes[1], {
 *   tag: 'room:1',
 *   joins: { ada: { r1: '{"tab":2}' } },
 *   leaves: { ada: ['r1'] },
 * });
 * ```
 */
export interface PresenceChange {
  /** The tag. */
  readonly tag: string;
  /** Per key, ref → meta JSON text. */
  readonly joins: Record<string, Record<string, string>>;
  /** Per key, the refs that left. */
  readonly leaves: Record<string, string[]>;
}

/**
 * An entry that moved to another node (adopted in grace): its new owner.
 *
 * @example Ada's peer closed on node a; her redial to node b takes the presence over unseen
 * ```ts
 * import { memoryPresence, type PresenceMove } from '@muxws/core/acceptor';
 * import assert from 'node:assert/strict';
 *
 * const store = memoryPresence();
 * const moved: PresenceMove[] = [];
 * await store.open('node-a', { batch: (batch) => moved.push(...batch.moved), resync() {} });
 * await store.open('node-b', { batch() {}, resync() {} });
 * const ada = { op: 'track', tag: 'room:1', key: 'ada', meta: '{"user":"ada"}' } as const;
 * await store.apply('node-a', [{ ...ada, ref: 'r1', peer: 'p1' }]);
 * const grace = { op: 'grace', tag: 'room:1', ref: 'r1', untilMs: Date.now() + 5000 } as const;
 * await store.apply('node-a', [grace]);
 * // The track of node b adopts the entry: it keeps its ref, and followers see no change.
 * await store.apply('node-b', [{ ...ada, ref: 'r9', peer: 'p9' }]);
 * assert.deepEqual(moved, [{ tag: 'room:1', ref: 'r1', node: 'node-b', peer: 'p9', key: 'ada' }]);
 * ```
 */
export interface PresenceMove {
  /** The tag. */
  readonly tag: string;
  /** The ref, unchanged by the move. */
  readonly ref: string;
  /** The node that owns it now. */
  readonly node: string;
  /** The peer id that owns it now. */
  readonly peer: string;
  /** The key of the entry. */
  readonly key: string;
}

/**
 * What one step of the store changed, in order (`version` increases by 1 per batch).
 *
 * @example A join, then a leave: two batches, one version each
 * ```ts
 * import { memoryPresence, type PresenceBatch } from '@muxws/core/acceptor';
 * import assert from 'node:assert/strict';
 *
 * const store = memoryPresence();
 * const batches: PresenceBatch[] = [];
 * await store.open('node-a', { batch: (batch) => batches.push(batch), resync() {} });
 * await store.apply('node-a', [
 *   { op: 'track', tag: 'room:1', key: 'ada', ref: 'r1', meta: '{"tab":1}', peer: 'p1' },
 * ]);
 * await store.apply('node-a', [{ op: 'leave', tag: 'room:1', ref: 'r1' }]);
 * assert.deepEqual(batches.map((batch) => batch.version), [1, 2]);
 * assert.deepEqual(batches[0].changes, [
 *   { tag: 'room:1', joins: { ada: { r1: '{"tab":1}' } }, leaves: {} },
 * ]);
 * assert.deepEqual(batches[1].changes, [{ tag: 'room:1', joins: {}, leaves: { ada: ['r1'] } }]);
 * assert.deepEqual(batches[1].moved, []);
 * ```
 */
export interface PresenceBatch {
  /** The store's version after this batch. */
  readonly version: number;
  /** The net changes, one per tag that changed. */
  readonly changes: readonly PresenceChange[];
  /** The entries that changed owner. */
  readonly moved: readonly PresenceMove[];
}

/**
 * One entry of the shared table.
 *
 * @example The entry a track leaves in the table
 * ```ts
 * import { memoryPresence, type PresenceEntry } from '@muxws/core/acceptor';
 * import assert from 'node:assert/strict';
 *
 * const store = memoryPresence();
 * await store.open('node-a', { batch() {}, resync() {} });
 * await store.apply('node-a', [
 *   { op: 'track', tag: 'room:1', key: 'ada', ref: 'r1', meta: '{"tab":1}', peer: 'p1' },
 * ]);
 * const [entry]: readonly PresenceEntry[] = (await store.load()).entries;
 * assert.deepEqual(entry, {
 *   tag: 'room:1',
 *   ref: 'r1',
 *   key: 'ada',
 *   meta: '{"tab":1}',
 *   node: 'node-a',
 *   peer: 'p1',
 *   untilMs: 0,
 * });
 * ```
 */
export interface PresenceEntry {
  /** The tag. */
  readonly tag: string;
  /** The key (who is present). */
  readonly key: string;
  /** The ref (this presence of the key). */
  readonly ref: string;
  /** The meta as JSON text. */
  readonly meta: string;
  /** The node that owns it; `""` for an orphan (its node closed). */
  readonly node: string;
  /** The id of the peer that owns it on its node. */
  readonly peer: string;
  /** When its grace ends (epoch ms); 0 while its peer is open. */
  readonly untilMs: number;
}

/**
 * The whole table at one version.
 *
 * @example A node that opens the store later gets the table, then the batches after its version
 * ```ts
 * import { memoryPresence, type PresenceSnapshot } from '@muxws/core/acceptor';
 * import assert from 'node:assert/strict';
 *
 * const store = memoryPresence();
 * await store.open('node-a', { batch() {}, resync() {} });
 * await store.apply('node-a', [
 *   { op: 'track', tag: 'room:1', key: 'ada', ref: 'r1', meta: '{"tab":1}', peer: 'p1' },
 * ]);
 * const versions: number[] = [];
 * const snapshot: PresenceSnapshot = await store.open('node-b', {
 *   batch: (batch) => versions.push(batch.version),
 *   resync() {},
 * });
 * assert.equal(snapshot.version, 1);
 * assert.deepEqual(snapshot.entries.map((entry) => entry.key), ['ada']);
 * await store.apply('node-a', [{ op: 'leave', tag: 'room:1', ref: 'r1' }]);
 * assert.deepEqual(versions, [2]);
 * ```
 */
export interface PresenceSnapshot {
  /** The version of the last batch the snapshot includes. */
  readonly version: number;
  /** Every entry. */
  readonly entries: readonly PresenceEntry[];
}

interface Row {
  key: string;
  meta: string;
  node: string;
  peer: string;
  untilMs: number;
}

/** A before-image of a ref touched in a batch: `undefined` when it did not exist. */
type Before = { key: string; meta: string } | undefined;

/** The presence table and its rules: see the module's documentation. */
export class PresenceTable {
  /** tag → ref → row. */
  readonly #tags = new Map<string, Map<string, Row>>();
  /** node → last beat (ms). */
  readonly #nodes = new Map<string, number>();
  #version = 0;

  /** The version of the last batch that changed something. */
  get version(): number {
    return this.#version;
  }

  /** Every entry, as a snapshot at the current version. */
  snapshot(): PresenceSnapshot {
    const entries: PresenceEntry[] = [];
    for (const [tag, rows] of this.#tags) {
      for (const [ref, row] of rows) entries.push({ tag, ref, ...row });
    }
    return { version: this.#version, entries };
  }

  /** Replaces the whole table (a store loading what it persisted). */
  restore(snapshot: PresenceSnapshot): void {
    this.#tags.clear();
    for (const { tag, ref, key, meta, node, peer, untilMs } of snapshot.entries) {
      this.#rows(tag).set(ref, { key, meta, node, peer, untilMs });
    }
    this.#version = snapshot.version;
  }

  /**
   * Applies `ops` of `node` in order and returns the net change, or `undefined` when nothing
   * changed (the version then stays).
   */
  apply(node: string, ops: readonly PresenceOp[]): PresenceBatch | undefined {
    const step = new Step(this);
    for (const op of ops) {
      const rows = this.#rows(op.tag);
      if (op.op === 'track') {
        let ref = op.ref;
        let row = rows.get(ref);
        if (!row) {
          const adopted = adoptable(rows, op.key);
          if (adopted) [ref, row] = adopted;
        }
        step.touch(op.tag, ref, row);
        if (row) {
          if (row.node !== node || row.peer !== op.peer) {
            step.moved.push({ tag: op.tag, ref, node, peer: op.peer, key: row.key });
          }
          row.node = node;
          row.peer = op.peer;
          row.meta = op.meta;
          row.untilMs = 0;
        } else rows.set(ref, { key: op.key, meta: op.meta, node, peer: op.peer, untilMs: 0 });
      } else if (op.op === 'grace') {
        const row = rows.get(op.ref);
        if (!row || row.node !== node) continue;
        row.untilMs = op.untilMs;
        if (op.orphan) row.node = '';
      } else {
        const row = rows.get(op.ref);
        if (!row || row.node !== node) continue;
        step.touch(op.tag, op.ref, row);
        rows.delete(op.ref);
      }
      if (rows.size === 0) this.#tags.delete(op.tag);
    }
    return step.finish();
  }

  /** Records that `node` is alive at `nowMs`. */
  beat(node: string, nowMs: number): void {
    this.#nodes.set(node, nowMs);
  }

  /** Whether `node` has beaten and not been reaped since. */
  alive(node: string): boolean {
    return this.#nodes.has(node);
  }

  /** Forgets `node` (it closed): its heartbeat no longer counts. */
  forget(node: string): void {
    this.#nodes.delete(node);
  }

  /**
   * Removes the entries of every node silent for longer than `deadAfterMs` (each such node is
   * forgotten, so it is reaped once) and every orphan, or entry of an unknown node, whose grace
   * ended by `nowMs`.
   */
  reap(nowMs: number, deadAfterMs: number): PresenceBatch | undefined {
    for (const [node, at] of this.#nodes) if (nowMs - at > deadAfterMs) this.#nodes.delete(node);
    const step = new Step(this);
    for (const [tag, rows] of this.#tags) {
      for (const [ref, row] of rows) {
        const gone = row.node === '' ? row.untilMs <= nowMs : !this.#nodes.has(row.node) &&
          (row.untilMs === 0 || row.untilMs <= nowMs);
        if (!gone) continue;
        step.touch(tag, ref, row);
        rows.delete(ref);
      }
      if (rows.size === 0) this.#tags.delete(tag);
    }
    return step.finish();
  }

  /** @internal */
  bump(): number {
    return ++this.#version;
  }

  /** @internal The row of `ref` in `tag`, if any. */
  row(tag: string, ref: string): Row | undefined {
    return this.#tags.get(tag)?.get(ref);
  }

  #rows(tag: string): Map<string, Row> {
    let rows = this.#tags.get(tag);
    if (!rows) this.#tags.set(tag, rows = new Map());
    return rows;
  }
}

/** The first entry of `key` in grace among `rows`, as [ref, row]. */
function adoptable(rows: Map<string, Row>, key: string): [string, Row] | undefined {
  for (const entry of rows) if (entry[1].key === key && entry[1].untilMs !== 0) return entry;
  return undefined;
}

/** One batch being applied: the before-image of every ref it touched, and the moves. */
class Step {
  readonly #table: PresenceTable;
  /** tag → ref → before-image. */
  readonly #before = new Map<string, Map<string, Before>>();
  readonly moved: PresenceMove[] = [];

  constructor(table: PresenceTable) {
    this.#table = table;
  }

  touch(tag: string, ref: string, row: Row | undefined): void {
    let refs = this.#before.get(tag);
    if (!refs) this.#before.set(tag, refs = new Map());
    if (!refs.has(ref)) refs.set(ref, row && { key: row.key, meta: row.meta });
  }

  finish(): PresenceBatch | undefined {
    const changes = new Map<
      string,
      {
        tag: string;
        joins: Record<string, Record<string, string>>;
        leaves: Record<string, string[]>;
      }
    >();
    const change = (tag: string) => {
      let found = changes.get(tag);
      if (!found) changes.set(tag, found = { tag, joins: {}, leaves: {} });
      return found;
    };
    for (const [tag, refs] of this.#before) {
      for (const [ref, before] of refs) {
        const after = this.#table.row(tag, ref);
        if (before && after && before.meta === after.meta && before.key === after.key) continue;
        if (!before && !after) continue;
        if (before) ownSlot(change(tag).leaves, before.key, () => []).push(ref);
        if (after) setOwn(ownSlot(change(tag).joins, after.key, () => ({})), ref, after.meta);
      }
    }
    if (changes.size === 0 && this.moved.length === 0) return undefined;
    return { version: this.#table.bump(), changes: [...changes.values()], moved: this.moved };
  }
}
