// The dialer over the `ws` package (an EventEmitter socket), its class passed as it is and through
// wsDialer(): an `error` event must never escape as an uncaught exception, whether the dialer
// abandons a handshake or the transport fails while open, and a failed first connection says why.
// Runs on Node against dist/.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { createServer as createHttpServer } from 'node:http';
import { createServer, type Server, type Socket } from 'node:net';
import WebSocket from 'ws';
import { type CloseInfo, connect, ConnectError, TimeoutError } from 'muxws';
import { Acceptor } from 'muxws/acceptor';
import { wsDialer } from 'muxws/node';
import { serveWs } from './_serve.ts';

function listen(server: Server): Promise<number> {
  return new Promise((resolve) => {
    server.listen(0, '127.0.0.1', () => resolve((server.address() as { port: number }).port));
  });
}

/** Collects uncaught exceptions while `body` runs (a listener keeps them from killing Node). */
async function uncaughtDuring(body: () => Promise<void>): Promise<unknown[]> {
  const seen: unknown[] = [];
  const onUncaught = (error: unknown) => seen.push(error);
  process.on('uncaughtException', onUncaught);
  try {
    await body();
    // ws emits its error on a later tick; give it a few
    await new Promise((resolve) => setTimeout(resolve, 100));
  } finally {
    process.off('uncaughtException', onUncaught);
  }
  return seen;
}

/** The `ws` class as the dialer takes it: as it is, and through wsDialer(). */
const DIALERS = [['ws', WebSocket], ['wsDialer(ws)', wsDialer(WebSocket)]] as const;

for (const [via, Dialer] of DIALERS) {
  test(`WSM-DIAL-003 a handshake abandoned at its deadline over ${via} rejects with ConnectError and throws nothing uncaught`, async () => {
    const sockets: Socket[] = [];
    const server = createServer((socket) => sockets.push(socket)); // never answers the upgrade
    const port = await listen(server);
    try {
      const uncaught = await uncaughtDuring(async () => {
        await assert.rejects(
          connect(`ws://127.0.0.1:${port}/`, {
            WebSocket: Dialer,
            handshakeTimeoutMs: 100,
          }),
          (error: unknown) => error instanceof ConnectError && error.cause instanceof TimeoutError,
        );
      });
      assert.deepEqual(uncaught, []);
    } finally {
      for (const s of sockets) s.destroy();
      server.close();
    }
  });

  test(`WSM-DIAL-008 a transport error on an open ${via} socket is a loss reported through onClose, never an uncaught exception`, async () => {
    const sockets: Socket[] = [];
    // A hand-rolled upgrade that selects the muxws subprotocol, then sends a frame with reserved
    // bits set, which ws rejects with an `error` event followed by close 1002.
    const server = createServer((socket) => {
      sockets.push(socket);
      let head = '';
      socket.on('data', (chunk) => {
        head += chunk.toString('latin1');
        if (!head.includes('\r\n\r\n')) return;
        const key = /sec-websocket-key: *(.+)\r\n/i.exec(head)?.[1]?.trim() ?? '';
        const accept = createHash('sha1')
          .update(key + '258EAFA5-E914-47DA-95CA-C5AB0DC85B11')
          .digest('base64');
        socket.write(
          'HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n' +
            `Sec-WebSocket-Accept: ${accept}\r\nSec-WebSocket-Protocol: muxws.v1.json\r\n\r\n`,
        );
        setTimeout(() => socket.write(Buffer.from([0xf1, 0x00])), 20);
        head = '';
      });
    });
    const port = await listen(server);
    const closes: CloseInfo[] = [];
    try {
      const uncaught = await uncaughtDuring(async () => {
        const connection = await connect(`ws://127.0.0.1:${port}/`, {
          WebSocket: Dialer,
          reconnect: false,
          heartbeat: false,
          onClose: (info) => closes.push(info),
        });
        await Promise.race([
          connection.closed,
          new Promise((_, reject) => setTimeout(() => reject(new Error('no close in 2 s')), 2000)),
        ]);
      });
      assert.deepEqual(uncaught, []);
      assert.equal(closes.length, 1);
      assert.equal(closes[0].willRetry, false);
    } finally {
      for (const s of sockets) s.destroy();
      server.close();
    }
  });

  test(`a first connection refused at upgrade over ${via} says the status and the usual causes in its ConnectError (WSM-APP-007)`, async () => {
    const server = createHttpServer((_request, response) => response.writeHead(404).end());
    server.on('upgrade', (_request, socket) => {
      socket.end('HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n');
    });
    const port = await listen(server as unknown as Server);
    try {
      const error = await connect(`ws://127.0.0.1:${port}/wrong`, {
        WebSocket: Dialer,
        reconnect: false,
        handshakeTimeoutMs: 2000,
      }).catch((e) => e);
      assert(error instanceof ConnectError);
      assert.match(error.message, /Unexpected server response: 404/);
      assert.match(
        error.message,
        /the usual causes are nothing listening at the URL, a wrong path \(404\)/,
      );
    } finally {
      server.close();
    }
  });

  test(`a first connection to a port nothing listens on over ${via} says ECONNREFUSED and the usual causes (WSM-APP-007)`, async () => {
    const probe = createServer();
    const port = await listen(probe);
    await new Promise((resolve) => probe.close(resolve)); // the port is free again: nothing listens
    const error = await connect(`ws://127.0.0.1:${port}/`, {
      WebSocket: Dialer,
      reconnect: false,
      handshakeTimeoutMs: 2000,
    }).catch((e) => e);
    assert(error instanceof ConnectError);
    assert.match(error.message, /ECONNREFUSED/);
    assert.match(error.message, /the usual causes are nothing listening at the URL/);
  });

  test(`a first connection refused with 401 by authorize over ${via} says 401 and names authorize among the usual causes`, async () => {
    const acceptor = new Acceptor({
      authorize: () => new Response('Sign in first', { status: 401 }),
      onStream: () => 'never',
    });
    const { server, wss, port } = await serveWs(acceptor);
    try {
      const error = await connect(`ws://127.0.0.1:${port}/ws`, {
        WebSocket: Dialer,
        reconnect: false,
        handshakeTimeoutMs: 2000,
      }).catch((e) => e);
      assert(error instanceof ConnectError, String(error));
      assert.match(error.message, /Unexpected server response: 401/);
      assert.match(
        error.message,
        /, an origin or credentials the acceptor refuses \(403, or 401 from authorize\), /,
      );
    } finally {
      for (const client of wss.clients) client.terminate();
      await acceptor.close();
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    }
  });

  test(`a first connection with wss:// to a server without TLS over ${via} names TLS among the usual causes`, async () => {
    const server = createHttpServer((_request, response) => response.writeHead(404).end());
    const port = await listen(server as unknown as Server);
    try {
      const error = await connect(`wss://127.0.0.1:${port}/ws`, {
        WebSocket: Dialer,
        reconnect: false,
        handshakeTimeoutMs: 2000,
      }).catch((e) => e);
      assert(error instanceof ConnectError, String(error));
      assert.match(error.message, /^Cannot connect to wss:\/\/127\.0\.0\.1:\d+\/ws: /);
      assert.match(error.message, /, wss:\/\/ to a server without TLS, /);
    } finally {
      server.closeAllConnections();
      server.close();
    }
  });
}
