// The behavioural suite on raw Bun: Bun.serve with the ./bun adapter's fetch and websocket.
import { acceptorSuite } from '../_acceptor_suite.ts';
import { bunHandlers } from '../../lib/adapters/bun.ts';

acceptorSuite('Bun', (acceptor) => {
  const { fetch, websocket } = bunHandlers(acceptor);
  const server = Bun.serve({
    hostname: '127.0.0.1',
    port: 0,
    fetch: (request, srv) =>
      new URL(request.url).pathname === '/ws'
        ? fetch(request, srv)
        : new Response('Not found', { status: 404 }),
    websocket,
  });
  return Promise.resolve({
    port: server.port,
    path: '/ws',
    close: async () => {
      await server.stop(true);
    },
  });
});
