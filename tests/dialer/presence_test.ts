// The dialer's presence follower (WSM-PRS-002): the follow it sends on every connection, the
// snapshot and diffs it takes before anything else reads a PUBLISH, the callbacks in their order,
// refusals, stop() and bad frames. A hand-driven in-memory acceptor on fake time.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  ClosedError,
  connect,
  type Connection,
  type ConnectOptions,
  on,
  presence,
  type PresenceFollowOptions,
  ProtocolError,
  recovery,
  StreamResetError,
} from 'muxws';
import { FakeServer, type FakeSocket } from '../_socket_pair.ts';
import { type FakeClock, fakeTime } from '../_fake_time.ts';

/** A follow (or unfollow) OPEN as the stand-in acceptor received it. */
interface Follow {
  socket: FakeSocket;
  id: number;
  flags: number;
  tag: unknown;
  follow: unknown;
}

/**
 * An in-memory acceptor that acknowledges the hello and records every other OPEN; `answer` may
 * reply to each (the default sends nothing).
 */
function stage(answer?: (follow: Follow) => void): { server: FakeServer; follows: Follow[] } {
  const follows: Follow[] = [];
  const server = new FakeServer({
    onConnection: (c) =>
      queueMicrotask(() => {
        c.accept();
        c.server.addEventListener('message', (event) => {
          const frame = JSON.parse(String((event as MessageEvent).data));
          if (frame[0] !== 1) return;
          if (frame[1] === 1) return c.server.send(JSON.stringify([2, 1, 1, null]));
          const follow = {
            socket: c.server,
            id: frame[1],
            flags: frame[2],
            tag: frame[3]?.[':presence'],
            follow: frame[4],
          };
          follows.push(follow);
          answer?.(follow);
        });
      }),
  });
  return { server, follows };
}

function send(socket: FakeSocket, frame: unknown[]): void {
  socket.send(JSON.stringify(frame));
}

/** The acceptor's answer to a follow: the snapshot, then END. */
function synced(follow: Follow, snapshot: unknown): void {
  send(follow.socket, [9, follow.tag, { ':presence': 'sync' }, snapshot]);
  send(follow.socket, [3, follow.id]);
}

function diff(socket: FakeSocket, tag: string, leaves: unknown, joins: unknown): void {
  send(socket, [9, tag, { ':presence': 'diff' }, { leaves, joins }]);
}

type Meta = { tab: number };
type Api = { ':presence': Meta };

/** Options recording every callback into `events`, as one line each. */
function recording(events: string[]): PresenceFollowOptions<Meta> {
  const tabs = (metas: readonly Meta[]) => metas.map((meta) => meta.tab).join(',');
  return {
    onSync: (state) =>
      events.push(
        `sync ${Object.entries(state).map(([key, metas]) => `${key}:${tabs(metas)}`).join(' ')}`,
      ),
    onJoin: (key, joined, current) => events.push(`join ${key} ${tabs(joined)} [${tabs(current)}]`),
    onLeave: (key, left, current) => events.push(`leave ${key} ${tabs(left)} [${tabs(current)}]`),
    onRefused: (error) => events.push(`refused ${error.code}`),
  };
}

async function dial(
  server: FakeServer,
  options: ConnectOptions<Api> = {},
): Promise<Connection<Api>> {
  return await connect<Api>('ws://test/ws', {
    WebSocket: server.WebSocket as never,
    heartbeat: false,
    hello: { payload: 'hi' },
    ...options,
  });
}

async function settle(clock: FakeClock): Promise<void> {
  await clock.tickAsync(0);
}

