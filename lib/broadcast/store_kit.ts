/**
 * The store kit: what a history store (`memoryHistory()`, `redisHistory()`,
 * `durableObjectHistory()`) may use beside the `History` contract
 * (`lib/broadcast/history.ts`).
 *
 * - Where a tag's sequence numbers start when a store has no counter for it
 *   ({@linkcode seqOrigin}): on the store's clock, so that a store that lost its state (a Redis
 *   restarted without persistence, a new process, a Durable Object's storage lost) numbers on
 *   above every number it gave before, and a dialer never sees numbers go backwards. The Redis
 *   store's script has its own copy of the rule.
 * - The retention defaults and their check ({@linkcode retention}, {@linkcode retentionOption}).
 * - The rule that says whether a range has a gap ({@linkcode rangeGap}).
 * - The one tag check of the library ({@linkcode isTag}, from the wire).
 *
 * Internal: no entry point re-exports it.
 *
 * @module
 */
import { describe } from '../util/describe.ts';

export { isTag, MAX_TAG_LENGTH } from '../wire/frame.ts';

/** How many entries a store keeps per tag unless told otherwise. */
export const DEFAULT_MAX_ENTRIES: number = 10_000;

/** How long a store keeps an entry unless told otherwise, in milliseconds. */
export const DEFAULT_MAX_AGE_MS: number = 120_000;

/**
 * Whether a range read after `after` has a gap: the counter is behind `after` (the store lost
 * its state), or `after` is below the head and `first`, the first number held after `after`
 * (`head + 1` when none is), does not follow it. Position 0 followed by the counter's own first
 * number, `origin`, is no gap. (The Redis store's range script applies the same rule.)
 */
export function rangeGap(after: number, head: number, first: number, origin: number): boolean {
  return after > head ||
    (after < head && first > after + 1 && !(after === 0 && first === origin));
}

/**
 * A retention option of the store named `store`: a positive integer, or `fallback` when
 * undefined.
 *
 * @throws {RangeError} For any other value, naming the store, the option and the value.
 */
export function retentionOption(
  store: string,
  name: string,
  value: unknown,
  fallback: number,
): number {
  if (value === undefined) return fallback;
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 1) {
    throw new RangeError(
      `Cannot create ${store} as "${name}" must be a positive integer: current value is ${
        describe(value)
      }`,
    );
  }
  return value;
}

/** A store's checked retention: {@linkcode retentionOption} of each, with the defaults. */
export function retention(
  store: string,
  options: { maxEntries?: number; maxAgeMs?: number },
): { maxEntries: number; maxAgeMs: number } {
  return {
    maxEntries: retentionOption(store, 'maxEntries', options.maxEntries, DEFAULT_MAX_ENTRIES),
    maxAgeMs: retentionOption(store, 'maxAgeMs', options.maxAgeMs, DEFAULT_MAX_AGE_MS),
  };
}

/** How many numbers each millisecond of the clock leaves room for. */
export const SEQS_PER_MS: number = 1024;

/**
 * The last millisecond the rule numbers from: `MAX_ORIGIN_MS * SEQS_PER_MS` plus a billion
 * appends is still a safe integer. It falls in September 2248.
 */
export const MAX_ORIGIN_MS: number = Math.floor((Number.MAX_SAFE_INTEGER - 1e9) / SEQS_PER_MS);

/**
 * The first sequence number of a tag whose counter is created at `nowMs` (epoch ms):
 * `floor(nowMs) * 1024 + 1`, so 1 on a clock at 0 (and for a clock that is not a positive
 * finite number). A counter created at `t` gives `t * 1024 + n` to its n-th append, which stays
 * below the first number of a counter created after a loss at `t + d` while the tag took at most
 * `1024 * d` appends: more than a million a second, kept up from the counter's creation to its
 * loss, would be needed to reach it.
 */
export function seqOrigin(nowMs: number): number {
  const ms = Math.floor(nowMs);
  if (!(ms > 0)) return 1;
  return Math.min(ms, MAX_ORIGIN_MS) * SEQS_PER_MS + 1;
}
