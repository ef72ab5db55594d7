// The broadcast suite on raw Deno: Deno.serve + the ./deno adapter, a send per peer.
import { broadcastSuite } from '../_broadcast_suite.ts';
import { upgrade } from 'muxws/deno';

broadcastSuite('Deno', (acceptor) => {
  const server = Deno.serve(
    { hostname: '127.0.0.1', port: 0, onListen() {} },
    (request) =>
      new URL(request.url).pathname === '/ws'
        ? upgrade(request, acceptor)
        : new Response('Not found', { status: 404 }),
  );
  return Promise.resolve({ port: server.addr.port, path: '/ws', close: () => server.shutdown() });
});
