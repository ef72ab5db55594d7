// Peers not yet accepted (WSM-LIM-003) and the order around the hello (WSM-API-004), on the
// acceptor over raw frames fed through attach(), and with the project's connect() over in-memory
// sockets: broadcasts skip a peer whose required hello has not arrived or was refused, wait while
// its onHello runs and follow the welcome in order; a refused hello closes the peer after its
// RESET, and the dialer's redial with fresh credentials still succeeds.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Acceptor } from 'muxws/acceptor';
import { connect, StreamError } from 'muxws';
import { MAX_WAITING_FRAMES } from '../../lib/acceptor/_admission.ts';
import { raw, served } from '../_raw_peer.ts';
import { fakeTime } from '../_fake_time.ts';

/** Lets queued microtasks (handler continuations) run. */
async function settle(rounds = 20): Promise<void> {
  for (let i = 0; i < rounds; i++) await Promise.resolve();
}

/** The PUBLISH frames in `sent`, as [tag, payload]. */
function published(sent: unknown[][]): unknown[][] {
  return sent.filter((frame) => frame[0] === 9).map((frame) => [frame[1], frame[3]]);
}

/** A promise and its resolver. */
function deferred<T = void>(): { promise: Promise<T>; resolve: (value: T) => void } {
  let resolve!: (value: T) => void;
  const promise = new Promise<T>((r) => resolve = r);
  return { promise, resolve };
}

/**
 * An acceptor whose onHello tags the peer `room` and waits for `lookup` before it returns
 * `welcome`, and a raw peer whose hello is in that wait.
 */
async function helloInLookup(welcome?: string) {
  const lookup = deferred();
  const acceptor = new Acceptor({
    idleTimeoutMs: 0,
    onHello: async (_hello, peer) => {
      peer.tags.add('room');
      await lookup.promise;
      return welcome;
    },
  });
  const joining = raw(acceptor);
  joining.send([1, 1, 3, null, 'hi']);
  await settle();
  return { lookup, acceptor, joining };
}

test('broadcast and broadcastAll reach no peer whose required hello has not arrived (WSM-LIM-003)', async () => {
  const acceptor = new Acceptor({ idleTimeoutMs: 0, onHello: () => 'welcome' });
  try {
    const pending = raw(acceptor, ['room']);
    const accepted = raw(acceptor, ['room']);
    accepted.send([1, 1, 3, null, 'hi']);
    await settle();
    assert.equal(await acceptor.broadcast('room', 'to the room'), 1);
    assert.equal(await acceptor.broadcastAll('to everyone'), 1);
    assert.deepEqual(published(pending.sent), []);
    assert.deepEqual(published(accepted.sent), [['room', 'to the room'], ['*', 'to everyone']]);
    assert.deepEqual(acceptor.stats.dropped, 0, 'a peer not accepted is skipped, not dropped');

    // Once accepted, it is reached like any other, and was sent nothing of what it missed.
    pending.send([1, 1, 3, null, 'late']);
    await settle();
    assert.equal(await acceptor.broadcastAll('now'), 2);
    assert.deepEqual(pending.sent, [[2, 1, 1, 'welcome'], [9, '*', null, 'now']]);
  } finally {
    await acceptor.close({ drainMs: 0 });
  }
});

