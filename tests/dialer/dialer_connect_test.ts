// The dialer's first connection, hello, options and callbacks, on fake time and the in-memory
// socket pair (WSM-DIAL-001..004, 006, 008, 012, WSM-WIRE-001, 009).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  type Codec,
  connect,
  ConnectError,
  type Connection,
  type DialContext,
  Hello,
  HelloRejectedError,
  ProtocolError,
  StreamError,
  StreamResetError,
  subscribe,
  TimeoutError,
} from 'muxws';
import { encodePublish } from '../../lib/wire/publish.ts';
import { fakeTime } from '../_fake_time.ts';
import { watchUnhandled } from '../_unhandled.ts';
import { CLOSED, CONNECTING, FakeServer, OPEN } from '../_socket_pair.ts';
import { serveFake, TestAcceptor } from '../_test_acceptor.ts';
import { sendEncoded } from '../../lib/session/acceptor_api.ts';

const URL_ = 'ws://fake/ws';
const never = () => new Promise<never>(() => {});

test("WSM-DIAL-001 connect() offers the muxws subprotocol first, then the target's extra protocols, and answers requests", async () => {
  using clock = fakeTime();
  const server = new FakeServer();
  const acceptor = new TestAcceptor();
  serveFake(server, acceptor);
  const connection = await connect(() => ({ url: URL_, protocols: ['token.abc'] }), {
    WebSocket: server.WebSocket,
  });
  assert.equal(connection.state, 'open');
  assert.deepEqual(server.connections[0].protocols, ['muxws.v1.json', 'token.abc']);
  assert.equal(server.connections[0].url, URL_);
  assert.deepEqual(await connection.request({ n: 1 }), { n: 1 });
  await connection.close();
  assert.equal(connection.state, 'closed');
  assert.equal(clock.countTimers(), 0);
});

test('connect() takes a DialTarget object, its url a string or a URL, and offers its protocols (WSM-DIAL-001)', async () => {
  using clock = fakeTime();
  for (const url of [URL_, new URL(URL_)]) {
    const server = new FakeServer();
    const acceptor = new TestAcceptor();
    serveFake(server, acceptor);
    const protocols = ['token.abc'];
    const connection = await connect({ url, protocols }, {
      WebSocket: server.WebSocket,
      heartbeat: false,
      draw: () => 0,
    });
    protocols.push('added.later'); // captured at connect(), as every option is
    assert.equal(connection.state, 'open');
    assert.equal(server.connections[0].url, URL_);
    assert.deepEqual(server.connections[0].protocols, ['muxws.v1.json', 'token.abc']);
    acceptor.last.close(1011);
    await clock.tickAsync(250);
    await connection.opened();
    assert.deepEqual(server.connections[1].protocols, ['muxws.v1.json', 'token.abc']);
    await connection.close();
  }
  const server = new FakeServer();
  const withoutProtocols = await connect({ url: URL_ }, { WebSocket: server.WebSocket });
  assert.deepEqual(server.connections[0].protocols, ['muxws.v1.json']);
  await withoutProtocols.close();
  await assert.rejects(
    connect({ url: URL_, protocols: 'token.abc' } as never, { WebSocket: server.WebSocket }),
    {
      name: 'TypeError',
      message:
        'Cannot connect as "protocols" must be an array of strings: current value is "token.abc"',
    },
  );
  await assert.rejects(connect({ href: URL_ } as never, { WebSocket: server.WebSocket }), {
    name: 'TypeError',
    message:
      'Cannot connect as "target" must be a string, a URL, a DialTarget or a function: current value is {"href":"ws://fake/ws"}',
  });
  assert.equal(server.connections.length, 1);
  assert.equal(clock.countTimers(), 0);
});

test('a DialTarget object names its URL in the ConnectError of a failed first connection (WSM-DIAL-003)', async () => {
  using clock = fakeTime();
  const server = new FakeServer();
  server.onConnection = (c) => queueMicrotask(() => c.refuse());
  const error = await connect({ url: new URL(URL_), protocols: ['token.abc'] }, {
    WebSocket: server.WebSocket,
  }).catch((e) => e);
  assert(error instanceof ConnectError);
  assert.match(error.message, /^Cannot connect to ws:\/\/fake\/ws: /);
  assert.equal(clock.countTimers(), 0);
});

