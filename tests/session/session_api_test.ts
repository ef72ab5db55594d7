import { test } from 'node:test';
import assert from 'node:assert/strict';
import { jsonCodec, NotConnectedError, StreamResetError } from 'muxws';
import type { Stream } from 'muxws';
import { Session } from '../../lib/session/session.ts';
import { DEADLINE_TICK_MS } from '../../lib/session/_request.ts';
import { encodePublish } from '../../lib/wire/publish.ts';
import { acceptorPolicy } from '../../lib/acceptor/_policy.ts';
import { MUXWS } from '../../lib/wire/reserved.ts';
import { fakeTime } from '../_fake_time.ts';
import { codecs } from '../_codecs.ts';
import { probe, sessionPair, settle } from '../_session_pair.ts';
import { idle as sessionIdle, sendEncoded } from '../../lib/session/acceptor_api.ts';

for (const codec of codecs) {
  const c = `[${codec.name}]`;

  test(`WSM-STR-001 ${c} open() with end: true ends the opener's direction at once`, async () => {
    let remoteDone: IteratorResult<unknown> | undefined;
    using pair = sessionPair({
      codec,
      acceptor: {
        onStream: async (s) => {
          remoteDone = await s[Symbol.asyncIterator]().next();
          return 'ok';
        },
      },
    });
    const stream = pair.dialer.open('only', { end: true });
    await assert.rejects(stream.write('more'), TypeError);
    await stream.end(); // a second end without a value does nothing
    await assert.rejects(stream.end('value'), TypeError);
    assert.deepEqual(await stream[Symbol.asyncIterator]().next(), { value: 'ok', done: false });
    await stream.closed;
    assert.deepEqual(remoteDone, { value: undefined, done: true });
  });

  test(`WSM-STR-001 ${c} open() checks its options and the encoded size before sending anything`, () => {
    using p = probe('dialer', { codec, limits: { maxMessageBytes: 100 } });
    assert.throws(() => p.session.open(1, { headers: [] as never }), TypeError);
    assert.throws(() => p.session.open(1, { headers: new Map() as never }), TypeError);
    assert.throws(() => p.session.open(1, { end: 'yes' as never }), TypeError);
    assert.throws(() => p.session.open(1, { signal: {} as never }), TypeError);
    assert.throws(() => p.session.open('x'.repeat(200)), RangeError);
    if (!codec.binary) assert.throws(() => p.session.open(1n), TypeError);
    assert.equal(p.sent.length, 0);
    assert.equal(p.session.open(1).id, 1); // no id was used up by the failures
  });

  test(`WSM-STR-007 ${c} open() with an already aborted signal sends nothing and returns a reset stream`, async () => {
    using p = probe('dialer', { codec });
    const stream = p.session.open('x', { signal: AbortSignal.abort() });
    await assert.rejects(stream.closed, { code: 'cancel', remote: false });
    await assert.rejects(p.session.request('y', { signal: AbortSignal.abort() }), {
      code: 'cancel',
    });
    assert.equal(p.sent.length, 0);
    assert.equal(p.session.activeStreams, 0);
    assert.equal(p.session.open('z').id, 1);
  });

  test(`WSM-STR-005 ${c} request() checks timeoutMs`, async () => {
    using p = probe('dialer', { codec });
    for (const timeoutMs of [-1, NaN, Infinity, '5']) {
      await assert.rejects(p.session.request(1, { timeoutMs: timeoutMs as number }), RangeError);
    }
    assert.equal(p.sent.length, 0);
  });

  test(`WSM-STR-005 ${c} request() resolves with undefined when the other side ends without a message`, async () => {
    using p = probe('dialer', { codec });
    const answer = p.session.request('q');
    p.session.receive(codec.encode([3, 1]) as string);
    assert.equal(await answer, undefined);
  });

  test(`WSM-STR-005 ${c} request() resolves with the first DATA and discards the rest`, async () => {
    using p = probe('dialer', { codec });
    const answer = p.session.request('q');
    p.session.receive(codec.encode([2, 1, 0, 'first']) as string);
    p.session.receive(codec.encode([2, 1, 0, 'second']) as string);
    p.session.receive(codec.encode([2, 1, 1, 'third']) as string);
    assert.equal(await answer, 'first');
    assert.equal(p.session.activeStreams, 0);
    assert.equal(p.log.errors.length, 0);
  });

  test(`WSM-STR-005 ${c} a timed-out request keeps no timer and a later answer is ignored`, async () => {
    using clock = fakeTime();
    using p = probe('dialer', { codec });
    const answer = p.session.request('q', { timeoutMs: 100 }).catch((e) => e);
    await clock.tickAsync(100);
    assert.equal((await answer as Error).name, 'TimeoutError');
    assert.deepEqual(p.sent.at(-1), [4, 1, 'timeout', 'No answer within 100 ms']);
    p.session.receive(codec.encode([2, 1, 1, 'late']) as string);
    assert.equal(p.session.protocolErrors, 0);
    assert.equal(clock.countTimers(), 0);
    const answered = p.session.request('r', { timeoutMs: 100 });
    p.session.receive(codec.encode([2, 3, 1, 'fast']) as string);
    assert.equal(await answered, 'fast');
    assert.equal(clock.countTimers(), 1, 'the deadline timer stays armed until its next tick');
    await clock.tickAsync(DEADLINE_TICK_MS);
    assert.equal(clock.countTimers(), 0);
  });

  test(`WSM-STR-005 ${c} requests in flight together share one timeout timer`, async () => {
    using clock = fakeTime();
    using p = probe('dialer', { codec });
    const answers = [1, 2, 3].map((n) =>
      p.session.request(n, { timeoutMs: 100 * n }).catch((e) => e)
    );
    assert.equal(clock.countTimers(), 1);
    p.session.receive(codec.encode([2, 3, 1, 'two']) as string);
    await clock.tickAsync(100);
    assert.equal((await answers[0] as Error).name, 'TimeoutError');
    assert.equal(clock.countTimers(), 1, 're-armed for the request still waiting');
    await clock.tickAsync(199);
    assert.equal(clock.countTimers(), 1);
    await clock.tickAsync(1);
    assert.equal(await answers[1], 'two');
    assert.equal((await answers[2] as Error).message, 'Stream 5 got no answer within 300 ms');
    assert.equal(clock.countTimers(), 0);
  });

  test(`WSM-STR-002 ${c} streams opened one at a time and side by side are each found, counted and lost with the connection`, async () => {
    using p = probe('dialer', { codec });
    const first = p.session.request('a');
    p.session.receive(codec.encode([2, 1, 1, 'A']) as string);
    assert.equal(await first, 'A');
    assert.equal(p.session.activeStreams, 0);
    const lone = p.session.open('b');
    assert.equal(p.session.activeStreams, 1);
    const beside = p.session.request('c');
    const third = p.session.open('d');
    assert.equal(p.session.activeStreams, 3);
    p.session.receive(codec.encode([2, 5, 1, 'C']) as string);
    assert.equal(await beside, 'C');
    assert.equal(p.session.activeStreams, 2);
    p.session.receive(codec.encode([2, 3, 0, 'to b']) as string);
    const reader = lone[Symbol.asyncIterator]();
    assert.deepEqual(await reader.next(), { value: 'to b', done: false });
    const lost: number[] = [];
    for (const stream of [lone, third]) {
      stream.closed.catch((error) => {
        assert.equal(error.code, 'connection_lost');
        lost.push(stream.id);
      });
    }
    p.session.closed(1006, '');
    await Promise.resolve();
    await Promise.resolve();
    assert.deepEqual(lost, [3, 7]);
    assert.equal(p.session.activeStreams, 0);
    assert.equal(p.log.errors.length, 0);
  });

  test(`WSM-ACC-008 ${c} activeStreams, idle() and lastReceivedAt track the connection (session.md)`, async () => {
    using clock = fakeTime();
    let finish: (() => void) | undefined;
    using pair = sessionPair({
      codec,
      acceptor: { onStream: () => new Promise<void>((resolve) => (finish = resolve)) },
    });
    assert.equal(pair.acceptor.lastReceivedAt, Date.now());
    let idle = false;
    await sessionIdle(pair.acceptor); // nothing open: at once
    const stream = pair.dialer.open('x', { end: true });
    clock.tick(5000);
    await clock.tickAsync(0);
    assert.equal(pair.acceptor.lastReceivedAt, 1_700_000_005_000);
    assert.equal(pair.acceptor.activeStreams, 1);
    assert.equal(pair.dialer.activeStreams, 1);
    const waiting = sessionIdle(pair.acceptor).then(() => (idle = true));
    await clock.tickAsync(0);
    assert.equal(idle, false);
    finish!();
    await waiting;
    await stream.closed;
    assert.equal(pair.dialer.activeStreams, 0);
  });

  test(`WSM-ACC-008 ${c} idle() resolves when the session ends with streams open (session.md)`, async () => {
    using pair = sessionPair({ codec, acceptor: { onStream: () => new Promise(() => {}) } });
    pair.dialer.open('x');
    await settle();
    const idle = sessionIdle(pair.acceptor);
    pair.acceptor.close(1001, 'idle');
    await idle;
  });

  test(`WSM-ACC-005 ${c} sendEncoded() returns false above highWaterMark and after the end`, () => {
    using p = probe('acceptor', { codec, limits: { highWaterMark: 100 } });
    const message = encodePublish(codec, 'room', { n: 1 });
    assert.equal(sendEncoded(p.session, message), true);
    p.buffered.amount = 101;
    assert.equal(sendEncoded(p.session, message), false);
    p.buffered.amount = 0;
    p.session.close(1000, '');
    assert.equal(sendEncoded(p.session, message), false);
    assert.deepEqual(p.sent, [[9, 'room', null, { n: 1 }]]);
  });

  test(`WSM-WIRE-003 WSM-ACC-006 ${c} PINGs received while the socket is over highWaterMark are answered by one PONG once it falls`, async () => {
    using clock = fakeTime();
    using p = probe('acceptor', { codec, limits: { highWaterMark: 100 } });
    const ping = codec.encode([6]);
    p.session.receive(ping);
    assert.deepEqual(p.sent, [[7]]);
    p.buffered.amount = 101; // a peer that floods PINGs and never reads
    for (let i = 0; i < 1000; i++) p.session.receive(ping);
    await clock.tickAsync(100);
    assert.deepEqual(p.sent, [[7]]); // nothing more while over the mark
    p.buffered.amount = 0;
    await clock.tickAsync(10); // the next poll sends the one owed PONG
    assert.deepEqual(p.sent, [[7], [7]]);
    assert.equal(clock.countTimers(), 0);
    p.buffered.amount = 101;
    p.session.receive(ping);
    p.buffered.amount = 0;
    p.session.drain(); // a drain event answers at once
    assert.deepEqual(p.sent, [[7], [7], [7]]);
    assert.equal(clock.countTimers(), 0);
    p.buffered.amount = 101;
    p.session.receive(ping);
    p.session.close(1000, ''); // the poll timer does not outlive the session
    assert.equal(clock.countTimers(), 0);
  });

  test(`WSM-ACC-004 ${c} encodePublish() checks the tag and headers`, () => {
    assert.throws(() => encodePublish(codec, '', 1), TypeError);
    assert.throws(() => encodePublish(codec, 'x'.repeat(257), 1), TypeError);
    assert.throws(() => encodePublish(codec, 5 as never, 1), TypeError);
    assert.throws(() => encodePublish(codec, 't', 1, [] as never), TypeError);
    assert.deepEqual(codec.decode(encodePublish(codec, 'x'.repeat(256), 1, { h: 1 })), [
      9,
      'x'.repeat(256),
      { h: 1 },
      1,
    ]);
  });

  test(`WSM-DIAL-008 ${c} throwing callbacks are contained; a throwing onError goes to console.error`, () => {
    const logged: unknown[] = [];
    const original = console.error;
    console.error = (...args: unknown[]) => void logged.push(args);
    try {
      using p = probe('dialer', {
        codec,
        onPublish: () => {
          throw new Error('publish handler');
        },
        onGoAway: () => {
          throw new Error('goaway handler');
        },
      });
      p.session.receive(codec.encode([9, 't', null, 1]) as string);
      p.session.receive(codec.encode([8, 0, 'restart', '', 0]) as string);
      assert.deepEqual(p.log.errors.map((e) => (e as Error).message), [
        'publish handler',
        'goaway handler',
      ]);
      const loud = new Session({ send() {}, close() {} }, {
        side: 'acceptor',
        codec,
        onError: () => {
          throw new Error('onError itself');
        },
        onClose: () => {
          throw new Error('onClose');
        },
      }, acceptorPolicy);
      loud.receive(codec.encode([0]) as string);
      loud.close(1000, '');
      assert.equal(logged.length, 2);
      assert.equal(loud.isClosed, true);
    } finally {
      console.error = original;
    }
  });

  test(`session.md ${c} a Session made with the acceptor's policy checks side and codec`, () => {
    const sink = { send() {}, close() {} };
    assert.throws(
      () => new Session(sink, { side: 'server' as never, codec }, acceptorPolicy),
      TypeError,
    );
    assert.throws(
      () => new Session(sink, { side: 'dialer', codec: {} as never }, acceptorPolicy),
      TypeError,
    );
    assert.throws(
      () => new Session(sink, { side: 'dialer', codec, limits: { maxStreams: 0 } }),
      RangeError,
    );
  });

  test(`WSM-STR-006 ${c} open(), request() and streams fail at once after the session ended`, async () => {
    using p = probe('dialer', { codec });
    const stream = p.session.open(1);
    p.session.closed(1006, '');
    assert.throws(() => p.session.open(2), NotConnectedError);
    await assert.rejects(p.session.request(3), NotConnectedError);
    await assert.rejects(
      stream.write(4),
      (e: unknown) => e instanceof StreamResetError && e.code === 'connection_lost',
    );
    await assert.rejects(stream.end(), StreamResetError);
    stream.reset('cancel'); // nothing more to do: no throw, nothing sent
    assert.equal(p.sent.length, 1);
    const received = p.sent.length;
    p.session.receive(codec.encode([6]) as string);
    p.session.ping();
    assert.equal(p.sent.length, received);
  });

  test(`WSM-STR-003 ${c} onStream runs once per stream and its stream is the one reads and writes go to`, async () => {
    const seen: Stream[] = [];
    using pair = sessionPair({
      codec,
      acceptor: {
        onStream: async (s) => {
          seen.push(s);
          const first = await s[Symbol.asyncIterator]().next();
          return first.value;
        },
      },
    });
    const a = pair.dialer.open('a');
    const b = pair.dialer.open('b');
    await b.end('to b');
    await a.end('to a');
    const answers = await Promise.all([a, b].map(async (s) => {
      const r = await s[Symbol.asyncIterator]().next();
      return r.value;
    }));
    assert.deepEqual(answers, ['to a', 'to b']);
    assert.deepEqual(seen.map((s) => s.id), [1, 3]);
  });
}

