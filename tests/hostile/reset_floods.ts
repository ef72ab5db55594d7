/**
 * Hostile-input tests of the reset budget in every state, and of the cap on what is buffered for
 * a peer that never reads: OPENs sent after the peer's own GOAWAY (each draws a `refused` RESET,
 * with no hello needed) from a socket that never reads. The memory figure is the child
 * acceptor's own.
 * @module
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { eventually, within } from '../_acceptor_suite.ts';
import {
  assertServesFreshDialer,
  type ChildStats,
  childStats,
  type HostileRuntime,
  named,
  sleep,
  withServer,
} from './_harness.ts';
import { type TcpClient, tcpClient } from './_raw.ts';

/** The GOAWAY a dialer sends as it leaves: `lastId` 0, so every later OPEN is above it. */
const GOAWAY = '[8,0,"shutdown","leaving",0]';

/** The OPEN of the dialer's stream `2 × i + 1`, with no hello before it. */
function open(i: number): string {
  return `[1,${2 * i + 1},0,null,{"op":"echo","value":${i}}]`;
}

/** Registers the tests of this subject for `rt`. */
export function resetFloodsTests(rt: HostileRuntime): void {
  test(
    named(
      rt,
      'acceptor closes with 1008 within 3 s a socket that never reads and sends GOAWAY then 10,000 OPENs with no hello, its RSS growing under 50 MB',
      ['WSM-LIM-002'],
    ),
    async () => {
      const child = await rt.spawnAcceptor();
      let attacker: TcpClient | undefined;
      try {
        const url = `ws://127.0.0.1:${child.port}/ws`;
        const before = await childStats(child.port, true);
        attacker = await tcpClient(child.port, '/ws');
        attacker.pause();
        const startedAt = Date.now();
        // The acceptor's own record of the close, read without a collection (cheap) while the
        // flood goes out: framing 10,000 masked messages costs this process about a second on
        // Node, which is the attacker's time, not the acceptor's.
        let elapsedMs = -1;
        const watched = (async () => {
          let now: ChildStats = await childStats(child.port, false);
          while (now.closes.length === 0 && Date.now() - startedAt < 3000) {
            await sleep(20);
            now = await childStats(child.port, false);
          }
          elapsedMs = Date.now() - startedAt;
          return now;
        })();
        attacker.send(GOAWAY);
        for (let i = 0; i < 10_000; i++) {
          attacker.send(open(i));
          if (i % 500 === 499) await sleep(0);
        }
        const now = await watched;
        assert.deepEqual(now.closes, [1008], `the acceptor's closes after ${elapsedMs} ms`);
        assert.ok(elapsedMs <= 3000, `closed after ${elapsedMs} ms`);
        const after = await childStats(child.port, true);
        const rssGrowth = after.rss - before.rss;
        assert.ok(
          rssGrowth < 50 * 1024 * 1024,
          `the acceptor's RSS grew ${(rssGrowth / 1048576).toFixed(1)} MB`,
        );
        // Reading at last, the attacker finds at most 200 refusals, then the close. While its
        // OPENs still arrive the server's TCP stack may answer with RST, read as 1006.
        attacker.resume();
        const closed = await within(attacker.closed, 5000, "the attacker's close");
        assert.ok([1008, 1006].includes(closed.code), `the attacker saw ${closed.code}`);
        const refused = attacker.texts.filter((t) => t.startsWith('[4,')).length;
        assert.ok(refused <= 200, `${refused} refusals before the close`);
        await assertServesFreshDialer(rt, url);
        console.log(
          `GOAWAY then 10,000 OPENs: closed with 1008 after ${elapsedMs} ms, ${refused} refusals, acceptor RSS ${
            rssGrowth >= 0 ? '+' : ''
          }${(rssGrowth / 1048576).toFixed(1)} MB`,
        );
      } finally {
        attacker?.destroy();
        await child.kill();
      }
    },
  );

  test(
    named(
      rt,
      'acceptor closes with 1008 a socket that never reads once the refusals it drew pass maxBufferedBytes, whatever the reset budget, and keeps serving',
      ['WSM-LIM-002'],
    ),
    async () => {
      // The budget is raised out of reach, so only the cap can close the connection. What the
      // attacker does not read waits in the kernel's buffers (a few MB on loopback) and in the
      // runtime's, which bufferedAmount counts.
      const limits = { maxResetRate: 1e9, highWaterMark: 16 * 1024, maxBufferedBytes: 64 * 1024 };
      await withServer(rt, { limits }, async (h) => {
        const attacker = await h.tcp();
        attacker.pause();
        attacker.send(GOAWAY);
        const deadline = Date.now() + 20_000;
        let sent = 0;
        // Batches of 10,000 OPENs (about 480 KB of refusals each) until the acceptor closes, at
        // most 600,000 OPENs (about 29 MB of refusals).
        while (h.peerCloses.length === 0 && sent < 600_000 && Date.now() < deadline) {
          for (const end = sent + 10_000; sent < end; sent++) attacker.send(open(sent));
          await sleep(50);
        }
        await eventually(() => h.peerCloses.length === 1, 10_000, 'the peer close');
        assert.deepEqual(
          h.peerCloses.map(({ code, reason }) => ({ code, reason })),
          [{ code: 1008, reason: 'more than 65536 bytes buffered unread' }],
        );
        await h.healthy();
        console.log(`congestion cap: closed after ${sent} OPENs`);
      });
    },
  );
}
