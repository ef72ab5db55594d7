// What a feature imported by name hears of the connection it extends: each establishment before
// onOpen, each broadcast before onPublish (taking it when it delivered it), and the close for
// good before onClose; what it throws goes to onError. A hand-driven in-memory acceptor on fake time.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { connect, recovery } from 'muxws';
import { EXTENSIONS, hostOf } from '../../lib/dialer/_extensions.ts';
import { acknowledging } from '../_socket_pair.ts';
import { fakeTime } from '../_fake_time.ts';

test('an extension hears each establishment before onOpen, takes the broadcasts it delivers from onPublish, and hears the close for good before onClose', async () => {
  using clock = fakeTime();
  const server = acknowledging();
  const events: string[] = [];
  const errors: unknown[] = [];
  const connection = await connect('ws://test/ws', {
    WebSocket: server.WebSocket,
    heartbeat: false,
    hello: { payload: 'hi' },
    onOpen: ({ reconnected }) => events.push(`onOpen ${reconnected}`),
    onPublish: ({ payload }) => events.push(`onPublish ${payload}`),
    onClose: ({ willRetry }) => events.push(`onClose ${willRetry}`),
    onError: (error) => errors.push(error),
  });
  assert.deepEqual(events, ['onOpen false']);
  events.length = 0;
  const host = hostOf(connection, 'extend');
  const remove = host.extend({
    established: () => events.push('established'),
    publish: ({ payload }) => {
      if (payload === 'boom') throw new Error('extension failed');
      if (payload !== 'mine') return false;
      events.push('extension took mine');
      return true;
    },
    closed: () => events.push('closed'),
  });
  for (const payload of ['mine', 'theirs', 'boom']) {
    server.connections[0].server.send(JSON.stringify([9, 'room', null, payload]));
  }
  await clock.tickAsync(0);
  assert.deepEqual(events, ['extension took mine', 'onPublish theirs', 'onPublish boom']);
  assert.equal((errors[0] as Error).message, 'extension failed');

  events.length = 0;
  server.connections[0].server.close(1012, 'restart');
  await clock.tickAsync(60_000);
  assert.deepEqual(events, ['onClose true', 'established', 'onOpen true']);

  events.length = 0;
  await connection.close();
  assert.deepEqual(events, ['closed', 'onClose false']);
  assert.equal(connection.state, 'closed');
  remove();
  remove();
  assert.equal(clock.countTimers(), 0);
});

test('a removed extension hears nothing more', async () => {
  using clock = fakeTime();
  const server = acknowledging();
  const published: unknown[] = [];
  const connection = await connect('ws://test/ws', {
    WebSocket: server.WebSocket,
    heartbeat: false,
    reconnect: false,
    hello: { payload: 'hi' },
    onPublish: ({ payload }) => published.push(payload),
  });
  const remove = hostOf(connection, 'extend').extend({ publish: () => true });
  remove();
  server.connections[0].server.send(JSON.stringify([9, 'room', null, 'after removal']));
  await clock.tickAsync(0);
  assert.deepEqual(published, ['after removal']);
  await connection.close();
});

test('hostOf refuses what is not a connection, naming what it found', () => {
  assert.throws(() => hostOf({}, 'listen for events'), {
    name: 'TypeError',
    message: /Cannot listen for events as "connection" must be a Connection from connect\(\)/,
  });
  assert.throws(() => hostOf(undefined, 'listen for events'), TypeError);
  assert.equal(typeof EXTENSIONS, 'symbol');
});

test('an arrived step sees each PUBLISH with its reserved headers before recovery, and what it takes reaches nothing else', async () => {
  using clock = fakeTime();
  const server = acknowledging();
  const published: unknown[] = [];
  const errors: unknown[] = [];
  const connection = await connect('ws://test/ws', {
    WebSocket: server.WebSocket,
    heartbeat: false,
    hello: { payload: 'hi' },
    recovery: recovery(),
    onPublish: ({ payload, headers }) => published.push([payload, headers]),
    onError: (error) => errors.push(error),
  });
  const arrived: unknown[] = [];
  hostOf(connection, 'extend').extend({
    arrived: ({ payload, headers }) => {
      arrived.push([payload, headers]);
      if (payload === 'boom') throw new Error('arrived failed');
      return headers?.[':mine'] === true;
    },
    publish: ({ payload }) => {
      assert.notEqual(payload, 'taken');
      return false;
    },
  });
  const socket = server.connections[0].server;
  socket.send(JSON.stringify([9, 'room', { ':mine': true, ':seq': 1 }, 'taken']));
  socket.send(JSON.stringify([9, 'room', { ':seq': 1, app: 1 }, 'theirs']));
  socket.send(JSON.stringify([9, 'room', null, 'boom']));
  await clock.tickAsync(0);
  assert.deepEqual(arrived, [
    ['taken', { ':mine': true, ':seq': 1 }],
    ['theirs', { ':seq': 1, app: 1 }],
    ['boom', null],
  ]);
  assert.deepEqual(published, [['theirs', { app: 1 }], ['boom', null]]);
  assert.equal((errors[0] as Error).message, 'arrived failed');
  await connection.close();
});