test('presence() follows with one OPEN, then takes a sync and diffs in order, leaves first, before recovery, on() and onPublish see them (WSM-PRS-002)', async () => {
  using clock = fakeTime();
  const { server, follows } = stage((follow) =>
    synced(follow, { ada: { a1: { tab: 1 } }, bob: { b1: { tab: 1 } } })
  );
  const published: unknown[] = [];
  const connection = await dial(server, {
    recovery: recovery(),
    onPublish: ({ payload }) => published.push(payload),
  });
  const heard: unknown[] = [];
  on(connection as never as Connection, 'sync', (payload) => heard.push(payload));
  const events: string[] = [];
  const room = presence(connection, 'room:1', recording(events));
  assert.equal(room.tag, 'room:1');
  assert.equal(room.synced, false);
  assert.deepEqual(room.state, {});
  await settle(clock);
  assert.deepEqual(follows.map(({ tag, follow, flags }) => [tag, follow, flags]), [
    ['room:1', true, 1],
  ]);
  await room.ready;
  assert.deepEqual(events, ['sync ada:1 bob:1']);
  assert.equal(room.synced, true);
  assert.deepEqual(room.state, { ada: [{ tab: 1 }], bob: [{ tab: 1 }] });
  assert.ok(Object.isFrozen(room.state) && Object.isFrozen(room.state.ada));

  events.length = 0;
  const socket = follows[0].socket;
  diff(socket, 'room:1', { ada: ['a1'], bob: ['b1'] }, {
    cy: { c1: { tab: 2 } },
    ada: { a2: { tab: 3 } },
  });
  diff(socket, 'room:1', { cy: ['c1'] }, { cy: { c1: { tab: 5 } } });
  send(socket, [9, 'room:1', null, 'a plain broadcast']);
  await settle(clock);
  assert.deepEqual(events, [
    'leave ada 1 [3]',
    'leave bob 1 []',
    'join cy 2 [2]',
    'join ada 3 [3]',
    'leave cy 2 [5]',
    'join cy 5 [5]',
  ]);
  assert.deepEqual(room.state, { ada: [{ tab: 3 }], cy: [{ tab: 5 }] });
  assert.deepEqual(published, ['a plain broadcast']);
  assert.deepEqual(heard, []);
  await connection.close();
  assert.equal(room.synced, false);
  assert.equal(clock.countTimers(), 0);
});

test('a reconnect brings a fresh sync and no duplicate join: only what changed leaves and joins, then onSync (WSM-PRS-002)', async () => {
  using clock = fakeTime();
  const snapshots = [
    { ada: { a1: { tab: 1 } }, bob: { b1: { tab: 1 } } },
    { ada: { a1: { tab: 1 }, a2: { tab: 2 } }, cy: { c1: { tab: 1 } } },
  ];
  const { server, follows } = stage((follow) => synced(follow, snapshots[follows.length - 1]));
  const connection = await dial(server);
  const events: string[] = [];
  const room = presence(connection, 'room:1', recording(events));
  await room.ready;
  assert.deepEqual(events, ['sync ada:1 bob:1']);

  events.length = 0;
  follows[0].socket.close(1012, 'service restart');
  await clock.tickAsync(0);
  assert.equal(connection.state, 'reconnecting');
  assert.equal(room.synced, false);
  assert.deepEqual(room.state, { ada: [{ tab: 1 }], bob: [{ tab: 1 }] });
  const lateEvents: string[] = [];
  const late = presence(connection, 'room:1', recording(lateEvents));
  await clock.tickAsync(0);
  assert.deepEqual(lateEvents, [], 'a follower added while redialling waits for the snapshot');
  await clock.tickAsync(60_000);
  assert.equal(connection.state, 'open');
  assert.equal(follows.length, 2);
  assert.deepEqual([follows[1].tag, follows[1].follow], ['room:1', true]);
  assert.deepEqual(events, [
    'leave bob 1 []',
    'join ada 2 [1,2]',
    'join cy 1 [1]',
    'sync ada:1,2 cy:1',
  ]);
  assert.equal(room.synced, true);
  assert.deepEqual(room.state, { ada: [{ tab: 1 }, { tab: 2 }], cy: [{ tab: 1 }] });
  await late.ready;
  assert.deepEqual(lateEvents, ['sync ada:1,2 cy:1']);
  assert.equal(follows.length, 2, 'the followers of one tag share one follow');
  await connection.close();
  assert.equal(clock.countTimers(), 0);
});

test('a refused follow calls onRefused, rejects ready and is not followed again (WSM-PRS-002)', async () => {
  using clock = fakeTime();
  const { server, follows } = stage((follow) =>
    send(follow.socket, [
      4,
      follow.id,
      'refused',
      'Cannot follow the presence of "room:1": the peer does not hold the tag',
    ])
  );
  const connection = await dial(server);
  const events: string[] = [];
  const room = presence(connection, 'room:1', recording(events));
  await assert.rejects(room.ready, (error) => {
    assert.ok(error instanceof StreamResetError);
    assert.equal(error.code, 'refused');
    assert.equal(error.remote, true);
    return true;
  });
  assert.deepEqual(events, ['refused refused']);
  assert.equal(room.synced, false);
  assert.deepEqual(room.state, {});
  follows[0].socket.close(1012, 'service restart');
  await clock.tickAsync(60_000);
  assert.equal(connection.state, 'open');
  assert.equal(follows.length, 1);
  room.stop();
  await connection.close();
});

