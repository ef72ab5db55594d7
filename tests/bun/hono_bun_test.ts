// The behavioural suite on Hono on Bun: hono/bun's upgradeWebSocket and websocket through the
// ./hono adapter (Hono's Bun helper makes a new context per event; the adapter keys peers by the
// raw socket).
import { Hono } from 'hono';
import { upgradeWebSocket, websocket } from 'hono/bun';
import { acceptorSuite } from '../_acceptor_suite.ts';
import { muxws } from 'muxws/hono';
import { serveOnBun } from './_serve.ts';

acceptorSuite('Hono on Bun', (acceptor) => {
  const app = new Hono();
  app.get('/ws', muxws(acceptor, { upgradeWebSocket }));
  return Promise.resolve(serveOnBun(app.fetch, websocket));
});
