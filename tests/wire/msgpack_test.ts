import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { Decoder, Encoder } from '@msgpack/msgpack';
import { ProtocolError, type Stream, StreamResetError, subprotocol } from 'muxws';
import { msgpackCodec } from 'muxws/msgpack';
import { probe, sessionPair } from '../_session_pair.ts';
import { itemCount } from '../_codecs.ts';

const SEED = Number(globalThis.process?.env?.MUXWS_FC_SEED ?? 0x6d737067);

/** Hand-assembles a message from bytes and byte arrays. */
function bytes(...parts: (number | readonly number[] | Uint8Array)[]): Uint8Array {
  const flat: number[] = [];
  for (const part of parts) {
    if (typeof part === 'number') flat.push(part);
    else flat.push(...part);
  }
  return new Uint8Array(flat);
}

/** A msgpack str (fixstr or str 8) holding `text`. */
function str(text: string): number[] {
  const utf8 = [...new TextEncoder().encode(text)];
  return utf8.length < 32 ? [0xa0 + utf8.length, ...utf8] : [0xd9, utf8.length, ...utf8];
}

function decodeError(data: Uint8Array | string): ProtocolError {
  try {
    msgpackCodec.decode(data);
  } catch (error) {
    assert.ok(error instanceof ProtocolError, `expected ProtocolError, got ${error}`);
    assert.match(error.message, /^Cannot decode msgpack: /);
    return error;
  }
  assert.fail(`decoding ${data} should have thrown`);
}

test('WSM-WIRE-001 msgpackCodec travels as the subprotocol muxws.v1.msgpack', () => {
  assert.equal(msgpackCodec.name, 'msgpack');
  assert.equal(subprotocol(msgpackCodec), 'muxws.v1.msgpack');
});

test('WSM-WIRE-002 msgpackCodec encodes one frame into one binary message', () => {
  assert.equal(msgpackCodec.binary, true);
  const message = msgpackCodec.encode([6]);
  assert.ok(message instanceof Uint8Array);
  assert.deepEqual([...message], [0x91, 0x06]);
});

test('WSM-WIRE-003 msgpackCodec round-trips every frame kind', () => {
  const frames: unknown[][] = [
    [1, 1, 0, { 'content-type': 'text/plain', n: 1 }, 'hello'],
    [1, 2, 1, null, { nested: [1, [2, [3]], { deep: true }] }],
    [2, 3, 0, 'écrit en UTF-8 ✓ 😀'],
    [2, 4, 1, [0, -1, 127, 128, -33, 65535, 65536, 2 ** 40, -(2 ** 40), 1.5, -0.25]],
    [3, 9007199254740991],
    [4, 5, 'too_large', 'The message was 2000000 bytes'],
    [5, 7, 32768],
    [6],
    [7],
    [8, 10, 'restart', 'deploy', 1000],
    [9, 'room:1', { from: 'server' }, { text: 'x'.repeat(300) }],
    [2, 1, 0, null],
    [2, 1, 0, true],
    [2, 1, 0, ''],
    [2, 1, 0, {}],
    [2, 1, 0, []],
  ];
  for (const frame of frames) {
    assert.deepEqual(msgpackCodec.decode(msgpackCodec.encode(frame)), frame);
  }
});

test('WSM-WIRE-003 msgpackCodec maps undefined as JSON does: dropped from objects, null in arrays', () => {
  const decoded = msgpackCodec.decode(
    msgpackCodec.encode([2, 1, 0, { kept: 1, dropped: undefined }, undefined]),
  );
  assert.deepEqual(decoded, [2, 1, 0, { kept: 1 }, null]);
});

test('WSM-WIRE-003 msgpackCodec round-trips any JSON value as JSON would (property)', () => {
  fc.assert(
    fc.property(fc.jsonValue(), (value) => {
      const decoded = msgpackCodec.decode(msgpackCodec.encode([2, 1, 0, value]));
      assert.deepEqual(decoded, [2, 1, 0, JSON.parse(JSON.stringify(value))]);
    }),
    { seed: SEED, numRuns: 2000 },
  );
});

