// The behavioural suite on raw Deno: Deno.serve + the ./deno adapter (Deno.upgradeWebSocket).
import { acceptorSuite } from '../_acceptor_suite.ts';
import { upgrade } from '../../lib/adapters/deno.ts';

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
