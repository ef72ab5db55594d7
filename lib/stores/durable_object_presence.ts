/**
 * The presence store in a Durable Object's storage: {@linkcode durableObjectPresence}, a
 * {@linkcode PresenceStore} for the acceptor of one object, re-exported by the `./cloudflare`
 * entry. The object is the only node, so the store needs no heartbeat and reaps nothing: it runs
 * the table of `lib/broadcast/presence_table.ts` in memory and persists each entry, and ends the
 * graces on the object's alarm, so presence outlives hibernation and restarts of the object.
 *
 * Stored keys: `muxws:presence:e:<tag>\0<ref>` for an entry `{ k: key, m: metaJson, p: peerId,
 * g: untilMs or 0, o: the order it joined in }` (a ref never holds `\0`, so the last one splits
 * the key). What each peer follows is kept with the peer, in its socket's attachment
 * (`DurableObjectAcceptor`).
 *
 * @module
 */
import type {
  PresenceBatch,
  PresenceOp,
  PresenceSink,
  PresenceSnapshot,
  PresenceStore,
} from '../broadcast/presence.ts';
import { PresenceTable } from '../broadcast/presence_table.ts';
import type { DurableObjectStorageLike } from './durable_object_history.ts';
import { describe } from '../util/describe.ts';

/**
 * The part of a Durable Object's storage (`ctx.storage`) {@linkcode durableObjectPresence} uses:
 * the asynchronous key-value API and the alarm.
 *
 * @example An in-memory stand-in for `ctx.storage`: a grace sets the alarm for its end
 * ```ts
 * import {
 *   durableObjectPresence,
 *   type DurableObjectPresenceStorage,
 * } from '@muxws/core/cloudflare';
 * import assert from 'node:assert/strict';
 *
 * const map = new Map<string, unknown>();
 * let alarm: number | null = null;
 * const storage: DurableObjectPresenceStorage = {
 *   get: (key) => Promise.resolve(map.get(key)),
 *   put: (entries) => {
 *     for (const [key, value] of Object.entries(entries)) map.set(key, value);
 *     return Promise.resolve();
 *   },
 *   delete: (keys) => Promise.resolve(keys.filter((k) => map.delete(k)).length),
 *   list: ({ prefix }) =>
 *     Promise.resolve(new Map([...map].filter(([k]) => k.startsWith(prefix)))),
 *   getAlarm: () => Promise.resolve(alarm),
 *   setAlarm: (at) => Promise.resolve(void (alarm = at)),
 * };
 * const store = durableObjectPresence(storage);
 * await store.open('node-a', { batch() {}, resync() {} });
 * const untilMs = Date.now() + 5000;
 * await store.apply('node-a', [
 *   { op: 'track', tag: 'room:1', key: 'ada', ref: 'r1', meta: '{"tab":1}', peer: 'p1' },
 *   { op: 'grace', tag: 'room:1', ref: 'r1', untilMs },
 * ]);
 * assert.equal(await storage.getAlarm(), untilMs);
 * ```
 */
export interface DurableObjectPresenceStorage extends DurableObjectStorageLike {
  /** When the alarm is set to go off (epoch ms), or `null`. */
  getAlarm(): Promise<number | null>;
  /** Sets the alarm (one per object) to go off at `scheduledTime` (epoch ms). */
  setAlarm(scheduledTime: number): Promise<void>;
}

