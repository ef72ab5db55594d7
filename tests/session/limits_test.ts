import { test } from 'node:test';
import assert from 'node:assert/strict';
import { type Codec, DEFAULT_LIMITS, jsonCodec, resolveLimits, type Stream } from 'muxws';
import { msgpackCodec } from '../../lib/wire/msgpack.ts';
import { codecs } from '../_codecs.ts';
import { JSON_CODEC } from '../../lib/wire/json.ts';
import { Session } from '../../lib/session/session.ts';
import { probe } from '../_session_pair.ts';

test('WSM-ACC-006 DEFAULT_LIMITS are the documented defaults and frozen', () => {
  assert.deepEqual({ ...DEFAULT_LIMITS }, {
    maxStreams: 100,
    maxMessageBytes: 1048576,
    maxMessageItems: 65536,
    maxHelloBytes: 65536,
    maxProtocolErrors: 16,
    maxDepth: 64,
    maxResetRate: 200,
    highWaterMark: 1048576,
    maxBufferedBytes: 8388608,
  });
  assert.ok(Object.isFrozen(DEFAULT_LIMITS));
});

test('WSM-ACC-006 resolveLimits() fills the defaults and keeps the given values', () => {
  assert.deepEqual(resolveLimits(), { ...DEFAULT_LIMITS });
  assert.deepEqual(resolveLimits({}), { ...DEFAULT_LIMITS });
  const limits = resolveLimits({ maxStreams: 5, highWaterMark: 10, maxDepth: undefined });
  assert.equal(limits.maxStreams, 5);
  assert.equal(limits.highWaterMark, 10);
  assert.equal(limits.maxDepth, 64);
  assert.notEqual(resolveLimits(), resolveLimits());
});

test('WSM-ACC-006 resolveLimits() throws RangeError naming the field and the value', () => {
  const cases: [string, unknown, string][] = [
    ['maxStreams', 0, '0'],
    ['maxMessageBytes', -1, '-1'],
    ['maxDepth', 1.5, '1.5'],
    ['maxResetRate', NaN, 'NaN'],
    ['highWaterMark', Infinity, 'Infinity'],
    ['maxProtocolErrors', '16', '"16"'],
    ['maxStreams', 2 ** 53, String(2 ** 53)],
    ['maxMessageItems', 0, '0'],
    ['maxHelloBytes', 65.5, '65.5'],
  ];
  for (const [field, value, shown] of cases) {
    assert.throws(() => resolveLimits({ [field]: value }), {
      name: 'RangeError',
      message:
        `Cannot create Limits as "${field}" must be a positive integer: current value is ${shown}`,
    });
  }
});

test('WSM-ACC-006 resolveLimits() throws TypeError for a non-object or an unknown field', () => {
  assert.throws(() => resolveLimits(5 as never), TypeError);
  assert.throws(() => resolveLimits(null as never), TypeError);
  assert.throws(() => resolveLimits({ maxStream: 5 } as never), /"maxStream" is not a limit/);
});

test('resolveLimits() requires maxBufferedBytes above highWaterMark, naming both (WSM-LIM-002)', () => {
  assert.throws(() => resolveLimits({ highWaterMark: 8 * 1024 * 1024 }), {
    name: 'RangeError',
    message:
      'Cannot create Limits as "maxBufferedBytes" must be above highWaterMark: current value is 8388608',
  });
  assert.equal(
    resolveLimits({ highWaterMark: 16_000_000, maxBufferedBytes: 64_000_000 }).maxBufferedBytes,
    64_000_000,
  );
});

/** The codec of `inner` without `exceedsItems`: the session counts the decoded value instead. */
function uncounting(inner: Codec): Codec {
  return {
    name: inner.name,
    binary: inner.binary,
    encode: inner.encode,
    decode: (data) => inner.decode(data),
  };
}

/** An OPEN of stream `id` whose payload is `n` zeros: the frame's 5 items plus `n`. */
function openWithItems(codec: Codec, id: number, n: number): string | Uint8Array {
  return codec.encode([1, id, 0, null, new Array(n).fill(0)]);
}

