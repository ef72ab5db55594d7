/**
 * The conformance suite every {@linkcode History} store must pass, registered once per store:
 *
 * ```ts ignore
 * historySuite('redisHistory()', async (options) => {
 *   const redis = await startRedis();
 *   // two stores on two clients of the same Redis
 *   return {
 *     stores: [a, b],
 *     lose: async () => { await client.flushAll(); return [a, b]; },
 *     close: async () => { ...; await redis.stop(); },
 *   };
 * });
 * ```
 *
 * `open` receives the retention and the clock of the test and returns two stores that share one
 * log, as two nodes would (a one-node store returns the same object twice), `lose`, which makes
 * the store lose its state as a restart without persistence would and returns the stores to use
 * after it, and `close`, which the suite calls in `finally`. Sequence numbers start on the
 * store's clock, so the tests read the first one and count from it. Every wait is bounded by
 * `within`.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Acceptor, type AttachedPeer, type History, type HistoryRange } from 'muxws/acceptor';
import { within } from './_wait.ts';

/** What a test hands to `open`: the retention and the clock the stores must use. */
export interface HistorySuiteOptions {
  readonly maxAgeMs?: number;
  readonly maxEntries?: number;
  readonly now: () => number;
}

/** Two stores sharing one log, how to make them lose it, and how to release them. */
export interface HistoryFixture {
  readonly stores: readonly [History, History];
  /**
   * Loses every tag's log and counter, as a restart without persistence does (a new store over
   * nothing, a flushed Redis); resolves with the two stores to use after it, on the same clock.
   */
  lose(): Promise<readonly [History, History]>;
  close(): Promise<void>;
}

/** Opens the stores of one test. */
export type OpenHistory = (options: HistorySuiteOptions) => Promise<HistoryFixture>;

const WAIT_MS = 10_000;

/** A clock the test moves by hand. */
function manualClock(
  start: number = 1_700_000_000_000,
): { now: () => number; advance(ms: number): void } {
  let time = start;
  return { now: () => time, advance: (ms) => (time += ms) };
}

/** An attached peer of `acceptor` holding `tags`, and the frames it was sent, decoded. */
function sinkPeer(acceptor: Acceptor, tags: string[]): { handle: AttachedPeer; got: unknown[][] } {
  const got: unknown[][] = [];
  const handle = acceptor.attach(
    { send: (data) => got.push(JSON.parse(String(data))), close() {} },
    {
      tags,
    },
  );
  return { handle, got };
}

