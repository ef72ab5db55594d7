// The dialer's features imported by name: recovery(), waitWhileReconnecting(), onlineHints()
// as option values and subscribe() taking the connection first. Each refuses what is not its
// own, and the spellings of before (an option at the top level, a string) are refused by
// connect() with a TypeError naming the import to use (WSM-API-006).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  connect,
  type ConnectOptions,
  onlineHints,
  recovery,
  subscribe,
  waitWhileReconnecting,
} from 'muxws';
import { resolveOptions } from '../../lib/dialer/_dial_options.ts';
import { FakeServer } from '../_socket_pair.ts';

const URL_ = 'ws://fake/ws';
const WebSocket = class {} as unknown as ConnectOptions['WebSocket'];
const FROM = "imported from '@muxws/core'";

const refused: [string, Record<string, unknown>, string][] = [
  [
    "whileReconnecting: 'wait'",
    { whileReconnecting: 'wait' },
    `Cannot connect as "whileReconnecting" must be what waitWhileReconnecting({ maxWaiting }) returns, ${FROM}: current value is "wait"`,
  ],
  [
    'maxWaiting at the top level',
    { maxWaiting: 10 },
    `Cannot connect with "maxWaiting": it is an option of waitWhileReconnecting({ maxWaiting }), ${FROM} (whileReconnecting: waitWhileReconnecting({ maxWaiting }))`,
  ],
  [
    'onRecovered at the top level',
    { onRecovered: () => {} },
    `Cannot connect with "onRecovered": it is an option of recovery({ onRecovered }), ${FROM} (recovery: recovery({ onRecovered }))`,
  ],
  [
    'recovery: true',
    { recovery: true },
    `Cannot connect as "recovery" must be what recovery({ onRecovered }) returns, ${FROM}: current value is true`,
  ],
  [
    "another feature's value",
    { onlineHints: recovery() },
    `Cannot connect as "onlineHints" must be what onlineHints() returns, ${FROM}: current value is {"feature":"recovery"}`,
  ],
];

for (const [what, options, message] of refused) {
  test(`connect() refuses ${what} with a TypeError naming the import to use (WSM-API-006)`, async () => {
    assert.throws(() => resolveOptions(URL_, { WebSocket, ...options } as ConnectOptions, true), {
      name: 'TypeError',
      message,
    });
    await assert.rejects(connect(URL_, { WebSocket, ...options } as ConnectOptions), {
      name: 'TypeError',
      message,
    });
  });
}

test('the features check their own options when called, naming the field and the value found (WSM-API-006)', () => {
  assert.throws(() => recovery({ onRecovered: 5 as never }), {
    name: 'TypeError',
    message: 'Cannot create recovery as "onRecovered" must be a function: current value is 5',
  });
  assert.throws(() => waitWhileReconnecting({ maxWaiting: '5' as never }), {
    name: 'TypeError',
    message:
      'Cannot wait while reconnecting as "maxWaiting" must be a number: current value is "5"',
  });
  assert.throws(() => waitWhileReconnecting({ maxWaiting: 1.5 }), {
    name: 'RangeError',
    message:
      'Cannot wait while reconnecting as "maxWaiting" must be a safe integer of at least 0: current value is 1.5',
  });
  for (const value of [recovery(), waitWhileReconnecting(), onlineHints()]) {
    assert.ok(Object.isFrozen(value));
  }
});

test('the features are on only where given: resolveOptions() has none without them, each with them (WSM-API-006)', () => {
  const none = resolveOptions(URL_, { WebSocket }, true);
  assert.deepEqual([none.recovery, none.waiting, none.hints], [undefined, undefined, undefined]);
  const all = resolveOptions(URL_, {
    WebSocket,
    recovery: recovery(),
    whileReconnecting: waitWhileReconnecting({ maxWaiting: 3 }),
    onlineHints: onlineHints(),
  }, true);
  for (const factory of [all.recovery, all.waiting, all.hints]) {
    assert.equal(typeof factory, 'function');
  }
});

test('subscribe() refuses what is not a connection from connect(), naming what it found (WSM-API-006)', () => {
  for (const value of [undefined, {}, { subscribe() {} }]) {
    assert.throws(() => subscribe(value as never, 'feed', { onMessage: () => {} }), {
      name: 'TypeError',
      message:
        /^Cannot subscribe as "connection" must be a Connection from connect\(\): current value is /,
    });
  }
});

test('a connection has no subscribe() method: subscribe(connection, …) is the import (WSM-API-006)', async () => {
  const server = new FakeServer({
    onConnection: (c) => queueMicrotask(() => c.accept()),
  });
  const connection = await connect(URL_, {
    WebSocket: server.WebSocket,
    heartbeat: false,
    reconnect: false,
  });
  assert.equal((connection as unknown as Record<string, unknown>).subscribe, undefined);
  await connection.close();
});
