// Standing subscriptions of the dialer, on fake time and the in-memory socket pair
// (WSM-SUB-001..003).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  ClosedError,
  connect,
  type ConnectOptions,
  type Stream,
  StreamResetError,
  subscribe,
} from 'muxws';
import { fakeTime } from '../_fake_time.ts';
import { watchUnhandled } from '../_unhandled.ts';
import { FakeServer } from '../_socket_pair.ts';
import { serveFake, TestAcceptor } from '../_test_acceptor.ts';
import { goAway } from '../../lib/session/acceptor_api.ts';

const URL_ = 'ws://fake/ws';

/** An acceptor whose streams stay open, recorded per peer, so the test writes to them. */
function harness() {
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
  const events: string[] = [];
  const options = (extra: ConnectOptions = {}): ConnectOptions => ({
    WebSocket: server.WebSocket,
    heartbeat: false,
    draw: () => 0,
    onOpen: (info) => {
      // what the dialer had sent on this socket when onOpen ran
      const sent = server.connections.at(-1)!.client.sent.map((m) => JSON.parse(m as string));
      events.push(`open:${info.reconnected}:${JSON.stringify(sent.map((f) => f[4]))}`);
    },
    ...extra,
  });
  return { server, acceptor, feeds, events, options };
}

test('WSM-SUB-001 subscriptions are re-opened in registration order before onOpen, each reported by onReopen', async () => {
  using clock = fakeTime();
  const h = harness();
  const connection = await connect(URL_, h.options());
  const got: string[] = [];
  const subA = subscribe(connection, { room: 'a' }, {
    headers: { v: 1 },
    onMessage: (m) => got.push(`a:${m}`),
    onReopen: (info) => h.events.push(`reopen:a:${info.resubscribed}`),
  });
  subscribe(connection, { room: 'b' }, {
    onMessage: (m) => got.push(`b:${m}`),
    onReopen: (info) => h.events.push(`reopen:b:${info.resubscribed}`),
  });
  await clock.tickAsync(0);
  assert.deepEqual(h.feeds[0].map((s) => [s.id, s.payload, s.headers]), [
    [1, { room: 'a' }, { v: 1 }],
    [3, { room: 'b' }, null],
  ]);
  await h.feeds[0][0].write('one');
  await h.feeds[0][1].write('two');
  await clock.tickAsync(0);
  assert.deepEqual(got, ['a:one', 'b:two']);

  h.server.connections[0].client.drop();
  await clock.tickAsync(250);
  assert.equal(connection.state, 'open');
  assert.deepEqual(h.events, [
    'open:false:[]',
    'reopen:a:true',
    'reopen:b:true',
    'open:true:[{"room":"a"},{"room":"b"}]',
  ]);
  assert.deepEqual(h.feeds[1].map((s) => [s.id, s.payload]), [[1, { room: 'a' }], [3, {
    room: 'b',
  }]]);
  await h.feeds[1][1].write('three');
  await h.feeds[1][0].write('four');
  await clock.tickAsync(0);
  assert.deepEqual(got, ['a:one', 'b:two', 'b:three', 'a:four']);
  assert.equal(subA.active, true);
  await connection.close();
  assert.equal(subA.active, false);
  assert.equal(clock.countTimers(), 0);
});

test('WSM-SUB-002 after a re-establishment onMessage receives nothing from the old stream', async () => {
  using clock = fakeTime();
  const h = harness();
  const connection = await connect(URL_, h.options());
  const got: unknown[] = [];
  subscribe(connection, 'feed', { onMessage: (m) => got.push(m) });
  await clock.tickAsync(0);
  const old = h.feeds[0][0];
  // a message in flight when the connection drops is never delivered
  h.server.connections[0].server.pause();
  void old.write('late').catch(() => {});
  h.server.connections[0].client.drop();
  await clock.tickAsync(250);
  await h.feeds[1][0].write('new');
  await clock.tickAsync(0);
  assert.deepEqual(got, ['new']);
  await connection.close();
  assert.equal(clock.countTimers(), 0);
});