test('WSM-WIRE-003 msgpackCodec keeps Uint8Array payloads as bytes with their own buffer', () => {
  const small = new Uint8Array([0, 1, 2, 254, 255]);
  const large = new Uint8Array(70_000).map((_, i) => i & 0xff); // bin 32
  const message = msgpackCodec.encode([2, 1, 0, { small, large, empty: new Uint8Array(0) }]);
  // Bytes travel as bin, not as an array of numbers: the message is barely larger than them.
  assert.ok(message.length < 70_000 + 5 + 40, `message is ${message.length} bytes`);
  const [, , , payload] = msgpackCodec.decode(message) as [
    number,
    number,
    number,
    Record<string, Uint8Array>,
  ];
  for (
    const [name, sent] of [['small', small], ['large', large], [
      'empty',
      new Uint8Array(0),
    ]] as const
  ) {
    const got = payload[name];
    assert.ok(got instanceof Uint8Array, `${name} is a Uint8Array`);
    assert.deepEqual(got, sent);
    // Its own buffer: not a view into the message, which the receiver may reuse.
    assert.equal(got.byteOffset, 0);
    assert.equal(got.buffer.byteLength, got.byteLength);
  }
  const top = msgpackCodec.decode(msgpackCodec.encode([2, 1, 0, small])) as unknown[];
  assert.deepEqual(top[3], small);
  assert.equal((top[3] as Uint8Array).buffer.byteLength, small.length);
});

test('WSM-WIRE-003 msgpackCodec decodes a view into a larger buffer and copies bytes out of it', () => {
  // Server libraries (ws) may hand a message over as a view into a pooled buffer they reuse.
  const message = msgpackCodec.encode([2, 1, 0, { blob: new Uint8Array([1, 2, 3]) }]) as Uint8Array;
  const pool = new Uint8Array(message.length + 8).fill(0xc1);
  pool.set(message, 3);
  const view = pool.subarray(3, 3 + message.length);
  const [, , , payload] = msgpackCodec.decode(view) as [
    number,
    number,
    number,
    { blob: Uint8Array },
  ];
  assert.deepEqual(payload.blob, new Uint8Array([1, 2, 3]));
  pool.fill(0); // the library reuses its buffer for the next message
  assert.deepEqual(payload.blob, new Uint8Array([1, 2, 3]));
  // A DataView or an ArrayBuffer is accepted as well.
  assert.deepEqual(msgpackCodec.decode(new DataView(message.buffer) as never), [2, 1, 0, {
    blob: new Uint8Array([1, 2, 3]),
  }]);
});

test('WSM-WIRE-003 msgpackCodec sends any ArrayBufferView as its bytes and a Date as a timestamp', () => {
  const words = new Uint16Array([1, 0xffff]);
  const when = new Date(Date.UTC(2026, 10, 30, 5, 0, 0, 123));
  const [, , , payload] = msgpackCodec.decode(
    msgpackCodec.encode([2, 1, 0, { words, when }]),
  ) as [number, number, number, { words: Uint8Array; when: Date }];
  assert.deepEqual(payload.words, new Uint8Array(words.buffer));
  assert.ok(payload.when instanceof Date);
  assert.equal(payload.when.getTime(), when.getTime());
});

test('WSM-WIRE-003 msgpackCodec refuses to encode what MessagePack cannot carry with TypeError', () => {
  assert.throws(() => msgpackCodec.encode([2, 1, 0, 10n]), TypeError);
  assert.throws(() => msgpackCodec.encode([2, 1, 0, Symbol('x')]), TypeError);
  let deep: unknown = null;
  for (let i = 0; i < 10_000; i++) deep = [deep];
  assert.throws(() => msgpackCodec.encode([2, 1, 0, deep]), TypeError);
});