test('WSM-DIAL-003 a target function that throws rejects connect() with ConnectError and nothing is dialled', async () => {
  using clock = fakeTime();
  const server = new FakeServer();
  const cause = new Error('no credentials');
  let calls = 0;
  const error = await connect(() => {
    calls++;
    throw cause;
  }, { WebSocket: server.WebSocket }).catch((e) => e);
  assert(error instanceof ConnectError);
  assert.equal(error.cause, cause);
  await clock.tickAsync(120_000);
  assert.equal(calls, 1);
  assert.equal(server.connections.length, 0);
  assert.equal(clock.countTimers(), 0);
});

test('WSM-DIAL-003 a socket error on the first attempt rejects with ConnectError and is not redialled', async () => {
  using clock = fakeTime();
  const server = new FakeServer();
  server.onConnection = (c) => queueMicrotask(() => c.refuse());
  const error = await connect(URL_, { WebSocket: server.WebSocket }).catch((e) => e);
  assert(error instanceof ConnectError);
  assert.match((error.cause as Error).message, /failed before it opened/);
  await clock.tickAsync(120_000);
  assert.equal(server.connections.length, 1);
  assert.equal(server.connections[0].client.listenerCount(), 0);
  assert.equal(clock.countTimers(), 0);
});

test('WSM-WIRE-001 a wrong or missing subprotocol closes with 4002 and rejects with ProtocolError', async () => {
  using clock = fakeTime();
  for (const selected of ['token.abc', '']) {
    const server = new FakeServer();
    const acceptor = new TestAcceptor();
    serveFake(server, acceptor, () => ({ kind: 'accept', protocol: selected }));
    const error = await connect(() => ({ url: URL_, protocols: ['token.abc'] }), {
      WebSocket: server.WebSocket,
    }).catch((e) => e);
    assert(error instanceof ConnectError);
    assert(error.cause instanceof ProtocolError, `selected ${JSON.stringify(selected)}`);
    assert.match(error.cause.message, /muxws\.v1\.json/);
    await clock.tickAsync(0);
    assert.equal(server.connections[0].client.closeInfo?.code, 4002);
    assert.equal(server.connections.length, 1);
  }
  assert.equal(clock.countTimers(), 0);
});

test('WSM-DIAL-004 a hello reset rejects connect() with HelloRejectedError carrying the code and message', async () => {
  using clock = fakeTime();
  const server = new FakeServer();
  const acceptor = new TestAcceptor({
    hello: () => {
      throw new StreamError('unauthorized', 'token expired');
    },
  });
  serveFake(server, acceptor);
  const error = await connect(URL_, {
    WebSocket: server.WebSocket,
    hello: { payload: { token: 'old' } },
  }).catch((e) => e);
  assert(error instanceof ConnectError);
  assert(error.cause instanceof HelloRejectedError);
  assert.equal(error.cause.code, 'unauthorized');
  assert.match(error.cause.message, /token expired/);
  await clock.tickAsync(120_000);
  assert.equal(server.connections.length, 1);
  assert.equal(clock.countTimers(), 0);
});

/** Awaits a `connect()` that failed, and checks that a `TimeoutError` matching `message` failed it. */
async function assertTimedOut(pending: Promise<unknown>, message: RegExp): Promise<void> {
  const error = await pending;
  assert(error instanceof ConnectError);
  assert(error.cause instanceof TimeoutError);
  assert.match(error.cause.message, message);
}

test('WSM-DIAL-004 a hello not acknowledged within Hello.timeoutMs closes with 4008 and rejects with TimeoutError, whatever handshakeTimeoutMs', async () => {
  using clock = fakeTime();
  const server = new FakeServer();
  const acceptor = new TestAcceptor({ hello: never });
  serveFake(server, acceptor);
  // the default handshakeTimeoutMs (15 s), one shorter than the hello's timeout, one longer
  const cases: [number | undefined, number][] = [[undefined, 3000], [1000, 3000], [5000, 2000]];
  for (const [handshakeTimeoutMs, timeoutMs] of cases) {
    const started = Date.now();
    let settledAt = 0;
    const pending = connect(URL_, {
      WebSocket: server.WebSocket,
      handshakeTimeoutMs,
      hello: new Hello({ payload: 'hi', timeoutMs }),
    }).catch((e) => {
      settledAt = Date.now();
      return e;
    });
    await clock.tickAsync(timeoutMs - 1);
    assert.equal(settledAt, 0, `not before ${timeoutMs} ms`);
    await clock.tickAsync(1);
    await assertTimedOut(pending, new RegExp(`hello was not acknowledged within ${timeoutMs} ms`));
    assert.equal(settledAt - started, timeoutMs);
    await clock.tickAsync(0);
    assert.equal(server.connections.at(-1)!.client.closeInfo?.code, 4008);
    assert.equal(acceptor.last.ended?.code, 4008);
    assert.equal(clock.countTimers(), 0);
  }
});