test('WSM-SUB-003 dedupe drops keys among the last window, across reconnects', async () => {
  using clock = fakeTime();
  const h = harness();
  const connection = await connect(URL_, h.options());
  const got: string[] = [];
  subscribe(connection, 'feed', {
    onMessage: (m) => got.push((m as { id: string }).id),
    dedupe: { key: (m) => (m as { id: string }).id, window: 2 },
  });
  await clock.tickAsync(0);
  for (const id of ['a', 'b', 'a', 'c', 'a']) await h.feeds[0][0].write({ id });
  await clock.tickAsync(0);
  assert.deepEqual(got, ['a', 'b', 'c', 'a']); // the second 'a' was a duplicate; the third fell out of the window
  h.acceptor.last.close(1011);
  await clock.tickAsync(250);
  for (const id of ['c', 'a', 'd']) await h.feeds[1][0].write({ id });
  await clock.tickAsync(0);
  assert.deepEqual(got, ['a', 'b', 'c', 'a', 'd']); // the window survived the reconnect
  await connection.close();
  assert.equal(clock.countTimers(), 0);
});

test('WSM-SUB-001 unsubscribe() resets the live stream with cancel and the interest is not re-opened', async () => {
  using clock = fakeTime();
  const h = harness();
  const connection = await connect(URL_, h.options());
  const got: unknown[] = [];
  const sub = subscribe(connection, 'feed', {
    onMessage: (m) => got.push(m),
    dedupe: { key: String },
  });
  const controller = new AbortController();
  subscribe(connection, 'other', { onMessage: () => {}, signal: controller.signal });
  await clock.tickAsync(0);
  await h.feeds[0][0].write('x');
  await clock.tickAsync(0);
  sub.unsubscribe();
  sub.unsubscribe();
  controller.abort();
  await clock.tickAsync(0);
  assert.equal(sub.active, false);
  for (const stream of h.feeds[0]) {
    const error = await stream.closed.catch((e) => e);
    assert(error instanceof StreamResetError);
    assert.equal(error.code, 'cancel');
    assert.equal(error.remote, true);
  }
  h.acceptor.last.close(1011);
  await clock.tickAsync(250);
  assert.equal(connection.state, 'open');
  assert.equal(h.feeds[1].length, 0);
  // a fresh subscription starts with an empty window
  subscribe(connection, 'feed', { onMessage: (m) => got.push(m), dedupe: { key: String } });
  await clock.tickAsync(0);
  await h.feeds[1][0].write('x');
  await clock.tickAsync(0);
  assert.deepEqual(got, ['x', 'x']);
  await connection.close();
  assert.equal(clock.countTimers(), 0);
});

test('subscribe() throws TypeError or RangeError at once for bad options (WSM-SUB-001)', async () => {
  using clock = fakeTime();
  const h = harness();
  const connection = await connect(URL_, h.options());
  assert.throws(
    () => subscribe(connection, 'x', {} as unknown as { onMessage: () => void }),
    TypeError,
  );
  assert.throws(
    () => subscribe(connection, 'x', { onMessage: () => {}, onError: 1 as never }),
    {
      name: 'TypeError',
      message: 'Cannot subscribe as "onError" must be a function: current value is 1',
    },
  );
  assert.throws(
    () => subscribe(connection, 'x', { onMessage: () => {}, headers: 'room' as never }),
    {
      name: 'TypeError',
      message:
        'Cannot subscribe as "headers" must be a plain object or null: current value is "room"',
    },
  );
  assert.throws(
    () => subscribe(connection, 'x', { onMessage: () => {}, dedupe: { key: String, window: 0 } }),
    RangeError,
  );
  await clock.tickAsync(0);
  assert.equal(h.feeds[0].length, 0);
  await connection.close();
  assert.equal(clock.countTimers(), 0);
});

