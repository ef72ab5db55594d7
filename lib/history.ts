/**
 * The broadcast history an acceptor keeps so a dialer that lost its connection gets what it
 * missed: per-tag sequence numbers and a bounded log per tag, shared by every node that uses the
 * same store.
 *
 * A store is any object with the three methods of {@linkcode History}; `memoryHistory()` keeps
 * the log of one node in memory, `redisHistory()` (entry `./redis`) keeps it in Redis Streams so
 * that a dialer whose node died recovers on another node.
 *
 * @module
 */

/** One logged broadcast. */
export interface HistoryEntry {
  /** The tag's sequence number of this broadcast: 1 for the first, then increasing by 1. */
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
 * A broadcast log shared by the acceptors that use it. Sequence numbers are per tag, start at 1
 * and increase by one with each {@linkcode History.append}, across every node sharing the store.
 */
export interface History {
  /** Appends `data` to the log of `tag`; resolves with the sequence number it was given. */
  append(tag: string, data: string | Uint8Array): Promise<number>;
  /** Resolves with the current sequence number of `tag` (0 when nothing was logged). */
  head(tag: string): Promise<number>;
  /** Resolves with up to `limit` entries of `tag` whose sequence number is above `after`. */
  range(tag: string, after: number, limit: number): Promise<HistoryRange>;
}
