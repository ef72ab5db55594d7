// The dialer on real sockets on Node 20 (which has no global WebSocket), against dist/: the `ws`
// package's server on 127.0.0.1:0 feeding `acceptor.accept()`, and the `ws` package's WebSocket
// passed as the dialer's `WebSocket` option.
import WebSocket from 'ws';
import { dialerRealSuite } from '../_dialer_real.ts';
import { serveWs } from './_serve.ts';
import type { DialerSocketConstructor } from 'muxws';

dialerRealSuite('ws on Node', async (acceptor) => {
  const { server, wss, port } = await serveWs(acceptor);
  let closing: Promise<void> | undefined;
  const stop = () =>
    closing ??= new Promise<void>((resolve) => {
      server.close(() => resolve());
    });
  return {
    port,
    stopListening: () => {
      void stop();
    },
    close: () => {
      for (const client of wss.clients) client.terminate();
      server.closeAllConnections();
      return stop();
    },
  };
}, { WebSocket: WebSocket as unknown as DialerSocketConstructor });
