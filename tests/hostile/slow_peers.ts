/**
 * Hostile-input tests of slow and silent peers: a socket that never speaks, a slow reader, and a
 * paused peer in a broadcast.
 * @module
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { AcceptorOptions, Peer } from 'muxws/acceptor';
import { eventually, within } from '../_acceptor_suite.ts';
import { type HostileRuntime, named, sleep, withServer } from './_harness.ts';
import type { RawClient } from './_raw.ts';

/** Registers the tests of this subject for `rt`. */
export function slowPeersTests(rt: HostileRuntime): void {
  test(
    named(
      rt,
      'acceptor keeps only the Peer of a socket that never sends a hello and closes it with 1001 after idleTimeoutMs',
      ['WSM-ACC-007'],
    ),
    async () => {
      await withServer(rt, { idleTimeoutMs: 300 }, async (h) => {
        const startedAt = Date.now();
        const silent = await h.raw();
        await eventually(() => h.peers.length === 1, 5000, 'the peer');
        const peer = h.peers[0];
        assert.equal(peer.tags.size, 0);
        assert.deepEqual(peer.data, {});
        assert.equal(h.state.handled, 0);
        const closed = await within(silent.closed, 5000, 'the idle close');
        const elapsed = Date.now() - startedAt;
        assert.equal(closed.code, 1001);
        assert.ok(elapsed >= 280, `closed after ${elapsed} ms, not before idleTimeoutMs`);
        assert.ok(elapsed < 1500, `closed after ${elapsed} ms`);
        assert.equal(h.acceptor.stats.idleClosed, 1);
        await eventually(() => h.acceptor.stats.peers === 0, 2000, 'the peer gone');
        assert.equal(peer.isClosed, true);
        await h.healthy();
      });
    },
  );

  test(
    named(
      rt,
      'acceptor holds a writer to a slow reader at the window: 64 KiB until it reads, never more than a grown window of 256 KiB unread',
      ['WSM-WIRE-006', 'WSM-STR-002'],
    ),
    async () => {
      await withServer(rt, {}, async (h) => {
        const c = await h.dial();
        const stream = c.open({ op: 'write', n: 300, size: 1000 }, { end: true });
        await eventually(() => (h.state.written.get(1) ?? 0) >= 65, 5000, 'the first window');
        await sleep(200);
        assert.equal(h.state.written.get(1), 65, 'the writer waits at the window');
        const got: unknown[] = [];
        for await (const value of stream) {
          got.push(value);
          const unread = (h.state.written.get(1) ?? 0) - got.length;
          // A reader that keeps up may grow the window to 256 KiB (docs/protocol.md); each
          // DATA is 1,010 units, plus one overshooting message.
          assert.ok(unread <= 261, `${unread} messages written but not yet read`);
          if (got.length % 50 === 0) await sleep(10);
        }
        assert.equal(got.length, 301);
        assert.equal(got.at(-1), 'done');
      });
    },
  );

  test(
    named(
      rt,
      'acceptor broadcast to 1,000 peers skips and counts one paused peer and delivers every message to the other 999 at once',
      ['WSM-ACC-005'],
    ),
    async () => {
      const tagged: Peer[] = [];
      const options: Partial<AcceptorOptions> = {
        limits: { highWaterMark: 64 * 1024 },
        onPeer: (peer) => {
          peer.tags.add('all');
          tagged.push(peer);
        },
      };
      await withServer(rt, options, async (h) => {
        const slow = await h.tcp();
        await eventually(() => tagged.length === 1, 5000, 'the slow peer');
        const slowPeer = tagged[0];
        slowPeer.tags.add('slow');
        slow.pause();
        const others: RawClient[] = [];
        for (let batch = 0; batch < 999; batch += 111) {
          others.push(...await Promise.all(Array.from({ length: 111 }, () => h.raw())));
        }
        await eventually(() => tagged.length === 1000, 10_000, '1,000 peers');
        // Fill the paused peer's socket until the acceptor sees it over the high-water mark.
        const big = 'b'.repeat(256 * 1024);
        for (let i = 0; h.acceptor.stats.dropped === 0; i++) {
          assert.ok(i < 400, 'the paused peer never went over the high-water mark');
          await h.acceptor.broadcast('slow', big);
          await sleep(5);
        }
        const droppedBefore = h.acceptor.stats.dropped;
        const startedAt = Date.now();
        for (let n = 1; n <= 10; n++) assert.equal(await h.acceptor.broadcast('all', { n }), 999);
        const elapsed = Date.now() - startedAt;
        assert.equal(h.acceptor.stats.dropped - droppedBefore, 10);
        assert.ok(elapsed < 1000, `10 broadcasts took ${elapsed} ms`);
        await eventually(
          () =>
            others.every((o) =>
              o.frames.filter((f) => Array.isArray(f) && f[0] === 9).length === 10
            ),
          10_000,
          'every broadcast at every other peer',
        );
        for (const o of others) {
          assert.deepEqual(
            o.frames.map((f) => (f as unknown[])[3]),
            Array.from({ length: 10 }, (_, i) => ({ n: i + 1 })),
          );
        }
        assert.equal(slowPeer.isClosed, false, 'the paused peer is skipped, not closed');
        console.log(`paused peer: 10 broadcasts to 999 peers in ${elapsed} ms`);
      });
    },
  );
}
