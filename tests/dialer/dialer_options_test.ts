// The dialer's argument checks as tables: each bad option of connect(), argument of close() and
// option of subscribe() is refused with the right error class and a message naming the field
// and the value found, and the defaults fill in (WSM-DIAL-012, WSM-WIRE-009, WSM-SUB-001).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { checkClose, resolveOptions } from '../../lib/dialer/_dial_options.ts';
import { checkSubscribeOptions } from '../../lib/dialer/_subscriptions.ts';
import { JSON_CODEC } from '../../lib/wire/json.ts';
import {
  type ConnectOptions,
  DEFAULT_CLOSE_CODES,
  Hello,
  jsonCodec,
  Reconnect,
  type SubscribeOptions,
  uniform,
} from 'muxws';

const URL_ = 'ws://fake/ws';
const WebSocket = class {} as unknown as ConnectOptions['WebSocket'];

const badOptions: [string, unknown, typeof TypeError | typeof RangeError, string][] = [
  [
    'codec',
    { codec: { name: 'x' } },
    TypeError,
    'Cannot connect as "codec" must be a Codec with name, encode and decode: current value is {"name":"x"}',
  ],
  [
    'hello',
    { hello: 'hi' },
    TypeError,
    'Cannot connect as "hello" must be a Hello, HelloOptions or a function: current value is "hi"',
  ],
  [
    'reconnect',
    { reconnect: true },
    TypeError,
    'Cannot connect as "reconnect" must be a Reconnect, ReconnectOptions or false: current value is true',
  ],
  [
    'draw',
    { draw: 1 },
    TypeError,
    'Cannot connect as "draw" must be a function: current value is 1',
  ],
  [
    'closeCodes',
    { closeCodes: 'x' },
    TypeError,
    'Cannot connect as "closeCodes" must be an object: current value is "x"',
  ],
  [
    'closeCodes.terminal',
    { closeCodes: { terminal: [1.5] } },
    TypeError,
    'Cannot connect as "closeCodes.terminal" must be an array of integer close codes: current value is [1.5]',
  ],
  [
    'heartbeat',
    { heartbeat: true },
    TypeError,
    'Cannot connect as "heartbeat" must be an object or false: current value is true',
  ],
  [
    'heartbeat.intervalMs',
    { heartbeat: { intervalMs: 0 } },
    RangeError,
    'Cannot connect as "heartbeat.intervalMs" must be a finite number greater than 0: current value is 0',
  ],
  [
    'heartbeat.timeoutMs',
    { heartbeat: { timeoutMs: '5' } },
    TypeError,
    'Cannot connect as "heartbeat.timeoutMs" must be a number of milliseconds: current value is "5"',
  ],
  [
    'serviceRestartDelayMs',
    { serviceRestartDelayMs: -1 },
    RangeError,
    'Cannot connect as "serviceRestartDelayMs" must be a finite number at least 0: current value is -1',
  ],
  [
    'stableAfterMs',
    { stableAfterMs: Infinity },
    RangeError,
    'Cannot connect as "stableAfterMs" must be a finite number at least 0: current value is Infinity',
  ],
  [
    'handshakeTimeoutMs',
    { handshakeTimeoutMs: NaN },
    RangeError,
    'Cannot connect as "handshakeTimeoutMs" must be a finite number greater than 0: current value is NaN',
  ],
  [
    'signal',
    { signal: {} },
    TypeError,
    'Cannot connect as "signal" must be an AbortSignal: current value is {}',
  ],
  [
    'onClose',
    { onClose: 'x' },
    TypeError,
    'Cannot connect as "onClose" must be a function: current value is "x"',
  ],
];

for (const [field, options, ErrorClass, message] of badOptions) {
  test(`resolveOptions() refuses a bad "${field}" with ${ErrorClass.name} (WSM-DIAL-012)`, () => {
    assert.throws(
      () => resolveOptions(URL_, { WebSocket, ...(options as object) } as ConnectOptions, true),
      (error: unknown) => error instanceof ErrorClass && (error as Error).message === message,
    );
  });
}