for (const codec of codecs) {
  const c = `[${codec.name}]`;

  test(`WSM-WIRE-003 ${c} open() and request() on either side refuse a reserved header key with TypeError naming it, sending nothing`, async () => {
    for (const side of ['dialer', 'acceptor'] as const) {
      using p = probe(side, { codec });
      const headers = { room: 'lobby', ':route': 'chat.say' };
      const message =
        'Cannot open a stream as "headers" must not use the reserved key ":route": keys starting with ":" are muxws\'s';
      assert.throws(() => p.session.open(1, { headers }), { name: 'TypeError', message });
      await assert.rejects(p.session.request(1, { headers: { ':x': 1 } }), {
        name: 'TypeError',
        message: /reserved key ":x"/,
      });
      assert.deepEqual(p.sent, []);
      assert.equal(p.session.nextStreamId, side === 'dialer' ? 1 : 2, 'no id is used');
    }
  });

  test(`WSM-WIRE-003 ${c} muxws sets reserved header keys through its internal option, beside the application's`, async () => {
    const seen: unknown[] = [];
    using pair = sessionPair({
      codec,
      acceptor: {
        onStream: (stream) => {
          seen.push(stream.headers);
          return 'ok';
        },
      },
    });
    const route = { [MUXWS]: { headers: { ':route': 'chat.say' } } };
    assert.equal(await pair.dialer.request(1, { headers: { trace: 't' }, ...route }), 'ok');
    const stream = pair.dialer.open(2, { end: true, ...route });
    assert.deepEqual(stream.headers, { ':route': 'chat.say' });
    await stream.closed;
    assert.deepEqual(seen, [{ ':route': 'chat.say', trace: 't' }, { ':route': 'chat.say' }]);
  });

  test(`WSM-APP-007 ${c} a payload or headers value the codec cannot encode fails naming the operation, the stream and the path`, async () => {
    using p = probe('dialer', { codec });
    const bad = { n: 1n };
    const check = (error: unknown, message: string): boolean => {
      assert.ok(error instanceof TypeError);
      assert.equal(error.message, message);
      assert.ok(error.cause !== undefined, "the codec's own error is the cause");
      return true;
    };
    assert.throws(
      () => p.session.open(bad),
      (e) => check(e, 'Cannot encode the payload of open() on stream 1: BigInt at .n'),
    );
    await assert.rejects(
      p.session.request({ list: [1, { deep: 2n }] }),
      (e) =>
        check(e, 'Cannot encode the payload of request() on stream 1: BigInt at .list[1].deep'),
    );
    assert.throws(
      () => p.session.open(1, { headers: { 'a key': [2n] } }),
      (e) => check(e, 'Cannot encode the headers of open() on stream 1: BigInt at ["a key"][0]'),
    );
    assert.deepEqual(p.sent, [], 'nothing was sent');
    assert.equal(p.session.nextStreamId, 1, 'and no id used');
    const stream = p.session.open(null);
    await assert.rejects(
      stream.write(bad),
      (e) => check(e, 'Cannot encode the payload of write() on stream 1: BigInt at .n'),
    );
    await assert.rejects(
      stream.end(5n),
      (e) => check(e, 'Cannot encode the payload of end() on stream 1: BigInt at the root'),
    );
    await stream.write('still writable');
    assert.throws(
      () => encodePublish(codec, 'room:lobby', bad),
      (e) => check(e, 'Cannot encode the payload of broadcast() to "room:lobby": BigInt at .n'),
    );
    assert.throws(() => encodePublish(codec, 't', 1, { ':seq': 1 }), {
      name: 'TypeError',
      message: /reserved key ":seq"/,
    });
  });

  test(`WSM-APP-007 ${c} a handler's returned value the codec cannot encode resets with internal and is reported with its path`, () => {
    using p = probe('acceptor', { codec, onStream: () => ({ total: 3n }) });
    p.session.receive(codec.encode([1, 1, 1, null, 'x']));
    assert.deepEqual(p.sent, [[4, 1, 'internal', 'The stream handler failed']]);
    assert.equal(
      (p.log.errors[0] as Error).message,
      "Cannot encode the handler's returned value on stream 1: BigInt at .total",
    );
  });
}