test('WSM-DIAL-002 handshakeTimeoutMs is one deadline over target resolution and opening, and aborts the attempt signal', async () => {
  using clock = fakeTime();
  const server = new FakeServer();
  server.onConnection = () => {}; // the socket never opens
  let ctx: DialContext | undefined;
  const started = Date.now();
  const pending = connect(async (c) => {
    ctx = c;
    await new Promise((resolve) => setTimeout(resolve, 600)); // slow credentials
    return URL_;
  }, { WebSocket: server.WebSocket, handshakeTimeoutMs: 1000 }).catch((e) => e);
  await clock.tickAsync(999);
  assert.equal(server.connections.length, 1);
  assert.equal(ctx?.signal.aborted, false);
  await clock.tickAsync(1);
  const error = await pending;
  assert(error instanceof ConnectError);
  assert(error.cause instanceof TimeoutError);
  assert.equal(Date.now() - started, 1000);
  assert.equal(ctx?.signal.aborted, true);
  assert.equal(server.connections[0].client.readyState, CLOSED);
  assert.equal(server.connections[0].client.listenerCount(), 0);
  await clock.tickAsync(120_000);
  assert.equal(server.connections.length, 1);
  assert.equal(clock.countTimers(), 0);
});

test('WSM-DIAL-002 a fixed target is dialled during the connect() call, and its handshake deadline still fails the attempt, even past the hello timeout', async () => {
  using clock = fakeTime();
  // the hello's timeout counts from the open, so a handshake longer than it still runs its course
  for (const [handshakeTimeoutMs, helloTimeoutMs] of [[1000, 10_000], [15_000, 10_000]]) {
    const server = new FakeServer();
    server.onConnection = () => {}; // the socket never opens
    const started = Date.now();
    const pending = connect(URL_, {
      WebSocket: server.WebSocket,
      handshakeTimeoutMs,
      hello: { payload: 'hi', timeoutMs: helloTimeoutMs },
    }).catch((e) => e);
    // No DialContext to make, nothing to await: the socket exists before connect() returns.
    assert.equal(server.connections.length, 1);
    await clock.tickAsync(handshakeTimeoutMs - 1);
    assert.equal(server.connections[0].client.readyState, CONNECTING);
    await clock.tickAsync(1);
    await assertTimedOut(
      pending,
      new RegExp(`handshake did not finish within ${handshakeTimeoutMs} ms`),
    );
    assert.equal(Date.now() - started, handshakeTimeoutMs);
    assert.equal(server.connections[0].client.readyState, CLOSED);
    assert.equal(server.connections[0].client.listenerCount(), 0);
    await clock.tickAsync(120_000);
    assert.equal(server.connections.length, 1);
    assert.equal(clock.countTimers(), 0);
  }
});

test('WSM-DIAL-012 connect() rejects bad options with TypeError or RangeError before dialling', async () => {
  const server = new FakeServer();
  const WebSocket = server.WebSocket;
  await assert.rejects(connect(42 as unknown as string, { WebSocket }), TypeError);
  await assert.rejects(connect(URL_, { WebSocket, handshakeTimeoutMs: 0 }), {
    name: 'RangeError',
    message: /"handshakeTimeoutMs" must be a finite number greater than 0: current value is 0/,
  });
  await assert.rejects(connect(URL_, { WebSocket, serviceRestartDelayMs: -1 }), RangeError);
  await assert.rejects(connect(URL_, { WebSocket, heartbeat: { intervalMs: NaN } }), RangeError);
  await assert.rejects(
    connect(URL_, { WebSocket, draw: 1 as unknown as () => number }),
    TypeError,
  );
  await assert.rejects(
    connect(URL_, { WebSocket, closeCodes: { terminal: ['x'] as unknown as number[] } }),
    TypeError,
  );
  await assert.rejects(connect(URL_, { WebSocket, reconnect: { factor: 0.5 } }), Error);
  assert.equal(server.connections.length, 0);
});

