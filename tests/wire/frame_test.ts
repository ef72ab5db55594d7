import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ProtocolError } from 'muxws';
import {
  FLAG_END,
  FrameError,
  FRAMES,
  hasEnd,
  INITIAL_WINDOW,
  isStreamId,
  itemsOver,
  overLimit,
  parseFrame,
  tooDeep,
  utf8Length,
} from '../../lib/wire/frame.ts';

test('WSM-WIRE-003 the frame table lists the nine kinds with codes 1 to 9, each documented', () => {
  assert.deepEqual(FRAMES.map((f) => f.code), [1, 2, 3, 4, 5, 6, 7, 8, 9]);
  assert.deepEqual(
    FRAMES.map((f) => f.name),
    ['OPEN', 'DATA', 'END', 'RESET', 'CREDIT', 'PING', 'PONG', 'GOAWAY', 'PUBLISH'],
  );
  for (const f of FRAMES) {
    assert.ok(f.layout.startsWith(`[${f.code}`));
    assert.ok(f.sender.length > 0 && f.receiver.length > 0);
  }
  assert.equal(FLAG_END, 1);
  assert.equal(INITIAL_WINDOW, 65536);
});

test('WSM-WIRE-003 parseFrame() returns valid frames of every kind as they are, without copying', () => {
  const valid: unknown[][] = [
    [1, 1, 0, null, 'p'],
    [1, 2, 1, { a: 1 }, undefined],
    [1, Number.MAX_SAFE_INTEGER, 0, Object.create(null), null],
    [2, 3, 0, { any: ['thing'] }],
    [3, 4],
    [4, 5, 'cancel', ''],
    [4, 5, 'a'.repeat(64), 'long message'],
    [5, 6, 1],
    [6],
    [7],
    [8, 0, 'restart', 'deploy', 0],
    [9, 't', null, 1],
    [9, 'x'.repeat(256), { h: 1 }, [1, 2]],
  ];
  for (const frame of valid) assert.equal(parseFrame(frame), frame);
});

test('WSM-WIRE-007 parseFrame() throws only FrameError (a ProtocolError), whatever it is fed', () => {
  const revoked = Proxy.revocable([], {});
  revoked.revoke();
  const throwing = new Proxy([1, 1, 0, null, 1], {
    get() {
      throw new Error('trap');
    },
  });
  const hostile: unknown[] = [
    undefined,
    null,
    0,
    'x',
    Symbol('s'),
    () => {},
    {},
    [],
    [NaN],
    [Infinity],
    [1, 1, 0, new Map(), 1],
    [1, 1, 0, new Date(), 1],
    [2, 1, '0', 1],
    revoked.proxy,
    throwing,
  ];
  for (const value of hostile) {
    assert.throws(() => parseFrame(value), (e: unknown) => {
      assert.ok(e instanceof FrameError);
      assert.ok(e instanceof ProtocolError);
      assert.ok((e as Error).message.startsWith('Malformed'));
      return true;
    });
  }
});

test('WSM-WIRE-003 hasEnd() reads bit 0 and ignores the reserved bits', () => {
  assert.equal(hasEnd(0), false);
  assert.equal(hasEnd(1), true);
  assert.equal(hasEnd(2), false);
  assert.equal(hasEnd(3), true);
  assert.equal(hasEnd(2 ** 52 + 1), true);
  assert.equal(hasEnd(2 ** 52), false);
});

test('WSM-WIRE-008 tooDeep() counts {} and [] as one level and a scalar as none', () => {
  assert.equal(tooDeep('x', 0), false);
  assert.equal(tooDeep({}, 0), true);
  assert.equal(tooDeep({}, 1), false);
  assert.equal(tooDeep({ a: [1] }, 1), true);
  assert.equal(tooDeep({ a: [1] }, 2), false);
  assert.equal(tooDeep([[], [[[]]]], 3), true);
  assert.equal(tooDeep([[], [[[]]]], 4), false);
  assert.equal(tooDeep({ bytes: new Uint8Array(10) }, 1), false);
});

