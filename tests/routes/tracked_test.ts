// Subscriptions that resume (WSM-API-005): a route's generator yields `tracked(id, value)`, the
// dialer's standing subscription remembers the last id it received and re-opens with it in
// `:last-event-id`, and the handler reads it as `ctx.lastEventId`. On fake time and in-memory
// sockets; the real-socket run is tests/_tracked_real.ts.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  connect,
  type ConnectOptions,
  type RouteContext,
  serve,
  type Stream,
  subscribe,
  tracked,
} from 'muxws';
import { Acceptor } from 'muxws/acceptor';
import { control } from '../../lib/session/stream.ts';
import { fakeTime } from '../_fake_time.ts';
import { FakeServer } from '../_socket_pair.ts';
import { serveFake, TestAcceptor } from '../_test_acceptor.ts';

const URL_ = 'ws://fake/ws';

type Api = { feed: { input: { topic: string }; message: number } };

/**
 * A route that continues after `ctx.lastEventId`: three tracked numbers from the one after it,
 * then it waits until its stream is gone. `opens` records what each open was given.
 */
function feedRoute(opens: Array<string | undefined>) {
  return async function* (_input: { topic: string }, ctx: RouteContext) {
    opens.push(ctx.lastEventId);
    const start = ctx.lastEventId === undefined ? 1 : Number(ctx.lastEventId) + 1;
    for (let n = start; n < start + 3; n++) yield tracked(String(n), n);
    await new Promise((resolve) => ctx.signal.addEventListener('abort', resolve, { once: true }));
  };
}

/** A real Acceptor behind a FakeServer: every dial is accepted. */
function acceptorServer(acceptor: Acceptor<Api>) {
  return new FakeServer({
    onConnection: (c) =>
      queueMicrotask(() => {
        c.accept();
        acceptor.accept(c.server);
      }),
  });
}

test('tracked() refuses an id that is not a string of 1 to 256 characters, naming it (WSM-API-005)', () => {
  assert.deepEqual({ ...tracked('x'.repeat(256), 1) }, { id: 'x'.repeat(256), value: 1 });
  assert.throws(() => tracked('x'.repeat(257), 1), {
    name: 'RangeError',
    message:
      `Cannot track a message as "id" must be a non-empty string of at most 256 characters: current value is "${
        'x'.repeat(60)
      }…" (257 characters)`,
  });
  assert.throws(() => tracked('', 1), {
    name: 'TypeError',
    message:
      'Cannot track a message as "id" must be a non-empty string of at most 256 characters: current value is ""',
  });
  assert.throws(() => tracked(7 as unknown as string, 1), {
    name: 'TypeError',
    message:
      'Cannot track a message as "id" must be a non-empty string of at most 256 characters: current value is 7',
  });
});

test("a tracked generator route sends each tracked value with its id in the DATA's :id header, and a plain value without, a look-alike too (WSM-API-005)", async () => {
  const seen: Array<string | undefined> = [];
  const acceptor = new Acceptor<{ feed: { message: unknown } }>({
    idleTimeoutMs: 0,
    routes: {
      feed: async function* (_input, ctx) {
        seen.push(ctx.lastEventId);
        yield tracked('7', { n: 7 });
        yield 'plain';
        // Only tracked() marks a value: a registered symbol of the same name does not.
        yield { id: '8', value: 8, [Symbol.for('muxws.tracked')]: true };
      },
    },
  });
  const sent: unknown[] = [];
  const handle = acceptor.attach({
    send: (data) => sent.push(JSON.parse(String(data))),
    close() {},
  });
  handle.message(JSON.stringify([1, 1, 1, { ':route': 'feed' }, null]));
  handle.message(JSON.stringify([1, 3, 1, { ':route': 'feed', ':last-event-id': '6' }, null]));
  for (let i = 0; i < 10; i++) await Promise.resolve();
  await new Promise((resolve) => setTimeout(resolve, 0));
  assert.deepEqual(seen, [undefined, '6']);
  assert.deepEqual(sent.filter((f) => (f as unknown[])[1] === 1), [
    [2, 1, 0, { n: 7 }, { ':id': '7' }],
    [2, 1, 0, 'plain'],
    [2, 1, 0, { id: '8', value: 8 }],
    [3, 1],
  ]);
  await acceptor.close();
});

test('a route refuses an OPEN whose :last-event-id is not a string of 1 to 256 characters with invalid (WSM-API-005)', async () => {
  let called = 0;
  const acceptor = new Acceptor<Api>({
    idleTimeoutMs: 0,
    onError: () => {},
    routes: {
      feed: () => {
        called++;
      },
    },
  });
  const sent: unknown[] = [];
  const handle = acceptor.attach({
    send: (data) => sent.push(JSON.parse(String(data))),
    close() {},
  });
  handle.message(
    JSON.stringify([1, 1, 1, { ':route': 'feed', ':last-event-id': 'x'.repeat(257) }, null]),
  );
  handle.message(JSON.stringify([1, 3, 1, { ':route': 'feed', ':last-event-id': 5 }, null]));
  await new Promise((resolve) => setTimeout(resolve, 0));
  assert.equal(called, 0);
  assert.deepEqual(sent, [
    [
      4,
      1,
      'invalid',
      `Cannot serve the route as ":last-event-id" must be a non-empty string of at most 256 characters: current value is "${
        'x'.repeat(60)
      }…" (257 characters)`,
    ],
    [
      4,
      3,
      'invalid',
      'Cannot serve the route as ":last-event-id" must be a non-empty string of at most 256 characters: current value is 5',
    ],
  ]);
  await acceptor.close();
});