/**
 * Options of {@linkcode durableObjectPresence}.
 *
 * @example A clock of one's own: a grace ends when the clock passes it, not before
 * ```ts
 * import {
 *   durableObjectPresence,
 *   type DurableObjectPresenceOptions,
 *   type DurableObjectPresenceStorage,
 * } from '@muxws/core/cloudflare';
 * import assert from 'node:assert/strict';
 *
 * const map = new Map<string, unknown>();
 * let alarm: number | null = null;
 * const storage: DurableObjectPresenceStorage = {
 *   get: (key) => Promise.resolve(map.get(key)),
 *   put: (entries) => {
 *     for (const [key, value] of Object.entries(entries)) map.set(key, value);
 *     return Promise.resolve();
 *   },
 *   delete: (keys) => Promise.resolve(keys.filter((k) => map.delete(k)).length),
 *   list: ({ prefix }) =>
 *     Promise.resolve(new Map([...map].filter(([k]) => k.startsWith(prefix)))),
 *   getAlarm: () => Promise.resolve(alarm),
 *   setAlarm: (at) => Promise.resolve(void (alarm = at)),
 * };
 * let now = 0;
 * const options: DurableObjectPresenceOptions = { now: () => now };
 * const store = durableObjectPresence(storage, options);
 * await store.open('node-a', { batch() {}, resync() {} });
 * await store.apply('node-a', [
 *   { op: 'track', tag: 'room:1', key: 'ada', ref: 'r1', meta: '{"tab":1}', peer: 'p1' },
 *   { op: 'grace', tag: 'room:1', ref: 'r1', untilMs: 5000 },
 * ]);
 * now = 4999;
 * await store.expire();
 * assert.equal((await store.load()).entries.length, 1);
 * now = 5000;
 * await store.expire();
 * assert.equal((await store.load()).entries.length, 0);
 * ```
 */
export interface DurableObjectPresenceOptions {
  /**
   * The clock graces are ended on, in epoch milliseconds.
   * @default {Date.now}
   */
  readonly now?: () => number;
}

/**
 * A {@linkcode PresenceStore} in a Durable Object's storage, with the object's hooks.
 *
 * @example What the object's alarm does: the due grace ends, the alarm moves to the next one
 * ```ts
 * import {
 *   durableObjectPresence,
 *   type DurableObjectPresence,
 *   type DurableObjectPresenceStorage,
 * } from '@muxws/core/cloudflare';
 * import assert from 'node:assert/strict';
 *
 * const map = new Map<string, unknown>();
 * let alarm: number | null = null;
 * const storage: DurableObjectPresenceStorage = {
 *   get: (key) => Promise.resolve(map.get(key)),
 *   put: (entries) => {
 *     for (const [key, value] of Object.entries(entries)) map.set(key, value);
 *     return Promise.resolve();
 *   },
 *   delete: (keys) => Promise.resolve(keys.filter((k) => map.delete(k)).length),
 *   list: ({ prefix }) =>
 *     Promise.resolve(new Map([...map].filter(([k]) => k.startsWith(prefix)))),
 *   getAlarm: () => Promise.resolve(alarm),
 *   setAlarm: (at) => Promise.resolve(void (alarm = at)),
 * };
 * let now = 0;
 * const store: DurableObjectPresence = durableObjectPresence(storage, { now: () => now });
 * const left: string[] = [];
 * await store.open('node-a', {
 *   batch: (batch) => left.push(...batch.changes.flatMap((change) => Object.keys(change.leaves))),
 *   resync() {},
 * });
 * const track = { op: 'track', tag: 'room:1', meta: '{"tab":1}' } as const;
 * await store.apply('node-a', [
 *   { ...track, key: 'ada', ref: 'r1', peer: 'p1' },
 *   { ...track, key: 'bob', ref: 'r2', peer: 'p2' },
 *   { op: 'grace', tag: 'room:1', ref: 'r1', untilMs: 5000 },
 *   { op: 'grace', tag: 'room:1', ref: 'r2', untilMs: 8000 },
 * ]);
 * now = 6000;
 * await store.expire(); // what DurableObjectAcceptor.alarm() calls
 * assert.deepEqual(left, ['ada']);
 * assert.equal(await storage.getAlarm(), 8000);
 * ```
 */
export interface DurableObjectPresence extends PresenceStore {
  /**
   * Ends every grace due by now (each such entry leaves, echoed like any change) and arms the
   * alarm for the next one. The object's `alarm()` calls it (through
   * `DurableObjectAcceptor.alarm()`).
   */
  expire(): Promise<void>;
}

