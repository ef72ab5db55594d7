// The dialer's messages for the mistakes a newcomer makes: each says what was expected, what was
// found and what to change. A real `connect()` and, where the acceptor speaks, a real `Acceptor`
// over in-memory sockets; timing on fake time.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { type CloseInfo, connect, ConnectError, type Connection, StreamResetError } from 'muxws';
import { Acceptor, type AcceptorOptions } from 'muxws/acceptor';
import { fakeTime } from '../_fake_time.ts';
import { FakeServer } from '../_socket_pair.ts';

const URL_ = 'ws://muxws.test/ws';
const PASS_HELLO = 'the acceptor requires a hello and none was sent: pass "hello" to connect()';

/** A real Acceptor behind a FakeServer. */
function serve(options: AcceptorOptions) {
  const errors: unknown[] = [];
  const acceptor = new Acceptor({ onError: (error) => errors.push(error), ...options });
  const server = new FakeServer({
    onConnection: (c) =>
      queueMicrotask(() => {
        c.accept();
        acceptor.accept(c.server);
      }),
  });
  return { acceptor, server, errors };
}

test('a dialer that sends no hello to an acceptor requiring one is told to pass "hello" to connect(), in every refused call and in the final close (WSM-API-003)', async () => {
  using clock = fakeTime();
  const { acceptor, server } = serve({
    onHello: () => 'welcome',
    routes: { ping: () => 'pong' },
  });
  const closes: CloseInfo[] = [];
  const connection = await connect(URL_, {
    WebSocket: server.WebSocket,
    heartbeat: false,
    onClose: (info) => closes.push(info),
  });
  const call = await connection.call('ping', null).catch((e) => e);
  assert(call instanceof StreamResetError, String(call));
  assert.equal(call.code, 'hello_required');
  assert.equal(call.remote, true);
  assert.match(call.message, /^Stream \d+ was reset by the other side with "hello_required": /);
  assert.ok(call.message.endsWith(`: ${PASS_HELLO}`), call.message);
  const request = await connection.request('ping').catch((e) => e);
  assert(request instanceof StreamResetError && request.message.endsWith(PASS_HELLO));

  await clock.tickAsync(10_000);
  const info = await connection.closed;
  assert.equal(info.code, 1008);
  assert.equal(info.reason, 'hello required');
  assert.equal(info.willRetry, false);
  assert(info.error instanceof Error, String(info.error));
  assert.equal(
    info.error.message,
    `The connection closed with code 1008 (hello required): ${PASS_HELLO}`,
  );
  assert.deepEqual(closes.map((c) => (c.error as Error).message), [info.error.message]);
  assert.equal(connection.state, 'closed');
  await acceptor.close();
  assert.equal(clock.countTimers(), 0);
});

test('an acceptor closing with 1008 for another reason is reported as it is, with no hello hint', async () => {
  using clock = fakeTime();
  const { acceptor, server } = serve({ onStream: () => 'ok' });
  const connection: Connection = await connect(URL_, { WebSocket: server.WebSocket });
  const [peer] = acceptor.peers();
  peer.close(1008, 'banned');
  const info = await connection.closed;
  assert.equal(info.code, 1008);
  assert.equal(info.error, undefined);
  await acceptor.close();
  assert.equal(clock.countTimers(), 0);
});

test('connect() with no WebSocket option where none is global points at wsDialer() of @muxws/core/node, before any dial', async () => {
  const saved = Object.getOwnPropertyDescriptor(globalThis, 'WebSocket');
  delete (globalThis as { WebSocket?: unknown }).WebSocket;
  try {
    await assert.rejects(connect(URL_), {
      name: 'TypeError',
      message:
        'Cannot connect as "WebSocket" must be a WebSocket constructor (none is global: on Node 20, pass wsDialer(WebSocket) from "@muxws/core/node"): current value is undefined',
    });
  } finally {
    if (saved) Object.defineProperty(globalThis, 'WebSocket', saved);
  }
});

test('a first dial that fails before its socket opens lists TLS and a 401 from authorize among the usual causes', async () => {
  using clock = fakeTime();
  const server = new FakeServer({ onConnection: (c) => queueMicrotask(() => c.refuse()) });
  const error = await connect(URL_, { WebSocket: server.WebSocket, reconnect: false })
    .catch((e) => e);
  assert(error instanceof ConnectError, String(error));
  assert.match(error.message, /the usual causes are nothing listening at the URL, /);
  assert.match(
    error.message,
    /, an origin or credentials the acceptor refuses \(403, or 401 from authorize\), /,
  );
  assert.match(error.message, /, wss:\/\/ to a server without TLS, /);
  assert.equal(clock.countTimers(), 0);
});

test('request() to an acceptor serving only routes is refused with a message saying to call a route (WSM-API-003)', async () => {
  using clock = fakeTime();
  const { acceptor, server, errors } = serve({ routes: { ping: () => 'pong' } });
  const connection = await connect(URL_, { WebSocket: server.WebSocket, heartbeat: false });
  const error = await connection.request('ping').catch((e) => e);
  assert(error instanceof StreamResetError, String(error));
  assert.equal(error.code, 'refused');
  assert.match(
    error.message,
    /^Stream \d+ was reset by the other side with "refused": Only routes are served here and the stream names none: use a route, call\(route, input\) or stream\(route, input\), not request\(\) or open\(\)$/,
  );
  assert.equal(await connection.call('ping', null), 'pong');
  assert.deepEqual(errors, []);
  await connection.close();
  await acceptor.close();
  assert.equal(clock.countTimers(), 0);
});

test('a hello the codec cannot encode is named by the path of the value, before any dial', async () => {
  using clock = fakeTime();
  const server = new FakeServer();
  for (
    const [hello, message] of [
      [
        { payload: { user: 'ada', big: 1n } },
        'Cannot encode the payload of the hello with codec "json": BigInt at .big',
      ],
      [
        { payload: { rooms: [{ id: 1 }, { id: 2n }] } },
        'Cannot encode the payload of the hello with codec "json": BigInt at .rooms[1].id',
      ],
      [
        { payload: 'ok', headers: { trace: { at: 3n } } },
        'Cannot encode the headers of the hello with codec "json": BigInt at .trace.at',
      ],
    ] as const
  ) {
    await assert.rejects(connect(URL_, { WebSocket: server.WebSocket, hello }), (e: unknown) => {
      assert(e instanceof TypeError, String(e));
      assert.equal(e.message, message);
      assert(e.cause instanceof Error);
      return true;
    });
  }
  const fromFunction = await connect(URL_, {
    WebSocket: server.WebSocket,
    reconnect: false,
    hello: () => ({ payload: { big: 2n } }),
  }).catch((e) => e);
  assert(fromFunction instanceof ConnectError, String(fromFunction));
  assert.equal(
    (fromFunction.cause as Error).message,
    'Cannot encode the payload of the hello with codec "json": BigInt at .big',
  );
  assert.equal(server.connections.length, 0);
  assert.equal(clock.countTimers(), 0);
});
