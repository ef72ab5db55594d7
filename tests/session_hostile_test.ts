import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ProtocolError, StreamResetError } from 'muxws';
import type { Stream } from 'muxws';
import { fakeTime } from './_fake_time.ts';
import { codecs } from './_codecs.ts';
import { probe, sessionPair, settle } from './_session_pair.ts';

/** A message `[kind, 1, 0, (null,) <depth nested arrays>]` built by hand, past any encoder's limit. */
function deepMessage(codecName: string, kind: 1 | 2, depth: number): string | Uint8Array {
  if (codecName === 'json') {
    return `[${kind},1,0,${kind === 1 ? 'null,' : ''}` + '['.repeat(depth) + ']'.repeat(depth) +
      ']';
  }
  if (codecName === 'msgpack') {
    const head = kind === 1 ? [0x95, 1, 1, 0, 0xc0] : [0x94, 2, 1, 0];
    const bytes = new Uint8Array(head.length + depth + 1);
    bytes.set(head);
    bytes.fill(0x91, head.length, head.length + depth); // fixarray of one element
    bytes[bytes.length - 1] = 0x90; // the innermost: an empty array
    return bytes;
  }
  throw new Error(`No hand-built deep message for codec ${codecName}`);
}

for (const codec of codecs) {
  const c = `[${codec.name}]`;
  const feed = (session: { receive(d: string | ArrayBufferView): void }, frame: unknown[]) =>
    session.receive(codec.encode(frame) as string);

  for (const [side, code] of [['acceptor', 1002], ['dialer', 4002]] as const) {
    test(`WSM-WIRE-007 ${c} the 17th malformed message closes the ${side} with ${code}; 16 do not`, () => {
      using p = probe(side, { codec });
      for (let i = 0; i < 16; i++) feed(p.session, [99, i]);
      assert.equal(p.session.isClosed, false);
      assert.equal(p.log.errors.length, 16);
      feed(p.session, [1]);
      assert.equal(p.session.isClosed, true);
      assert.deepEqual(p.closes.map((x) => x.code), [code]);
      assert.deepEqual(p.log.closes.map((x) => [x.code, x.local]), [[code, true]]);
    });
  }

  test(`WSM-ACC-006 ${c} good traffic never resets the protocol-error count`, () => {
    using p = probe('acceptor', { codec, limits: { maxProtocolErrors: 2 }, onStream: () => 1 });
    feed(p.session, [0]);
    for (let id = 1; id < 200; id += 2) feed(p.session, [1, id, 1, null, 'ok']);
    feed(p.session, [0]);
    assert.equal(p.session.isClosed, false);
    feed(p.session, [0]);
    assert.deepEqual(p.closes.map((x) => x.code), [1002]);
  });

  for (const [side, code] of [['acceptor', 1009], ['dialer', 4009]] as const) {
    test(`WSM-WIRE-007 ${c} a message over maxMessageBytes closes the ${side} with ${code} before decoding`, () => {
      let decoded = 0;
      const counting = {
        ...codec,
        decode: (d: string | Uint8Array) => (decoded++, codec.decode(d)),
      };
      using p = probe(side, { codec: counting, limits: { maxMessageBytes: 1000 } });
      feed(p.session, [7]);
      assert.equal(decoded, 1);
      p.session.receive(codec.encode([2, 1, 0, 'x'.repeat(1000)]) as string);
      assert.equal(decoded, 1);
      assert.deepEqual(p.closes.map((x) => x.code), [code]);
    });
  }

  test(`WSM-WIRE-007 ${c} the size limit counts UTF-8 bytes of a text message`, () => {
    using p = probe('acceptor', { codec, limits: { maxMessageBytes: 100 } });
    p.session.receive('€'.repeat(34)); // 34 characters, 102 bytes
    assert.deepEqual(p.closes.map((x) => x.code), [1009]);
  });

  test(`WSM-ACC-006 ${c} stream 101 over maxStreams is refused, which is no reset by the other side`, () => {
    using p = probe('acceptor', { codec, onStream: () => new Promise(() => {}) });
    for (let i = 0; i < 100; i++) feed(p.session, [1, 2 * i + 1, 0, null, i]);
    assert.equal(p.session.activeStreams, 100);
    assert.equal(p.sent.length, 0);
    feed(p.session, [1, 201, 0, null, 'one too many']);
    assert.deepEqual(p.sent, [[4, 201, 'refused', 'Too many streams: the limit is 100']]);
    feed(p.session, [4, 201, 'cancel', '']); // ignored: finished id
    assert.equal(p.session.protocolErrors, 0);
    feed(p.session, [4, 1, 'cancel', '']); // frees one slot
    feed(p.session, [1, 203, 0, null, 'fits again']);
    assert.equal(p.session.activeStreams, 100);
    assert.equal(p.sent.length, 1);
  });

  test(`WSM-ACC-006 ${c} maxStreams counts only streams the other side opened`, () => {
    using p = probe('acceptor', {
      codec,
      limits: { maxStreams: 1 },
      onStream: () => new Promise(() => {}),
    });
    for (let i = 0; i < 5; i++) p.session.open(i);
    feed(p.session, [1, 1, 0, null, 'a']);
    assert.equal(p.session.activeStreams, 6);
    feed(p.session, [1, 3, 0, null, 'b']);
    assert.deepEqual(p.sent.at(-1), [4, 3, 'refused', 'Too many streams: the limit is 1']);
  });

  for (const [side, code] of [['acceptor', 1008], ['dialer', 4002]] as const) {
    test(`WSM-ACC-006 ${c} more than 200 streams opened and reset within one second close the ${side} with ${code}`, () => {
      using clock = fakeTime();
      using p = probe(side, { codec, onStream: () => new Promise(() => {}) });
      const first = side === 'acceptor' ? 1 : 2;
      let id = first;
      for (let i = 0; i < 200; i++, id += 2) {
        feed(p.session, [1, id, 0, null, i]);
        feed(p.session, [4, id, 'cancel', '']);
        clock.tick(4); // 200 resets over 796 ms
      }
      assert.equal(p.session.isClosed, false);
      feed(p.session, [1, id, 0, null, 'the 201st']);
      feed(p.session, [4, id, 'cancel', '']);
      assert.equal(p.session.isClosed, true);
      assert.deepEqual(p.closes.map((x) => x.code), [code]);
    });
  }

  for (const [side, code] of [['acceptor', 1008], ['dialer', 4002]] as const) {
    test(`WSM-ACC-006 ${c} streams this ${side} is provoked into resetting (decode, flow) count toward the reset rate: MadeYouReset closes with ${code}`, () => {
      using clock = fakeTime();
      const started: Stream[] = [];
      using p = probe(side, { codec, onStream: (s) => (started.push(s), new Promise(() => {})) });
      const deepPayload = (() => {
        let v: unknown = 0;
        for (let i = 0; i < 70; i++) v = [v];
        return v;
      })();
      const big = 'b'.repeat(40_000);
      let id = side === 'acceptor' ? 1 : 2;
      for (let i = 0; i < 200; i++, id += 2) {
        feed(p.session, [1, id, 0, null, i]);
        if (i % 2 === 0) {
          feed(p.session, [2, id, 0, deepPayload]); // decode reset, sent by this side
        } else {
          feed(p.session, [2, id, 0, big]);
          feed(p.session, [2, id, 0, big]); // credit now negative: allowed overshoot
          feed(p.session, [2, id, 0, big]); // beyond the window: flow reset
        }
        clock.tick(4);
      }
      assert.equal(p.session.isClosed, false);
      assert.equal(p.session.activeStreams, 0);
      feed(p.session, [1, id, 0, null, 'the 201st']);
      feed(p.session, [2, id, 0, deepPayload]);
      assert.equal(p.session.isClosed, true);
      assert.deepEqual(p.closes.map((x) => x.code), [code]);
      assert.equal(started.length, 201); // handlers started: bounded by the limit, then closed
    });
  }

  test(`WSM-ACC-006 ${c} 200 resets a second, sustained, stay under the reset-rate limit`, () => {
    using clock = fakeTime();
    using p = probe('acceptor', { codec, onStream: () => new Promise(() => {}) });
    let id = 1;
    for (let i = 0; i < 1000; i++, id += 2) {
      feed(p.session, [1, id, 0, null, i]);
      feed(p.session, [4, id, 'cancel', '']);
      clock.tick(5); // exactly 200 per second
    }
    assert.equal(p.session.isClosed, false);
  });

  test(`WSM-ACC-006 ${c} streams this side resets, or the other side refused, do not count toward the reset rate`, () => {
    using p = probe('acceptor', {
      codec,
      limits: { maxResetRate: 3 },
      onStream: (s) => s.reset('cancel'),
    });
    for (let i = 0; i < 10; i++) {
      feed(p.session, [1, 2 * i + 1, 0, null, i]);
      feed(p.session, [4, 2 * i + 1, 'cancel', '']);
    }
    assert.equal(p.session.isClosed, false);
  });

  test(`WSM-WIRE-008 ${c} nesting 10,000 deep is a decode reset of its stream, never a RangeError`, async () => {
    const streams: Stream[] = [];
    using p = probe('acceptor', {
      codec,
      onStream: (s) => (streams.push(s), new Promise(() => {})),
    });
    feed(p.session, [1, 1, 0, null, 'x']);
    p.session.receive(deepMessage(codec.name, 2, 10_000) as string);
    await assert.rejects(
      streams[0].closed,
      (e: unknown) => e instanceof StreamResetError && e.code === 'decode',
    );
    assert.deepEqual(p.sent.at(-1), [4, 1, 'decode', 'A payload could not be decoded']);
    assert.equal(p.session.isClosed, false);
    for (const error of p.log.errors) assert.ok(!(error instanceof RangeError));
  });

  test(`WSM-WIRE-008 ${c} an OPEN nested 100,000 deep is refused with decode`, () => {
    using p = probe('acceptor', { codec, onStream: () => 1 });
    p.session.receive(deepMessage(codec.name, 1, 100_000) as string);
    assert.equal(p.sent.length, 1);
    assert.deepEqual((p.sent[0] as unknown[]).slice(0, 3), [4, 1, 'decode']);
    assert.equal(p.session.protocolErrors, 0);
    assert.equal(p.session.isClosed, false);
  });

  test(`WSM-WIRE-007 ${c} arbitrary garbage is one protocol error each, never an exception`, () => {
    using p = probe('dialer', { codec, limits: { maxProtocolErrors: 100 } });
    const garbage: (string | Uint8Array)[] = [
      '',
      '{',
      'null',
      '"str"',
      '[',
      '\u0000',
      new Uint8Array([0xff, 0xfe, 0xfd]),
      new Uint8Array(0),
    ];
    for (const g of garbage) p.session.receive(g);
    assert.equal(p.session.protocolErrors, garbage.length);
    for (const error of p.log.errors) assert.ok(error instanceof ProtocolError);
  });
}

