/**
 * The conformance suite every {@linkcode History} store must pass, registered once per store:
 *
 * ```ts ignore
 * historySuite('redisHistory()', async (options) => {
 *   const redis = await startRedis();
 *   // two stores on two clients of the same Redis
 *   return { stores: [a, b], close: async () => { ...; await redis.stop(); } };
 * });
 * ```
 *
 * `open` receives the retention and the clock of the test and returns two stores that share one
 * log, as two nodes would (a one-node store returns the same object twice), and `close`, which
 * the suite calls in `finally`. Every wait is bounded by `within`.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { History, HistoryRange } from '../lib/history.ts';

/** What a test hands to `open`: the retention and the clock the stores must use. */
export interface HistorySuiteOptions {
  readonly maxAgeMs?: number;
  readonly maxEntries?: number;
  readonly now: () => number;
}

/** Two stores sharing one log, and how to release them. */
export interface HistoryFixture {
  readonly stores: readonly [History, History];
  close(): Promise<void>;
}

/** Opens the stores of one test. */
export type OpenHistory = (options: HistorySuiteOptions) => Promise<HistoryFixture>;

/** Rejects when `promise` has not settled within `ms`, naming `what`. */
export function within<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`Timed out after ${ms} ms waiting for ${what}`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

const WAIT_MS = 10_000;

/** A clock the test moves by hand. */
function manualClock(
  start: number = 1_700_000_000_000,
): { now: () => number; advance(ms: number): void } {
  let time = start;
  return { now: () => time, advance: (ms) => (time += ms) };
}

function seqs(range: HistoryRange): number[] {
  return range.entries.map((entry) => entry.seq);
}