test('WSM-APP-007 [json] a circular value fails naming where it closes the circle', () => {
  using p = probe('dialer');
  const room: Record<string, unknown> = { name: 'lobby', members: [{ id: 1 }] };
  (room.members as Record<string, unknown>[])[0].room = room;
  assert.throws(() => p.session.open({ room }), {
    name: 'TypeError',
    message:
      'Cannot encode the payload of open() on stream 1: a circular reference at .room.members[0].room',
  });
});

test('WSM-APP-007 [json] jsonCodec({ strict: true }) refuses through the session what JSON would change, naming the path', async () => {
  using p = probe('dialer', { codec: jsonCodec({ strict: true }) });
  assert.throws(() => p.session.open({ members: new Map() }), {
    name: 'TypeError',
    message: 'Cannot encode the payload of open() on stream 1: Map at .members',
  });
  const stream = p.session.open({ ok: [1, 'two', null, { three: true }] });
  await assert.rejects(stream.write({ at: new Date(0) }), {
    message: 'Cannot encode the payload of write() on stream 1: Date at .at',
  });
  await assert.rejects(stream.write([1, undefined]), {
    message: 'Cannot encode the payload of write() on stream 1: undefined at [1]',
  });
  assert.deepEqual(p.sent, [[1, 1, 0, null, { ok: [1, 'two', null, { three: true }] }]]);
});

