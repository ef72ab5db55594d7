// The behavioural suite on raw Deno: Deno.serve + the ./deno adapter (Deno.upgradeWebSocket).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { acceptorSuite } from '../_acceptor_suite.ts';
import { upgrade } from '../../lib/adapters/deno.ts';
import { Acceptor } from '../../lib/acceptor.ts';

acceptorSuite('Deno', (acceptor) => {
  const server = Deno.serve(
    { hostname: '127.0.0.1', port: 0, onListen() {} },
    (request) =>
      new URL(request.url).pathname === '/ws'
        ? upgrade(request, acceptor)
        : new Response('Not found', { status: 404 }),
  );
  return Promise.resolve({ port: server.addr.port, path: '/ws', close: () => server.shutdown() });
});

test('Deno: WSM-ACC-003 upgrade() answers an upgrade Deno cannot perform with 400 and no Peer', async () => {
  const acceptor = new Acceptor({ idleTimeoutMs: 0 });
  const request = new Request('http://127.0.0.1/ws', {
    headers: {
      upgrade: 'websocket',
      connection: 'Upgrade',
      'sec-websocket-protocol': 'muxws.v1.json',
    },
  });
  const response = await upgrade(request, acceptor);
  assert.equal(response.status, 400);
  assert.match(await response.text(), /^Bad WebSocket upgrade request: .*sec-websocket-key/i);
  assert.equal(acceptor.stats.accepted, 0);
  await acceptor.close();
});
