// The dialer on real sockets on Node 20 (which has no global WebSocket), against dist/: the `ws`
// package's server on 127.0.0.1:0 feeding `acceptor.accept()`, and the `ws` package's WebSocket
// passed as the dialer's `WebSocket` option.
import { createServer, STATUS_CODES } from 'node:http';
import WebSocket, { WebSocketServer } from 'ws';
import { dialerRealSuite } from '../_dialer_real.ts';
import type { DialerSocketConstructor } from '../../lib/dialer.ts';

dialerRealSuite('ws on Node', async (acceptor) => {
  const server = createServer((_req, res) => res.writeHead(404).end());
  const wss = new WebSocketServer({
    noServer: true,
    handleProtocols: (offered) => acceptor.protocol([...offered]) ?? false,
  });
  server.on('upgrade', (req, socket, head) => {
    const headers = new Headers();
    for (const [name, value] of Object.entries(req.headers)) {
      if (value !== undefined) headers.set(name, Array.isArray(value) ? value.join(', ') : value);
    }
    const check = acceptor.checkUpgrade(
      new Request(`http://${req.headers.host}${req.url}`, { method: req.method, headers }),
    );
    if (check instanceof Response) {
      socket.end(
        `HTTP/1.1 ${check.status} ${STATUS_CODES[check.status]}\r\nConnection: close\r\n` +
          'Content-Length: 0\r\n\r\n',
      );
      return;
    }
    wss.handleUpgrade(req, socket, head, (ws) => acceptor.accept(ws));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  let closing: Promise<void> | undefined;
  const stop = () =>
    closing ??= new Promise<void>((resolve) => {
      server.close(() => resolve());
    });
  return {
    port: (server.address() as { port: number }).port,
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