test('WSM-WIRE-008 msgpackCodec decodes a __proto__ key as own data and never pollutes a prototype', () => {
  const polluting = bytes(0x94, 2, 1, 0, 0x81, str('__proto__'), 0x81, str('polluted'), 0xc3);
  const [, , , payload] = msgpackCodec.decode(polluting) as [number, number, number, object];
  assert.equal(Object.getPrototypeOf(payload), Object.prototype);
  assert.deepEqual(Object.keys(payload), ['__proto__']);
  const own = Object.getOwnPropertyDescriptor(payload, '__proto__');
  assert.deepEqual(own?.value, { polluted: true });
  assert.equal(own?.enumerable, true);
  assert.equal(({} as Record<string, unknown>).polluted, undefined);
  assert.equal((payload as Record<string, unknown>).polluted, undefined);
  // The same through str 8, nested in arrays and next to other keys, and for OPEN headers.
  const wide = bytes(
    0x95,
    1,
    1,
    0,
    0x82,
    str('a'),
    1,
    0xd9,
    9,
    ...new TextEncoder().encode('__proto__'),
    0x91,
    0x81,
    str('__proto__'),
    0x81,
    str('polluted'),
    0xc3,
    0x83,
    str('constructor'),
    0x81,
    str('prototype'),
    0x81,
    str('polluted'),
    0xc3,
    str('prototype'),
    1,
    str('__proto__'),
    str('x'),
  );
  const frame = msgpackCodec.decode(wide) as [number, number, number, object, object];
  const headers = frame[3] as Record<string, unknown>;
  assert.equal(headers.a, 1);
  const inner = (Object.getOwnPropertyDescriptor(headers, '__proto__')?.value as unknown[])[0];
  assert.equal(Object.getPrototypeOf(inner), Object.prototype);
  assert.deepEqual(Object.getOwnPropertyDescriptor(inner, '__proto__')?.value, {
    polluted: true,
  });
  const body = frame[4] as Record<string, unknown>;
  assert.equal(Object.getPrototypeOf(body), Object.prototype);
  assert.deepEqual(Object.keys(body).sort(), ['__proto__', 'constructor', 'prototype']);
  assert.equal(Object.getOwnPropertyDescriptor(body, '__proto__')?.value, 'x');
  assert.equal(({} as Record<string, unknown>).polluted, undefined);
  assert.equal(Object.prototype.constructor, Object);
  // A __proto__ key sent by this codec survives the round trip as data too.
  const sent = JSON.parse('{"__proto__":{"polluted":true},"b":2}');
  const [, , , back] = msgpackCodec.decode(msgpackCodec.encode([2, 1, 0, sent])) as unknown[];
  assert.equal(Object.getPrototypeOf(back), Object.prototype);
  assert.deepEqual(Object.keys(back as object).sort(), ['__proto__', 'b']);
  assert.equal(({} as Record<string, unknown>).polluted, undefined);
});

test('WSM-WIRE-008 msgpackCodec decodes nesting 10,000 deep without exhausting the stack', () => {
  // [2, 1, 0, [[[ ... null ... ]]]] and the same with maps {"a": {"a": ...}}.
  const arrays = bytes(0x94, 2, 1, 0, new Array(10_000).fill(0x91), 0xc0);
  const maps = bytes(0x94, 2, 1, 0, new Array(10_000).fill([0x81, 0xa1, 0x61]).flat(), 0xc0);
  for (const message of [arrays, maps]) {
    const frame = msgpackCodec.decode(message) as unknown[];
    let depth = 0;
    for (
      let value = frame[3];
      value !== null;
      value = Array.isArray(value) ? value[0] : (value as { a: unknown }).a
    ) {
      depth++;
    }
    assert.equal(depth, 10_000);
  }
  // With a __proto__ key or bytes at the bottom, the repair walk is iterative too.
  const deepProto = bytes(
    0x94,
    2,
    1,
    0,
    new Array(10_000).fill(0x91),
    0x81,
    str('__proto__'),
    0xc4,
    1,
    7,
  );
  assert.ok(Array.isArray((msgpackCodec.decode(deepProto) as unknown[])[3]));
});

test('WSM-WIRE-007 msgpackCodec.decode throws ProtocolError for anything but one well-formed value', () => {
  const cases: [string, Uint8Array | string, RegExp][] = [
    ['an empty message', bytes(), /ends inside a value/],
    ['a text message', '[6]', /expected a binary message, found a text message/],
    ['the never-used type byte', bytes(0x91, 0xc1), /unknown type byte 0xc1/],
    [
      'a truncated array',
      bytes(0x94, 2, 1, 0),
      /declares 4 items but only 3 bytes remain at byte 0/,
    ],
    ['a truncated string', bytes(0x92, 2, 0xd9, 200, 0x61), /declares 200 bytes but 1 remain/],
    ['a truncated uint 32', bytes(0x92, 3, 0xce, 0, 0), /ends inside a value/],
    ['trailing bytes', bytes(0x91, 6, 0x07), /1 extra bytes follow the value/],
    ['two frames in one message', bytes(0x91, 6, 0x91, 7), /2 extra bytes/],
    ['an unknown extension type', bytes(0x91, 0xd4, 0x05, 0x00), /extension type 5/],
    ['a timestamp of the wrong size', bytes(0x91, 0xd5, 0xff, 0, 0), /4, 8 or 12 bytes/],
    ['a nil map key', bytes(0x91, 0x81, 0xc0, 1), /map key must be a string or a number/],
    ['an array map key', bytes(0x91, 0x81, 0x90, 1), /map key must be a string or a number/],
    ['a bin map key', bytes(0x91, 0x81, 0xc4, 0, 1), /map key must be a string or a number/],
    ['an array32 claiming 4 billion items', bytes(0xdd, 0xff, 0xff, 0xff, 0xff), /declares/],
    ['a map32 claiming 4 billion entries', bytes(0xdf, 0xff, 0xff, 0xff, 0xff), /declares/],
  ];
  for (const [what, data, message] of cases) {
    const error = decodeError(data);
    assert.match(error.message, message, what);
  }
});

