/**
 * The Node recipe of `examples/demo.ts`, shared by the bench servers: an `node:http` server's
 * WebSocket upgrades go through `checkUpgrade()` (a refusal is written as a bare HTTP response),
 * then `ws`'s `handleUpgrade()` into `accept()`, with the acceptor choosing the subprotocol.
 *
 * @module
 */
import { type IncomingMessage, type Server, STATUS_CODES } from 'node:http';
import type { Duplex } from 'node:stream';
import { WebSocketServer } from 'ws';
import type { Acceptor } from '../lib/acceptor.ts';

/** Node's request head as the `Request` that `checkUpgrade()` takes. */
function toRequest(req: IncomingMessage): Request {
  const headers = new Headers();
  for (const [name, value] of Object.entries(req.headers)) {
    if (value !== undefined) headers.set(name, Array.isArray(value) ? value.join(', ') : value);
  }
  return new Request(`http://${req.headers.host}${req.url}`, { method: req.method, headers });
}

/**
 * Serves `server`'s upgrades with the acceptor `current()` returns, read at each upgrade (so a
 * bench may put a fresh acceptor in place after a GOAWAY).
 */
export function acceptUpgrades<Api>(server: Server, current: () => Acceptor<Api>): void {
  const wss = new WebSocketServer({
    noServer: true,
    handleProtocols: (offered) => current().protocol([...offered]) ?? false,
  });
  server.on('upgrade', async (req: IncomingMessage, socket: Duplex, head: Buffer) => {
    const acceptor = current();
    const check = await acceptor.checkUpgrade(toRequest(req));
    if (check instanceof Response) {
      socket.end(
        `HTTP/1.1 ${check.status} ${STATUS_CODES[check.status]}\r\nConnection: close\r\n` +
          'Content-Length: 0\r\n\r\n',
      );
      return;
    }
    wss.handleUpgrade(req, socket, head, (ws) => {
      acceptor.accept(ws as unknown as Parameters<Acceptor<Api>['accept']>[0]);
    });
  });
}