test('WSM-STR-004 [json] a handler result whose then getter throws resets with internal and is reported', () => {
  using p = probe('acceptor', {
    onStream: () =>
      new Proxy({}, {
        get(_, key) {
          if (key === 'then') throw new Error('hostile then');
          return undefined;
        },
      }),
  });
  p.session.receive('[1,1,1,null,"x"]');
  assert.deepEqual(p.sent, [[4, 1, 'internal', 'The stream handler failed']]);
  assert.equal((p.log.errors[0] as Error).message, 'hostile then');
  assert.equal(p.session.activeStreams, 0);
});

test('WSM-STR-006 [json] a sink whose send throws closes the transport (1011 on the acceptor) and ends with 1006', () => {
  const closes: number[] = [];
  const session = new Session({
    send() {
      throw new Error('broken pipe');
    },
    close: (code) => void closes.push(code),
  }, { side: 'acceptor', codec: codecs[0] });
  session.ping();
  assert.equal(session.isClosed, true);
  assert.deepEqual(closes, [1011]);
});

test('WSM-STR-002 [json] write() resolves once handed to the socket even if the other side reacts by closing at once', async () => {
  // A synchronous pipe: the acceptor receives inside the dialer's send and closes (1009).
  const dialer: Session = new Session({
    send: (data) => acceptor.receive(data),
    close: (code, reason) => acceptor.closed(code, reason),
  }, { side: 'dialer', codec: codecs[0] });
  const acceptor: Session = new Session({
    send: (data) => dialer.receive(data),
    close: (code, reason) => dialer.closed(code, reason),
  }, {
    side: 'acceptor',
    codec: codecs[0],
    limits: { maxMessageBytes: 100 },
    onStream: () => new Promise(() => {}),
  }, acceptorPolicy);
  const stream = dialer.open('x');
  await stream.write('y'.repeat(200)); // handed over: resolves
  assert.equal(acceptor.isClosed, true);
  assert.equal(dialer.isClosed, true);
  await assert.rejects(stream.closed, { code: 'connection_lost' });
  await assert.rejects(stream.write('z'), { code: 'connection_lost' });
});