test('WSM-WIRE-007 msgpackCodec rejects nested length headers before the decoder preallocates', () => {
  // 2,000 nested array 32 headers, each claiming 1,048,576 items: undefended, the decoder would
  // preallocate 2,000 arrays of a million slots (gigabytes) before noticing the message ends.
  const header = [0xdd, 0x00, 0x10, 0x00, 0x00];
  const message = bytes(new Array(2_000).fill(header).flat());
  const started = performance.now();
  const error = decodeError(message);
  assert.match(error.message, /declares 1048576 items but only 9995 bytes remain at byte 0/);
  assert.ok(performance.now() - started < 500, 'rejected without building anything');
  // Claims that do fit one by one but not together are rejected too.
  const together = bytes(0x92, 0xdc, 0x00, 0x05, 0xdc, 0x00, 0x05, 1, 2, 3, 4, 5, 6);
  assert.match(decodeError(together).message, /declares 5 items but only 6 bytes remain at byte 4/);
});

test('WSM-WIRE-007 msgpackCodec.decode of arbitrary bytes returns or throws ProtocolError, agreeing with the library (property)', () => {
  const library = new Decoder();
  const encoder = new Encoder();
  const mutated = fc.tuple(fc.jsonValue({ maxDepth: 4 }), fc.nat(), fc.nat(255), fc.nat(3)).map(
    ([value, at, byte, how]) => {
      const encoded = encoder.encode([2, 1, 0, value]);
      const i = encoded.length === 0 ? 0 : at % encoded.length;
      if (how === 0) return encoded.subarray(0, i); // truncated
      if (how === 1) return bytes(encoded, byte); // one byte too many
      const copy = encoded.slice();
      copy[i] = byte; // one byte changed
      return copy;
    },
  );
  const inputs = fc.oneof(fc.uint8Array({ maxLength: 64 }), mutated);
  let accepted = 0;
  fc.assert(
    fc.property(inputs, (data) => {
      let ours: unknown;
      try {
        ours = msgpackCodec.decode(data);
      } catch (error) {
        assert.ok(error instanceof ProtocolError, `threw ${error}`);
        return;
      }
      accepted++;
      // What this codec accepts, the library decodes to the same value.
      assert.deepEqual(ours, library.decode(data));
    }),
    { seed: SEED, numRuns: 20_000 },
  );
  assert.ok(accepted > 1000, `only ${accepted} inputs decoded`);
  assert.equal(({} as Record<string, unknown>).polluted, undefined);
});

