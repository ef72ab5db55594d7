// Retry-After on a refused upgrade: the header's parsing, and the redial wait on fake time with
// an in-memory socket shaped like the `ws` package's (an EventEmitter `on` that reports the
// refusal through `unexpected-response`), given to the dialer through wsDialer(); given as it is,
// its refusals are not listened to.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { connect, type ReconnectingInfo } from 'muxws';
import { wsDialer } from 'muxws/node';
import { retryAfterMs } from '../../lib/sockets/node_ws.ts';
import { fakeTime } from '../_fake_time.ts';
import { type FakeConnection, FakeServer } from '../_socket_pair.ts';
import { serveFake, TestAcceptor } from '../_test_acceptor.ts';

const URL_ = 'ws://fake/ws';
const NOW = 1_700_000_000_000;

test('retryAfterMs() reads delay-seconds as milliseconds', () => {
  assert.equal(retryAfterMs('0', NOW), 0);
  assert.equal(retryAfterMs('1', NOW), 1000);
  assert.equal(retryAfterMs(' 120 ', NOW), 120_000);
  assert.equal(retryAfterMs('007', NOW), 7000);
});

test('retryAfterMs() reads an HTTP date as the time left until it, 0 once it has passed', () => {
  const inFive = new Date(NOW + 5000).toUTCString(); // e.g. "Tue, 14 Nov 2023 22:13:25 GMT"
  assert.equal(retryAfterMs(inFive, NOW), 5000);
  assert.equal(retryAfterMs(new Date(NOW - 60_000).toUTCString(), NOW), 0);
});

test('retryAfterMs() gives undefined for a missing or unparsable value', () => {
  for (const value of [undefined, '', '  ', 'soon', '1.5', '-1', '+3', '1e3', '12:00']) {
    assert.equal(retryAfterMs(value, NOW), undefined, JSON.stringify(value));
  }
});

type Listener = (...args: unknown[]) => void;

/**
 * A FakeServer whose sockets also have the `ws` package's `on`; `refuse(c, response)` emits
 * `unexpected-response` with `response` on the dialer's socket, as `ws` does for an HTTP refusal.
 */
function wsShapedServer() {
  const server = new FakeServer();
  const emitters = new WeakMap<object, Map<string, Listener[]>>();
  const Base = server.WebSocket;
  class WsShaped extends Base {
    on(type: string, listener: Listener): this {
      let map = emitters.get(this);
      if (!map) emitters.set(this, map = new Map());
      map.set(type, [...(map.get(type) ?? []), listener]);
      return this;
    }
  }
  const listenersOf = (c: FakeConnection, type: string) => emitters.get(c.client)?.get(type) ?? [];
  const refuse = (c: FakeConnection, response: unknown) => {
    const listeners = listenersOf(c, 'unexpected-response');
    assert.equal(listeners.length, 1, 'the dialer listens for unexpected-response');
    for (const listener of listeners) listener({}, response);
  };
  return { server, WebSocket: WsShaped, refuse, listenersOf };
}

/** Connects, loses the connection, and refuses redials with `responses` in turn. */
async function redialAgainst(responses: unknown[], maxDelayMs?: number) {
  const { server, WebSocket, refuse } = wsShapedServer();
  const acceptor = new TestAcceptor();
  const dialedAt: number[] = [];
  serveFake(server, acceptor, (c, index) => {
    dialedAt.push(Date.now());
    const response = responses[index - 1];
    if (index === 0 || response === undefined) return { kind: 'accept' };
    queueMicrotask(() => refuse(c, response));
    return { kind: 'hang' };
  });
  const reconnecting: ReconnectingInfo[] = [];
  const connection = await connect(URL_, {
    WebSocket: wsDialer(WebSocket),
    heartbeat: false,
    draw: () => 0,
    reconnect: { initialDelayMs: 100, maxDelayMs: maxDelayMs ?? 30_000 },
    onReconnecting: (info) => reconnecting.push(info),
  });
  server.connections[0].client.drop();
  return { server, connection, dialedAt, reconnecting };
}

test('a redial refused with Retry-After seconds waits that long before the next dial', async () => {
  using clock = fakeTime();
  const r = await redialAgainst([{ statusCode: 503, headers: { 'retry-after': '5' } }]);
  await clock.tickAsync(100); // the first redial, refused
  assert.equal(r.dialedAt.length, 2);
  assert.equal(r.server.connections[1].client.readyState, 3, 'the refused socket is closed');
  assert.equal(r.reconnecting.at(-1)?.delayMs, 5000); // not backoffDelay(1) = 200
  await clock.tickAsync(4999);
  assert.equal(r.dialedAt.length, 2);
  await clock.tickAsync(1);
  assert.equal(r.dialedAt.length, 3);
  assert.equal(r.dialedAt[2] - r.dialedAt[1], 5000);
  await r.connection.opened();
  await r.connection.close();
  assert.equal(clock.countTimers(), 0);
});

test('a Retry-After HTTP date is waited for, and a Retry-After past maxDelayMs is capped at it', async () => {
  using clock = fakeTime();
  // the date is 4 s after connect(), on a whole second; the refusal comes 100 ms after the loss
  const at = new Date(Date.now() + 4000).toUTCString();
  const r = await redialAgainst([
    { statusCode: 503, headers: { 'retry-after': at } },
    { statusCode: 429, headers: { 'retry-after': '3600' } },
  ], 10_000);
  await clock.tickAsync(100);
  assert.equal(r.reconnecting.at(-1)?.delayMs, 3900);
  await clock.tickAsync(3900);
  assert.equal(r.dialedAt.length, 3);
  assert.equal(r.reconnecting.at(-1)?.delayMs, 10_000);
  await clock.tickAsync(10_000);
  assert.equal(r.dialedAt.length, 4);
  await r.connection.opened();
  await r.connection.close();
  assert.equal(clock.countTimers(), 0);
});

test('a Retry-After shorter than the backoff delay, or none, leaves the backoff delay', async () => {
  using clock = fakeTime();
  const r = await redialAgainst([
    { statusCode: 503, headers: { 'retry-after': '0' } },
    { statusCode: 503, headers: {} },
  ]);
  await clock.tickAsync(100);
  assert.equal(r.reconnecting.at(-1)?.delayMs, 200);
  await clock.tickAsync(200);
  assert.equal(r.reconnecting.at(-1)?.delayMs, 400);
  await clock.tickAsync(400);
  await r.connection.opened();
  await r.connection.close();
  assert.equal(clock.countTimers(), 0);
});

test('a ws-shaped class given as it is, not through wsDialer(), is not listened to for refusals', async () => {
  const { server, WebSocket, listenersOf } = wsShapedServer();
  const acceptor = new TestAcceptor();
  serveFake(server, acceptor);
  const connection = await connect(URL_, { WebSocket, heartbeat: false, reconnect: false });
  assert.equal(connection.state, 'open');
  assert.deepEqual(listenersOf(server.connections[0], 'unexpected-response'), []);
  await connection.close();
});

test('wsDialer() returns a subclass of the class it is given and refuses anything but a constructor', () => {
  const { WebSocket } = wsShapedServer();
  const Dialer = wsDialer(WebSocket);
  assert.ok(Dialer.prototype instanceof WebSocket);
  const socket = new Dialer(URL_);
  assert.ok(socket instanceof WebSocket);
  socket.close();
  for (const value of [undefined, null, 'ws', {}]) {
    assert.throws(() => wsDialer(value as never), {
      name: 'TypeError',
      message:
        /^Cannot dial with ws as "WebSocket" must be the "ws" package's WebSocket class: current value is /,
    });
  }
});
