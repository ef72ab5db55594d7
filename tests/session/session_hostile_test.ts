import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ProtocolError, StreamResetError } from 'muxws';
import type { Codec, Stream } from 'muxws';
import { fakeTime } from '../_fake_time.ts';
import { codecs } from '../_codecs.ts';
import { type Probe, probe, sessionPair, settle } from '../_session_pair.ts';
import { streamHandler } from '../../lib/routes/route_streams.ts';
import type { StandardSchemaV1 } from '../../lib/routes/api.ts';
import { goAway } from '../../lib/session/acceptor_api.ts';

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

/** The OPEN `[1, id, 0, null, 0]` with its payload replaced by bytes the codec cannot decode. */
function undecodableOpen(codec: Codec, id: number): string | Uint8Array {
  const whole = codec.encode([1, id, 0, null, 0]);
  if (typeof whole === 'string') return whole.slice(0, -2) + 'tru'; // `…,null,tru`
  const bytes = whole.slice();
  bytes[bytes.length - 1] = 0xc1; // a type byte MessagePack never uses
  return bytes;
}

/** A value nested `depth` arrays deep. */
function nested(depth: number): unknown {
  let value: unknown = 0;
  for (let i = 0; i < depth; i++) value = [value];
  return value;
}

/**
 * One way for the other side to draw a RESET at will: `provoke` makes this side send one reset
 * `code` on (or in refusal of) stream `id`, after `setup` ran once with ids from `next`.
 */
interface Provocation {
  name: string;
  code: string;
  handler: boolean;
  setup?: (p: Probe, next: () => number) => void;
  provoke: (p: Probe, id: number) => void;
}

