// When the dialer counts its hello as acknowledged: at the acceptor's END of stream 1, with the
// last message before it as the welcome, on fake time and the in-memory socket pair
// (WSM-DIAL-004).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  connect,
  ConnectError,
  type Connection,
  HelloRejectedError,
  type OpenInfo,
  ProtocolError,
  type Stream,
  StreamError,
  TimeoutError,
} from 'muxws';
import { fakeTime } from '../_fake_time.ts';
import { FakeServer } from '../_socket_pair.ts';
import { serveFake, TestAcceptor } from '../_test_acceptor.ts';

const URL_ = 'ws://fake/ws';
const never = () => new Promise<never>(() => {});

/** A gate the acceptor's hello handler waits on between its messages. */
function gate(): { opened: Promise<void>; open: () => void } {
  let open!: () => void;
  const opened = new Promise<void>((resolve) => open = resolve);
  return { opened, open };
}

/** Dials a FakeServer whose hello handler is `hello`; records settlement and onOpen. */
function dial(hello: (stream: Stream) => unknown, timeoutMs = 5000) {
  const server = new FakeServer();
  const acceptor = new TestAcceptor({ hello });
  serveFake(server, acceptor);
  const opens: OpenInfo[] = [];
  let settled: { connection?: Connection; error?: unknown } | undefined;
  const pending = connect(URL_, {
    WebSocket: server.WebSocket,
    heartbeat: false,
    hello: { payload: 'hi', timeoutMs },
    onOpen: (info) => opens.push(info),
  }).then(
    (connection) => settled = { connection },
    (error) => settled = { error },
  );
  return { server, acceptor, opens, pending, settled: () => settled };
}

test('connect() waits past a first DATA of the hello and takes the last message before END as welcome (WSM-DIAL-004)', async () => {
  using clock = fakeTime();
  const g = gate();
  const d = dial(async (stream) => {
    await stream.write('first');
    await g.opened;
    return 'last';
  });
  await clock.tickAsync(1000);
  assert.equal(d.settled(), undefined, 'established at the first DATA');
  assert.equal(d.opens.length, 0);
  g.open();
  await d.pending;
  const connection = d.settled()?.connection;
  assert(connection !== undefined);
  assert.equal(connection.state, 'open');
  assert.equal(connection.welcome, 'last');
  assert.deepEqual(d.opens.map((o) => o.welcome), ['last']);
  await connection.close();
  assert.equal(clock.countTimers(), 0);
});

test('a DATA of the hello followed later by a bare END makes that DATA the welcome (WSM-DIAL-004)', async () => {
  using clock = fakeTime();
  const g = gate();
  const d = dial(async (stream) => {
    await stream.write('first');
    await g.opened;
  });
  await clock.tickAsync(1000);
  assert.equal(d.settled(), undefined);
  g.open();
  await d.pending;
  const connection = d.settled()?.connection;
  assert(connection !== undefined);
  assert.equal(connection.welcome, 'first');
  await connection.close();
  assert.equal(clock.countTimers(), 0);
});

test('a hello answered by a bare END alone is acknowledged with welcome undefined (WSM-DIAL-004)', async () => {
  using clock = fakeTime();
  const d = dial(() => undefined);
  await d.pending;
  const connection = d.settled()?.connection;
  assert(connection !== undefined);
  assert.equal(connection.state, 'open');
  assert.equal(connection.welcome, undefined);
  assert.deepEqual(d.opens.map((o) => o.welcome), [undefined]);
  await connection.close();
  assert.equal(clock.countTimers(), 0);
});

test('a hello answered by a DATA and then a RESET rejects connect() with HelloRejectedError (WSM-DIAL-004)', async () => {
  using clock = fakeTime();
  const g = gate();
  const d = dial(async (stream) => {
    await stream.write('first');
    await g.opened;
    throw new StreamError('forbidden', 'not this one');
  });
  await clock.tickAsync(1000);
  assert.equal(d.settled(), undefined);
  g.open();
  await d.pending;
  const error = d.settled()?.error;
  assert(error instanceof ConnectError);
  assert(error.cause instanceof HelloRejectedError);
  assert.equal(error.cause.code, 'forbidden');
  assert.match(error.cause.message, /not this one/);
  assert.equal(d.opens.length, 0);
  await clock.tickAsync(120_000);
  assert.equal(d.server.connections.length, 1);
  assert.equal(clock.countTimers(), 0);
});