test('a refused hello is answered by its RESET, then the peer is closed with 1000 and sent nothing more (WSM-LIM-003)', async () => {
  using clock = fakeTime();
  const closes: unknown[] = [];
  const acceptor = new Acceptor({
    idleTimeoutMs: 60_000,
    onHello: (hello) => {
      if (hello.payload !== 'good') throw new StreamError('unauthorized', 'Bad token');
      return 'welcome';
    },
    onPeerClose: (_peer, info) => closes.push(info),
  });
  const refused = raw(acceptor, ['room']);
  refused.send([1, 1, 3, null, 'bad']);
  await settle();
  assert.deepEqual(refused.sent, [[4, 1, 'unauthorized', 'Bad token']]);
  assert.deepEqual(refused.closes, [[1000, 'hello rejected']]);
  assert.equal(refused.handle.peer.isClosed, true);
  assert.deepEqual(closes, [{ code: 1000, reason: 'hello rejected' }]);
  assert.equal(await acceptor.broadcastAll('anyone?'), 0);
  assert.deepEqual(published(refused.sent), []);

  // A rejected hello whose onHello awaits first, while PINGs arrive: closed all the same.
  const slow = new Acceptor({
    idleTimeoutMs: 60_000,
    onHello: async () => {
      await new Promise((resolve) => setTimeout(resolve, 50));
      throw new StreamError('forbidden', 'No');
    },
  });
  const pinging = raw(slow, ['room']);
  pinging.send([1, 1, 3, null, 'x']);
  pinging.send([6]);
  assert.equal(await slow.broadcast('room', 'during'), 1, 'it waits for the acknowledgement');
  await clock.tickAsync(50);
  await settle();
  assert.deepEqual(pinging.sent, [[7], [4, 1, 'forbidden', 'No']]);
  assert.deepEqual(pinging.closes, [[1000, 'hello rejected']]);
  assert.deepEqual([slow.stats.delivered, slow.stats.dropped], [0, 1], 'it was never sent');
  await acceptor.close({ drainMs: 0 });
  await slow.close({ drainMs: 0 });
  assert.equal(clock.countTimers(), 0);
});

test('broadcasts to a peer whose onHello still runs wait and follow the welcome, in order (WSM-API-004)', async () => {
  const { lookup, acceptor, joining } = await helloInLookup('welcome');
  try {
    assert.equal(await acceptor.broadcast('room', 1), 1);
    assert.equal(await acceptor.broadcastAll(2), 1);
    assert.equal(await acceptor.broadcast('room', 3), 1);
    assert.deepEqual(joining.sent, [], 'nothing before the acknowledgement');
    lookup.resolve();
    await settle();
    assert.deepEqual(joining.sent, [
      [2, 1, 1, 'welcome'],
      [9, 'room', null, 1],
      [9, '*', null, 2],
      [9, 'room', null, 3],
    ]);
  } finally {
    await acceptor.close({ drainMs: 0 });
  }
});

test('a refused hello drops what waited for it: its broadcasts count as dropped, its peer.emit frames count nowhere (WSM-LIM-003)', async () => {
  const lookup = deferred();
  const acceptor = new Acceptor({
    idleTimeoutMs: 0,
    onHello: async (_hello, peer) => {
      peer.tags.add('room');
      assert.equal(peer.emit('note', 'to this peer'), true, 'it waits for the acknowledgement');
      await lookup.promise;
      throw new StreamError('forbidden', 'No');
    },
  });
  try {
    const joining = raw(acceptor);
    joining.send([1, 1, 3, null, 'hi']);
    await settle();
    assert.equal(await acceptor.broadcast('room', 'during'), 1);
    assert.deepEqual([acceptor.stats.delivered, acceptor.stats.dropped], [1, 0]);
    lookup.resolve();
    await settle();
    assert.deepEqual(joining.sent, [[4, 1, 'forbidden', 'No']]);
    assert.deepEqual([acceptor.stats.delivered, acceptor.stats.dropped], [0, 1]);
  } finally {
    await acceptor.close({ drainMs: 0 });
  }
});