test('WSM-WIRE-007 [json] a message whose prefix names a live stream resets only that stream with decode', async () => {
  const streams: Stream[] = [];
  using p = probe('acceptor', { onStream: (s) => (streams.push(s), new Promise(() => {})) });
  p.session.receive('[1,1,0,null,"a"]');
  p.session.receive('[1,3,0,null,"b"]');
  p.session.receive('[2,1,0,{"broken": tru');
  await assert.rejects(
    streams[0].closed,
    (e: unknown) => e instanceof StreamResetError && e.code === 'decode',
  );
  assert.deepEqual(p.sent, [[4, 1, 'decode', 'A payload could not be decoded']]);
  assert.equal(p.session.protocolErrors, 0);
  assert.equal(p.session.activeStreams, 1);
  p.session.receive('[2,1,0,garbage'); // stream 1 is finished now: ignored
  assert.equal(p.session.protocolErrors, 0);
  p.session.receive('[1,5,0,null,garbage'); // a new stream's OPEN: refused with decode
  assert.deepEqual(p.sent.at(-1), [4, 5, 'decode', 'The OPEN could not be decoded']);
  p.session.receive('[2,7,0,garbage'); // never opened: malformed
  p.session.receive('[1,4,0,null,garbage'); // wrong parity: malformed
  assert.equal(p.session.protocolErrors, 2);
});

test('WSM-WIRE-008 [json] a deep value cannot make receive() throw on any runtime, even at 1,000,000 levels', () => {
  using p = probe('acceptor', { onStream: () => 1, limits: { maxMessageBytes: 4_000_000 } });
  const text = '[2,1,0,' + '['.repeat(1_000_000) + ']'.repeat(1_000_000) + ']';
  assert.doesNotThrow(() => p.session.receive(text));
  assert.equal(p.session.protocolErrors, 1); // stream 1 was never opened
  for (const error of p.log.errors) assert.ok(!(error instanceof RangeError));
});

test('WSM-STR-006 [json] a sink whose send throws ends the session; nothing hangs', async () => {
  using pair = sessionPair({ acceptor: { onStream: () => new Promise(() => {}) } });
  const stream = pair.dialer.open('x');
  await settle();
  pair.client.send = () => {
    throw new Error('socket gone');
  };
  await assert.rejects(stream.write('y'), StreamResetError);
  assert.equal(pair.dialer.isClosed, true);
  assert.equal(pair.log.dialer.closes.length, 1);
});
