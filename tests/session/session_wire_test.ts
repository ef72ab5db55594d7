import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ProtocolError, StreamResetError } from 'muxws';
import type { Stream } from 'muxws';
import { codecs } from '../_codecs.ts';
import { probe, sessionPair, settle } from '../_session_pair.ts';
import { goAway } from '../../lib/session/acceptor_api.ts';

const deep = (depth: number): unknown => {
  let value: unknown = 0;
  for (let i = 0; i < depth; i++) value = [value];
  return value;
};

for (const codec of codecs) {
  const c = `[${codec.name}]`;
  const feed = (session: { receive(d: string | ArrayBufferView): void }, frame: unknown[]) =>
    session.receive(codec.encode(frame) as string);

  test(`WSM-WIRE-002 ${c} every frame travels as one ${codec.binary ? 'binary' : 'text'} message`, async () => {
    using pair = sessionPair({ codec, acceptor: { onStream: (s) => s.payload } });
    await pair.dialer.request({ a: 1 });
    pair.dialer.ping();
    await settle();
    for (const message of [...pair.client.sent, ...pair.server.sent]) {
      assert.equal(typeof message === 'string', !codec.binary);
      assert.ok(Array.isArray(codec.decode(message)));
    }
    assert.deepEqual(codec.decode(pair.client.sent[0]), [1, 1, 1, null, { a: 1 }]);
    assert.deepEqual(codec.decode(pair.server.sent[0]), [2, 1, 1, { a: 1 }]);
  });

  test(`WSM-WIRE-003 ${c} reserved flag bits are ignored and END is bit 0`, () => {
    const streams: Stream[] = [];
    using p = probe('acceptor', {
      codec,
      onStream: (s) => (streams.push(s), new Promise(() => {})),
    });
    feed(p.session, [1, 1, 6, null, 'x']); // bits 1 and 2 set, END clear
    feed(p.session, [2, 1, 2 ** 40 + 1, 'last']); // huge flags with bit 0: END
    assert.equal(streams.length, 1);
    assert.equal(p.log.errors.length, 0);
    feed(p.session, [2, 1, 0, 'after end']);
    assert.equal(p.session.protocolErrors, 1);
  });

  test(`WSM-WIRE-003 ${c} every malformed field of every kind is dropped and reported as ProtocolError`, () => {
    using p = probe('dialer', { codec, limits: { maxProtocolErrors: 1000 } });
    const bad: unknown[] = [
      'not an array',
      { 0: 1 },
      [],
      [0],
      [10],
      [1.5],
      ['1'],
      [1, 2, 0, null], // OPEN too short
      [1, 2, 0, 7, 'p', 'later'], // headers mistyped; the trailing element changes nothing
      [1, 0, 0, null, 'p'],
      [1, -2, 0, null, 'p'],
      [1, 2.5, 0, null, 'p'],
      [1, 2 ** 53, 0, null, 'p'],
      [1, '2', 0, null, 'p'],
      [1, 2, -1, null, 'p'],
      [1, 2, 0.5, null, 'p'],
      [1, 2, 0, [], 'p'],
      [1, 2, 0, 'h', 'p'],
      [2, 2, 0],
      [2, 0, 0, 'p'],
      [3],
      [3, null],
      [4, 2, 'Bad', ''],
      [4, 2, 'ok', 5],
      [4, 2, 'x'.repeat(65), ''],
      [5, 2, 0],
      [5, 2, -1],
      [5, 2, 1.5],
      [2, 2, 0, 'p', 'not headers'], // DATA's optional headers mistyped
      [4, 2, 'ok', '', []], // RESET's optional headers mistyped
      [8, -1, 'restart', '', 0],
      [8, 0, 'restart', '', -1],
      [8, 0, 'RESTART', '', 0],
      [8, 0, 'restart', null, 0],
      [9, '', null, 1],
      [9, 'x'.repeat(257), null, 1],
      [9, 't', [], 1],
      [9, 5, null, 1],
    ];
    for (const frame of bad) p.session.receive(codec.encode(frame as unknown[]) as string);
    assert.equal(p.session.protocolErrors, bad.length);
    assert.equal(p.log.errors.length, bad.length);
    for (const error of p.log.errors) assert.ok(error instanceof ProtocolError, String(error));
    assert.equal(p.sent.length, 0);
    assert.equal(p.session.isClosed, false);
  });

  test(`WSM-WIRE-004 ${c} an OPEN with the receiver's own parity is malformed`, () => {
    using p = probe('acceptor', { codec, onStream: () => {} });
    feed(p.session, [1, 2, 0, null, 'x']);
    assert.equal(p.session.protocolErrors, 1);
    assert.equal(p.sent.length, 0);
  });

  test(`WSM-WIRE-004 ${c} an OPEN not above the highest id seen is malformed, a skipped id is fine`, () => {
    const ids: number[] = [];
    using p = probe('acceptor', { codec, onStream: (s) => void ids.push(s.id) });
    feed(p.session, [1, 5, 1, null, 'a']);
    feed(p.session, [1, 3, 1, null, 'b']);
    feed(p.session, [1, 5, 1, null, 'c']);
    feed(p.session, [1, 9, 1, null, 'd']);
    assert.deepEqual(ids, [5, 9]);
    assert.equal(p.session.protocolErrors, 2);
  });

  test(`WSM-WIRE-004 ${c} the id space starts empty on every session`, () => {
    const ids: number[] = [];
    for (let round = 0; round < 2; round++) {
      using p = probe('acceptor', { codec, onStream: (s) => void ids.push(s.id) });
      feed(p.session, [1, 1, 1, null, 'hello']);
      assert.equal(p.session.protocolErrors, 0);
    }
    assert.deepEqual(ids, [1, 1]);
  });

  test(`WSM-WIRE-007 ${c} frames for a finished id are ignored; DATA, END, CREDIT, RESET for a never-opened id are malformed`, () => {
    using p = probe('acceptor', { codec, onStream: () => 'done' });
    feed(p.session, [1, 1, 1, null, 'x']); // finished at once: handler returned, OPEN had END
    assert.equal(p.session.activeStreams, 0);
    for (const frame of [[2, 1, 0, 'late'], [3, 1], [4, 1, 'cancel', ''], [5, 1, 10]]) {
      feed(p.session, frame);
    }
    assert.equal(p.session.protocolErrors, 0);
    for (
      const frame of [[2, 3, 0, 'x'], [3, 3], [5, 3, 10], [4, 3, 'cancel', ''], [2, 2, 0, 'x']]
    ) {
      feed(p.session, frame);
    }
    assert.equal(p.session.protocolErrors, 5);
  });

  test(`WSM-WIRE-005 ${c} reset() checks the code pattern; reserved codes pass`, async () => {
    using pair = sessionPair({ codec, acceptor: { onStream: () => new Promise(() => {}) } });
    const stream = pair.dialer.open('x');
    for (const code of ['', 'Cancel', '1abc', 'a'.repeat(65), 'has space']) {
      assert.throws(() => stream.reset(code), TypeError);
    }
    assert.throws(() => stream.reset('cancel', 5 as unknown as string), TypeError);
    stream.reset('my.app-code_2', 'custom');
    await assert.rejects(
      stream.closed,
      (e: unknown) => e instanceof StreamResetError && e.code === 'my.app-code_2',
    );
  });

  test(`WSM-WIRE-007 ${c} a RESET for a live stream fails it with the remote code and message`, () => {
    const streams: Stream[] = [];
    using p = probe('acceptor', {
      codec,
      onStream: (s) => (streams.push(s), new Promise(() => {})),
    });
    feed(p.session, [1, 1, 0, null, 'x']);
    feed(p.session, [4, 1, 'too_large', 'payload was 9 MB']);
    return assert.rejects(
      streams[0].closed,
      (e: unknown) =>
        e instanceof StreamResetError && e.code === 'too_large' && e.remote &&
        e.message.includes('payload was 9 MB'),
    );
  });

  test(`WSM-WIRE-008 ${c} a payload nested deeper than maxDepth resets its stream with decode`, async () => {
    const streams: Stream[] = [];
    using p = probe('acceptor', {
      codec,
      onStream: (s) => (streams.push(s), new Promise(() => {})),
    });
    feed(p.session, [1, 1, 0, null, deep(64)]); // exactly the limit: accepted
    assert.equal(streams.length, 1);
    feed(p.session, [2, 1, 0, deep(65)]);
    assert.deepEqual(p.sent.at(-1), [4, 1, 'decode', 'A payload could not be decoded']);
    await assert.rejects(
      streams[0].closed,
      (e: unknown) => e instanceof StreamResetError && e.code === 'decode',
    );
    feed(p.session, [1, 3, 0, { deep: deep(64) }, null]); // headers count too: 65 deep
    assert.deepEqual(p.sent.at(-1), [4, 3, 'decode', 'The OPEN nests deeper than 64']);
    assert.equal(streams.length, 1);
    assert.equal(p.session.protocolErrors, 0);
  });

  test(`WSM-WIRE-008 ${c} maxDepth is configurable and counted inside the payload only`, () => {
    const payloads: unknown[] = [];
    using p = probe('acceptor', {
      codec,
      limits: { maxDepth: 2 },
      onStream: (s) => void payloads.push(s.payload),
    });
    feed(p.session, [1, 1, 1, { a: 1 }, { a: [1] }]);
    feed(p.session, [1, 3, 1, null, { a: [[1]] }]);
    assert.deepEqual(payloads, [{ a: [1] }]);
    assert.deepEqual(p.sent.at(-1), [4, 3, 'decode', 'The OPEN nests deeper than 2']);
  });

  test(`WSM-WIRE-008 ${c} __proto__, constructor and prototype keys stay plain data end to end`, async () => {
    using pair = sessionPair({ codec, acceptor: { onStream: (s) => s.payload } });
    const payload = JSON.parse(
      '{"__proto__":{"polluted":true},"constructor":{"prototype":{"polluted":true}}}',
    );
    const echoed = await pair.dialer.request(payload) as Record<string, unknown>;
    assert.equal(({} as Record<string, unknown>).polluted, undefined);
    assert.equal(Object.getPrototypeOf(echoed), Object.prototype);
    assert.ok(Object.hasOwn(echoed, '__proto__'));
    assert.deepEqual(Object.keys(echoed).sort(), ['__proto__', 'constructor']);
    assert.equal((echoed as { polluted?: unknown }).polluted, undefined);
  });

  test(`WSM-WIRE-009 ${c} a session closed from this side reports local: true and the other side false`, async () => {
    using pair = sessionPair({ codec });
    pair.acceptor.close(1012, 'restart');
    await settle();
    assert.deepEqual(pair.log.acceptor.closes, [{ code: 1012, reason: 'restart', local: true }]);
    assert.deepEqual(pair.log.dialer.closes, [{ code: 1012, reason: 'restart', local: false }]);
    pair.acceptor.close(1000, 'again');
    pair.acceptor.closed(1006, '');
    assert.equal(pair.log.acceptor.closes.length, 1);
  });

  test(`WSM-WIRE-003 ${c} a GOAWAY received by the acceptor refuses the dialer's streams above lastId`, () => {
    using p = probe('acceptor', { codec, onStream: () => new Promise(() => {}) });
    feed(p.session, [1, 1, 0, null, 'a']);
    feed(p.session, [8, 3, 'shutdown', 'bye', 0]);
    assert.deepEqual(p.log.goAways, [{ lastId: 3, code: 'shutdown', message: 'bye', spreadMs: 0 }]);
    feed(p.session, [1, 3, 0, null, 'b']);
    feed(p.session, [1, 5, 0, null, 'c']);
    assert.equal(p.session.activeStreams, 2);
    assert.deepEqual(p.sent.at(-1), [4, 5, 'refused', 'The connection is going away']);
  });

  test(`WSM-WIRE-003 ${c} streams above a received GOAWAY's lastId fail with refused, not connection_lost, when the connection closes first`, async () => {
    const received: Stream[] = [];
    using p = probe('dialer', {
      codec,
      onStream: (s) => (received.push(s), new Promise(() => {})),
    });
    const answers = [1, 2, 3].map((n) =>
      p.session.request(n).then(
        () => assert.fail('no answer was sent'),
        (error: unknown) => error,
      )
    );
    assert.deepEqual(p.sent.map((frame) => (frame as number[])[1]), [1, 3, 5]);
    feed(p.session, [1, 2, 0, null, 'from the acceptor']); // the acceptor's own stream, even id
    feed(p.session, [8, 1, 'restart', 'deploy', 0]);
    p.session.closed(1006, '');
    const [first, second, third] = (await Promise.all(answers)) as StreamResetError[];
    assert.ok(first instanceof StreamResetError);
    assert.equal(first.code, 'connection_lost');
    for (const [error, id] of [[second, 3], [third, 5]] as const) {
      assert.ok(error instanceof StreamResetError);
      assert.equal(error.code, 'refused');
      assert.equal(error.remote, false);
      assert.match(
        error.message,
        new RegExp(`^Stream ${id} was refused: .*no stream above 1.*did not process it`),
      );
    }
    // the acceptor's stream 2 is above lastId too, but lastId counts only this side's streams
    assert.equal(received.length, 1);
    const lost = await received[0].closed.then(() => undefined, (error: unknown) => error);
    assert.ok(lost instanceof StreamResetError);
    assert.equal(lost.code, 'connection_lost');
  });

  test(`WSM-WIRE-003 ${c} goAway() sends the highest id the other side opened and refuses later OPENs`, () => {
    using p = probe('acceptor', { codec, onStream: () => new Promise(() => {}) });
    feed(p.session, [1, 7, 0, null, 'a']);
    goAway(p.session, 'restart', 'deploy', 250);
    assert.deepEqual(p.sent.at(-1), [8, 7, 'restart', 'deploy', 250]);
    feed(p.session, [1, 9, 0, null, 'b']);
    assert.deepEqual(p.sent.at(-1), [4, 9, 'refused', 'The connection is going away']);
    assert.equal(p.session.activeStreams, 1);
    assert.throws(() => goAway(p.session, 'Bad', '', 0), TypeError);
    assert.throws(() => goAway(p.session, 'restart', '', -1), RangeError);
  });

  test(`WSM-WIRE-003 ${c} a PUBLISH sent to an acceptor is malformed`, () => {
    using p = probe('acceptor', { codec });
    feed(p.session, [9, 'tag', null, 1]);
    assert.equal(p.session.protocolErrors, 1);
    assert.equal(p.log.publishes.length, 0);
  });
}