test('subscribe() while reconnecting returns a pending subscription opened at the next establishment, without onReopen (WSM-APP-004)', async () => {
  using clock = fakeTime();
  const h = harness();
  const connection = await connect(URL_, h.options());
  h.acceptor.last.close(1011);
  await clock.tickAsync(0);
  assert.equal(connection.state, 'reconnecting');
  const got: unknown[] = [];
  const reopens: unknown[] = [];
  const sub = subscribe(connection, 'x', {
    onMessage: (m) => got.push(m),
    onReopen: (info) => reopens.push(info),
  });
  assert.equal(sub.state, 'pending');
  assert.equal(sub.active, true);
  let ready = false;
  void sub.ready.then(() => ready = true);
  await clock.tickAsync(250);
  assert.equal(connection.state, 'open');
  assert.deepEqual(h.feeds[1].map((s) => s.payload), ['x']);
  assert.deepEqual(h.events.at(-1), 'open:true:["x"]'); // opened before onOpen
  assert.deepEqual(reopens, []); // a first open is no re-open
  assert.equal(sub.state, 'pending');
  assert.equal(ready, false);
  await h.feeds[1][0].write('first');
  await clock.tickAsync(0);
  assert.equal(sub.state, 'active');
  assert.equal(ready, true);
  assert.deepEqual(got, ['first']);
  await connection.close();
  assert.equal(sub.state, 'closed');
  assert.equal(clock.countTimers(), 0);
});

test('subscribe() after close() throws ClosedError (WSM-APP-004)', async () => {
  using clock = fakeTime();
  const h = harness();
  const connection = await connect(URL_, h.options());
  await connection.close();
  assert.throws(() => subscribe(connection, 'x', { onMessage: () => {} }), ClosedError);
  assert.equal(clock.countTimers(), 0);
});

test('a subscription made after a GOAWAY waits for the redial and opens there (WSM-APP-004)', async () => {
  using clock = fakeTime();
  const h = harness();
  const connection = await connect(URL_, h.options());
  goAway(h.acceptor.last.session, 'restart', 'deploy', 0);
  await clock.tickAsync(0);
  const sub = subscribe(connection, 'late', { onMessage: () => {} });
  assert.equal(sub.state, 'pending');
  await clock.tickAsync(250);
  assert.equal(connection.state, 'open');
  assert.equal(h.feeds[0].length, 0);
  assert.deepEqual(h.feeds[1].map((s) => s.payload), ['late']);
  await connection.close();
  assert.equal(clock.countTimers(), 0);
});

for (const code of ['not_found', 'invalid', 'unauthorized', 'forbidden']) {
  test(`a first open reset with ${code} rejects ready, is refused and is never re-opened (WSM-APP-004)`, async () => {
    using clock = fakeTime();
    const h = harness();
    const errors: unknown[] = [];
    const connection = await connect(URL_, h.options({ onError: (e) => errors.push(e) }));
    const onErrors: unknown[] = [];
    const sub = subscribe(connection, 'feed', {
      onMessage: () => {},
      onError: (e) => onErrors.push(e),
    });
    await clock.tickAsync(0);
    h.feeds[0][0].reset(code, 'no such feed');
    const error = await sub.ready.catch((e) => e);
    assert(error instanceof StreamResetError);
    assert.equal(error.code, code);
    assert.equal(error.remote, true);
    assert.equal(sub.state, 'refused');
    assert.equal(sub.active, false);
    assert.deepEqual(onErrors, []); // the refusal went to ready
    assert.deepEqual(errors, []);
    h.acceptor.last.close(1011);
    await clock.tickAsync(250);
    assert.equal(connection.state, 'open');
    assert.equal(h.feeds[1].length, 0);
    await connection.close();
    assert.equal(sub.state, 'refused');
    assert.equal(clock.countTimers(), 0);
  });
}