test('WSM-WIRE-008 tooDeep() walks 1,000,000 levels without recursion', () => {
  let value: unknown = 1;
  for (let i = 0; i < 1_000_000; i++) value = [value];
  assert.equal(tooDeep(value, 64), true);
  assert.equal(tooDeep(value, 1_000_000), false);
});

test('WSM-WIRE-008 tooDeep() treats a value it cannot walk as too deep and never throws', () => {
  const trap = new Proxy({}, {
    ownKeys() {
      throw new Error('trap');
    },
  });
  assert.equal(tooDeep({ a: trap }, 64), true);
});

test("itemsOver() counts array elements, own keys, a Map's keys and values and a Set's values at any depth (WSM-LIM-001)", () => {
  // 3 + 2 + 1 + 4 + 1 + 1 = 12 items; a scalar and a view hold none, a view is one item of its Set.
  const value = [
    { a: 1, b: [true] },
    new Map<unknown, unknown>([['k', 'v'], [{ x: 1 }, 2]]),
    new Set([new Uint8Array(100)]),
  ];
  assert.equal(itemsOver(value, 12), false);
  assert.equal(itemsOver(value, 11), true);
  assert.equal(itemsOver('x'.repeat(100), 0), false);
  assert.equal(itemsOver(new Uint8Array(100), 0), false);
  assert.equal(itemsOver(Object.create({ inherited: 1 }), 0), false);
  let deep: unknown = 1;
  for (let i = 0; i < 1_000_000; i++) deep = [deep];
  assert.equal(itemsOver(deep, 1_000_000), false);
  assert.equal(itemsOver(deep, 999_999), true);
});

test('itemsOver() treats a value it cannot walk as over and never throws (WSM-LIM-001)', () => {
  const trap = new Proxy({}, {
    ownKeys() {
      throw new Error('trap');
    },
  });
  assert.equal(itemsOver({ a: trap }, 100), true);
  // The walk that failed left nothing behind for the next one.
  assert.equal(itemsOver([[1], [2]], 4), false);
  assert.equal(tooDeep([[1], [2]], 2), false);
});

test('WSM-ACC-006 overLimit() counts UTF-8 bytes of text and bytes of binary', () => {
  const samples = ['', 'ascii', 'é', '€', '😀', '\ud800', 'a\udc00b', '€'.repeat(1000)];
  for (const s of samples) assert.equal(utf8Length(s), new TextEncoder().encode(s).byteLength, s);
  assert.equal(overLimit('€€€', 9), false);
  assert.equal(overLimit('€€€', 8), true);
  assert.equal(overLimit('x'.repeat(11), 10), true);
  assert.equal(overLimit(new Uint8Array(10), 10), false);
  assert.equal(overLimit(new Uint8Array(11), 10), true);
});

test('utf8Length() agrees with TextEncoder on any UTF-16 text, lone and paired surrogates included (WSM-ACC-006)', () => {
  // Code units from every UTF-8 length class, high and low surrogates in any order.
  const units = [
    0x41,
    0x7f,
    0x80,
    0x7ff,
    0x800,
    0xd7ff,
    0xd800,
    0xdbff,
    0xdc00,
    0xdfff,
    0xe000,
    0xffff,
  ];
  let seed = 7;
  const encoder = new TextEncoder();
  for (let n = 0; n < 2000; n++) {
    let text = '';
    const length = n % 9;
    for (let i = 0; i < length; i++) {
      seed = (seed * 1103515245 + 12345) % 2147483648;
      text += String.fromCharCode(units[seed % units.length]);
    }
    assert.equal(utf8Length(text), encoder.encode(text).byteLength, JSON.stringify(text));
  }
});

test('isStreamId() accepts positive safe integers only (WSM-WIRE-004)', () => {
  const cases: [unknown, boolean][] = [
    [1, true],
    [2, true],
    [Number.MAX_SAFE_INTEGER, true],
    [0, false],
    [-1, false],
    [1.5, false],
    [2 ** 53, false],
    [NaN, false],
    [Infinity, false],
    ['1', false],
    [1n, false],
    [null, false],
    [undefined, false],
  ];
  for (const [value, expected] of cases) assert.equal(isStreamId(value), expected, String(value));
});