/** One entry as the storage keeps it. */
interface StoredEntry {
  /** The key. */
  k: string;
  /** The meta, JSON text. */
  m: string;
  /** The peer id that owns it. */
  p: string;
  /** When its grace ends (epoch ms); 0 while its peer is open. */
  g: number;
  /** Its place in the order the entries joined, so a load keeps the metas of a key in order. */
  o: number;
}

/** The storage API accepts at most this many keys per `put` or `delete`. */
const MAX_KEYS_PER_CALL = 128;

const ENTRY = 'muxws:presence:e:';

function entryKey(tag: string, ref: string): string {
  return `${ENTRY}${tag}\0${ref}`;
}

function isStoredEntry(value: unknown): value is StoredEntry {
  if (typeof value !== 'object' || value === null) return false;
  const v = value as Partial<StoredEntry>;
  return typeof v.k === 'string' && typeof v.m === 'string' && typeof v.p === 'string' &&
    typeof v.g === 'number' && typeof v.o === 'number';
}

/**
 * A presence store in a Durable Object's storage, for the acceptor of that object (a room, with
 * `presence: { store }`): who is here outlives hibernation and restarts of the object. Each
 * `apply` changes the table in memory, echoes the net change to the acceptor at once and writes
 * the entries it touched in one `put` and one `delete` (more only past 128 keys), which the
 * runtime commits before any message they caused leaves the object.
 *
 * A peer that closes leaves after the acceptor's `graceMs`: the grace's end is also set as the
 * object's alarm (when earlier than the alarm already set), so a grace that ends while the object
 * sleeps wakes it, and the object's `alarm()` (forwarded to `DurableObjectAcceptor.alarm()`)
 * calls {@linkcode DurableObjectPresence.expire}.
 *
 * @param storage The object's `ctx.storage`.
 * @param options The clock.
 * @returns The store, for the acceptor's `presence.store` option.
 * @throws {TypeError} When `storage` lacks `get`, `put`, `delete`, `list`, `getAlarm` or
 * `setAlarm`, or `now` is not a function.
 *
 * @example Over an in-memory stand-in for `ctx.storage`: the table outlives the store
 * ```ts
 * import {
 *   durableObjectPresence,
 *   type DurableObjectPresenceStorage,
 * } from '@muxws/core/cloudflare';
 * import assert from 'node:assert/strict';
 *
 * const map = new Map<string, unknown>();
 * let alarm: number | null = null;
 * const storage: DurableObjectPresenceStorage = {
 *   get: (key) => Promise.resolve(map.get(key)),
 *   put: (entries) => {
 *     for (const [key, value] of Object.entries(entries)) map.set(key, value);
 *     return Promise.resolve();
 *   },
 *   delete: (keys) => Promise.resolve(keys.filter((k) => map.delete(k)).length),
 *   list: ({ prefix }) =>
 *     Promise.resolve(new Map([...map].filter(([k]) => k.startsWith(prefix)))),
 *   getAlarm: () => Promise.resolve(alarm),
 *   setAlarm: (at) => Promise.resolve(void (alarm = at)),
 * };
 * const store = durableObjectPresence(storage);
 * await store.open('node-a', { batch() {}, resync() {} });
 * await store.apply('node-a', [
 *   { op: 'track', tag: 'room:1', key: 'ada', ref: 'r1', meta: '{"tab":1}', peer: 'p1' },
 * ]);
 * // The object slept: a new store over the same storage reads the entry back.
 * const woken = durableObjectPresence(storage);
 * const { entries } = await woken.open('node-b', { batch() {}, resync() {} });
 * assert.deepEqual(entries.map((e) => [e.key, e.meta, e.peer]), [['ada', '{"tab":1}', 'p1']]);
 * ```
 */
export function durableObjectPresence(
  storage: DurableObjectPresenceStorage,
  options: DurableObjectPresenceOptions = {},
): DurableObjectPresence {
  for (const method of ['get', 'put', 'delete', 'list', 'getAlarm', 'setAlarm'] as const) {
    if (typeof storage?.[method] !== 'function') {
      throw new TypeError(
        `Cannot create durableObjectPresence as "storage" must be a Durable Object's storage: current value has no ${method}()`,
      );
    }
  }
  const now = options.now ?? Date.now;
  if (typeof now !== 'function') {
    throw new TypeError(
      `Cannot create durableObjectPresence as "now" must be a function: current value is ${
        describe(now)
      }`,
    );
  }
  return new DurableStore(storage, now);
}

