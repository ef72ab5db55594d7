// on(): the dialer's typed event handlers, on an in-memory acceptor driven by hand on fake time
// (WSM-API-001): handlers by name in registration order, removal, contained throws, an event with
// no handler (and a plain broadcast) to onPublish with the name, reserved headers left out,
// handlers kept across a redial, and bad arguments refused with what was expected and found.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { connect, on, type PublishMessage, recovery } from 'muxws';
import { acknowledging } from '../_socket_pair.ts';
import { fakeTime } from '../_fake_time.ts';

type Api = { ':events': { message: { from: string; text: string }; notice: string } };

test('on() runs the handlers of an event by name in registration order, with the payload and the PUBLISH, and onPublish gets the rest with the name (WSM-API-001)', async () => {
  using clock = fakeTime();
  const server = acknowledging();
  const calls: unknown[][] = [];
  const published: PublishMessage[] = [];
  const errors: unknown[] = [];
  const connection = await connect<Api>('ws://test/ws', {
    WebSocket: server.WebSocket,
    heartbeat: false,
    hello: { payload: 'hi' },
    onPublish: (message) => void published.push(message),
    onError: (error) => void errors.push(error),
  });
  const offFirst = on(connection, 'message', (payload, info) => {
    calls.push(['first', payload, info]);
    throw new Error('first failed');
  });
  on(connection, 'message', (payload) => void calls.push(['second', payload.text]));
  on(connection, 'notice', async (notice) => {
    await Promise.resolve();
    throw new Error(`notice ${notice} failed`);
  });
  const send = (frame: unknown[]) => server.connections.at(-1)!.server.send(JSON.stringify(frame));
  const message = { from: 'ada', text: 'hi' };
  send([9, 'room', { ':event': 'message', trace: 't1' }, message]);
  send([9, 'room', { ':event': 'typing' }, 'ada']);
  send([9, 'room', { trace: 't2' }, 'plain']);
  send([9, '*', { ':event': 'notice' }, 'deploying']);
  await clock.tickAsync(0);
  assert.deepEqual(calls, [
    ['first', message, {
      tag: 'room',
      headers: { trace: 't1' },
      payload: message,
      event: 'message',
    }],
    ['second', 'hi'],
  ]);
  assert.deepEqual(published, [
    { tag: 'room', headers: null, payload: 'ada', event: 'typing' },
    { tag: 'room', headers: { trace: 't2' }, payload: 'plain' },
  ]);
  assert.deepEqual(errors.map((error) => (error as Error).message), [
    'first failed',
    'notice deploying failed',
  ]);

  // Removed, a handler hears nothing more; the handlers stay across a redial.
  offFirst();
  offFirst();
  calls.length = 0;
  server.connections[0].server.close(1012, 'restart');
  await clock.tickAsync(60_000);
  assert.equal(server.connections.length, 2);
  send([9, 'room', { ':event': 'message' }, message]);
  await clock.tickAsync(0);
  assert.deepEqual(calls, [['second', 'hi']]);
  await connection.close();
  assert.equal(clock.countTimers(), 0);
});

test('on() with every handler of a name removed leaves that event to onPublish (WSM-API-001)', async () => {
  using clock = fakeTime();
  const server = acknowledging();
  const published: unknown[] = [];
  const connection = await connect<Api>('ws://test/ws', {
    WebSocket: server.WebSocket,
    heartbeat: false,
    reconnect: false,
    onPublish: ({ payload, event }) => void published.push([event, payload]),
  });
  const off = on(connection, 'notice', () => assert.fail('removed'));
  off();
  server.connections[0].server.send(JSON.stringify([9, '*', { ':event': 'notice' }, 'n']));
  await clock.tickAsync(0);
  assert.deepEqual(published, [['notice', 'n']]);
  await connection.close();
});

test('on() with sequenced events and recovery() hands each on once, in order, with its seq and without the reserved headers (WSM-API-001)', async () => {
  using clock = fakeTime();
  const server = acknowledging();
  const heard: unknown[] = [];
  const connection = await connect<Api>('ws://test/ws', {
    WebSocket: server.WebSocket,
    heartbeat: false,
    reconnect: false,
    recovery: recovery(),
  });
  on(connection, 'notice', (notice, { seq, headers }) => void heard.push([notice, seq, headers]));
  const send = (seq: number, notice: string) =>
    server.connections[0].server.send(
      JSON.stringify([9, 'room', { ':seq': seq, ':event': 'notice' }, notice]),
    );
  send(7, 'a');
  send(7, 'a again');
  send(8, 'b');
  await clock.tickAsync(0);
  assert.deepEqual(heard, [['a', 7, null], ['b', 8, null]]);
  await connection.close();
});

test('on() refuses a non-connection, a bad name and a non-function handler, naming what it found (WSM-API-001)', async () => {
  using clock = fakeTime();
  const server = acknowledging();
  const connection = await connect('ws://test/ws', {
    WebSocket: server.WebSocket,
    heartbeat: false,
    reconnect: false,
  });
  const handler = () => {};
  assert.throws(() => on({} as typeof connection, 'notice', handler), {
    name: 'TypeError',
    message:
      'Cannot listen for events as "connection" must be a Connection from connect(): current value is {}',
  });
  for (const [name, found] of [['', '""'], [':seq', '":seq"'], [7, '7']] as const) {
    assert.throws(() => on(connection, name as string, handler), {
      name: 'TypeError',
      message:
        `Cannot listen for events as "name" must be a string of 1 to 256 characters not starting with ":": current value is ${found}`,
    });
  }
  assert.throws(() => on(connection, 'x'.repeat(257), handler), TypeError);
  assert.throws(() => on(connection, 'notice', 'handler' as unknown as () => void), {
    name: 'TypeError',
    message: 'Cannot listen for events as "handler" must be a function: current value is "handler"',
  });
  await connection.close();
  assert.equal(clock.countTimers(), 0);
});