test('a follow reset for another reason than a refusal is reported and followed again on the next connection (WSM-PRS-002)', async () => {
  using clock = fakeTime();
  let failing = true;
  const { server, follows } = stage((follow) => {
    if (failing) send(follow.socket, [4, follow.id, 'internal', 'the presence store failed']);
    else synced(follow, { ada: { a1: { tab: 1 } } });
  });
  const errors: unknown[] = [];
  const connection = await dial(server, { onError: (error) => errors.push(error) });
  const events: string[] = [];
  const room = presence(connection, 'room:1', recording(events));
  await settle(clock);
  assert.deepEqual(events, [], 'no refusal');
  assert.ok(errors.some((error) => error instanceof StreamResetError && error.code === 'internal'));
  failing = false;
  follows[0].socket.close(1012, 'service restart');
  await clock.tickAsync(60_000);
  await room.ready;
  assert.deepEqual(events, ['sync ada:1']);
  assert.equal(follows.length, 2);
  room.stop();
  await connection.close();
});

test('stop() sends the unfollow once the last follower of the tag stops, and no callback runs after (WSM-PRS-002)', async () => {
  using clock = fakeTime();
  const { server, follows } = stage((follow) => {
    if (follow.follow === true) synced(follow, { ada: { a1: { tab: 1 } } });
    else send(follow.socket, [3, follow.id]);
  });
  const published: unknown[] = [];
  const connection = await dial(server, { onPublish: ({ payload }) => published.push(payload) });
  const events: string[] = [];
  const first = presence(connection, 'room:1', recording(events));
  await first.ready;
  const later: string[] = [];
  const second = presence(connection, 'room:1', recording(later));
  await second.ready;
  assert.deepEqual(later, ['sync ada:1'], 'a second follower starts from the state held');
  assert.equal(follows.length, 1, 'the followers of one tag share one follow');

  first.stop();
  first.stop();
  await settle(clock);
  assert.equal(follows.length, 1);
  assert.deepEqual(first.state, {});
  assert.equal(first.synced, false);
  diff(follows[0].socket, 'room:1', {}, { bob: { b1: { tab: 2 } } });
  await settle(clock);
  assert.deepEqual(events, ['sync ada:1']);
  assert.deepEqual(later, ['sync ada:1', 'join bob 2 [2]']);

  const aborter = new AbortController();
  const third = presence(connection, 'room:1', { ...recording(events), signal: aborter.signal });
  second.stop();
  aborter.abort();
  await settle(clock);
  await assert.rejects(third.ready, ClosedError);
  assert.deepEqual(follows.map(({ tag, follow, flags }) => [tag, follow, flags]), [
    ['room:1', true, 1],
    ['room:1', false, 1],
  ]);
  diff(follows[0].socket, 'room:1', { ada: ['a1'] }, {});
  send(follows[0].socket, [9, 'room:1', { ':presence': 'sync' }, {}]);
  await settle(clock);
  assert.deepEqual(events, ['sync ada:1']);
  assert.deepEqual(later, ['sync ada:1', 'join bob 2 [2]']);
  assert.deepEqual(published, [], 'presence frames never reach onPublish');
  await connection.close();
  assert.equal(clock.countTimers(), 0);
});

test('a malformed presence frame is reported and dropped, and the next good one applies (WSM-PRS-002)', async () => {
  using clock = fakeTime();
  const { server, follows } = stage((follow) =>
    synced(follow, { ada: { a1: { tab: 1 } }, bob: {} })
  );
  const errors: unknown[] = [];
  const published: unknown[] = [];
  const connection = await dial(server, {
    onError: (error) => errors.push(error),
    onPublish: ({ payload }) => published.push(payload),
  });
  const events: string[] = [];
  const room = presence(connection, 'room:1', recording(events));
  await room.ready;
  const socket = follows[0].socket;
  send(socket, [9, 'room:1', { ':presence': 'diff' }, { leaves: { ada: 'a1' }, joins: {} }]);
  send(socket, [9, 'room:1', { ':presence': 'sync' }, { ada: ['a1'] }]);
  send(socket, [9, 'room:1', { ':presence': 'gone' }, null]);
  await settle(clock);
  assert.equal(errors.length, 3);
  for (const error of errors) {
    assert.ok(error instanceof ProtocolError);
    assert.match(error.message, /^Dropped a presence frame of "room:1"/);
  }
  assert.match((errors[2] as Error).message, /found "gone" with null/);
  assert.deepEqual(events, ['sync ada:1']);
  assert.deepEqual(room.state, { ada: [{ tab: 1 }] });
  diff(socket, 'room:1', { ada: ['a1'] }, {});
  await settle(clock);
  assert.deepEqual(events, ['sync ada:1', 'leave ada 1 []']);
  assert.deepEqual(published, []);
  await connection.close();
});

