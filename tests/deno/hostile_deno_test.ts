// The hostile-input tests on raw Deno: Deno.serve with the ./deno adapter, and a child acceptor
// run by this Deno.
import { hostileTests } from '../hostile/_all.ts';
import { spawnAcceptor } from '../hostile/_spawn.ts';
import { upgrade } from 'muxws/deno';

hostileTests({
  name: 'Deno',
  start: (acceptor) => {
    const server = Deno.serve(
      { hostname: '127.0.0.1', port: 0, onListen() {} },
      (request) =>
        new URL(request.url).pathname === '/ws'
          ? upgrade(request, acceptor)
          : new Response('Not found', { status: 404 }),
    );
    return Promise.resolve({ port: server.addr.port, path: '/ws', close: () => server.shutdown() });
  },
  spawnAcceptor,
});