test('a reset after the first open goes to onError; another code re-opens at the next establishment, a refusal code ends it (WSM-APP-004)', async () => {
  using clock = fakeTime();
  const h = harness();
  const connection = await connect(URL_, h.options());
  const onErrors: StreamResetError[] = [];
  const reopens: unknown[] = [];
  const sub = subscribe(connection, 'feed', {
    onMessage: () => {},
    onError: (e) => onErrors.push(e),
    onReopen: (info) => reopens.push(info),
  });
  await clock.tickAsync(0);
  await h.feeds[0][0].write('hello');
  await clock.tickAsync(0);
  await sub.ready;
  h.feeds[0][0].reset('internal', 'feed crashed');
  await clock.tickAsync(0);
  assert.deepEqual(onErrors.map((e) => [e.code, e.remote]), [['internal', true]]);
  assert.equal(sub.state, 'pending');
  h.acceptor.last.close(1011);
  await clock.tickAsync(250);
  assert.deepEqual(h.feeds[1].map((s) => s.payload), ['feed']);
  assert.deepEqual(reopens, [{ resubscribed: true }]);
  h.feeds[1][0].reset('forbidden', 'banned');
  await clock.tickAsync(0);
  assert.deepEqual(onErrors.map((e) => e.code), ['internal', 'forbidden']);
  assert.equal(sub.state, 'refused');
  h.acceptor.last.close(1011);
  await clock.tickAsync(250);
  assert.equal(h.feeds[2].length, 0);
  await connection.close();
  assert.equal(clock.countTimers(), 0);
});

test('a loss before the first message keeps ready waiting and re-opens the subscription (WSM-APP-004)', async () => {
  using clock = fakeTime();
  const h = harness();
  const connection = await connect(URL_, h.options());
  const onErrors: unknown[] = [];
  const sub = subscribe(connection, 'feed', {
    onMessage: () => {},
    onError: (e) => onErrors.push(e),
  });
  let settled = false;
  void sub.ready.then(() => settled = true, () => settled = true);
  await clock.tickAsync(0);
  h.server.connections[0].client.drop();
  await clock.tickAsync(0);
  assert.equal(sub.state, 'pending');
  assert.equal(settled, false);
  await clock.tickAsync(250);
  await h.feeds[1][0].write('now');
  await clock.tickAsync(0);
  assert.equal(settled, true);
  assert.equal(sub.state, 'active');
  assert.deepEqual(onErrors, []); // a loss is no reset
  await connection.close();
  assert.equal(clock.countTimers(), 0);
});

test('ready rejects with ClosedError when unsubscribe() or close() comes first, and an ignored ready is never unhandled (WSM-APP-004)', async () => {
  using clock = fakeTime();
  const h = harness();
  const connection = await connect(URL_, h.options());
  const a = subscribe(connection, 'a', { onMessage: () => {} });
  const b = subscribe(connection, 'b', { onMessage: () => {} });
  subscribe(connection, 'ignored', { onMessage: () => {} });
  using unhandled = watchUnhandled();
  a.unsubscribe();
  assert.equal(a.state, 'closed');
  await assert.rejects(a.ready, ClosedError);
  await connection.close();
  assert.equal(b.state, 'closed');
  await assert.rejects(b.ready, ClosedError);
  await clock.tickAsync(0);
  await unhandled.settle();
  assert.deepEqual(unhandled.reasons, []);
  assert.equal(clock.countTimers(), 0);
});

test('WSM-DIAL-008 an onMessage that throws is reported to onError and later messages still arrive', async () => {
  using clock = fakeTime();
  const h = harness();
  const errors: unknown[] = [];
  const connection = await connect(URL_, h.options({ onError: (e) => errors.push(e) }));
  const got: unknown[] = [];
  subscribe(connection, 'feed', {
    onMessage: (m) => {
      got.push(m);
      if (m === 1) throw new Error('bad listener');
    },
  });
  await clock.tickAsync(0);
  await h.feeds[0][0].write(1);
  await h.feeds[0][0].write(2);
  await clock.tickAsync(0);
  assert.deepEqual(got, [1, 2]);
  assert.deepEqual(errors.map((e) => (e as Error).message), ['bad listener']);
  await connection.close();
  assert.equal(clock.countTimers(), 0);
});
