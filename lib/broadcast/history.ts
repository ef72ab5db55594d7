/**
 * The broadcast history an acceptor keeps so a dialer that lost its connection gets what it
 * missed, when that dialer was given `recovery: recovery()` (entry `.`): per-tag sequence numbers
 * and a bounded log per tag, shared by every node that uses the same store.
 *
 * A store is any object with the three methods of {@linkcode History}; `memoryHistory()` keeps
 * the log of one node in memory, `redisHistory()` (entry `./redis`) keeps it in Redis Streams so
 * that a dialer with `recovery()` whose node died recovers on another node.
 *
 * @module
 */
import { rangeGap, retention, seqOrigin } from './store_kit.ts';

/** One logged broadcast. */
export interface HistoryEntry {
  /**
   * The tag's sequence number of this broadcast: drawn from the store's clock for the first (see
   * {@linkcode History}), then increasing by 1.
   */
  readonly seq: number;
  /** What the acceptor stored for it (opaque to the store): text or bytes, returned as given. */
  readonly data: string | Uint8Array;
}

/** What {@linkcode History.range} read. */
export interface HistoryRange {
  /** The entries after the position asked for, in sequence order, at most `limit` of them. */
  readonly entries: readonly HistoryEntry[];
  /**
   * True when entries after the position asked for were already gone from the log (trimmed by
   * age or count), so `entries` does not start right after it.
   */
  readonly gap: boolean;
  /** The tag's current sequence number when the range was read (0 when nothing was logged). */
  readonly head: number;
}

/** Retention of a history store: entries older or beyond the count are trimmed. */
export interface HistoryRetention {
  /** Entries older than this many milliseconds are trimmed. Default 120000. */
  readonly maxAgeMs?: number;
  /** At most this many entries are kept per tag. Default 10000. */
  readonly maxEntries?: number;
}

/**
 * A broadcast log shared by the acceptors that use it. Sequence numbers are per tag and increase
 * by one with each {@linkcode History.append}, across every node sharing the store.
 *
 * They never go backwards, even when the store loses its state (a Redis restarted without
 * persistence, a new process for `memoryHistory()`, a Durable Object's storage lost): a tag with
 * no counter starts at `floor(now) * 1024 + 1`, `now` being the store's clock in epoch ms (so 1
 * on a clock at 0). That is above every number the store gave before its loss unless the tag took
 * more than 1024 appends per millisecond on average, from its counter's creation to the loss; it
 * stays a safe integer until the year 2248. A dialer connected through the loss keeps receiving
 * broadcasts (their numbers are above its position), and one that redials gets what the new log
 * holds with `gap: true` (what the old log held after its position is gone).
 *
 * The range's gap compares the first entry held with the position asked for; position 0 (the tag
 * had no counter when it was read) is the one exception: the first entry of the counter's life
 * follows it without a gap.
 */
export interface History {
  /** Appends `data` to the log of `tag`; resolves with the sequence number it was given. */
  append(tag: string, data: string | Uint8Array): Promise<number>;
  /** Resolves with the current sequence number of `tag` (0 when nothing was logged). */
  head(tag: string): Promise<number>;
  /** Resolves with up to `limit` entries of `tag` whose sequence number is above `after`. */
  range(tag: string, after: number, limit: number): Promise<HistoryRange>;
}

/**
 * What {@linkcode memoryHistory} takes: the retention and the clock it is measured on.
 *
 * @example Ten entries per tag, for a minute, on a clock of the test's own
 * ```ts
 * import { memoryHistory, type MemoryHistoryOptions } from '@muxws/core/acceptor';
 * import assert from 'node:assert/strict';
 *
 * const options: MemoryHistoryOptions = { maxEntries: 10, maxAgeMs: 60_000, now: () => 0 };
 * const history = memoryHistory(options);
 * assert.equal(await history.append('room', 'hi'), 1);
 * ```
 */
export interface MemoryHistoryOptions extends HistoryRetention {
  /** The clock the age of an entry is measured on, epoch ms. @default {Date.now} */
  readonly now?: () => number;
}

/** The log of one tag in a {@linkcode memoryHistory}: a ring from `start` on. */
interface TagLog {
  /** The last sequence number given. */
  seq: number;
  /** The first sequence number given, drawn from the clock when the tag was first appended to. */
  readonly origin: number;
  /** Entries, oldest first; those before `start` are trimmed. */
  entries: Array<{ seq: number; data: string | Uint8Array; at: number }>;
  start: number;
}

