// The `ws` package's server in front of an Acceptor on Node, as the Node tests use it: a
// `node:http` server on 127.0.0.1 whose upgrades go through `checkUpgrade()` (a refusal is written
// as a bare HTTP response) and then `ws`'s `handleUpgrade()` into `acceptor.accept()`, with the
// acceptor choosing the subprotocol. Each test keeps its own way of closing.
import { createServer, type Server, STATUS_CODES } from 'node:http';
import type { AddressInfo } from 'node:net';
import { WebSocketServer } from 'ws';
import type { Acceptor } from '../../lib/acceptor.ts';

/** A listening `ws` server feeding an acceptor. */
export interface WsServer {
  /** The HTTP server (404 for anything but an upgrade). */
  server: Server;
  /** The `ws` server, in `noServer` mode; its `clients` are the accepted sockets. */
  wss: WebSocketServer;
  /** The port it listens on, on 127.0.0.1. */
  port: number;
}

/** Serves `acceptor` (of any `Api` and peer data) with `ws` on 127.0.0.1:`port` (0: ephemeral). */
export async function serveWs(
  // deno-lint-ignore no-explicit-any
  acceptor: Acceptor<any, any>,
  port = 0,
): Promise<WsServer> {
  const server = createServer((_req, res) => res.writeHead(404).end());
  const wss = new WebSocketServer({
    noServer: true,
    handleProtocols: (offered) => acceptor.protocol([...offered]) ?? false,
  });
  server.on('upgrade', async (req, socket, head) => {
    const headers = new Headers();
    for (const [name, value] of Object.entries(req.headers)) {
      if (value !== undefined) headers.set(name, Array.isArray(value) ? value.join(', ') : value);
    }
    const check = await acceptor.checkUpgrade(
      new Request(`http://${req.headers.host}${req.url}`, { method: req.method, headers }),
    );
    if (check instanceof Response) {
      socket.end(
        `HTTP/1.1 ${check.status} ${STATUS_CODES[check.status]}\r\nConnection: close\r\n` +
          'Content-Length: 0\r\n\r\n',
      );
      return;
    }
    wss.handleUpgrade(
      req,
      socket,
      head,
      (ws) => acceptor.accept(ws, { data: check.data, tags: check.tags }),
    );
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', () => {
      server.off('error', reject);
      resolve();
    });
  });
  return { server, wss, port: (server.address() as AddressInfo).port };
}
