/**
 * Hostile-input tests of recovery (WSM-REC-006): a peer that resumes and never reads while its
 * tag is flooded with broadcasts. The acceptor runs in a child process (`_child_recovery.ts`) so
 * its memory is its own.
 * @module
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { within } from '../_acceptor_suite.ts';
import { childStats, type HostileRuntime, named, sleep } from './_harness.ts';
import { type TcpClient, tcpClient } from './_raw.ts';

const MIB = 1024 * 1024;

/** GETs `path` of the child on `port`, as JSON; bounded. */
async function childGet<T>(port: number, path: string): Promise<T> {
  const response = await within(fetch(`http://127.0.0.1:${port}${path}`), 20_000, path);
  return await response.json() as T;
}

/** Registers the tests of this subject for `rt`. */
export function recoveryFloodsTests(rt: HostileRuntime): void {
  test(
    named(
      rt,
      'acceptor closes with 1013 a peer that resumes and never reads while 100 MiB of broadcasts go to its tag, its RSS growing less than 100 MB',
      ['WSM-REC-006'],
    ),
    async () => {
      const child = await rt.spawnAcceptor({ child: 'recovery' });
      let reader: TcpClient | undefined;
      try {
        const port = child.port;
        // The log holds 20 entries of 1 MiB: more than loopback's socket buffers take at once, so
        // the replay to a peer that never reads waits for its socket.
        await childGet(port, `/broadcast?n=20&size=${MIB}`);
        reader = await tcpClient(port, '/ws');
        reader.pause();
        reader.send(JSON.stringify([1, 1, 3, { ':resume': { room: 0 } }, null]));
        for (let i = 0; (await childGet<{ peers: number }>(port, '/closes')).peers !== 1; i++) {
          assert.ok(i < 100, 'the reader connected within 5 s');
          await sleep(50);
        }
        await sleep(200); // the replay fills the socket and waits
        const before = await childStats(port, true);
        const sent = await childGet<{ reached: number }>(port, `/broadcast?n=100&size=${MIB}`);
        const after = await childStats(port, true);
        const { closes } = await childGet<{ closes: Array<{ code: number; reason: string }> }>(
          port,
          '/closes',
        );
        const growth = after.rss - before.rss;
        const mb = (bytes: number) => (bytes / 1e6).toFixed(1);
        console.log(
          `recovery flood: acceptor RSS ${growth >= 0 ? '+' : ''}${
            mb(growth)
          } MB over 100 MiB of broadcasts to a stalled peer; ${sent.reached} reached it`,
        );
        assert.deepEqual(closes, [{ code: 1013, reason: 'recovery held too much' }]);
        assert.ok(growth < 100e6, `the acceptor's RSS grew ${mb(growth)} MB`);
      } finally {
        reader?.destroy();
        await child.kill();
      }
    },
  );
}
