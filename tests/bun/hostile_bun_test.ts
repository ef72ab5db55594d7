// The hostile rows of issue 7 on raw Bun: Bun.serve with the ./bun adapter.
import { hostileRows } from '../_hostile_rows.ts';
import { spawnAcceptor } from '../hostile/_spawn.ts';
import { bunHandlers } from '../../lib/adapters/bun.ts';

hostileRows('Bun', (acceptor) => {
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
}, { spawnAcceptor });