test('WSM-WIRE-009 close() throws RangeError for codes a browser cannot send and long reasons, before anything is sent', async () => {
  using clock = fakeTime();
  const server = new FakeServer();
  serveFake(server, new TestAcceptor());
  const connection = await connect(URL_, { WebSocket: server.WebSocket });
  for (const code of [999, 1001, 1012, 2999, 5000, 3000.5]) {
    assert.throws(() => connection.close(code), RangeError, `code ${code}`);
  }
  assert.throws(() => connection.close(1000, 'é'.repeat(62)), RangeError);
  assert.equal(connection.state, 'open');
  assert.equal(server.connections[0].client.readyState, OPEN);
  await connection.close(4321, 'x'.repeat(123));
  await clock.tickAsync(0);
  assert.deepEqual(server.connections[0].server.closeInfo?.code, 4321);
  assert.equal(clock.countTimers(), 0);
});

test('WSM-DIAL-004 the hello is captured by value and re-sent as a fresh copy, and welcome is replaced on each establishment', async () => {
  using clock = fakeTime();
  const server = new FakeServer();
  let n = 0;
  const acceptor = new TestAcceptor({ hello: (stream) => ({ welcome: ++n, got: stream.payload }) });
  serveFake(server, acceptor);
  const identity = { client: 'docs', rooms: ['general'] };
  const connection = await connect(URL_, {
    WebSocket: server.WebSocket,
    hello: { payload: identity, headers: { v: 1 } },
    draw: () => 0,
  });
  identity.rooms.push('secret');
  assert.deepEqual(connection.welcome, { welcome: 1, got: { client: 'docs', rooms: ['general'] } });
  assert.deepEqual(acceptor.peers[0].hello, {
    payload: { client: 'docs', rooms: ['general'] },
    headers: { v: 1 },
  });
  assert.equal(acceptor.peers[0].streams[0].id, 1);
  acceptor.last.close(1011);
  await clock.tickAsync(250);
  await connection.opened();
  assert.deepEqual(acceptor.peers[1].hello?.payload, { client: 'docs', rooms: ['general'] });
  assert.deepEqual(connection.welcome, { welcome: 2, got: { client: 'docs', rooms: ['general'] } });
  await connection.close();
  assert.equal(clock.countTimers(), 0);
});

test('WSM-DIAL-004 a hello function is called per attempt with the DialContext and its result is sent', async () => {
  using clock = fakeTime();
  const server = new FakeServer();
  const acceptor = new TestAcceptor({ hello: () => 'ok' });
  serveFake(server, acceptor);
  const seen: Array<{ attempt: number; reason: string }> = [];
  const connection = await connect(URL_, {
    WebSocket: server.WebSocket,
    draw: () => 0,
    hello: (ctx) => {
      seen.push({ attempt: ctx.attempt, reason: ctx.reason });
      return { payload: { n: seen.length } };
    },
  });
  acceptor.last.close(1011);
  await clock.tickAsync(250);
  await connection.opened();
  assert.deepEqual(seen, [{ attempt: 0, reason: 'initial' }, { attempt: 0, reason: 'reconnect' }]);
  assert.deepEqual(acceptor.peers.map((p) => p.hello?.payload), [{ n: 1 }, { n: 2 }]);
  await connection.close();
  assert.equal(clock.countTimers(), 0);
});