function provocations(codec: Codec): Provocation[] {
  const feed = (p: Probe, frame: unknown[]) => p.session.receive(codec.encode(frame) as string);
  const deep = nested(70);
  const big = 'f'.repeat(65_600);
  return [
    {
      name: 'OPENs the codec cannot decode',
      code: 'decode',
      handler: true,
      provoke: (p, id) => p.session.receive(undecodableOpen(codec, id) as string),
    },
    {
      name: 'OPENs nested deeper than maxDepth',
      code: 'decode',
      handler: true,
      provoke: (p, id) => feed(p, [1, id, 0, null, deep]),
    },
    {
      name: 'streams sent DATA past their window',
      code: 'flow',
      handler: true,
      provoke: (p, id) => {
        feed(p, [1, id, 0, null, 'open']);
        feed(p, [2, id, 0, big]); // overshoots the window: allowed once
        feed(p, [2, id, 0, 'one more']); // beyond it: flow
      },
    },
    {
      name: 'OPENs over maxStreams',
      code: 'refused',
      handler: true,
      setup: (p, next) => {
        for (let i = 0; i < 100; i++) feed(p, [1, next(), 0, null, 'held']);
      },
      provoke: (p, id) => feed(p, [1, id, 0, null, 'one too many']),
    },
    {
      name: 'OPENs with no stream handler',
      code: 'refused',
      handler: false,
      provoke: (p, id) => feed(p, [1, id, 0, null, 'unwanted']),
    },
  ];
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

  for (const kind of provocations(codec)) {
    for (const [side, code] of [['acceptor', 1008], ['dialer', 4002]] as const) {
      test(`WSM-ACC-006 WSM-WIRE-007 ${c} ${kind.name} draw RESET ${kind.code} 200 times within one second, and the 201st closes the ${side} with ${code}`, () => {
        using clock = fakeTime();
        using p = probe(side, {
          codec,
          onStream: kind.handler ? () => new Promise(() => {}) : undefined,
        });
        let id = side === 'acceptor' ? 1 : 2;
        const next = () => ((id += 2), id - 2);
        kind.setup?.(p, next);
        for (let i = 0; i < 200; i++) {
          const sent = p.sent.length;
          const provoked = next();
          kind.provoke(p, provoked);
          assert.equal(p.sent.length, sent + 1, `one answer to stream ${provoked}`);
          assert.deepEqual((p.sent.at(-1) as unknown[]).slice(0, 3), [4, provoked, kind.code]);
          clock.tick(4); // 200 over 796 ms
        }
        assert.equal(p.session.isClosed, false);
        assert.equal(p.session.protocolErrors, 0);
        kind.provoke(p, next());
        assert.equal(p.session.isClosed, true);
        assert.deepEqual(p.closes, [{
          code,
          reason: 'more than 200 streams reset within one second',
        }]);
      });
    }

    test(`WSM-ACC-006 ${c} ${kind.name} at 200 a second, sustained, keep the connection open`, () => {
      using clock = fakeTime();
      using p = probe('acceptor', {
        codec,
        onStream: kind.handler ? () => new Promise(() => {}) : undefined,
      });
      let id = 1;
      const next = () => ((id += 2), id - 2);
      kind.setup?.(p, next);
      for (let i = 0; i < 600; i++) {
        kind.provoke(p, next());
        clock.tick(5); // exactly 200 per second, for three seconds
      }
      assert.equal(p.session.isClosed, false);
      assert.equal(p.sent.filter((f) => (f as unknown[])[2] === kind.code).length, 600);
    });
  }

  test(`WSM-ACC-006 ${c} resets the other side sends and resets it provokes share one budget of maxResetRate a second`, () => {
    using clock = fakeTime();
    using p = probe('acceptor', {
      codec,
      limits: { maxStreams: 1 },
      onStream: () => new Promise(() => {}),
    });
    const kinds = provocations(codec);
    const order: ((id: number) => void)[] = [
      (
        id,
      ) => (feed(p.session, [1, id, 0, null, 'cancelled']), feed(p.session, [4, id, 'cancel', ''])),
      (id) => kinds[0].provoke(p, id),
      (id) => kinds[1].provoke(p, id),
      (id) => kinds[2].provoke(p, id),
    ];
    let id = 1;
    for (let i = 0; i < 200; i++, id += 2) {
      order[i % order.length](id);
      clock.tick(4);
    }
    // The only slot is free: hold it, so the next OPEN is refused over maxStreams.
    feed(p.session, [1, id, 0, null, 'held']);
    id += 2;
    assert.equal(p.session.isClosed, false);
    feed(p.session, [1, id, 0, null, 'refused, and the 201st reset within one second']);
    assert.deepEqual(p.closes.map((x) => x.code), [1008]);
  });

  test(`WSM-ACC-006 ${c} OPENs refused after this side's GOAWAY do not count toward the reset budget`, () => {
    using p = probe('acceptor', { codec, onStream: () => new Promise(() => {}) });
    goAway(p.session, 'restart', 'deploying', 0);
    for (let id = 1; id < 1000; id += 2) feed(p.session, [1, id, 0, null, 'in flight']);
    assert.equal(p.session.isClosed, false);
    assert.equal(p.sent.filter((f) => (f as unknown[])[2] === 'refused').length, 500);
  });

  test(`WSM-LIM-002 ${c} OPENs a dialer sends after its own GOAWAY draw refused 200 times within one second, and the 201st closes the acceptor with 1008`, () => {
    using clock = fakeTime();
    using p = probe('acceptor', { codec, onStream: () => new Promise(() => {}) });
    feed(p.session, [8, 0, 'shutdown', 'leaving', 0]);
    let id = 1;
    for (let i = 0; i < 200; i++, id += 2) {
      feed(p.session, [1, id, 0, null, i]);
      clock.tick(4); // 200 over 796 ms
    }
    assert.equal(p.session.isClosed, false);
    assert.equal(p.sent.filter((f) => (f as unknown[])[2] === 'refused').length, 200);
    feed(p.session, [1, id, 0, null, 'the 201st']);
    assert.equal(p.sent.length, 200, 'the 201st is not answered');
    assert.deepEqual(p.closes, [{
      code: 1008,
      reason: 'more than 200 streams reset within one second',
    }]);
  });

  test(`WSM-LIM-002 ${c} OPENs refused after the other side's GOAWAY count on the dialer too: an acceptor flooding them is closed with 4002`, () => {
    using clock = fakeTime();
    using p = probe('dialer', { codec });
    feed(p.session, [8, 0, 'restart', 'deploying', 0]);
    let id = 2;
    for (let i = 0; i < 200; i++, id += 2) {
      feed(p.session, [1, id, 0, null, i]);
      clock.tick(4);
    }
    assert.equal(p.session.isClosed, false);
    feed(p.session, [1, id, 0, null, 'the 201st']);
    assert.deepEqual(p.closes.map((x) => x.code), [4002]);
  });

  for (const [side, code] of [['acceptor', 1008], ['dialer', 4002]] as const) {
    test(`WSM-LIM-002 ${c} a refusal to a peer whose socket holds more than maxBufferedBytes closes the ${side} with ${code} instead of queueing`, () => {
      using p = probe(side, { codec, limits: { highWaterMark: 100, maxBufferedBytes: 1000 } });
      const first = side === 'acceptor' ? 1 : 2;
      p.buffered.amount = 1000;
      feed(p.session, [1, first, 0, null, 'at the cap: answered']);
      assert.deepEqual(p.sent, [[4, first, 'refused', 'No stream handler']]);
      p.buffered.amount = 1001;
      feed(p.session, [1, first + 2, 0, null, 'over the cap']);
      assert.equal(p.sent.length, 1, 'nothing more is queued');
      assert.deepEqual(p.closes, [{ code, reason: 'more than 1000 bytes buffered unread' }]);
    });
  }

  test(`WSM-LIM-002 ${c} OPENs after this side's GOAWAY to a peer that never reads close it at maxBufferedBytes`, () => {
    using p = probe('acceptor', { codec, limits: { highWaterMark: 100, maxBufferedBytes: 1000 } });
    goAway(p.session, 'restart', 'deploying', 0);
    let id = 1;
    for (; id < 100; id += 2) feed(p.session, [1, id, 0, null, 'in flight']);
    assert.equal(p.session.isClosed, false);
    p.buffered.amount = 5000;
    feed(p.session, [1, id, 0, null, 'one more']);
    assert.deepEqual(p.closes.map((x) => x.code), [1008]);
    assert.equal(p.sent.filter((f) => (f as unknown[])[0] === 4).length, 50);
  });

  test(`WSM-LIM-002 ${c} RESETs, ENDs and CREDITs a stream sends without waiting close a congested peer instead of queueing; writes still wait`, async () => {
    const streams: Stream[] = [];
    using p = probe('acceptor', {
      codec,
      limits: { highWaterMark: 100, maxBufferedBytes: 1000 },
      onStream: (s) => (streams.push(s), new Promise(() => {})),
    });
    feed(p.session, [1, 1, 0, null, 'a']);
    feed(p.session, [1, 3, 0, null, 'b']);
    feed(p.session, [1, 5, 0, null, 'c']);
    p.buffered.amount = 500; // above highWaterMark, under the cap: a write waits, a reply goes
    const write = streams[0].write('waits');
    streams[1].reset('cancel');
    assert.deepEqual(p.sent, [[4, 3, 'cancel', '']]);
    p.buffered.amount = 1001;
    const ended = streams[2].end();
    assert.equal(p.sent.length, 1, 'the END is not queued');
    assert.deepEqual(p.closes.map((x) => x.code), [1008]);
    await assert.rejects(ended, { code: 'connection_lost' });
    await assert.rejects(write, { code: 'connection_lost' });
  });

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

  test(`WSM-ACC-006 ${c} routed OPENs naming no route or an input the route refuses (not_found, invalid) count toward the reset rate: a flood closes with 1008`, async () => {
    const refuses: StandardSchemaV1<unknown, unknown> = {
      '~standard': { version: 1, vendor: 'test', validate: () => ({ issues: [] }) },
    };
    for (const [route, reset] of [['missing', 'not_found'], ['checked', 'invalid']] as const) {
      using p = probe('acceptor', {
        codec,
        limits: { maxResetRate: 3 },
        onStream: streamHandler({ checked: { input: refuses, handler: () => 1 } }, undefined, {}),
      });
      for (let i = 0; i < 3; i++) {
        feed(p.session, [1, 2 * i + 1, 0, { ':route': route }, i]);
        await settle();
      }
      assert.deepEqual(p.sent.map((frame) => (frame as unknown[])[2]), [reset, reset, reset]);
      assert.equal(p.session.isClosed, false);
      feed(p.session, [1, 7, 0, { ':route': route }, 'the 4th']);
      await settle();
      assert.equal(p.session.isClosed, true);
      assert.deepEqual(p.closes.map((x) => x.code), [1008]);
    }
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
    // Each level is an item too: the item limit is raised so that depth is what this measures.
    using p = probe('acceptor', { codec, onStream: () => 1, limits: { maxMessageItems: 200_000 } });
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

test('WSM-WIRE-007 [json] a damaged prefix written with JSON whitespace names its stream as the compact one does', async () => {
  const streams: Stream[] = [];
  using p = probe('acceptor', { onStream: (s) => (streams.push(s), new Promise(() => {})) });
  p.session.receive('[1, 1, 0, null, "a"]');
  p.session.receive('[2, 1, 0, {"broken": tru');
  await assert.rejects(
    streams[0].closed,
    (e: unknown) => e instanceof StreamResetError && e.code === 'decode',
  );
  p.session.receive('\n[ 1 ,\t3 , 0, null, garbage');
  assert.deepEqual(p.sent, [
    [4, 1, 'decode', 'A payload could not be decoded'],
    [4, 3, 'decode', 'The OPEN could not be decoded'],
  ]);
  assert.equal(p.session.protocolErrors, 0);
  // Not the beginning of an OPEN or DATA: malformed, nothing sent.
  for (const text of ['\u00a0[2,5,0,x', '[2,5]x', '[2,5.0,0,x', '[1,05,0,x', '[3, 5, x']) {
    p.session.receive(text);
  }
  assert.equal(p.session.protocolErrors, 5);
  assert.equal(p.sent.length, 2);
});

test('WSM-WIRE-008 [json] a deep value cannot make receive() throw on any runtime, even at 1,000,000 levels', () => {
  using p = probe('acceptor', {
    onStream: () => 1,
    limits: { maxMessageBytes: 4_000_000, maxMessageItems: 2_000_000 },
  });
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