test('WSM-WIRE-007 msgpackCodec.identify names the OPEN or DATA frame at the start of a damaged message', () => {
  const identify = msgpackCodec.identify!;
  // [2, 5, 0, <never-used byte>]
  const damaged = bytes(0x94, 2, 5, 0, 0xc1);
  decodeError(damaged);
  assert.deepEqual(identify(damaged), [2, 5]);
  assert.deepEqual(identify(bytes(0x95, 1, 0xcd, 0x01, 0x00, 0, 0xc1)), [1, 256]);
  assert.deepEqual(identify(bytes(0xdc, 0, 4, 2, 0xce, 0, 1, 0, 0, 0xc1)), [2, 65536]);
  assert.deepEqual(
    identify(bytes(0x94, 2, 0xcf, 0, 0x1f, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xc1)),
    [2, Number.MAX_SAFE_INTEGER],
  );
  assert.equal(identify(bytes(0x94, 2, 0xcf, 0, 0x20, 0, 0, 0, 0, 0, 0, 0xc1)), undefined);
  assert.equal(identify(bytes(0x92, 3, 5)), undefined); // END is not identified
  assert.equal(identify(bytes(0x94, 2, 0, 0)), undefined); // id 0 is not a stream
  // A signed integer type with a positive value is an id too, as it is in a whole frame.
  assert.deepEqual(identify(bytes(0x94, 2, 0xd0, 5)), [2, 5]);
  assert.deepEqual(identify(bytes(0x94, 2, 0xd1, 0x01, 0x00, 0xc1)), [2, 256]);
  assert.deepEqual(identify(bytes(0x95, 1, 0xd2, 0, 1, 0, 0, 0xc1)), [1, 65536]);
  assert.deepEqual(identify(bytes(0x94, 2, 0xd3, 0, 0, 0, 0, 0, 0, 0, 7, 0xc1)), [2, 7]);
  assert.deepEqual(identify(bytes(0xdd, 0, 0, 0, 4, 2, 9, 0xc1)), [2, 9]);
  assert.deepEqual(identify(bytes(0x93, 2, 9, 0xc1)), [2, 9]); // at least 3 items announced
  assert.equal(identify(bytes(0x92, 2, 9, 0xc1)), undefined); // fewer: no OPEN or DATA
  assert.equal(identify(bytes(0x90, 2, 9, 0, 0xc1)), undefined);
  assert.equal(identify(bytes(0xdc, 0, 2, 2, 9, 0xc1)), undefined);
  assert.equal(identify(bytes(0xdc, 0)), undefined); // a cut array 16 header
  assert.equal(identify(bytes(0x94, 2, 0xd0, 0xfb, 0xc1)), undefined); // a negative id
  assert.equal(identify(bytes(0x94, 2, 0xd3, 0xff, 0, 0, 0, 0, 0, 0, 7, 0xc1)), undefined);
  assert.equal(identify(bytes(0x94, 2, 0xcb, 0x40, 0x14, 0, 0, 0, 0, 0, 0, 0xc1)), undefined); // 5.0
  assert.equal(identify(bytes(0x94, 2, 0xa1, 0x35, 0xc1)), undefined); // the string "5"
  assert.equal(identify(bytes(0x94, 0xd0, 2, 5, 0xc1)), undefined); // the kind must be a fixint
  assert.equal(identify(bytes(0x94, 2, 0xcd, 0x01)), undefined); // a cut id
  assert.equal(identify(bytes(0x94, 2)), undefined);
  assert.equal(identify(bytes()), undefined);
  assert.equal(identify('[2,5,0,'), undefined);
});

test('WSM-WIRE-008 a msgpack payload nested 10,000 deep resets its stream with decode, no RangeError escaping', async () => {
  const streams: Stream[] = [];
  using p = probe('acceptor', {
    codec: msgpackCodec,
    onStream: (s) => (streams.push(s), new Promise(() => {})),
  });
  p.session.receive(msgpackCodec.encode([1, 1, 0, null, 'first']));
  assert.equal(streams.length, 1);
  // [2, 1, 0, [[[ ... 10,000 deep ... ]]]]: 10,005 bytes, far below maxMessageBytes.
  p.session.receive(bytes(0x94, 2, 1, 0, new Array(10_000).fill(0x91), 0xc0));
  assert.equal((p.sent.at(-1) as unknown[])[0], 4);
  assert.deepEqual((p.sent.at(-1) as unknown[]).slice(0, 3), [4, 1, 'decode']);
  await assert.rejects(
    streams[0].closed,
    (e: unknown) => e instanceof StreamResetError && e.code === 'decode',
  );
  // The same depth in an OPEN refuses that stream with decode; nothing counts as malformed.
  p.session.receive(
    bytes(0x95, 1, 3, 0, 0xc0, new Array(10_000).fill([0x81, 0xa1, 0x61]).flat(), 1),
  );
  assert.deepEqual((p.sent.at(-1) as unknown[]).slice(0, 3), [4, 3, 'decode']);
  assert.equal(streams.length, 1);
  assert.equal(p.session.protocolErrors, 0);
  assert.equal(p.closes.length, 0);
});