/** One valid frame of every kind, with only the elements every receiver knows. */
const EVERY_KIND: unknown[][] = [
  [1, 1, 0, null, 'p'],
  [2, 3, 0, 'payload'],
  [3, 4],
  [4, 5, 'cancel', 'why'],
  [5, 6, 1],
  [6],
  [7],
  [8, 0, 'restart', 'deploy', 0],
  [9, 't', null, 1],
];

test('parseFrame() accepts every kind with one and with several unknown trailing elements, the known ones unchanged (WSM-API-008)', () => {
  // DATA and RESET know one trailing element more, their headers: an unknown one comes after it.
  const extra = (frame: unknown[]) => frame[0] === 2 || frame[0] === 4 ? [null] : [];
  for (const frame of EVERY_KIND) {
    const one = [...frame, ...extra(frame), 'later'];
    const several = [...frame, ...extra(frame), { a: [1, 2] }, 7, null, ['x'], true];
    for (const grown of [one, several]) {
      const parsed = parseFrame(grown);
      assert.equal(parsed, grown, `kind ${frame[0]}`);
      assert.deepEqual(parsed.slice(0, frame.length), frame);
    }
  }
});

test('parseFrame() still refuses a frame missing or mistyping a known element, whatever trails it (WSM-API-008)', () => {
  const bad: [unknown[], RegExp][] = [
    [[1, 1, 0, null], /expected at least 5 elements for kind 1: found 4/],
    [[2, 3, 0], /expected at least 4 elements for kind 2: found 3/],
    [[3], /expected at least 2 elements for kind 3: found 1/],
    [[4, 5, 'cancel'], /expected at least 4 elements for kind 4: found 3/],
    [[8, 0, 'restart', 'deploy'], /expected at least 5 elements for kind 8: found 4/],
    [[1, 1, 0, 'headers', 'p', 'extra'], /expected headers as an object or null/],
    [[2, 0, 0, 'p', null, 'extra'], /expected a positive safe integer id/],
    [[3, '4', 'extra'], /expected a positive safe integer id/],
    [[4, 5, 'NOT A CODE', '', null, 'extra'], /expected a reset code/],
    [[4, 5, 'cancel', 5, null, 'extra'], /expected a reset message string/],
    [[5, 6, 0, 'extra'], /expected credit units/],
    [[8, 0, 'restart', 'deploy', -1, 'extra'], /expected spreadMs/],
    [[9, '', null, 1, 'extra'], /expected a tag/],
  ];
  for (const [frame, message] of bad) {
    assert.throws(() => parseFrame(frame), (error: unknown) => {
      assert.ok(error instanceof FrameError);
      assert.match((error as Error).message, message);
      return true;
    }, JSON.stringify(frame));
  }
});

test('parseFrame() accepts DATA and RESET with trailing headers, null or a map, and refuses any other headers value (WSM-API-008)', () => {
  const good: unknown[][] = [
    [2, 3, 0, 'p', null],
    [2, 3, 1, 'p', { trace: 'abc', ':later': [1] }],
    [2, 3, 0, 'p', Object.create(null)],
    [4, 5, 'invalid', 'Invalid input', null],
    [4, 5, 'invalid', 'Invalid input', { ':issues': [{ path: ['a'], message: 'm' }] }],
  ];
  for (const frame of good) assert.equal(parseFrame(frame), frame);
  const bad: unknown[][] = [
    [2, 3, 0, 'p', 'headers'],
    [2, 3, 0, 'p', []],
    [2, 3, 0, 'p', 1],
    [2, 3, 0, 'p', new Date()],
    [4, 5, 'cancel', '', 'headers'],
    [4, 5, 'cancel', '', [{ ':issues': [] }]],
    [4, 5, 'cancel', '', false],
  ];
  for (const frame of bad) {
    assert.throws(
      () => parseFrame(frame),
      /Malformed frame: expected headers as an object or null/,
      JSON.stringify(frame),
    );
  }
});

test('the frame table documents the optional headers of DATA and RESET (WSM-API-008)', () => {
  const layouts = Object.fromEntries(FRAMES.map((f) => [f.name, f.layout]));
  assert.equal(layouts.DATA, '[2, id, flags, payload, headers?]');
  assert.equal(layouts.RESET, '[4, id, code, message, headers?]');
});
