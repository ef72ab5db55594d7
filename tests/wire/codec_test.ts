import { test } from 'node:test';
import assert from 'node:assert/strict';
import { jsonCodec, subprotocol } from 'muxws';
import type { Codec } from 'muxws';
import fc from 'fast-check';
import { codecs, itemCount } from '../_codecs.ts';

test('WSM-WIRE-001 subprotocol() is muxws.v1. and the codec name', () => {
  assert.equal(subprotocol(jsonCodec), 'muxws.v1.json');
  for (const name of ['', 'JSON', 'a b', 'x'.repeat(33)]) {
    assert.throws(() => subprotocol({ ...jsonCodec, name }), TypeError);
  }
});

test('WSM-WIRE-002 jsonCodec encodes a frame as one text message and decodes it back', () => {
  assert.equal(jsonCodec.binary, false);
  const frame = [1, 1, 0, { h: 'v' }, { nested: [1, 'two', null, true] }];
  const message = jsonCodec.encode(frame);
  assert.equal(typeof message, 'string');
  assert.deepEqual(jsonCodec.decode(message), frame);
  assert.deepEqual(jsonCodec.decode(new TextEncoder().encode(message as string)), frame);
  assert.throws(() => jsonCodec.decode(new Uint8Array([0xff])));
  assert.throws(() => jsonCodec.encode([2, 1, 0, 1n]), TypeError);
});

test('WSM-WIRE-008 jsonCodec keeps __proto__, constructor and prototype keys as own data', () => {
  const decoded = jsonCodec.decode(
    '[2,1,0,{"__proto__":{"polluted":1},"constructor":{"prototype":{"polluted":2}},"prototype":3}]',
  ) as [number, number, number, Record<string, unknown>];
  const payload = decoded[3];
  assert.equal(Object.getPrototypeOf(payload), Object.prototype);
  assert.deepEqual(Object.keys(payload), ['__proto__', 'constructor', 'prototype']);
  assert.equal((payload as { polluted?: unknown }).polluted, undefined);
  assert.equal(({} as Record<string, unknown>).polluted, undefined);
  assert.equal(typeof ({}).constructor, 'function');
});

test('WSM-WIRE-007 jsonCodec.identify() names OPEN and DATA frames from a damaged prefix only', () => {
  const identify = jsonCodec.identify!;
  const accepted: [string | Uint8Array, [number, number]][] = [
    ['[2,5,0,{"a": tru', [2, 5]],
    ['[1,7,0,nul', [1, 7]],
    ['[2, 1, 0, garbage', [2, 1]], // as Python's json.dumps writes it
    ['[1, 3, 0, null, {"a": tru', [1, 3]],
    [' \t\r\n[\n  2 ,\t9 ,', [2, 9]], // JSON whitespace around every token
    ['[2,9007199254740991,0,', [2, Number.MAX_SAFE_INTEGER]],
    [new TextEncoder().encode('[2,9,0,\xff'), [2, 9]],
    [new TextEncoder().encode('[2, 9, 0, \xff'), [2, 9]],
    [' '.repeat(59) + '[2,5,0,', [2, 5]], // the comma after the id is the 64th character
  ];
  for (const [data, named] of accepted) assert.deepEqual(identify(data), named, String(data));
  const rejected = [
    '[3,5,', // not OPEN or DATA
    '[0,5,',
    '[12,5,',
    '[2,05,0,', // leading zero
    '[2,0,0,', // id 0 is no stream
    '[2,-1,0,',
    '[2,+1,0,',
    '[2,1.0,0,', // a fraction or exponent, though JSON would read 1
    '[2,1e0,0,',
    '["2",5,0,',
    '[2,"5",0,',
    '[2,9007199254740992,0,', // above the largest safe integer
    '[2,99999999999999999,0,',
    'x[2,5,0,',
    '\u00a0[2,5,0,', // whitespace JSON does not allow
    '[2\u00a0,5,0,',
    '\ufeff[2,5,0,',
    '[2,5', // the id must be followed by a comma
    '[2,5]x',
    '[2,5 x',
    '[2 5,0,',
    ' '.repeat(60) + '[2,5,0,', // the comma after the id would be the 65th
  ];
  for (const text of rejected) assert.equal(identify(text), undefined, JSON.stringify(text));
});