test('an "end" stops the follow until the next connection, which follows again and reconciles (WSM-PRS-002)', async () => {
  using clock = fakeTime();
  const { server, follows } = stage((follow) =>
    synced(follow, follows.length === 1 ? { ada: { a1: { tab: 1 } } } : { bob: { b1: { tab: 1 } } })
  );
  const connection = await dial(server);
  const events: string[] = [];
  const room = presence(connection, 'room:1', recording(events));
  await room.ready;
  const socket = follows[0].socket;
  send(socket, [9, 'room:1', { ':presence': 'end' }, null]);
  diff(socket, 'room:1', {}, { cy: { c1: { tab: 1 } } });
  await settle(clock);
  assert.equal(room.synced, false);
  assert.deepEqual(room.state, { ada: [{ tab: 1 }] });
  assert.deepEqual(events, ['sync ada:1']);
  socket.close(1012, 'service restart');
  await clock.tickAsync(60_000);
  assert.equal(follows.length, 2);
  assert.deepEqual(events, ['sync ada:1', 'leave ada 1 []', 'join bob 1 [1]', 'sync bob:1']);
  assert.equal(room.synced, true);
  await connection.close();
});

test('a follower stopped by the close for good rejects ready, and one made on a closed connection throws', async () => {
  using clock = fakeTime();
  const { server } = stage();
  const connection = await dial(server);
  const room = presence(connection, 'room:1', {});
  await connection.close();
  await assert.rejects(room.ready, {
    name: 'ClosedError',
    message: 'The presence follower stopped before its first snapshot: the connection closed',
  });
  assert.throws(() => presence(connection, 'room:1', {}), {
    name: 'ClosedError',
    message: 'Cannot follow presence: the connection is closed',
  });
  assert.equal(clock.countTimers(), 0);
});

test('what a callback throws goes to onError and the other callbacks still run', async () => {
  using clock = fakeTime();
  const { server, follows } = stage((follow) => synced(follow, { ada: { a1: { tab: 1 } } }));
  const errors: unknown[] = [];
  const connection = await dial(server, { onError: (error) => errors.push(error) });
  const events: string[] = [];
  const room = presence(connection, 'room:1', {
    ...recording(events),
    onSync: () => {
      throw new Error('sync failed');
    },
    onLeave: () => Promise.reject(new Error('leave failed')),
  });
  await room.ready;
  diff(follows[0].socket, 'room:1', { ada: ['a1'] }, { bob: { b1: { tab: 2 } } });
  await settle(clock);
  assert.deepEqual(events, ['join bob 2 [2]']);
  assert.deepEqual(errors.map((error) => (error as Error).message), [
    'sync failed',
    'leave failed',
  ]);
  await connection.close();
});

test('presence() refuses bad arguments, naming what it found', async () => {
  using _clock = fakeTime();
  const { server } = stage();
  const connection = await dial(server);
  assert.throws(() => presence({} as never, 'room:1', {}), {
    name: 'TypeError',
    message: /^Cannot follow presence as "connection" must be a Connection from connect\(\)/,
  });
  assert.throws(() => presence(connection, '', {}), {
    name: 'TypeError',
    message:
      'Cannot follow presence as "tag" must be a string of 1 to 256 characters: current value is ""',
  });
  assert.throws(() => presence(connection, 'room:1', null as never), {
    name: 'TypeError',
    message: 'Cannot follow presence as "options" must be an object: current value is null',
  });
  assert.throws(() => presence(connection, 'room:1', { onJoin: 1 as never }), {
    name: 'TypeError',
    message: 'Cannot follow presence as "onJoin" must be a function: current value is 1',
  });
  const reason = new Error('gave up');
  assert.throws(
    () => presence(connection, 'room:1', { signal: AbortSignal.abort(reason) }),
    reason,
  );
  await connection.close();
});
