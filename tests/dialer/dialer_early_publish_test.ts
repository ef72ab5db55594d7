// The dialer's side of the order around the hello (WSM-API-004): a PUBLISH that arrives before
// the connection is established (right behind the hello's END, or from an acceptor that sends one
// early) reaches onPublish only after onOpen and after connect() resolved, in order; one that
// arrived on an attempt whose hello was refused never does. The acceptor is a hand-driven
// in-memory socket, on fake time.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { connect } from 'muxws';
import { FakeServer, type FakeSocket } from '../_socket_pair.ts';
import { fakeTime } from '../_fake_time.ts';

/** A server that answers a hello OPEN by sending `frames` at once, all in one go. */
function answering(frames: unknown[][]): FakeServer {
  return new FakeServer({
    onConnection: (c) =>
      queueMicrotask(() => {
        c.accept();
        const server: FakeSocket = c.server;
        server.addEventListener('message', (event) => {
          const frame = JSON.parse(String((event as MessageEvent).data));
          if (frame[0] !== 1 || frame[1] !== 1) return;
          for (const out of frames) server.send(JSON.stringify(out));
        });
      }),
  });
}

/** The options every dial here shares: `server`'s sockets, no redial, no heartbeat, a hello. */
function once(server: FakeServer) {
  return {
    WebSocket: server.WebSocket,
    reconnect: false as const,
    heartbeat: false as const,
    hello: { payload: 'hi' },
  };
}

test('a PUBLISH right behind the END of the hello reaches onPublish after onOpen and after connect() resolved, in order (WSM-API-004)', async () => {
  using clock = fakeTime();
  const server = answering([
    [9, 'room', null, 'before'],
    [2, 1, 1, 'welcome'],
    [9, 'room', null, 'after 1'],
    [9, 'room', null, 'after 2'],
  ]);
  const events: string[] = [];
  const connection = await connect('ws://test/ws', {
    ...once(server),
    onOpen: (info) => events.push(`open ${info.welcome}`),
    onPublish: ({ payload }) => events.push(`publish ${payload}`),
  });
  events.push('resolved');
  assert.deepEqual(events, ['open welcome', 'resolved']);
  await clock.tickAsync(0);
  assert.deepEqual(events, [
    'open welcome',
    'resolved',
    'publish before',
    'publish after 1',
    'publish after 2',
  ]);
  server.connections[0].server.send(JSON.stringify([9, 'room', null, 'later']));
  await Promise.resolve();
  await Promise.resolve();
  assert.equal(events.at(-1), 'publish later', 'once delivered, a PUBLISH goes straight through');
  await connection.close();
  assert.equal(clock.countTimers(), 0);
});

test('a PUBLISH that arrived before a refused hello is never delivered (WSM-API-004)', async () => {
  using clock = fakeTime();
  const server = answering([[9, 'room', null, 'secret'], [4, 1, 'unauthorized', 'No']]);
  const published: unknown[] = [];
  const error = await connect('ws://test/ws', {
    ...once(server),
    onPublish: ({ payload }) => published.push(payload),
  }).catch((e) => e);
  assert.equal((error as Error).name, 'ConnectError');
  await clock.tickAsync(100);
  assert.deepEqual(published, []);
  assert.equal(clock.countTimers(), 0);
});

test('PUBLISH frames that came with the welcome of a connection lost at once reach onPublish before onClose, and leave no timer (WSM-API-004)', async () => {
  using clock = fakeTime();
  const server = answering([[2, 1, 1, 'welcome'], [9, 'room', null, 'first']]);
  const events: string[] = [];
  const connection = await connect('ws://test/ws', {
    ...once(server),
    onOpen: () => events.push('open'),
    onPublish: ({ payload }) => events.push(`publish ${payload}`),
    onClose: () => events.push('close'),
  });
  server.connections[0].server.close(1001, 'going away');
  await connection.closed.catch(() => {});
  await clock.tickAsync(0);
  assert.deepEqual(events, ['open', 'publish first', 'close']);
  assert.equal(clock.countTimers(), 0);
});
