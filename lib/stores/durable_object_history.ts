/**
 * The broadcast history in a Durable Object's storage: {@linkcode durableObjectHistory}, a
 * {@linkcode History} store for the acceptor of one object, re-exported by the `./cloudflare`
 * entry. It uses the store kit (`lib/broadcast/store_kit.ts`) for its retention and numbering.
 *
 * Stored keys, per tag (the tag's length in its prefix, so no tag's keys start with another's):
 * `muxws:history:<length>:<tag>:e<seq, 16 digits>` for an entry `{ d, t }`,
 * `…:seq` for the counter and `…:origin` for the counter's first number.
 *
 * @module
 */
import type {
  History,
  HistoryEntry,
  HistoryRange,
  MemoryHistoryOptions,
} from '../broadcast/history.ts';
import { rangeGap, retention, seqOrigin } from '../broadcast/store_kit.ts';

/**
 * The part of a Durable Object's storage (`ctx.storage`) {@linkcode durableObjectHistory} uses:
 * the asynchronous key-value API.
 */
export interface DurableObjectStorageLike {
  /** The value of `key`, or undefined. */
  get(key: string): Promise<unknown>;
  /** Writes every entry of `entries`. */
  put(entries: Record<string, unknown>): Promise<void>;
  /** Deletes `keys`; resolves with how many existed. */
  delete(keys: string[]): Promise<number>;
  /** The entries whose keys start with `prefix`, from `start` on, in key order, at most `limit`. */
  list(options: { prefix: string; start?: string; limit?: number }): Promise<Map<string, unknown>>;
}

/** One logged entry as the storage keeps it. */
interface StoredEntry {
  /** The data. */
  d: string | Uint8Array;
  /** When it was appended, epoch ms. */
  t: number;
}

/** The cached counter of one tag, loaded from storage once. */
interface TagCounter {
  /** The last sequence number given; 0 when the tag has none. */
  seq: number;
  /** The first sequence number of the counter's life; 1 for a counter stored without one. */
  origin: number;
}

/**
 * A broadcast history in a Durable Object's storage, for the acceptor of that object (a room):
 * the log and each tag's counter outlive hibernation and restarts of the object, so a dialer that
 * redials after the object slept still gets what it missed (when it has `recovery: recovery()`
 * from `@muxws/core`), numbered on from where it was.
 * Per tag it keeps at most `maxEntries` entries (default 10000; the oldest is deleted with each
 * append past it), and a read skips (and deletes) those older than `maxAgeMs` (default 120000).
 * Every append is one storage write (the entry and the counter), made before the broadcast
 * leaves; an entry is limited to the storage's value size (128 KiB on Cloudflare), so a larger
 * broadcast rejects. The object is single-threaded, so numbers are given in call order. A tag's
 * first number is drawn from `now` (`floor(now) * 1024 + 1`, see {@linkcode History}), so a
 * storage that lost everything numbers on above what it gave before.
 *
 * @param storage The object's `ctx.storage`.
 * @param options `maxEntries`, `maxAgeMs` and `now`.
 * @returns The store, for the acceptor's `history` option.
 * @throws {TypeError} When `storage` lacks `get`, `put`, `delete` or `list`.
 * @throws {RangeError} When `maxEntries` or `maxAgeMs` is not a positive integer.
 *
 * @example Over an in-memory stand-in for `ctx.storage`
 * ```ts
 * import { durableObjectHistory, type DurableObjectStorageLike } from '@muxws/core/cloudflare';
 * import assert from 'node:assert/strict';
 *
 * const map = new Map<string, unknown>();
 * const storage: DurableObjectStorageLike = {
 *   get: (key) => Promise.resolve(map.get(key)),
 *   put: (entries) => {
 *     for (const [key, value] of Object.entries(entries)) map.set(key, value);
 *     return Promise.resolve();
 *   },
 *   delete: (keys) => Promise.resolve(keys.filter((k) => map.delete(k)).length),
 *   list: ({ prefix, start = '', limit = Infinity }) =>
 *     Promise.resolve(new Map([...map].filter(([k]) => k.startsWith(prefix) && k >= start)
 *       .sort(([a], [b]) => a < b ? -1 : 1).slice(0, limit))),
 * };
 * const history = durableObjectHistory(storage);
 * const first = await history.append('room', 'hi'); // drawn from the clock
 * // The object slept: a new store over the same storage numbers on.
 * const woken = durableObjectHistory(storage);
 * assert.equal(await woken.append('room', 'again'), first + 1);
 * assert.deepEqual((await woken.range('room', 0, 10)).entries.map((e) => e.data), ['hi', 'again']);
 * ```
 */