test("a routed subscription re-opened after a reconnect sends the last id it received, and the route's generator continues after it (WSM-API-005)", async () => {
  using clock = fakeTime();
  const opens: Array<string | undefined> = [];
  const acceptor = new Acceptor<Api>({ idleTimeoutMs: 0, routes: { feed: feedRoute(opens) } });
  const server = acceptorServer(acceptor);
  const connection = await connect<Api>(URL_, {
    WebSocket: server.WebSocket,
    heartbeat: false,
    draw: () => 0,
  });
  const got: number[] = [];
  const feed = subscribe(connection, 'feed', { topic: 'a' }, { onMessage: (n) => got.push(n) });
  await clock.tickAsync(0);
  assert.deepEqual(got, [1, 2, 3]);
  assert.deepEqual(opens, [undefined]);

  server.connections[0].client.drop();
  await clock.tickAsync(250);
  assert.equal(connection.state, 'open');
  assert.deepEqual(opens, [undefined, '3']);
  assert.deepEqual(got, [1, 2, 3, 4, 5, 6]);
  assert.equal(feed.state, 'active');

  // and again from the new position
  server.connections[1].client.drop();
  await clock.tickAsync(250);
  assert.deepEqual(opens, [undefined, '3', '6']);
  assert.deepEqual(got, [1, 2, 3, 4, 5, 6, 7, 8, 9]);
  await connection.close();
  await acceptor.close();
  assert.equal(clock.countTimers(), 0);
});

/** The dialer's subscription against a TestAcceptor whose streams the test writes to. */
async function subscribedTo(clock: ReturnType<typeof fakeTime>) {
  const server = new FakeServer();
  const feeds: Stream[][] = [];
  const acceptor = new TestAcceptor({
    onPeer: () => feeds.push([]),
    onStream: (stream) => {
      feeds.at(-1)!.push(stream);
      return stream.closed.catch(() => {});
    },
  });
  serveFake(server, acceptor);
  const options: ConnectOptions = { WebSocket: server.WebSocket, heartbeat: false, draw: () => 0 };
  const connection = await connect(URL_, options);
  const got: unknown[] = [];
  subscribe(connection, { topic: 'a' }, { onMessage: (m) => got.push(m) });
  await clock.tickAsync(0);
  const redial = async () => {
    server.connections.at(-1)!.client.drop();
    await clock.tickAsync(250);
    return feeds.at(-1)![0];
  };
  return { connection, got, first: feeds[0][0], redial };
}

test('a first open sends no :last-event-id, and untracked messages do not move the last id (WSM-API-005)', async () => {
  using clock = fakeTime();
  const s = await subscribedTo(clock);
  assert.deepEqual(s.first.headers, null);
  let reopened = await s.redial();
  assert.deepEqual(reopened.headers, null, 'nothing tracked yet: no position to send');

  await control.write(reopened, 'a', { ':id': 'a1' });
  await reopened.write('b');
  await clock.tickAsync(0);
  assert.deepEqual(s.got, ['a', 'b'], 'onMessage receives the plain values');
  reopened = await s.redial();
  assert.deepEqual(reopened.headers, { ':last-event-id': 'a1' });
  await s.connection.close();
  assert.equal(clock.countTimers(), 0);
});

test('the dialer ignores an :id that is not a string of 1 to 256 characters: it moves no position (WSM-API-005)', async () => {
  using clock = fakeTime();
  const s = await subscribedTo(clock);
  await control.write(s.first, 'a', { ':id': 'ok' });
  await control.write(s.first, 'b', { ':id': 'x'.repeat(257) });
  await control.write(s.first, 'c', { ':id': 9 });
  await control.write(s.first, 'd', { ':id': '' });
  await clock.tickAsync(0);
  assert.deepEqual(s.got, ['a', 'b', 'c', 'd']);
  const reopened = await s.redial();
  assert.deepEqual(reopened.headers, { ':last-event-id': 'ok' });
  await s.connection.close();
  assert.equal(clock.countTimers(), 0);
});

test("a routed stream() of a tracked route reads the bare messages, and so does the acceptor's peer.stream() of a dialer's tracked route (WSM-API-005)", async () => {
  type Both = Api & { 'client.log': { message: string } };
  const opens: Array<string | undefined> = [];
  const acceptor = new Acceptor<Both>({ idleTimeoutMs: 0, routes: { feed: feedRoute(opens) } });
  const server = new FakeServer({
    onConnection: (c) =>
      queueMicrotask(() => {
        c.accept();
        acceptor.accept(c.server);
      }),
  });
  const connection = await connect<Both>(URL_, {
    WebSocket: server.WebSocket,
    reconnect: false,
    heartbeat: false,
    routes: serve<Both>({
      'client.log': async function* (_input, ctx) {
        yield tracked('1', `first ${ctx.lastEventId}`);
        yield 'second';
      },
    }),
  });
  try {
    const stream = connection.stream('feed', { topic: 'a' }, { end: true });
    const read: number[] = [];
    for await (const n of stream) {
      read.push(n);
      if (read.length === 3) break;
    }
    assert.deepEqual(read, [1, 2, 3]);
    const [peer] = acceptor.peers();
    const lines: string[] = [];
    for await (const line of peer.stream('client.log', undefined, { end: true })) lines.push(line);
    assert.deepEqual(lines, ['first undefined', 'second']);
  } finally {
    await connection.close();
    await acceptor.close();
  }
});
