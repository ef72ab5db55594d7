// Typed events over real sockets on Node: a `ws` server with the ./node adapter.
import WebSocket from 'ws';
import type { ConnectOptions } from 'muxws';
import { eventsRealSuite } from '../_events_real.ts';
import { serveWs } from './_serve.ts';

eventsRealSuite('Node', async (acceptor) => {
  const { server, wss, port } = await serveWs(acceptor);
  return {
    port,
    path: '/ws',
    close: () =>
      new Promise<void>((resolve) => {
        for (const client of wss.clients) client.terminate();
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}, { WebSocket: WebSocket as unknown as ConnectOptions['WebSocket'] });
