// The broadcast suite with `acceptor.accept()` on the `ws` package's server-side WebSocket
// (Node's http server through the Node adapter), a send per peer.
import WebSocket from 'ws';
import { broadcastSuite, type SocketConstructor } from '../_broadcast_suite.ts';
import { serveWs } from './_serve.ts';

broadcastSuite('ws on Node', async (acceptor) => {
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
}, { WebSocket: WebSocket as unknown as SocketConstructor });