/** Whether `store` was made by {@linkcode durableObjectPresence} (for the adapter). */
export function isDurableObjectPresence(store: unknown): store is DurableObjectPresence {
  return store instanceof DurableStore;
}

/** The store behind {@linkcode durableObjectPresence}. */
class DurableStore implements DurableObjectPresence {
  readonly #storage: DurableObjectPresenceStorage;
  readonly #now: () => number;
  readonly #table = new PresenceTable();
  /** What the storage holds: tag → ref → entry. */
  readonly #stored = new Map<string, Map<string, StoredEntry>>();
  readonly #sinks = new Map<string, PresenceSink>();
  #loaded: Promise<void> | undefined;
  /** The order number of the next entry to join. */
  #next = 0;
  /** Whether the entries read from storage still wait for the node that opens the store. */
  #unowned = true;

  constructor(storage: DurableObjectPresenceStorage, now: () => number) {
    this.#storage = storage;
    this.#now = now;
  }

  async open(node: string, sink: PresenceSink): Promise<PresenceSnapshot> {
    await this.#load();
    if (this.#unowned) {
      // The object is the only node: what it stored before it slept belongs to whoever opens.
      this.#unowned = false;
      this.#table.restore({ version: this.#table.version, entries: this.#entries(node) });
    }
    this.#sinks.set(node, sink);
    return this.#table.snapshot();
  }

  async apply(node: string, ops: readonly PresenceOp[]): Promise<void> {
    await this.#load();
    await this.#step(node, ops);
  }

  async load(): Promise<PresenceSnapshot> {
    await this.#load();
    return this.#table.snapshot();
  }