test('WSM-DIAL-001 DialContext carries attempt, reason, disconnectedAt, replayLookbackMs and lastError', async () => {
  using clock = fakeTime();
  const server = new FakeServer();
  const acceptor = new TestAcceptor();
  serveFake(server, acceptor, (_c, index) => index === 1 ? { kind: 'refuse' } : { kind: 'accept' });
  const contexts: DialContext[] = [];
  const connection = await connect((ctx) => {
    contexts.push(ctx);
    return URL_;
  }, {
    WebSocket: server.WebSocket,
    draw: () => 0,
    reconnect: { initialDelayMs: 1000 },
  });
  const initial = contexts[0];
  assert.equal(initial.attempt, 0);
  assert.equal(initial.reason, 'initial');
  assert.equal(initial.resumedFromServiceRestart, false);
  assert.equal(initial.disconnectedAt, undefined);
  assert.equal(initial.replayLookbackMs, 0);
  assert.equal(initial.lastError, undefined);
  await clock.tickAsync(10_000);
  const lostAt = Date.now();
  server.connections[0].client.drop();
  await clock.tickAsync(1000); // first redial: refused
  await clock.tickAsync(2000); // second redial: accepted
  await connection.opened();
  const [, first, second] = contexts;
  assert.equal(first.reason, 'reconnect');
  assert.equal(first.attempt, 0);
  assert.equal(first.disconnectedAt, lostAt);
  assert.equal(first.replayLookbackMs, 1000 + 5000);
  assert.match((first.lastError as Error).message, /code 1006/);
  assert.equal(second.attempt, 1);
  assert.equal(second.disconnectedAt, lostAt);
  assert.equal(second.replayLookbackMs, 3000 + 5000);
  assert.match((second.lastError as Error).message, /failed before it opened/);
  assert.equal(first.signal.aborted, false);
  await connection.close();
  assert.equal(clock.countTimers(), 0);
});

test('WSM-DIAL-008 onStream receives acceptor-opened streams with the connection; without it they are refused', async () => {
  using clock = fakeTime();
  const server = new FakeServer();
  const acceptor = new TestAcceptor();
  serveFake(server, acceptor);
  // Annotated: `assert.equal` narrows, so the callback's type would depend on `connection`'s.
  const connection: Connection = await connect(URL_, {
    WebSocket: server.WebSocket,
    onStream: (stream, conn) => {
      assert.equal(conn, connection);
      return { echoed: stream.payload };
    },
  });
  assert.deepEqual(await acceptor.last.session.request('ping'), { echoed: 'ping' });
  await connection.close();

  const bare = await connect(URL_, { WebSocket: server.WebSocket });
  const error = await acceptor.last.session.request('ping').catch((e) => e);
  assert(error instanceof StreamResetError);
  assert.equal(error.code, 'refused');
  await bare.close();
  assert.equal(clock.countTimers(), 0);
});

test('WSM-DIAL-008 a callback that throws is reported to onError and changes nothing else', async () => {
  using clock = fakeTime();
  const server = new FakeServer();
  const acceptor = new TestAcceptor();
  serveFake(server, acceptor);
  const errors: unknown[] = [];
  const published: unknown[] = [];
  const boom = new Error('callback bug');
  const connection = await connect(URL_, {
    WebSocket: server.WebSocket,
    onOpen: () => {
      throw boom;
    },
    onPublish: (message) => {
      published.push(message.payload);
      throw boom;
    },
    onError: (error) => errors.push(error),
  });
  assert.equal(connection.state, 'open');
  assert.deepEqual(errors, [boom]);
  const { jsonCodec } = await import('../../lib/wire/codec.ts');
  sendEncoded(acceptor.last.session, encodePublish(jsonCodec, 'room', { text: 'hi' }, null));
  await clock.tickAsync(0);
  assert.deepEqual(published, [{ text: 'hi' }]);
  assert.deepEqual(errors, [boom, boom]);
  assert.deepEqual(await connection.request(7), 7);
  assert.equal(connection.state, 'open');
  await connection.close();
  assert.equal(clock.countTimers(), 0);
});

test('WSM-DIAL-008 an onError that throws falls back to console.error', async () => {
  using clock = fakeTime();
  const server = new FakeServer();
  serveFake(server, new TestAcceptor());
  const logged: unknown[] = [];
  const original = console.error;
  console.error = (value: unknown) => logged.push(value);
  try {
    const connection = await connect(URL_, {
      WebSocket: server.WebSocket,
      onOpen: () => {
        throw new Error('first');
      },
      onError: () => {
        throw new Error('second');
      },
    });
    assert.equal(connection.state, 'open');
    assert.deepEqual(logged.map((e) => (e as Error).message), ['second']);
    await connection.close();
  } finally {
    console.error = original;
  }
  assert.equal(clock.countTimers(), 0);
});