/** Registers the conformance tests of one store under `name`. */
export function historySuite(
  name: string,
  open: OpenHistory,
  options: { timeoutMs?: number } = {},
): void {
  const timeout = options.timeoutMs ?? 30_000;

  async function withStores(
    suiteOptions: Omit<HistorySuiteOptions, 'now'> & { now?: () => number },
    body: (stores: readonly [History, History]) => Promise<void>,
  ): Promise<void> {
    const fixture = await within(
      open({ now: manualClock().now, ...suiteOptions }),
      WAIT_MS,
      `${name} to open`,
    );
    try {
      await body(fixture.stores);
    } finally {
      await within(fixture.close(), WAIT_MS, `${name} to close`);
    }
  }

  test(`${name} numbers each tag's appends from 1 by 1 and reports the head (WSM-REC-001)`, {
    timeout,
  }, async () => {
    await withStores({}, async ([a, b]) => {
      assert.equal(await a.head('room'), 0);
      assert.equal(await a.append('room', 'one'), 1);
      assert.equal(await b.append('room', 'two'), 2);
      assert.equal(await a.append('other', 'first of other'), 1);
      assert.equal(await a.append('room', 'three'), 3);
      assert.equal(await b.head('room'), 3);
      assert.equal(await b.head('other'), 1);
      assert.equal(await b.head('never'), 0);
    });
  });

  test(`${name} ranges after a position, at most limit entries, in order (WSM-REC-001)`, {
    timeout,
  }, async () => {
    await withStores({}, async ([a, b]) => {
      for (let i = 1; i <= 10; i++) await a.append('room', `m${i}`);
      const all = await b.range('room', 0, 100);
      assert.deepEqual(seqs(all), [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
      assert.deepEqual(all.entries.map((entry) => entry.data), [
        'm1',
        'm2',
        'm3',
        'm4',
        'm5',
        'm6',
        'm7',
        'm8',
        'm9',
        'm10',
      ]);
      assert.equal(all.gap, false);
      assert.equal(all.head, 10);
      const page = await b.range('room', 4, 3);
      assert.deepEqual(seqs(page), [5, 6, 7]);
      assert.equal(page.gap, false);
      assert.equal(page.head, 10);
      const atHead = await b.range('room', 10, 5);
      assert.deepEqual(atHead, { ...atHead, entries: [], gap: false, head: 10 });
      const empty = await b.range('never', 0, 5);
      assert.deepEqual(empty, { ...empty, entries: [], gap: false, head: 0 });
    });
  });

  test(`${name} reports a gap when entries were trimmed by count (WSM-REC-001)`, {
    timeout,
  }, async () => {
    await withStores({ maxEntries: 3 }, async ([a, b]) => {
      for (let i = 1; i <= 8; i++) await a.append('room', `m${i}`);
      const trimmed = await b.range('room', 2, 100);
      assert.deepEqual(seqs(trimmed), [6, 7, 8]);
      assert.equal(trimmed.gap, true);
      assert.equal(trimmed.head, 8);
      const kept = await b.range('room', 5, 100);
      assert.deepEqual(seqs(kept), [6, 7, 8]);
      assert.equal(kept.gap, false);
      assert.equal(await a.append('room', 'm9'), 9, 'trimming never resets the counter');
    });
  });

  test(`${name} reports a gap when entries are older than maxAgeMs on its clock (WSM-REC-001)`, {
    timeout,
  }, async () => {
    const clock = manualClock();
    await withStores({ maxAgeMs: 60_000, now: clock.now }, async ([a, b]) => {
      await a.append('room', 'old 1');
      await b.append('room', 'old 2');
      clock.advance(30_000);
      await a.append('room', 'young 3');
      clock.advance(30_001); // 1 and 2 are now 60001 ms old, 3 is 30001 ms old
      const aged = await b.range('room', 0, 100);
      assert.deepEqual(seqs(aged), [3]);
      assert.equal(aged.gap, true);
      assert.equal(aged.head, 3);
      const fromTwo = await b.range('room', 2, 100);
      assert.deepEqual(seqs(fromTwo), [3]);
      assert.equal(fromTwo.gap, false);
      clock.advance(30_000); // everything is old now
      const gone = await a.range('room', 1, 100);
      assert.deepEqual(gone, { ...gone, entries: [], gap: true, head: 3 });
      assert.equal(await a.head('room'), 3, 'age never resets the counter');
      assert.equal(await b.append('room', 'new 4'), 4);
      assert.deepEqual(seqs(await a.range('room', 3, 100)), [4]);
    });
  });

  test(`${name} returns text and bytes exactly as appended (WSM-REC-001)`, {
    timeout,
  }, async () => {
    await withStores({}, async ([a, b]) => {
      const text = '[9,"room",null,{"emoji":"😀","nul":"\\u0000","quote":"\\""}]';
      const bytes = new Uint8Array(70_000).map((_, i) => (i * 31 + 7) & 0xff);
      const empty = new Uint8Array(0);
      await a.append('room', text);
      await a.append('room', bytes);
      await a.append('room', '');
      await a.append('room', empty);
      const { entries } = await b.range('room', 0, 10);
      assert.equal(entries[0].data, text);
      assert.ok(entries[1].data instanceof Uint8Array);
      assert.deepEqual([...entries[1].data], [...bytes]);
      assert.equal(entries[2].data, '');
      assert.ok(entries[3].data instanceof Uint8Array);
      assert.equal(entries[3].data.length, 0);
    });
  });

  test(
    `${name} gives concurrent appends from two nodes distinct increasing seqs, logged in order (WSM-REC-001)`,
    {
      timeout,
    },
    async () => {
      await withStores({}, async ([a, b]) => {
        const count = 200;
        const fromA = Promise.all(
          Array.from({ length: count }, (_, i) => a.append('room', `a${i}`)),
        );
        const fromB = Promise.all(
          Array.from({ length: count }, (_, i) => b.append('room', `b${i}`)),
        );
        const [seqsA, seqsB] = await within(Promise.all([fromA, fromB]), WAIT_MS, 'the appends');
        for (const list of [seqsA, seqsB]) {
          for (let i = 1; i < list.length; i++) {
            assert.ok(
              list[i] > list[i - 1],
              `seqs of one node increase: ${list[i - 1]}, ${list[i]}`,
            );
          }
        }
        const all = [...seqsA, ...seqsB].sort((x, y) => x - y);
        assert.deepEqual(all, Array.from({ length: 2 * count }, (_, i) => i + 1));
        const { entries, gap, head } = await b.range('room', 0, 10 * count);
        assert.equal(gap, false);
        assert.equal(head, 2 * count);
        assert.deepEqual(entries.map((entry) => entry.seq), all);
        const bySeq = new Map<number, string>();
        seqsA.forEach((seq, i) => bySeq.set(seq, `a${i}`));
        seqsB.forEach((seq, i) => bySeq.set(seq, `b${i}`));
        for (const entry of entries) assert.equal(entry.data, bySeq.get(entry.seq));
      });
    },
  );

  test(`${name} reports a gap, no entries and its head when asked past the head (WSM-REC-001)`, {
    timeout,
  }, async () => {
    await withStores({}, async ([a, b]) => {
      await a.append('room', 'one');
      await a.append('room', 'two');
      // A dialer that knew seq 50 of a log that was lost and started again.
      // Its entries are not the ones after 50 the dialer missed; the head is its position now.
      const past = await b.range('room', 50, 100);
      assert.deepEqual(past, { ...past, entries: [], gap: true, head: 2 });
      const never = await b.range('never', 7, 100);
      assert.deepEqual(never, { ...never, entries: [], gap: true, head: 0 });
    });
  });
}