test('a hello answered by a DATA and then silence fails at Hello.timeoutMs with 4008 (WSM-DIAL-004)', async () => {
  using clock = fakeTime();
  const started = Date.now();
  const d = dial(async (stream) => {
    await stream.write('first');
    return never();
  }, 3000);
  await clock.tickAsync(2999);
  assert.equal(d.settled(), undefined);
  await clock.tickAsync(1);
  await d.pending;
  const error = d.settled()?.error;
  assert(error instanceof ConnectError);
  assert(error.cause instanceof TimeoutError);
  assert.equal(Date.now() - started, 3000);
  await clock.tickAsync(0);
  assert.equal(d.server.connections[0].client.closeInfo?.code, 4008);
  assert.equal(d.opens.length, 0);
  assert.equal(clock.countTimers(), 0);
});

test('malformed frames from the acceptor during the hello fail the attempt at once with 4002, not at Hello.timeoutMs (WSM-APP-007)', async () => {
  using clock = fakeTime();
  const d = dial((stream) => {
    // the acceptor answers the hello with a message that is no frame
    queueMicrotask(() => d.server.connections[0].server.send('{"not":"a frame"}'));
    void stream;
    return never();
  });
  await clock.tickAsync(0);
  const atOnce = d.settled();
  await clock.tickAsync(5000); // a failure at Hello.timeoutMs would come here
  await d.pending;
  const error = atOnce?.error;
  assert(error instanceof ConnectError, 'the attempt did not fail at once');
  assert(error.cause instanceof ProtocolError);
  assert.equal(d.server.connections[0].client.closeInfo?.code, 4002);
  assert.equal(d.server.connections[0].client.closeInfo?.reason, 'protocol error during the hello');
  assert.equal(d.opens.length, 0);
  assert.equal(clock.countTimers(), 0);
});

test('a session the acceptor closes with 4002 before the hello END fails the attempt at once (WSM-APP-007)', async () => {
  using clock = fakeTime();
  const d = dial((stream) => {
    queueMicrotask(() => d.acceptor.last.close(4002, 'malformed'));
    void stream;
    return never();
  });
  await clock.tickAsync(0);
  const atOnce = d.settled();
  await clock.tickAsync(5000);
  await d.pending;
  const error = atOnce?.error;
  assert(error instanceof ConnectError, 'the attempt did not fail at once');
  assert.match(String((error.cause as Error).message), /closed with code 4002/);
  assert.equal(clock.countTimers(), 0);
});

test('connect() rejects a hello its codec cannot encode with a TypeError naming the part and the codec, before any dial (WSM-APP-007)', async () => {
  using clock = fakeTime();
  const server = new FakeServer();
  serveFake(server, new TestAcceptor());
  const payload = connect(URL_, {
    WebSocket: server.WebSocket,
    hello: { payload: { n: 1n } },
  });
  await assert.rejects(payload, (error: unknown) => {
    assert(error instanceof TypeError);
    assert.match(
      error.message,
      /^Cannot encode the payload of the hello with codec "json": ./,
    );
    return true;
  });
  const headers = connect(URL_, {
    WebSocket: server.WebSocket,
    hello: { payload: 'ok', headers: { big: 2n } },
  });
  await assert.rejects(headers, {
    name: 'TypeError',
    message: /^Cannot encode the headers of the hello with codec "json": /,
  });
  assert.equal(server.connections.length, 0);
  assert.equal(clock.countTimers(), 0);
});

test('a hello function whose result the codec cannot encode fails that attempt with the same TypeError, before its dial (WSM-APP-007)', async () => {
  using clock = fakeTime();
  const server = new FakeServer();
  serveFake(server, new TestAcceptor());
  const error = await connect(URL_, {
    WebSocket: server.WebSocket,
    hello: () => ({ payload: { n: 1n } }),
  }).catch((e) => e);
  assert(error instanceof ConnectError);
  assert(error.cause instanceof TypeError);
  assert.match(
    error.cause.message,
    /^Cannot encode the payload of the hello with codec "json": ./,
  );
  assert.equal(server.connections.length, 0);
  assert.equal(clock.countTimers(), 0);
});
