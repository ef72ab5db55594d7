// The dialer over the `ws` package against a real server whose acceptor is closing: the redial
// is refused with 503 and `Retry-After: 1` (Acceptor.checkUpgrade), and a dialer given the class
// through wsDialer() waits that second instead of its short backoff; given the class as it is, it
// redials on the backoff. Real time on 127.0.0.1, every wait bounded.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, STATUS_CODES } from 'node:http';
import type { AddressInfo } from 'node:net';
import WebSocket, { WebSocketServer } from 'ws';
import { connect, type Connection, type DialerSocketConstructor } from 'muxws';
import { Acceptor } from 'muxws/acceptor';
import { wsDialer } from 'muxws/node';
import { until } from '../_dialer_real.ts';

/**
 * Connects over `Dialer`, closes the acceptor so that the redial is refused with 503 and
 * `Retry-After: 1`, and resolves with how long after the refusal the next dial came, once the
 * connection is established again on the second acceptor.
 */
async function redialAfterRefusal(Dialer: DialerSocketConstructor): Promise<number> {
  const first = new Acceptor({ onStream: (stream) => stream.payload });
  const second = new Acceptor({ onStream: (stream) => stream.payload });
  let current = first;
  const upgradesAt: number[] = [];
  const refusals: { at: number; status: number; retryAfter: string | null }[] = [];
  const wss = new WebSocketServer({
    noServer: true,
    handleProtocols: (offered) => current.protocol([...offered]) ?? false,
  });
  const server = createServer((_req, res) => res.writeHead(404).end());
  server.on('upgrade', async (req, socket, head) => {
    upgradesAt.push(Date.now());
    const headers = new Headers();
    for (const [name, value] of Object.entries(req.headers)) {
      if (value !== undefined) headers.set(name, Array.isArray(value) ? value.join(', ') : value);
    }
    const acceptor = current;
    const check = await acceptor.checkUpgrade(
      new Request(`http://${req.headers.host}${req.url}`, { method: req.method, headers }),
    );
    if (check instanceof Response) {
      let lines = `HTTP/1.1 ${check.status} ${STATUS_CODES[check.status]}\r\n`;
      for (const [name, value] of check.headers) lines += `${name}: ${value}\r\n`;
      socket.end(`${lines}Connection: close\r\nContent-Length: 0\r\n\r\n`);
      refusals.push({
        at: Date.now(),
        status: check.status,
        retryAfter: check.headers.get('retry-after'),
      });
      current = second; // the restarted server takes the next upgrade
      return;
    }
    wss.handleUpgrade(req, socket, head, (ws) => acceptor.accept(ws));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  let connection: Connection | undefined;
  try {
    connection = await connect(`ws://127.0.0.1:${port}/`, {
      WebSocket: Dialer,
      heartbeat: false,
      draw: () => 0,
      serviceRestartDelayMs: 10,
      reconnect: { initialDelayMs: 20, maxDelayMs: 5000 },
    });
    // the acceptor closes: GOAWAY, the dialer redials fast, the closing acceptor refuses it
    const closing = first.close({ spreadMs: 0, drainMs: 1000 });
    await until(() => refusals.length === 1, 3000, 'the refused redial');
    await closing;
    assert.deepEqual(
      refusals.map((r) => [r.status, r.retryAfter]),
      [[503, '1']],
    );
    await until(() => upgradesAt.length >= 3, 3000, 'the redial after the refusal');
    const waited = upgradesAt[2] - refusals[0].at;
    await connection.opened({ signal: AbortSignal.timeout(3000) });
    assert.deepEqual(await connection.request('ping'), 'ping');
    return waited;
  } finally {
    await connection?.close();
    await second.close({ drainMs: 0 });
    for (const client of wss.clients) client.terminate();
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }
}

test('a redial refused with 503 and Retry-After over wsDialer(ws) waits that long before the next dial', async () => {
  const waited = await redialAfterRefusal(wsDialer(WebSocket));
  // without Retry-After the next dial would come after backoffDelay(1) = 40 ms
  assert(waited >= 990, `redialled ${waited} ms after the 503, before its Retry-After of 1 s`);
  assert(waited < 2500, `redialled ${waited} ms after the 503`);
});

test('a redial refused with 503 over the ws class as it is redials on the backoff, its Retry-After unseen', async () => {
  const waited = await redialAfterRefusal(WebSocket);
  // backoffDelay(1) = 40 ms with these options, far short of the Retry-After of 1 s
  assert(waited < 900, `redialled ${waited} ms after the 503, as if its Retry-After were seen`);
});
