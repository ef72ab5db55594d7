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

test('WSM-ACC-006 overLimit() counts UTF-8 bytes of text and bytes of binary', () => {
  const samples = ['', 'ascii', 'é', '€', '😀', '\ud800', 'a\udc00b', '€'.repeat(1000)];
  for (const s of samples) assert.equal(utf8Length(s), new TextEncoder().encode(s).byteLength, s);
  assert.equal(overLimit('€€€', 9), false);
  assert.equal(overLimit('€€€', 8), true);
  assert.equal(overLimit('x'.repeat(11), 10), true);
  assert.equal(overLimit(new Uint8Array(10), 10), false);
  assert.equal(overLimit(new Uint8Array(11), 10), true);
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
