// The hostile rows of issue 7 on raw Deno: Deno.serve + the ./deno adapter.
import { hostileRows } from '../_hostile_rows.ts';
import { spawnAcceptor } from '../hostile/_spawn.ts';
import { upgrade } from '../../lib/adapters/deno.ts';

hostileRows('Deno', (acceptor) => {
  const server = Deno.serve(
    { hostname: '127.0.0.1', port: 0, onListen() {} },
    (request) =>
      new URL(request.url).pathname === '/ws'
        ? upgrade(request, acceptor)
        : new Response('Not found', { status: 404 }),
  );
  return Promise.resolve({ port: server.addr.port, path: '/ws', close: () => server.shutdown() });
}, { spawnAcceptor });
