// Peers not yet accepted and the order around the hello on Node: the `ws` package's server on
// 127.0.0.1:0 feeding the acceptor through the ./node adapter, and the `ws` package's WebSocket
// as the dialer's socket.
import WebSocket from 'ws';
import { admissionRealSuite } from '../_admission_real.ts';
import { serveWs } from './_serve.ts';
import type { DialerSocketConstructor } from 'muxws';

admissionRealSuite('ws on Node', async (acceptor) => {
  const { server, wss, port } = await serveWs(acceptor);
  return {
    url: `ws://127.0.0.1:${port}/ws`,
    close: () => {
      for (const client of wss.clients) client.terminate();
      server.closeAllConnections();
      return new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}, { WebSocket: WebSocket as unknown as DialerSocketConstructor });
