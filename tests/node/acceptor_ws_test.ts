// The behavioural suite with `acceptor.accept()` on the `ws` package's server-side WebSocket
// (Node's http server, checkUpgrade() before handleUpgrade), against dist/. `ws` hands binary
// messages over as Buffers, which accept() takes as any ArrayBufferView.
import { createServer, STATUS_CODES } from 'node:http';
import type { AddressInfo } from 'node:net';
import WebSocket, { WebSocketServer } from 'ws';
import { acceptorSuite } from '../_acceptor_suite.ts';
import type { DialerSocketConstructor } from '../../lib/dialer.ts';

acceptorSuite('ws on Node', async (acceptor) => {
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
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  return {
    port: (server.address() as AddressInfo).port,
    path: '/ws',
    close: () =>
      new Promise<void>((resolve) => {
        for (const client of wss.clients) client.terminate();
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}, { WebSocket: WebSocket as unknown as DialerSocketConstructor });
