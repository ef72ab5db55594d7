// The dialer on real sockets on Node 20 (which has no global WebSocket), against dist/: the `ws`
// package's server on 127.0.0.1:0 feeding `acceptor.accept()`, and the `ws` package's WebSocket
// given to the dialer's `WebSocket` option through wsDialer(), as the guide shows.
import WebSocket from 'ws';
import { wsDialer } from 'muxws/node';
import { dialerRealSuite } from '../_dialer_real.ts';
import { serveWs } from './_serve.ts';

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
}, { WebSocket: wsDialer(WebSocket) });
