// The behavioural suite on Hono on Deno: hono/deno's upgradeWebSocket through the ./hono adapter.
import { Hono } from 'hono';
import { upgradeWebSocket } from 'hono/deno';
import { acceptorSuite } from '../_acceptor_suite.ts';
import { muxws } from 'muxws/hono';

acceptorSuite('Hono on Deno', (acceptor) => {
  const app = new Hono();
  app.get('/ws', muxws(acceptor, { upgradeWebSocket }));
  const server = Deno.serve({ hostname: '127.0.0.1', port: 0, onListen() {} }, app.fetch);
  return Promise.resolve({ port: server.addr.port, path: '/ws', close: () => server.shutdown() });
});