test('resolveOptions() refuses options that are not an object with TypeError (WSM-DIAL-012)', () => {
  assert.throws(() => resolveOptions(URL_, 5 as unknown as ConnectOptions, true), {
    name: 'TypeError',
    message: 'Cannot connect as "options" must be an object: current value is 5',
  });
});

const badTargets: [string, unknown, string][] = [
  [
    'a number',
    42,
    'Cannot connect as "target" must be a string, a URL, a DialTarget or a function: current value is 42',
  ],
  [
    'an object without url',
    { href: URL_ },
    'Cannot connect as "target" must be a string, a URL, a DialTarget or a function: current value is {"href":"ws://fake/ws"}',
  ],
  [
    'bad protocols',
    { url: URL_, protocols: 'token' },
    'Cannot connect as "protocols" must be an array of strings: current value is "token"',
  ],
];

for (const [name, target, message] of badTargets) {
  test(`resolveOptions() refuses a target that is ${name} with TypeError (WSM-DIAL-001)`, () => {
    assert.throws(() => resolveOptions(target, { WebSocket }, true), {
      name: 'TypeError',
      message,
    });
  });
}

test('resolveOptions() fills in every default (WSM-DIAL-012)', () => {
  const o = resolveOptions(new URL(URL_), { WebSocket }, true);
  assert.deepEqual(o.target, { url: URL_, protocols: [] });
  // The JSON codec as a plain object: jsonCodec's wire, without the callable that reaches the
  // strict codec nor the item scan (so a connect bundle that never imports jsonCodec leaves both
  // out; a dialer counts the items it decoded instead).
  assert.equal(o.codec, JSON_CODEC);
  const { exceedsItems: _scan, ...wire } = jsonCodec;
  assert.deepEqual({ ...o.codec }, wire);
  assert(o.hello instanceof Hello && !o.hello.configured);
  assert(o.reconnect instanceof Reconnect);
  assert.equal(o.draw, uniform);
  assert.deepEqual(o.serviceRestart, DEFAULT_CLOSE_CODES.serviceRestart);
  assert.deepEqual(o.terminal, DEFAULT_CLOSE_CODES.terminal);
  assert.deepEqual(
    [o.serviceRestartDelayMs, o.stableAfterMs, o.firstDialDelayMs, o.handshakeTimeoutMs],
    [250, 0, 0, 15_000],
  );
  assert.deepEqual(o.heartbeat, { intervalMs: 20_000, timeoutMs: 10_000 });
});

test('resolveOptions() takes heartbeat as false, null, or an object whose missing fields default, and refuses any other value (WSM-DIAL-012)', () => {
  const heartbeat = (value: unknown) =>
    resolveOptions(URL_, { WebSocket, heartbeat: value } as ConnectOptions, true).heartbeat;
  assert.equal(heartbeat(false), false);
  assert.deepEqual(heartbeat(undefined), { intervalMs: 20_000, timeoutMs: 10_000 });
  assert.deepEqual(heartbeat(null), { intervalMs: 20_000, timeoutMs: 10_000 });
  assert.deepEqual(heartbeat({ timeoutMs: 5 }), { intervalMs: 20_000, timeoutMs: 5 });
  for (const value of [true, 0, 'on', () => {}]) {
    assert.throws(() => heartbeat(value), {
      name: 'TypeError',
      message: /^Cannot connect as "heartbeat" must be an object or false: current value is /,
    });
  }
});

test('resolveOptions() takes jsonCodec, jsonCodec({ strict: true }) and a function with the codec properties (WSM-APP-007)', () => {
  const strict = jsonCodec({ strict: true });
  const callable = Object.assign(() => {}, {
    binary: false,
    encode: jsonCodec.encode,
    decode: jsonCodec.decode,
  });
  Object.defineProperty(callable, 'name', { value: 'fn' });
  for (const codec of [jsonCodec, strict, callable]) {
    assert.equal(resolveOptions(URL_, { WebSocket, codec }, true).codec, codec);
  }
});