  async expire(): Promise<void> {
    await this.#load();
    const at = this.#now();
    const due = new Map<string, PresenceOp[]>();
    for (const [tag, refs] of this.#stored) {
      for (const [ref, entry] of refs) {
        if (entry.g === 0 || entry.g > at) continue;
        const node = this.#table.row(tag, ref)?.node ?? '';
        let ops = due.get(node);
        if (!ops) due.set(node, ops = []);
        ops.push({ op: 'leave', tag, ref });
      }
    }
    const writes: Promise<void>[] = [];
    for (const [node, ops] of due) writes.push(this.#step(node, ops, false));
    await Promise.all(writes);
    await this.#arm(this.#earliestGrace(), true);
  }

  close(node: string): Promise<void> {
    this.#sinks.delete(node);
    return Promise.resolve();
  }

  /** Reads the entries from storage, once. */
  #load(): Promise<void> {
    this.#loaded ??= (async () => {
      const found: [tag: string, ref: string, entry: StoredEntry][] = [];
      for (const [key, value] of await this.#storage.list({ prefix: ENTRY })) {
        const split = key.lastIndexOf('\0');
        if (split < ENTRY.length || !isStoredEntry(value)) continue;
        found.push([key.slice(ENTRY.length, split), key.slice(split + 1), value]);
        this.#next = Math.max(this.#next, value.o + 1);
      }
      // In the order they joined, as the table had them: a key's metas keep their order.
      found.sort((a, b) => a[2].o - b[2].o);
      for (const [tag, ref, entry] of found) this.#remember(tag, ref, entry);
      this.#table.restore({ version: this.#table.version, entries: this.#entries('') });
    })();
    this.#loaded.catch(() => this.#loaded = undefined);
    return this.#loaded;
  }

  /** The stored entries as the table's, owned by `node`. */
  #entries(node: string): PresenceSnapshot['entries'] {
    const entries: PresenceSnapshot['entries'][number][] = [];
    for (const [tag, refs] of this.#stored) {
      for (const [ref, { k, m, p, g }] of refs) {
        entries.push({ tag, ref, key: k, meta: m, node, peer: p, untilMs: g });
      }
    }
    return entries;
  }

  #remember(tag: string, ref: string, entry: StoredEntry): void {
    let refs = this.#stored.get(tag);
    if (!refs) this.#stored.set(tag, refs = new Map());
    refs.set(ref, entry);
  }

  /**
   * Applies `ops` to the table, echoes the batch to every sink and writes what changed; then,
   * unless told not to, arms the alarm for a grace that ends earlier than the one set.
   */
  async #step(node: string, ops: readonly PresenceOp[], arm = true): Promise<void> {
    // The refs the ops may touch: their own, and for a track the entries of its key in grace
    // (one of them may be adopted).
    const touched = new Map<string, Set<string>>();
    const touch = (tag: string, ref: string) => {
      let refs = touched.get(tag);
      if (!refs) touched.set(tag, refs = new Set());
      refs.add(ref);
    };
    for (const op of ops) {
      touch(op.tag, op.ref);
      if (op.op !== 'track') continue;
      for (const [ref, entry] of this.#stored.get(op.tag) ?? []) {
        if (entry.k === op.key && entry.g !== 0) touch(op.tag, ref);
      }
    }
    const batch = this.#table.apply(node, ops);
    const puts: Record<string, StoredEntry> = {};
    const deletes: string[] = [];
    let earliest = Infinity;
    for (const [tag, refs] of touched) {
      const stored = this.#stored.get(tag);
      for (const ref of refs) {
        const row = this.#table.row(tag, ref);
        const before = stored?.get(ref);
        if (!row) {
          if (!before) continue;
          stored!.delete(ref);
          deletes.push(entryKey(tag, ref));
          continue;
        }
        const entry = { k: row.key, m: row.meta, p: row.peer, g: row.untilMs, o: before?.o ?? 0 };
        if (entry.g !== 0) earliest = Math.min(earliest, entry.g);
        if (
          before && before.k === entry.k && before.m === entry.m && before.p === entry.p &&
          before.g === entry.g
        ) continue;
        if (!before) entry.o = this.#next++;
        this.#remember(tag, ref, entry);
        puts[entryKey(tag, ref)] = entry;
      }
      if (stored?.size === 0) this.#stored.delete(tag);
    }
    // The writes start before the echo, so the runtime's output gate holds the diffs the echo
    // sends until they are stored.
    const written = this.#write(puts, deletes);
    if (batch) this.#echo(batch);
    await written;
    if (arm && earliest !== Infinity) await this.#arm(earliest);
  }

  #echo(batch: PresenceBatch): void {
    for (const sink of [...this.#sinks.values()]) sink.batch(batch);
  }

  async #write(puts: Record<string, StoredEntry>, deletes: string[]): Promise<void> {
    const writes: Promise<unknown>[] = [];
    const keys = Object.keys(puts);
    for (let i = 0; i < keys.length; i += MAX_KEYS_PER_CALL) {
      const chunk: Record<string, StoredEntry> = {};
      for (const key of keys.slice(i, i + MAX_KEYS_PER_CALL)) chunk[key] = puts[key];
      writes.push(this.#storage.put(chunk));
    }
    for (let i = 0; i < deletes.length; i += MAX_KEYS_PER_CALL) {
      writes.push(this.#storage.delete(deletes.slice(i, i + MAX_KEYS_PER_CALL)));
    }
    await Promise.all(writes);
  }

  /**
   * Sets the alarm to `at` when no alarm is set or the one set is later; from the alarm's own
   * handler (`running`), also when the one set is past (it is the one running).
   */
  async #arm(at: number, running = false): Promise<void> {
    if (at === Infinity) return;
    const set = await this.#storage.getAlarm();
    if (set === null || set > at || (running && set <= this.#now())) {
      await this.#storage.setAlarm(at);
    }
  }

  #earliestGrace(): number {
    let earliest = Infinity;
    for (const refs of this.#stored.values()) {
      for (const { g } of refs.values()) if (g !== 0 && g < earliest) earliest = g;
    }
    return earliest;
  }
}