for (const codec of codecs) {
  test(`WSM-WIRE-002 [${codec.name}] round-trips every frame kind unchanged`, () => {
    const frames: unknown[][] = [
      [1, 1, 1, { a: 'b' }, { x: [1, 2.5, 'three', null, true, false] }],
      [2, 2, 0, 'text'],
      [3, 3],
      [4, 4, 'cancel', 'why'],
      [5, 5, 65536],
      [6],
      [7],
      [8, 10, 'restart', 'deploy', 1000],
      [9, 'room:1', null, { n: 1 }],
    ];
    for (const frame of frames) {
      const message = codec.encode(frame);
      assert.equal(typeof message === 'string', !codec.binary);
      assert.deepEqual(codec.decode(message), frame);
    }
  });

  test(`WSM-WIRE-002 [${codec.name}] encodes PING and PONG as fixed messages`, () => {
    const ping = codec.encode([6]);
    assert.deepEqual(codec.encode([6]), ping);
    assert.notDeepEqual(codec.encode([7]), ping);
  });
}

test('WSM-WIRE-002 a custom codec only needs name, binary, encode and decode', () => {
  const custom: Codec = {
    name: 'custom',
    binary: true,
    encode: (frame) => new TextEncoder().encode(JSON.stringify(frame)),
    decode: (data) => JSON.parse(typeof data === 'string' ? data : new TextDecoder().decode(data)),
  };
  assert.equal(subprotocol(custom), 'muxws.v1.custom');
  assert.deepEqual(custom.decode(custom.encode([3, 1])), [3, 1]);
});

test('WSM-APP-007 jsonCodec({ strict: true }) refuses every value JSON would change, naming its path in the frame', () => {
  class Point {
    x = 1;
  }
  const cases: [unknown, string][] = [
    [() => 1, 'Function at [3]'],
    [{ a: undefined }, 'undefined at [3].a'],
    [[1, undefined], 'undefined at [3][1]'],
    [{ members: new Map() }, 'Map at [3].members'],
    [{ tags: new Set(['a']) }, 'Set at [3].tags'],
    [{ bytes: new Uint8Array(2) }, 'Uint8Array at [3].bytes'],
    [{ buffer: new ArrayBuffer(2) }, 'ArrayBuffer at [3].buffer'],
    [{ n: NaN }, 'NaN at [3].n'],
    [{ 'a b': [Infinity] }, 'Infinity at [3]["a b"][0]'],
    [-Infinity, '-Infinity at [3]'],
    [{ at: new Date(0) }, 'Date at [3].at'],
    [{ p: new Point() }, 'Point at [3].p'],
    [{ custom: { toJSON: () => 'x' } }, 'Object at [3].custom'],
    [{ s: Symbol('s') }, 'Symbol at [3].s'],
    [{ n: 1n }, 'BigInt at [3].n'],
  ];
  for (const [value, path] of cases) {
    assert.throws(() => jsonCodec({ strict: true }).encode([2, 1, 0, value]), {
      name: 'TypeError',
      message: `Cannot encode the frame as strict JSON: ${path}`,
    });
  }
});

test('WSM-APP-007 jsonCodec({ strict: true }) encodes plain values as jsonCodec does, under the same subprotocol', () => {
  const bare = Object.assign(Object.create(null), { k: 'v' });
  const frame = [1, 1, 0, { trace: 't' }, { a: [1, 'two', null, true, { b: -0.5 }], bare }];
  const text = jsonCodec({ strict: true }).encode(frame) as string;
  assert.equal(text, jsonCodec.encode(frame));
  assert.deepEqual(jsonCodec({ strict: true }).decode(text), JSON.parse(text));
  assert.equal(subprotocol(jsonCodec({ strict: true })), 'muxws.v1.json');
  assert.equal(jsonCodec({ strict: true }).binary, false);
  assert.deepEqual(jsonCodec({ strict: true }).identify?.('[2,5,0,'), [2, 5]);
});

