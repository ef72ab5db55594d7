// Subscriptions that resume over real sockets on Node: the `ws` package's server through the Node
// adapter, and the dialer on the `ws` client.
import WebSocket from 'ws';
import type { ConnectOptions } from 'muxws';
import { trackedRealSuite } from '../_tracked_real.ts';
import { serveWs } from './_serve.ts';

trackedRealSuite('ws on Node', async (acceptor) => {
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
