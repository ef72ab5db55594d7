// The hostile-input tests on Node, against dist/: the `ws` package's server on node:http in front
// of `acceptor.accept()` (tests/node/_serve.ts), and the `ws` package's WebSocket for dialers and
// raw clients, since Node 20 has no global one.
//
// The tests that kill the acceptor or measure it alone need it in a child process. Under Node
// that child is this same file (bundled by scripts/build.mjs, so it too runs against dist/),
// started with MUXWS_HOSTILE_CHILD=1: it then serves the acceptor of tests/hostile/_child_acceptor.ts
// with `ws` and its /stats and /kick endpoints on node:http, prints `PORT <n>`, and registers no
// test.
import process from 'node:process';
import { fileURLToPath } from 'node:url';
import WebSocket from 'ws';
import { hostileTests } from '../hostile/_all.ts';
import { childAcceptor } from '../hostile/_child_acceptor.ts';
import { recoveryChild } from '../hostile/_child_recovery.ts';
import { spawnAcceptorWith } from '../hostile/_spawn.ts';
import { servedWs, serveWs } from './_serve.ts';
import type { DialerSocketConstructor } from 'muxws';

/** Serves the child acceptor and its control endpoints; the process runs until killed. */
async function serveChildAcceptor(): Promise<void> {
  const idleMs = Number(process.env.MUXWS_IDLE_MS ?? 30_000);
  const { acceptor, control } = process.env.MUXWS_CHILD === 'recovery'
    ? recoveryChild(idleMs)
    : childAcceptor(idleMs);
  const { server, port } = await serveWs(acceptor);
  // serveWs answers every plain request with 404: the control endpoints replace that.
  server.removeAllListeners('request');
  server.on('request', async (req, res) => {
    const answer = await control(new Request(`http://127.0.0.1:${port}${req.url}`));
    if (!answer) {
      res.writeHead(404).end();
      return;
    }
    const headers = Object.fromEntries(answer.headers);
    res.writeHead(answer.status, headers).end(await answer.text());
  });
  console.log(`PORT ${port}`);
}

const self = fileURLToPath(import.meta.url);

if (process.env.MUXWS_HOSTILE_CHILD === '1') {
  await serveChildAcceptor();
} else {
  hostileTests({
    name: 'ws on Node',
    start: (acceptor) => servedWs(acceptor),
    // The child must not take itself for a test file of this run (node --test sets the variable).
    spawnAcceptor: (options) =>
      spawnAcceptorWith([self], options, {
        MUXWS_HOSTILE_CHILD: '1',
        NODE_TEST_CONTEXT: undefined,
      }),
    WebSocket: WebSocket as unknown as DialerSocketConstructor,
    // Under 20,000 open+reset pairs the Node acceptor's RSS grows 6.4 to 11.7 MB from run to run
    // while its JS heap grows 0.4 MB, its ArrayBuffers 0 and its external memory 0.2 MB: nothing
    // the library keeps, the runtime's and `ws`'s own pools (Deno: 3 MB). The heap bound is the
    // same as on every runtime; RSS gets Node's room.
    floodRssMb: 16,
  });
}