test('WSM-WIRE-009 [json] a close event with code 0 or none is reported as 1006', () => {
  for (const code of [0, undefined]) {
    using p = probe('dialer');
    p.session.closed(code as unknown as number, undefined as unknown as string);
    assert.deepEqual(p.log.closes, [{ code: 1006, reason: '', local: false }]);
  }
});

test("WSM-WIRE-004 firstStreamId continues a restored side where the old session stopped, and must have that side's parity", () => {
  {
    using p = probe('acceptor', { firstStreamId: 8 });
    assert.equal(p.session.nextStreamId, 8);
    assert.equal(p.session.open('a').id, 8);
    assert.equal(p.session.open('b').id, 10);
    assert.equal(p.session.nextStreamId, 12);
  }
  {
    using p = probe('dialer');
    assert.equal(p.session.nextStreamId, 1);
  }
  for (
    const [side, bad] of [['acceptor', 7], ['dialer', 4], ['acceptor', 0], [
      'acceptor',
      -2,
    ]] as const
  ) {
    assert.throws(
      () => restored(side, bad),
      (error: unknown) =>
        error instanceof RangeError &&
        error.message.includes('"firstStreamId"') && error.message.includes(String(bad)),
      `${side} ${bad}`,
    );
  }
  assert.throws(() => restored('acceptor', 2.5), RangeError);
  assert.throws(() => restored('acceptor', Number.MAX_SAFE_INTEGER + 1), RangeError);
});

/** A session made as the acceptor makes a restored peer's: with its policy, which checks the id. */
function restored(side: 'dialer' | 'acceptor', firstStreamId: number): Session {
  const sink = { send() {}, close() {} };
  return new Session(sink, { side, codec: jsonCodec, firstStreamId }, acceptorPolicy);
}