test('WSM-WIRE-007 an undecodable msgpack DATA resets only its stream with decode; unidentifiable bytes are malformed', async () => {
  const streams: Stream[] = [];
  using p = probe('acceptor', {
    codec: msgpackCodec,
    onStream: (s) => (streams.push(s), new Promise(() => {})),
  });
  p.session.receive(msgpackCodec.encode([1, 1, 0, null, 'a']));
  p.session.receive(msgpackCodec.encode([1, 3, 0, null, 'b']));
  // DATA on stream 1 whose payload is 2,000 nested array 32 headers claiming a million items.
  p.session.receive(bytes(0x94, 2, 1, 0, new Array(2_000).fill([0xdd, 0, 0x10, 0, 0]).flat()));
  assert.deepEqual((p.sent.at(-1) as unknown[]).slice(0, 3), [4, 1, 'decode']);
  await assert.rejects(
    streams[0].closed,
    (e: unknown) => e instanceof StreamResetError && e.code === 'decode',
  );
  assert.equal(p.session.protocolErrors, 0);
  // Stream 3 is untouched and still delivers.
  p.session.receive(msgpackCodec.encode([2, 3, 1, new Uint8Array([9])]));
  const reader = streams[1].readable.getReader();
  assert.deepEqual((await reader.read()).value, new Uint8Array([9]));
  // A message naming no stream, and a text message, are malformed: dropped and reported.
  p.session.receive(bytes(0xc1));
  p.session.receive('[6]');
  assert.equal(p.session.protocolErrors, 2);
  assert.ok(p.log.errors.every((e) => e instanceof ProtocolError));
  assert.equal(p.closes.length, 0);
});

test('WSM-WIRE-003 Uint8Array payloads and headers travel as bytes between two msgpack sessions', async () => {
  using pair = sessionPair({
    codec: msgpackCodec,
    acceptor: {
      onStream: (s) => ({
        echoed: s.payload,
        header: (s.headers as { key: Uint8Array }).key,
        length: (s.payload as Uint8Array).byteLength,
      }),
    },
  });
  const image = new Uint8Array(100_000).map((_, i) => (i * 7) & 0xff);
  const answer = await pair.dialer.request(image, {
    headers: { key: new Uint8Array([1, 2]) },
  }) as { echoed: Uint8Array; header: Uint8Array; length: number };
  assert.equal(answer.length, 100_000);
  assert.ok(answer.echoed instanceof Uint8Array);
  assert.deepEqual(answer.echoed, image);
  assert.deepEqual(answer.header, new Uint8Array([1, 2]));
  // Bytes cost about their own size in the message, as flow-control units count it.
  const sent = pair.client.sent[0] as Uint8Array;
  assert.ok(sent.byteLength < 100_000 + 64, `OPEN is ${sent.byteLength} bytes`);
});

test('WSM-LIM-001 msgpackCodec.exceedsItems() counts what the containers declare before anything is built, exactly at the boundary', () => {
  const exceeds = msgpackCodec.exceedsItems!;
  // An array 16 of 1,000 nils: 1,000 items.
  const nils = bytes(0xdc, 0x03, 0xe8, new Array(1000).fill(0xc0));
  assert.equal(exceeds(nils, 1000), false);
  assert.equal(exceeds(nils, 999), true);
  // 300 empty maps in a map of one entry: 301 items; a map entry (key and value) is one.
  const maps = bytes(0x81, 0xa1, 0x6b, 0xdc, 0x01, 0x2c, new Array(300).fill(0x80));
  assert.equal(exceeds(maps, 301), false);
  assert.equal(exceeds(maps, 300), true);
  // An array that declares 2^32 - 1 items is over the limit on its header alone.
  assert.equal(exceeds(bytes(0xdd, 0xff, 0xff, 0xff, 0xff, new Array(100).fill(0xc0)), 99), true);
  // Malformed bytes and text are for decode to refuse; a message no longer than the limit is
  // not counted.
  assert.equal(exceeds(bytes(0xc1, new Array(100).fill(0)), 10), false);
  assert.equal(exceeds('[0,0,0,0]', 1), false);
  assert.equal(exceeds(bytes(0x93, 0xc0, 0xc0, 0xc0), 4), false);
});

test('WSM-LIM-001 msgpackCodec.exceedsItems() agrees with the items of every value it decodes', () => {
  fc.assert(
    fc.property(fc.jsonValue(), (value) => {
      const data = msgpackCodec.encode([value]) as Uint8Array;
      const n = itemCount(msgpackCodec.decode(data));
      if (n >= data.byteLength) return;
      assert.equal(msgpackCodec.exceedsItems!(data, n), false);
      assert.equal(msgpackCodec.exceedsItems!(data, n - 1), true);
    }),
    { seed: SEED, numRuns: 2000 },
  );
});
