/**
 * PENDING (issue 7, row 34): fails until lib/_session.ts counts the streams it is provoked into
 * resetting toward `maxResetRate` (docs/security.md, "Known gaps"). Not part of the suite: its
 * name does not end in `_test.ts`. Run it on either acceptor runtime with
 *
 *     deno test -A tests/hostile/pending/made_you_reset.ts
 *     bun test ./tests/hostile/pending/made_you_reset.ts
 *
 * and, once it passes on both, move the test into `hostileRows()` in tests/_hostile_rows.ts.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { Acceptor } from '../../../lib/acceptor.ts';
import { upgrade } from '../../../lib/adapters/deno.ts';
import { bunHandlers } from '../../../lib/adapters/bun.ts';
import { type SuiteServer, within } from '../../_acceptor_suite.ts';
import { withServer } from '../../_hostile_rows.ts';
import { nestedJson } from '../_raw.ts';

// deno-lint-ignore no-explicit-any
const runtime = globalThis as any;

/** Serves `acceptor` on 127.0.0.1 with the running runtime's own server and adapter. */
function start(acceptor: Acceptor): Promise<SuiteServer> {
  if (runtime.Bun) {
    const { fetch, websocket } = bunHandlers(acceptor);
    const server = runtime.Bun.serve({ hostname: '127.0.0.1', port: 0, fetch, websocket });
    return Promise.resolve({
      port: server.port,
      path: '/ws',
      close: async () => {
        await server.stop(true);
      },
    });
  }
  const server = runtime.Deno.serve(
    { hostname: '127.0.0.1', port: 0, onListen() {} },
    (request: Request) => upgrade(request, acceptor),
  );
  return Promise.resolve({
    port: server.addr.port,
    path: '/ws',
    close: () => server.shutdown(),
  });
}

const name = runtime.Bun ? 'Bun' : 'Deno';

test(
  `${name}: issue 7 row 34 WSM-ACC-006 MadeYouReset (CVE-2025-8671): streams the acceptor is provoked into resetting (decode) count toward maxResetRate, so the work they started stays bounded`,
  async () => {
    await withServer(start, {}, async (h) => {
      const attacker = await h.raw();
      // Each OPEN starts a handler whose work ignores the stream (`park`); the DATA that follows
      // nests 100 deep (over maxDepth 64), so the acceptor itself resets the stream with decode
      // and its slot is free again. No RESET ever comes from the attacker.
      const deep = nestedJson(100);
      for (let i = 0; i < 2000 && !attacker.isClosed; i++) {
        const id = 2 * i + 1;
        attacker.send(`[1,${id},0,null,{"op":"park"}]`);
        attacker.send(`[2,${id},0,${deep}]`);
      }
      await within(attacker.closed, 5000, 'the close').catch(() => {});
      const limit = 100 + 200;
      assert.ok(
        h.state.maxRunning <= limit,
        `${h.state.maxRunning} handlers were started and left running (maxStreams 100 + maxResetRate 200 = ${limit})`,
      );
      assert.deepEqual(h.peerCloses.map((c) => c.code), [1008]);
      await h.healthy();
    });
  },
);