for (const codec of [...codecs, uncounting(jsonCodec), uncounting(msgpackCodec)]) {
  const c = `[${codec.name}${codec.exceedsItems === undefined ? ', counted after decoding' : ''}]`;

  for (const [side, code] of [['acceptor', 1009], ['dialer', 4009]] as const) {
    test(`WSM-LIM-001 ${c} a message of maxMessageItems items passes and one more item closes the ${side} with ${code}`, () => {
      const opened: Stream[] = [];
      using p = probe(side, {
        codec,
        limits: { maxMessageItems: 100 },
        onStream: (stream) => (opened.push(stream), new Promise(() => {})),
      });
      const first = side === 'acceptor' ? 1 : 2;
      p.session.receive(openWithItems(codec, first, 95)); // 100 items
      assert.equal(opened.length, 1);
      assert.equal(p.closes.length, 0);
      p.session.receive(openWithItems(codec, first + 2, 96)); // 101 items
      assert.equal(opened.length, 1);
      assert.deepEqual(p.closes, [{ code, reason: 'message holding more than 100 items' }]);
      assert.equal(p.session.protocolErrors, 0);
    });
  }

  test(`WSM-LIM-001 ${c} before a required hello every message counts against maxHelloBytes and one item per 16 of its bytes`, () => {
    const opened: Stream[] = [];
    const options = {
      codec,
      helloPending: true,
      onHello: (stream: Stream) => (opened.push(stream), new Promise(() => {})),
    };
    // 1024 bytes allow 64 items: a hello of 64 items passes, of 65 closes with 1009.
    {
      using p = probe('acceptor', { ...options, limits: { maxHelloBytes: 1024 } });
      p.session.receive(codec.encode([1, 1, 2, null, new Array(59).fill(0)]));
      assert.equal(opened.length, 1);
      assert.equal(p.closes.length, 0);
    }
    {
      using p = probe('acceptor', { ...options, limits: { maxHelloBytes: 1024 } });
      p.session.receive(codec.encode([1, 1, 2, null, new Array(60).fill(0)]));
      assert.deepEqual(p.closes, [{ code: 1009, reason: 'message holding more than 64 items' }]);
    }
    // Any message over maxHelloBytes closes, the hello's or another's, before it is decoded.
    for (const frame of [[1, 1, 2, null, 'x'.repeat(1024)], [1, 3, 0, null, 'x'.repeat(1024)]]) {
      using p = probe('acceptor', { ...options, limits: { maxHelloBytes: 1024 } });
      p.session.receive(codec.encode(frame));
      assert.deepEqual(p.closes, [{ code: 1009, reason: 'message larger than 1024 bytes' }]);
      assert.equal(opened.length, 1);
    }
    // The smaller of the two limits applies; and once no hello is pending, maxHelloBytes does not.
    {
      using p = probe('acceptor', {
        ...options,
        limits: { maxHelloBytes: 1024, maxMessageBytes: 512 },
      });
      p.session.receive(codec.encode([1, 1, 2, null, 'x'.repeat(600)]));
      assert.deepEqual(p.closes, [{ code: 1009, reason: 'message larger than 512 bytes' }]);
    }
    {
      using p = probe('acceptor', {
        ...options,
        helloPending: false,
        limits: { maxHelloBytes: 1024 },
      });
      p.session.receive(codec.encode([1, 1, 2, null, 'x'.repeat(2000)]));
      p.session.receive(codec.encode([1, 3, 0, null, new Array(500).fill(0)]));
      assert.equal(p.closes.length, 0);
    }
  });
}

test('WSM-LIM-001 [json] the default codec is counted before it is decoded by the acceptor, and after by a dialer', () => {
  // 101 items, then the text breaks off: counted first, it closes; decoded first, it cannot be.
  const broken = '[1,1,0,null,[' + '0,'.repeat(96);
  {
    using p = probe('acceptor', { codec: JSON_CODEC, limits: { maxMessageItems: 100 } });
    p.session.receive(broken);
    assert.deepEqual(p.closes, [{ code: 1009, reason: 'message holding more than 100 items' }]);
  }
  {
    const closes: { code: number; reason: string }[] = [];
    const dialer = new Session(
      { send() {}, close: (code, reason) => closes.push({ code, reason }) },
      { side: 'dialer', codec: JSON_CODEC, onError() {}, limits: { maxMessageItems: 100 } },
    );
    dialer.receive(broken);
    assert.equal(dialer.protocolErrors, 1);
    assert.equal(closes.length, 0);
    dialer.receive('[7,' + '0,'.repeat(100) + '0]');
    assert.deepEqual(closes, [{ code: 4009, reason: 'message holding more than 100 items' }]);
  }
});