export function durableObjectHistory(
  storage: DurableObjectStorageLike,
  options: MemoryHistoryOptions = {},
): History {
  for (const method of ['get', 'put', 'delete', 'list'] as const) {
    if (typeof storage?.[method] !== 'function') {
      throw new TypeError(
        `Cannot create durableObjectHistory as "storage" must be a Durable Object's storage: current value has no ${method}()`,
      );
    }
  }
  const { maxEntries, maxAgeMs } = retention('durableObjectHistory', options);
  const now = options.now ?? Date.now;
  const counters = new Map<string, Promise<TagCounter>>();
  // Keys: a tag's prefix holds its length, so no tag's keys start with another's prefix.
  const prefixOf = (tag: string) => `muxws:history:${tag.length}:${tag}:`;
  const counterKey = (tag: string) => `${prefixOf(tag)}seq`;
  // The counter's first number; sorts after every entry key, as the counter's key does.
  const originKey = (tag: string) => `${prefixOf(tag)}origin`;
  // Entry keys sort by number: 16 digits hold every safe integer.
  const entryKey = (tag: string, seq: number) =>
    `${prefixOf(tag)}e${String(seq).padStart(16, '0')}`;
  const counter = (tag: string): Promise<TagCounter> => {
    let loaded = counters.get(tag);
    if (loaded === undefined) {
      loaded = Promise.all([storage.get(counterKey(tag)), storage.get(originKey(tag))]).then((
        [seq, origin],
      ) => ({
        seq: typeof seq === 'number' && Number.isSafeInteger(seq) ? seq : 0,
        origin: typeof origin === 'number' && Number.isSafeInteger(origin) ? origin : 1,
      }));
      loaded.catch(() => counters.delete(tag));
      counters.set(tag, loaded);
    }
    return loaded;
  };
  return {
    async append(tag: string, data: string | Uint8Array): Promise<number> {
      const state = await counter(tag);
      const at = now();
      const writes: Record<string, unknown> = {};
      if (state.seq === 0) {
        // No counter: the first number comes from the clock, above any the storage lost.
        state.seq = seqOrigin(at) - 1;
        state.origin = state.seq + 1;
        writes[originKey(tag)] = state.origin;
      }
      const seq = ++state.seq;
      const entry: StoredEntry = { d: data, t: at };
      writes[entryKey(tag, seq)] = entry;
      writes[counterKey(tag)] = seq;
      await storage.put(writes);
      if (seq - state.origin >= maxEntries) await storage.delete([entryKey(tag, seq - maxEntries)]);
      return seq;
    },
    async head(tag: string): Promise<number> {
      return (await counter(tag)).seq;
    },
    async range(tag: string, after: number, limit: number): Promise<HistoryRange> {
      const { seq: head, origin } = await counter(tag);
      const oldest = now() - maxAgeMs;
      const prefix = prefixOf(tag);
      const entries: HistoryEntry[] = [];
      const aged: string[] = [];
      let from = Math.max(Math.floor(after) + 1, head - maxEntries + 1, origin);
      let first: number | undefined;
      while (entries.length < limit && from <= head) {
        const listed = await storage.list({
          prefix,
          start: entryKey(tag, from),
          limit: limit - entries.length,
        });
        const before = from;
        for (const [key, value] of listed) {
          const seq = Number(key.slice(-16));
          if (key === counterKey(tag) || !Number.isSafeInteger(seq)) continue;
          from = seq + 1;
          const stored = value as StoredEntry;
          if (stored.t < oldest) {
            aged.push(key);
            continue;
          }
          first ??= seq;
          entries.push({ seq, data: stored.d });
        }
        if (from === before) break; // nothing more is logged
      }
      if (aged.length > 0) await storage.delete(aged);
      return { entries, gap: rangeGap(after, head, first ?? head + 1, origin), head };
    },
  };
}