test('WSM-APP-007 jsonCodec is the default codec and, called, returns the strict or the default codec', () => {
  assert.equal(typeof jsonCodec, 'function');
  assert.equal(jsonCodec.name, 'json');
  assert.equal(jsonCodec.binary, false);
  assert.deepEqual(Object.keys(jsonCodec), [
    'name',
    'binary',
    'encode',
    'decode',
    'identify',
    'exceedsItems',
  ]);
  assert.ok(Object.isFrozen(jsonCodec));
  assert.equal(jsonCodec(), jsonCodec);
  assert.equal(jsonCodec({}), jsonCodec);
  assert.equal(jsonCodec({ strict: false }), jsonCodec);
  const strict = jsonCodec({ strict: true });
  assert.notEqual(strict, jsonCodec);
  assert.equal(jsonCodec({ strict: true }), strict);
  assert.ok(Object.isFrozen(strict));
  assert.equal(
    jsonCodec.encode([2, 1, 0, { d: new Date(0) }]),
    '[2,1,0,{"d":"1970-01-01T00:00:00.000Z"}]',
  );
  assert.throws(() => jsonCodec({ strict: 'yes' as unknown as boolean }), {
    name: 'TypeError',
    message: 'Cannot create a JSON codec as "strict" must be a boolean: current value is "yes"',
  });
});

test('WSM-APP-007 jsonCodec({ strict: true }) names a circular reference in the frame', () => {
  const self: Record<string, unknown> = {};
  self.self = self;
  assert.throws(() => jsonCodec({ strict: true }).encode([2, 1, 0, { self }]), {
    name: 'TypeError',
    message: 'Cannot encode the frame as strict JSON: a circular reference at [3].self.self',
  });
});

test('WSM-LIM-001 jsonCodec.exceedsItems() counts array elements and object members without parsing, exactly at the boundary', () => {
  const exceeds = jsonCodec.exceedsItems!;
  const bytes = (text: string) => new TextEncoder().encode(text);
  const zeros = (n: number) => JSON.stringify(new Array(n).fill(0));
  // 1,000 zeros: 1,000 items. Text and UTF-8 bytes count alike.
  for (const data of [zeros(1000), bytes(zeros(1000))]) {
    assert.equal(exceeds(data, 1000), false);
    assert.equal(exceeds(data, 999), true);
  }
  // Strings hide their commas, brackets, quotes and escapes; whitespace is no item; `[]` and
  // `{}` hold none. Items: the outer array's 5, `b`, its members `x` and `y`, then 1 and 2: 10.
  const text =
    ' [ "a,b" , "[{\\"]," , { "b" : { "x" : [ 1 , 2 ] , "y" : {} } } , "é,\\\\" , [ ] ] ';
  assert.equal(itemCount(JSON.parse(text)), 10);
  for (const data of [text, bytes(text)]) {
    assert.equal(exceeds(data, 10), false);
    assert.equal(exceeds(data, 9), true);
  }
  // A text no longer than the limit is not counted: every item takes a character.
  assert.equal(exceeds('[0,0,0]', 7), false);
  assert.equal(jsonCodec({ strict: true }).exceedsItems, exceeds);
});

test('WSM-LIM-001 jsonCodec.exceedsItems() agrees with the items of every JSON value', () => {
  fc.assert(
    fc.property(fc.jsonValue(), (value) => {
      const text = JSON.stringify(value);
      const n = itemCount(value);
      // Counted only when the text is longer than the limit: test with a limit below it.
      if (n >= text.length) return;
      assert.equal(jsonCodec.exceedsItems!(text, n), false);
      if (n > 0) assert.equal(jsonCodec.exceedsItems!(text, n - 1), true);
    }),
    { seed: 0x6a736f6e, numRuns: 2000 },
  );
});