test('resolveOptions() needs a WebSocket constructor only for the WebSocket transport (WSM-DIAL-012)', () => {
  const none = { WebSocket: undefined };
  const saved = Object.getOwnPropertyDescriptor(globalThis, 'WebSocket');
  delete (globalThis as { WebSocket?: unknown }).WebSocket;
  try {
    assert.throws(() => resolveOptions(URL_, none, true), {
      name: 'TypeError',
      message:
        'Cannot connect as "WebSocket" must be a WebSocket constructor (none is global: on Node 20, pass wsDialer(WebSocket) from "@muxws/core/node"): current value is undefined',
    });
    assert.equal(resolveOptions(URL_, none, false).WebSocket, undefined);
  } finally {
    if (saved) Object.defineProperty(globalThis, 'WebSocket', saved);
  }
});

const badClose: [unknown, unknown, typeof TypeError | typeof RangeError, string][] = [
  [
    1001,
    '',
    RangeError,
    'Cannot close the connection as "code" must be 1000 or from 3000 to 4999: current value is 1001',
  ],
  [
    2999,
    '',
    RangeError,
    'Cannot close the connection as "code" must be 1000 or from 3000 to 4999: current value is 2999',
  ],
  [
    5000,
    '',
    RangeError,
    'Cannot close the connection as "code" must be 1000 or from 3000 to 4999: current value is 5000',
  ],
  [
    3000.5,
    '',
    RangeError,
    'Cannot close the connection as "code" must be 1000 or from 3000 to 4999: current value is 3000.5',
  ],
  [
    1000,
    7,
    TypeError,
    'Cannot close the connection as "reason" must be a string: current value is 7',
  ],
  [
    1000,
    'é'.repeat(62),
    RangeError,
    'Cannot close the connection as "reason" must be at most 123 UTF-8 bytes: current value is 124 bytes',
  ],
];

for (const [code, reason, ErrorClass, message] of badClose) {
  test(`checkClose() refuses code ${code} with reason ${JSON.stringify(reason)?.slice(0, 12)} (WSM-WIRE-009)`, () => {
    assert.throws(
      () => checkClose(code as number, reason as string),
      (error: unknown) => error instanceof ErrorClass && (error as Error).message === message,
    );
  });
}

test('checkClose() accepts 1000, 3000–4999 and a reason of 123 UTF-8 bytes (WSM-WIRE-009)', () => {
  for (const code of [1000, 3000, 4000, 4999]) checkClose(code, 'x'.repeat(123));
});

const onMessage = () => {};
const badSubscribe: [unknown, typeof TypeError | typeof RangeError, string][] = [
  [null, TypeError, 'Cannot subscribe as "options" must be an object: current value is null'],
  [{}, TypeError, 'Cannot subscribe as "onMessage" must be a function: current value is undefined'],
  [
    { onMessage, onReopen: 1 },
    TypeError,
    'Cannot subscribe as "onReopen" must be a function: current value is 1',
  ],
  [
    { onMessage, headers: [1] },
    TypeError,
    'Cannot subscribe as "headers" must be a plain object or null: current value is [1]',
  ],
  [
    { onMessage, headers: { ':route': 'x' } },
    TypeError,
    'Cannot subscribe as "headers" must not use the reserved key ":route": keys starting with ":" are muxws\'s',
  ],
  [
    { onMessage, dedupe: {} },
    TypeError,
    'Cannot subscribe as "dedupe.key" must be a function: current value is undefined',
  ],
  [
    { onMessage, dedupe: { key: String, window: 0 } },
    RangeError,
    'Cannot subscribe as "dedupe.window" must be an integer of at least 1: current value is 0',
  ],
];

for (const [options, ErrorClass, message] of badSubscribe) {
  test(`checkSubscribeOptions() refuses ${JSON.stringify(options)} with ${ErrorClass.name} (WSM-SUB-001)`, () => {
    assert.throws(
      () => checkSubscribeOptions(options as SubscribeOptions),
      (error: unknown) => error instanceof ErrorClass && (error as Error).message === message,
    );
  });
}
