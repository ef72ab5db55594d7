// On Node with `ws` (the dialer's through wsDialer()), the dialer and the acceptor write a burst of
// sends made in one tick with one write of the TCP socket (lib/sockets/node_ws.ts), and every
// message still arrives, in order. Runs against dist/ on real sockets on 127.0.0.1.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import WebSocket from 'ws';
import { Acceptor } from 'muxws/acceptor';
import { connect } from 'muxws';
import { wsDialer } from 'muxws/node';
import { serveWs } from './_serve.ts';

/** Counts the writes `socket` (a net.Socket) hands to the kernel. */
function countWrites(socket: { _write: unknown; _writev: unknown }): { writes: number } {
  const counter = { writes: 0 };
  for (const name of ['_write', '_writev'] as const) {
    const original = socket[name] as (...args: unknown[]) => unknown;
    socket[name] = function (this: unknown, ...args: unknown[]) {
      counter.writes++;
      return original.apply(this, args);
    };
  }
  return counter;
}

test('WSM-STR-005 64 requests made in one tick leave in a few socket writes and are answered in order', async () => {
  const acceptor = new Acceptor({ idleTimeoutMs: 0, onStream: (stream) => stream.payload });
  const { server, wss, port } = await serveWs(acceptor);
  let sockets: WebSocket[] = [];
  class Counted extends WebSocket {
    constructor(url: string, protocols?: string | string[]) {
      super(url, protocols);
      sockets.push(this);
    }
  }
  const connection = await connect(`ws://127.0.0.1:${port}/`, {
    reconnect: false,
    WebSocket: wsDialer(Counted),
  });
  try {
    const client = countWrites(
      (sockets[0] as unknown as { _socket: { _write: unknown; _writev: unknown } })._socket,
    );
    const serverSocket = [...wss.clients][0] as unknown as {
      _socket: { _write: unknown; _writev: unknown };
    };
    const serverWrites = countWrites(serverSocket._socket);
    const answers = await Promise.all(
      Array.from({ length: 64 }, (_, i) => connection.request({ i })),
    );
    assert.deepEqual(answers, Array.from({ length: 64 }, (_, i) => ({ i })));
    assert.ok(client.writes >= 1 && client.writes <= 4, `client wrote ${client.writes} times`);
    assert.ok(serverWrites.writes >= 1, 'the server wrote');
    assert.ok(serverWrites.writes < 64, `server wrote ${serverWrites.writes} times for 64 answers`);
  } finally {
    sockets = [];
    await connection.close();
    await acceptor.close({ drainMs: 0, spreadMs: 0 });
    for (const client of wss.clients) client.terminate();
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }
});