/**
 * A {@linkcode History} in this process's memory, for one acceptor node: per tag, a ring of at
 * most `maxEntries` entries (default 10000), from which entries older than `maxAgeMs` (default
 * 120000, on the `now` clock) are trimmed as the tag is written or read. A tag's first sequence
 * number is drawn from `now` (`floor(now) * 1024 + 1`, see {@linkcode History}), the next ones
 * increase by 1. The log is lost with the process; a new store numbers each tag from its own
 * clock, above what the lost one gave, so a dialer's recovery reports a gap instead of taking the
 * new numbers for old ones.
 *
 * @param options `maxEntries`, `maxAgeMs` and `now`.
 * @returns The store, to pass as the acceptor's `history` option.
 * @throws {RangeError} When `maxEntries` or `maxAgeMs` is not a positive integer.
 *
 * @example Appending and reading back what came after a position
 * ```ts
 * import { memoryHistory } from '@muxws/core/acceptor';
 * import assert from 'node:assert/strict';
 *
 * let now = 0; // a clock at 0: numbers start at 1
 * const history = memoryHistory({ maxEntries: 2, now: () => now });
 * assert.equal(await history.append('room', 'a'), 1);
 * assert.equal(await history.append('room', 'b'), 2);
 * assert.equal(await history.append('room', 'c'), 3); // "a" is trimmed: at most 2 kept
 * assert.deepEqual(await history.range('room', 1, 10), {
 *   entries: [{ seq: 2, data: 'b' }, { seq: 3, data: 'c' }],
 *   gap: false,
 *   head: 3,
 * });
 * assert.equal((await history.range('room', 0, 10)).gap, true); // seq 1 is gone
 * now += 120_001; // older than maxAgeMs
 * assert.deepEqual(await history.range('room', 3, 10), { entries: [], gap: false, head: 3 });
 * assert.equal(await history.head('room'), 3);
 * ```
 */
export function memoryHistory(options: MemoryHistoryOptions = {}): History {
  const { maxEntries, maxAgeMs } = retention('memoryHistory', options);
  const now = options.now ?? Date.now;
  if (typeof now !== 'function') {
    throw new TypeError(
      `Cannot create memoryHistory as "now" must be a function: current value is ${typeof now}`,
    );
  }
  const logs = new Map<string, TagLog>();
  /**
   * Trims `log` by age and count, letting go of each trimmed entry's data at once; compacts the
   * ring once half of it is trimmed.
   */
  const trim = (log: TagLog): void => {
    const oldest = now() - maxAgeMs;
    const entries = log.entries;
    let start = Math.max(log.start, entries.length - maxEntries);
    while (start < entries.length && entries[start].at < oldest) start++;
    for (let i = log.start; i < start; i++) entries[i].data = '';
    if (start > 1024 && start * 2 > entries.length) {
      log.entries = entries.slice(start);
      start = 0;
    }
    log.start = start;
  };
  return {
    append(tag: string, data: string | Uint8Array): Promise<number> {
      let log = logs.get(tag);
      if (log === undefined) {
        const origin = seqOrigin(now());
        logs.set(tag, log = { seq: origin - 1, origin, entries: [], start: 0 });
      }
      const seq = ++log.seq;
      log.entries.push({ seq, data, at: now() });
      trim(log);
      return Promise.resolve(seq);
    },
    head(tag: string): Promise<number> {
      return Promise.resolve(logs.get(tag)?.seq ?? 0);
    },
    range(tag: string, after: number, limit: number): Promise<HistoryRange> {
      const log = logs.get(tag);
      if (log === undefined) return Promise.resolve({ entries: [], gap: after > 0, head: 0 });
      trim(log);
      const head = log.seq;
      const { entries, start } = log;
      // The entries held are seqs first..head, one apart.
      const first = start < entries.length ? entries[start].seq : head + 1;
      const from = Math.max(start, start + Math.floor(after) + 1 - first);
      const picked: HistoryEntry[] = [];
      for (let i = from; i < entries.length && picked.length < limit; i++) {
        picked.push({ seq: entries[i].seq, data: entries[i].data });
      }
      const gap = rangeGap(after, head, first, log.origin);
      return Promise.resolve({ entries: picked, gap, head });
    },
  };
}