test('an onError that returns a rejected promise has that error go to console.error, never unhandled (WSM-DIAL-008)', async () => {
  using unhandled = watchUnhandled();
  const server = new FakeServer();
  serveFake(server, new TestAcceptor());
  const logged: unknown[] = [];
  const original = console.error;
  console.error = (value: unknown) => logged.push(value);
  try {
    const connection = await connect(URL_, {
      WebSocket: server.WebSocket,
      onOpen: () => {
        throw new Error('first');
      },
      onError: () => Promise.reject(new Error('second')),
    });
    await unhandled.settle();
    assert.deepEqual(unhandled.reasons, []);
    assert.deepEqual(logged.map((e) => (e as Error).message), ['second']);
    await connection.close();
  } finally {
    console.error = original;
  }
});

test('open() throws, request() rejects and subscribe() throws with ClosedError once closed (WSM-DIAL-006, WSM-APP-006)', async () => {
  using clock = fakeTime();
  const server = new FakeServer();
  serveFake(server, new TestAcceptor());
  const connection = await connect(URL_, { WebSocket: server.WebSocket });
  await connection.close();
  assert.throws(() => connection.open('x'), {
    name: 'ClosedError',
    message: 'Cannot open a stream: the connection is closed',
  });
  await assert.rejects(connection.request('x'), {
    name: 'ClosedError',
    message: 'Cannot send a request: the connection is closed',
  });
  assert.throws(() => subscribe(connection, 'x', { onMessage: () => {} }), { name: 'ClosedError' });
  await assert.rejects(connection.opened(), { name: 'ClosedError' });
  assert.equal(clock.countTimers(), 0);
});

/** A binary codec over JSON bytes, to exercise binary messages. */
const bytesCodec: Codec = {
  name: 'jsonbytes',
  binary: true,
  encode: (frame) => new TextEncoder().encode(JSON.stringify(frame)),
  decode: (data) => JSON.parse(typeof data === 'string' ? data : new TextDecoder().decode(data)),
};

test('WSM-DIAL-002 a binary codec sets binaryType arraybuffer and still decodes Blobs in order', async () => {
  using clock = fakeTime();
  const server = new FakeServer();
  const acceptor = new TestAcceptor({
    codec: bytesCodec,
    onStream: async (stream) => {
      for (let i = 0; i < 5; i++) await stream.write(i);
      return 'done';
    },
  });
  serveFake(server, acceptor);
  // A runtime that ignores binaryType: this socket always delivers Blobs.
  const Base = server.WebSocket;
  const binaryTypes: string[] = [];
  class BlobSocket extends Base {
    constructor(url: string | URL, protocols?: string | string[]) {
      super(url, protocols);
      Object.defineProperty(this, 'binaryType', {
        get: () => 'blob',
        set: (value: string) => binaryTypes.push(value),
      });
    }
  }
  const connection = await connect(URL_, { WebSocket: BlobSocket, codec: bytesCodec });
  assert.deepEqual(binaryTypes, ['arraybuffer']);
  assert.deepEqual(server.connections[0].protocols, ['muxws.v1.jsonbytes']);
  const stream = connection.open('go', { end: true });
  const got: unknown[] = [];
  for await (const message of stream) got.push(message);
  assert.deepEqual(got, [0, 1, 2, 3, 4, 'done']);
  await connection.close();
  assert.equal(clock.countTimers(), 0);
});

test('WSM-DIAL-001 replayLookbackMs is the outage plus 5000, rounded up and capped at 4294967295', async () => {
  using clock = fakeTime();
  const server = new FakeServer();
  serveFake(server, new TestAcceptor());
  const contexts: DialContext[] = [];
  const connection = await connect((ctx) => {
    contexts.push(ctx);
    return URL_;
  }, { WebSocket: server.WebSocket, draw: () => 0, heartbeat: false });
  server.connections[0].client.drop();
  await clock.tickAsync(0);
  clock.setSystemTime(Date.now() + 2 ** 33); // the device slept for months
  await clock.tickAsync(250);
  await connection.opened();
  assert.equal(contexts[1].replayLookbackMs, 4294967295);
  assert.equal(contexts[1].disconnectedAt, 1_700_000_000_000);
  await connection.close();
  assert.equal(clock.countTimers(), 0);
});
