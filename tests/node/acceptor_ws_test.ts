// The behavioural suite with `acceptor.accept()` on the `ws` package's server-side WebSocket
// (Node's http server, checkUpgrade() before handleUpgrade), against dist/. `ws` hands binary
// messages over as Buffers, which accept() takes as any ArrayBufferView.
import WebSocket from 'ws';
import { acceptorSuite } from '../_acceptor_suite.ts';
import { serveWs } from './_serve.ts';
import type { DialerSocketConstructor } from 'muxws';

acceptorSuite('ws on Node', async (acceptor) => {
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
}, { WebSocket: WebSocket as unknown as DialerSocketConstructor });
