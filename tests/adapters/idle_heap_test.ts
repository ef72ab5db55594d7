// What an idle peer holds, on every runtime: the JS heap per peer attached through the Bun
// adapter (its handlers driven by stand-ins for Bun's sockets, as bench/idle_peers.ts does),
// measured after a forced garbage collection against the same stand-ins with no peer.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import process from 'node:process';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { Acceptor } from 'muxws/acceptor';
import { bunHandlers, type BunServerWebSocket } from 'muxws/bun';

/** A full garbage collection: Bun's own, else V8's (exposed here, as Node and Deno allow). */
function collector(): () => void {
  const bun = (globalThis as { Bun?: { gc(force: boolean): void } }).Bun;
  if (bun !== undefined) return () => bun.gc(true);
  setFlagsFromString('--expose-gc');
  return runInNewContext('gc') as () => void;
}

/** A stand-in for Bun's `ServerWebSocket` that does nothing. */
class IdleSocket implements BunServerWebSocket {
  data: unknown = undefined;
  send(): number {
    return 1;
  }
  close(): void {}
  subscribe(): void {}
  unsubscribe(): void {}
}

const HELLO_REQUEST = {
  upgrade: 'websocket',
  connection: 'Upgrade',
  'sec-websocket-key': 'dGhlIHNhbXBsZSBub25jZQ==',
  'sec-websocket-version': '13',
  'sec-websocket-protocol': 'muxws.v1.json',
};

/**
 * Bytes of JS heap per peer for `count` peers that were upgraded, opened, sent the hello and
 * tagged `all` as it was answered, then left idle.
 */
async function heapPerPeer(count: number, gc: () => void): Promise<number> {
  const acceptor = new Acceptor({
    idleTimeoutMs: 0,
    onStream: (stream, peer) => {
      if (stream.id !== 1) return stream.payload;
      peer.tags.add('all');
      return { welcome: true };
    },
  });
  const handlers = bunHandlers(acceptor);
  let pending: IdleSocket | undefined;
  const server = {
    upgrade(_request: Request, options: { data?: unknown }): boolean {
      pending!.data = options.data;
      return true;
    },
    publish: () => 0,
  };
  const sockets = Array.from({ length: count }, () => new IdleSocket());
  const hellos = sockets.map((_, i) => JSON.stringify([1, 1, 3, null, { id: i }]));
  gc();
  gc();
  const before = process.memoryUsage().heapUsed;
  for (const [i, ws] of sockets.entries()) {
    pending = ws;
    const request = new Request('http://127.0.0.1/ws', { headers: HELLO_REQUEST });
    assert.equal(await handlers.fetch(request, server), undefined);
    handlers.websocket.open(ws);
    handlers.websocket.message(ws, hellos[i]);
  }
  pending = undefined;
  await new Promise((resolve) => setTimeout(resolve, 0));
  gc();
  gc();
  const after = process.memoryUsage().heapUsed;
  assert.equal(acceptor.stats.peers, count);
  for (const ws of sockets) handlers.websocket.close(ws, 1000, '');
  await acceptor.close();
  return (after - before) / count;
}

/**
 * The bound per engine: 900–1,000 B per peer on JavaScriptCore (whose `Set` with one entry
 * takes ~220 B) and 800–950 B on V8; a handle of three closures per peer (what the public
 * `attach()` returns) instead of the link would take it over on each.
 */
const BOUND = 'Bun' in globalThis ? 1_120 : 1_050;

test('An idle peer of the Bun adapter holding one tag keeps its heap per peer bounded', async () => {
  const gc = collector();
  // The first round compiles the code it runs, which the second does not count.
  await heapPerPeer(1_000, gc);
  const perPeer = await heapPerPeer(3_000, gc);
  assert.ok(perPeer > 0, `the peers were measured: ${perPeer} B`);
  assert.ok(
    perPeer < BOUND,
    `Expected under ${BOUND} B of heap per idle peer: found ${Math.round(perPeer)} B`,
  );
});