test('peer.emit waits for the required hello, goes out at once when requireHello is false, and returns false once the hello is refused (WSM-API-004)', async () => {
  // With onHello set, a hello is required unless requireHello says false.
  const required = new Acceptor({
    idleTimeoutMs: 0,
    onHello: (hello) => {
      if (hello.payload !== 'good') throw new StreamError('unauthorized', 'Bad token');
      return 'welcome';
    },
  });
  const optional = new Acceptor({
    idleTimeoutMs: 0,
    requireHello: false,
    onHello: () => 'welcome',
  });
  try {
    const waiting = raw(required);
    assert.equal(waiting.handle.peer.emit('note', 1), true);
    assert.deepEqual(waiting.sent, [], 'it waits for the required hello');
    waiting.send([1, 1, 3, null, 'good']);
    await settle();
    assert.deepEqual(waiting.sent, [[2, 1, 1, 'welcome'], [9, '*', { ':event': 'note' }, 1]]);

    const refused = raw(required);
    assert.equal(refused.handle.peer.emit('note', 1), true);
    refused.send([1, 1, 3, null, 'bad']);
    await settle();
    assert.equal(refused.handle.peer.emit('note', 2), false, 'a refused peer is sent nothing');
    assert.deepEqual(refused.sent, [[4, 1, 'unauthorized', 'Bad token']]);
    assert.deepEqual([required.stats.delivered, required.stats.dropped], [0, 0]);

    const early = raw(optional);
    assert.equal(early.handle.peer.emit('note', 1), true);
    await settle();
    assert.deepEqual(early.sent, [[9, '*', { ':event': 'note' }, 1]], 'no hello is awaited');
  } finally {
    await required.close({ drainMs: 0 });
    await optional.close({ drainMs: 0 });
  }
});

test(`at most ${MAX_WAITING_FRAMES} peer.emit frames wait for a required hello; later ones return false (WSM-API-004)`, async () => {
  const acceptor = new Acceptor({ idleTimeoutMs: 0, requireHello: true, onHello: () => 'hi' });
  try {
    const joining = raw(acceptor);
    for (let i = 0; i < MAX_WAITING_FRAMES; i++) {
      assert.equal(joining.handle.peer.emit('n', i), true);
    }
    assert.equal(joining.handle.peer.emit('n', MAX_WAITING_FRAMES), false);
    joining.send([1, 1, 3, null, 'x']);
    await settle();
    assert.equal(published(joining.sent).length, MAX_WAITING_FRAMES);
    assert.deepEqual([acceptor.stats.delivered, acceptor.stats.dropped], [0, 0]);
  } finally {
    await acceptor.close({ drainMs: 0 });
  }
});

test(`at most ${MAX_WAITING_FRAMES} broadcasts wait for an acknowledgement; later ones are dropped and counted (WSM-API-004)`, async () => {
  const { lookup, acceptor, joining } = await helloInLookup();
  try {
    for (let i = 0; i < MAX_WAITING_FRAMES + 10; i++) await acceptor.broadcast('room', i);
    assert.equal(acceptor.stats.dropped, 10);
    lookup.resolve();
    await settle();
    const got = published(joining.sent);
    assert.equal(got.length, MAX_WAITING_FRAMES);
    assert.deepEqual(got.at(-1), ['room', MAX_WAITING_FRAMES - 1]);
  } finally {
    await acceptor.close({ drainMs: 0 });
  }
});

test("a dialer's redial whose hello is refused is closed by the acceptor, and the next with fresh credentials succeeds (WSM-LIM-003, WSM-DIAL-004)", async () => {
  using clock = fakeTime();
  const tokens = ['first', 'expired', 'fresh'];
  let asked = 0;
  const peerCloses: unknown[] = [];
  const { acceptor, server, WebSocket } = served({
    onHello: (hello) => {
      if (hello.payload === 'expired') throw new StreamError('unauthorized', 'Token expired');
      return `hi ${hello.payload}`;
    },
    onPeerClose: (_peer, info) => peerCloses.push(info),
  });
  const events: string[] = [];
  const connection = await connect('ws://test/ws', {
    WebSocket,
    heartbeat: false,
    draw: () => 0,
    hello: () => ({ payload: tokens[asked++] }),
    onOpen: (info) => events.push(`open ${info.welcome}`),
    onReconnecting: (info) => events.push(`reconnecting ${(info.error as Error)?.name}`),
  });
  try {
    server.connections[0].client.drop();
    await clock.tickAsync(60_000);
    assert.equal(connection.state, 'open');
    assert.deepEqual(events, [
      'open hi first',
      'reconnecting Error',
      'reconnecting HelloRejectedError',
      'open hi fresh',
    ]);
    assert.deepEqual(peerCloses[1], { code: 1000, reason: 'hello rejected' });
    assert.equal(server.connections[1].client.readyState, 3, 'the refused socket is closed');
  } finally {
    await connection.close();
    await acceptor.close({ drainMs: 0 });
  }
});