/** Waits until `got` holds a `:recovered` marker; bounded. */
async function recovered(got: unknown[][]): Promise<void> {
  const done = async () => {
    while (!got.some((f) => ':recovered' in ((f[2] ?? {}) as object))) {
      await new Promise((resolve) => setTimeout(resolve, 1));
    }
  };
  await within(done(), WAIT_MS, 'the replay');
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
    body: (
      stores: readonly [History, History],
      lose: () => Promise<readonly [History, History]>,
    ) => Promise<void>,
  ): Promise<void> {
    const fixture = await within(
      open({ now: manualClock().now, ...suiteOptions }),
      WAIT_MS,
      `${name} to open`,
    );
    try {
      await body(
        fixture.stores,
        () => within(fixture.lose(), WAIT_MS, `${name} to lose its state`),
      );
    } finally {
      await within(fixture.close(), WAIT_MS, `${name} to close`);
    }
  }

  test(
    `${name} numbers each tag's appends by 1 from a first drawn from its clock and reports the head (WSM-REC-001)`,
    {
      timeout,
    },
    async () => {
      const clock = manualClock();
      await withStores({ now: clock.now }, async ([a, b]) => {
        assert.equal(await a.head('room'), 0);
        const first = await a.append('room', 'one');
        assert.equal(first, 1_700_000_000_000 * 1024 + 1, 'floor(now) * 1024 + 1');
        assert.equal(await b.append('room', 'two'), first + 1);
        clock.advance(5);
        const other = await a.append('other', 'first of other');
        assert.equal(other, 1_700_000_000_005 * 1024 + 1);
        assert.equal(await a.append('room', 'three'), first + 2, 'a counter keeps counting by 1');
        assert.equal(await b.head('room'), first + 2);
        assert.equal(await b.head('other'), other);
        assert.equal(await b.head('never'), 0);
      });
    },
  );

  test(`${name} numbers from 1 on a clock at 0 (WSM-REC-001)`, { timeout }, async () => {
    await withStores({ now: () => 0 }, async ([a, b]) => {
      assert.equal(await a.append('room', 'one'), 1);
      assert.equal(await b.append('room', 'two'), 2);
      assert.deepEqual(seqs(await b.range('room', 0, 10)), [1, 2]);
    });
  });

  test(`${name} ranges after a position, at most limit entries, in order (WSM-REC-001)`, {
    timeout,
  }, async () => {
    await withStores({}, async ([a, b]) => {
      const base = await a.append('room', 'm1') - 1;
      for (let i = 2; i <= 10; i++) await a.append('room', `m${i}`);
      const all = await b.range('room', 0, 100);
      assert.deepEqual(seqs(all), Array.from({ length: 10 }, (_, i) => base + i + 1));
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
      assert.equal(all.gap, false, 'the first number of a counter follows position 0');
      assert.equal(all.head, base + 10);
      const page = await b.range('room', base + 4, 3);
      assert.deepEqual(seqs(page), [base + 5, base + 6, base + 7]);
      assert.equal(page.gap, false);
      assert.equal(page.head, base + 10);
      const atHead = await b.range('room', base + 10, 5);
      assert.deepEqual(atHead, { ...atHead, entries: [], gap: false, head: base + 10 });
      const empty = await b.range('never', 0, 5);
      assert.deepEqual(empty, { ...empty, entries: [], gap: false, head: 0 });
    });
  });

  test(`${name} reports a gap when entries were trimmed by count (WSM-REC-001)`, {
    timeout,
  }, async () => {
    await withStores({ maxEntries: 3 }, async ([a, b]) => {
      const base = await a.append('room', 'm1') - 1;
      for (let i = 2; i <= 8; i++) await a.append('room', `m${i}`);
      const trimmed = await b.range('room', base + 2, 100);
      assert.deepEqual(seqs(trimmed), [base + 6, base + 7, base + 8]);
      assert.equal(trimmed.gap, true);
      assert.equal(trimmed.head, base + 8);
      const fromZero = await b.range('room', 0, 100);
      assert.deepEqual(seqs(fromZero), [base + 6, base + 7, base + 8]);
      assert.equal(fromZero.gap, true, 'the first entries of the counter are gone');
      const kept = await b.range('room', base + 5, 100);
      assert.deepEqual(seqs(kept), [base + 6, base + 7, base + 8]);
      assert.equal(kept.gap, false);
      assert.equal(await a.append('room', 'm9'), base + 9, 'trimming never resets the counter');
    });
  });

  test(`${name} reports a gap when entries are older than maxAgeMs on its clock (WSM-REC-001)`, {
    timeout,
  }, async () => {
    const clock = manualClock();
    await withStores({ maxAgeMs: 60_000, now: clock.now }, async ([a, b]) => {
      const base = await a.append('room', 'old 1') - 1;
      await b.append('room', 'old 2');
      clock.advance(30_000);
      await a.append('room', 'young 3');
      clock.advance(30_001); // 1 and 2 are now 60001 ms old, 3 is 30001 ms old
      const aged = await b.range('room', 0, 100);
      assert.deepEqual(seqs(aged), [base + 3]);
      assert.equal(aged.gap, true);
      assert.equal(aged.head, base + 3);
      const fromTwo = await b.range('room', base + 2, 100);
      assert.deepEqual(seqs(fromTwo), [base + 3]);
      assert.equal(fromTwo.gap, false);
      clock.advance(30_000); // everything is old now
      const gone = await a.range('room', base + 1, 100);
      assert.deepEqual(gone, { ...gone, entries: [], gap: true, head: base + 3 });
      assert.equal(await a.head('room'), base + 3, 'age never resets the counter');
      assert.equal(await b.append('room', 'new 4'), base + 4);
      assert.deepEqual(seqs(await a.range('room', base + 3, 100)), [base + 4]);
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
        const base = all[0] - 1;
        assert.deepEqual(all, Array.from({ length: 2 * count }, (_, i) => base + i + 1));
        const { entries, gap, head } = await b.range('room', 0, 10 * count);
        assert.equal(gap, false);
        assert.equal(head, base + 2 * count);
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
      const head = await a.append('room', 'two');
      // A dialer that knew a number the store never gave (it came from another store, or from
      // a clock that has since stepped back). Its entries are not the ones the dialer missed;
      // the head is its position now.
      const past = await b.range('room', head + 50, 100);
      assert.deepEqual(past, { ...past, entries: [], gap: true, head });
      const never = await b.range('never', 7, 100);
      assert.deepEqual(never, { ...never, entries: [], gap: true, head: 0 });
    });
  });

  test(
    `${name} numbers on above the old numbers after it lost its state, and reports the gap (WSM-REC-001, WSM-REC-004)`,
    {
      timeout,
    },
    async () => {
      const clock = manualClock();
      await withStores({ now: clock.now }, async ([a], lose) => {
        for (let i = 1; i <= 100; i++) await a.append('room', `old ${i}`);
        const old = await a.head('room');
        clock.advance(1); // the restart took a millisecond: room for 1024 numbers
        const [c, d] = await lose();
        assert.equal(await c.head('room'), 0, 'the state is lost');
        const fresh = await c.append('room', 'new 1');
        assert.ok(fresh > old, `numbers go on above ${old}: found ${fresh}`);
        assert.equal(await d.append('room', 'new 2'), fresh + 1);
        // A dialer at the old head is replayed all the new log; what the old one held is gone.
        const redial = await d.range('room', old, 100);
        assert.deepEqual(redial, {
          ...redial,
          entries: redial.entries,
          gap: true,
          head: fresh + 1,
        });
        assert.deepEqual(redial.entries.map((entry) => entry.data), ['new 1', 'new 2']);
        // A dialer at position 0 (it read the head after the loss) misses nothing.
        const fromZero = await c.range('room', 0, 100);
        assert.deepEqual(seqs(fromZero), [fresh, fresh + 1]);
        assert.equal(fromZero.gap, false);
      });
    },
  );

  test(
    `${name} behind two acceptors withholds on replay what a broadcast left the peer out of, by tag or by its dialer, and replays the rest as before (WSM-REC-006)`,
    { timeout },
    async () => {
      await withStores({}, async ([a, b]) => {
        const nodeA = new Acceptor({ idleTimeoutMs: 0, history: a });
        const nodeB = new Acceptor({ idleTimeoutMs: 0, history: b });
        try {
          const sender = sinkPeer(nodeA, ['room']);
          await nodeA.broadcast('room', 'before');
          const from = await a.head('room');
          await nodeA.broadcast('room', 'to all');
          await nodeA.broadcast('room', 'not to the sender', { except: [sender.handle.peer] });
          await nodeA.broadcast('room', 'not to the muted', { except: ['muted'] });
          await nodeA.broadcast('room', 'last');
          // Its first position told the sender its dialer identity; left out, it was told its
          // position instead, with the identity again.
          const id = (sender.got[0][2] as Record<string, unknown>)[':dialer'];
          assert.equal(typeof id, 'string');
          assert.ok(
            sender.got.some((f) =>
              JSON.stringify(f) ===
                JSON.stringify([
                  9,
                  'room',
                  { ':seq': from + 2, ':position': true, ':dialer': id },
                  null,
                ])
            ),
          );
          assert.ok(!sender.got.some((f) => f[3] === 'not to the sender'));

          const replayed = async (tags: string[], hello: Record<string, unknown>) => {
            const peer = sinkPeer(nodeB, tags);
            peer.handle.message(JSON.stringify([1, 1, 3, hello, null]));
            await recovered(peer.got);
            const frames = peer.got.filter((f) => f[0] === 9 && f[3] !== null);
            for (const f of frames) {
              assert.ok(!(':except' in (f[2] as object)), 'no :except on the wire');
            }
            return frames.map((f) => f[3]);
          };
          // The sender redials (to the other node): its dialer identity withholds its own.
          assert.deepEqual(await replayed(['room'], { ':resume': { room: from }, ':dialer': id }), [
            'to all',
            'not to the muted',
            'last',
          ]);
          // A muted peer is withheld what left its tag out.
          assert.deepEqual(await replayed(['room', 'muted'], { ':resume': { room: from } }), [
            'to all',
            'not to the sender',
            'last',
          ]);
          // Anyone else is replayed everything, as entries without :except always were.
          assert.deepEqual(
            await replayed(['room'], { ':resume': { room: from }, ':dialer': 'someone else' }),
            ['to all', 'not to the sender', 'not to the muted', 'last'],
          );
        } finally {
          await nodeA.close({ drainMs: 0 });
          await nodeB.close({ drainMs: 0 });
        }
      });
    },
  );
}
