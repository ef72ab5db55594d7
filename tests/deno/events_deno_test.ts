// Typed events over real sockets on Deno: Deno.serve with the ./deno adapter.
import { eventsRealSuite } from '../_events_real.ts';
import { upgrade } from 'muxws/deno';

eventsRealSuite('Deno', (acceptor) => {
  const server = Deno.serve(
    { hostname: '127.0.0.1', port: 0, onListen() {} },
    (request) =>
      new URL(request.url).pathname === '/ws'
        ? upgrade(request, acceptor)
        : new Response('Not found', { status: 404 }),
  );
  return Promise.resolve({ port: server.addr.port, path: '/ws', close: () => server.shutdown() });
});
