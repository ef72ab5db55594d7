// The behavioural suite on Hono on Node: @hono/node-server + @hono/node-ws through the ./hono
// adapter, against dist/. Node 20 has no global WebSocket, so the dialer uses the `ws` package's.
import { serve, type ServerType } from '@hono/node-server';
import { createNodeWebSocket } from '@hono/node-ws';
import { Hono } from 'hono';
import type { AddressInfo } from 'node:net';
import WebSocket from 'ws';
import { acceptorSuite } from '../_acceptor_suite.ts';
import { muxws } from 'muxws/hono';
import type { DialerSocketConstructor } from 'muxws';

acceptorSuite('Hono on Node', async (acceptor) => {
  const app = new Hono();
  const { injectWebSocket, upgradeWebSocket, wss } = createNodeWebSocket({ app });
  app.get('/ws', muxws(acceptor, { upgradeWebSocket }));
  let server!: ServerType;
  const listening = new Promise<AddressInfo>((resolve) => {
    server = serve({ fetch: app.fetch, hostname: '127.0.0.1', port: 0 }, resolve);
  });
  injectWebSocket(server);
  const info = await listening;
  return {
    port: info.port,
    path: '/ws',
    close: () =>
      new Promise<void>((resolve) => {
        for (const client of wss.clients) client.terminate();
        (server as { closeAllConnections?: () => void }).closeAllConnections?.();
        server.close(() => resolve());
      }),
  };
}, { WebSocket: WebSocket as unknown as DialerSocketConstructor });
