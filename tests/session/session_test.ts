import { test } from 'node:test';
import assert from 'node:assert/strict';
import { NotConnectedError, StreamError, StreamResetError, TimeoutError } from 'muxws';
import type { Stream } from 'muxws';
import { fakeTime } from '../_fake_time.ts';
import { codecs } from '../_codecs.ts';
import { probe, sessionPair, settle } from '../_session_pair.ts';
import { goAway, idle, sendEncoded } from '../../lib/session/acceptor_api.ts';

for (const codec of codecs) {
  const c = `[${codec.name}]`;

  test(`WSM-STR-001 ${c} open() sends OPEN before it returns and the handler sees id, headers and payload`, async () => {
    const seen: { id: number; headers: unknown; payload: unknown }[] = [];
    using pair = sessionPair({
      codec,
      acceptor: {
        onStream: (stream) => {
          seen.push({ id: stream.id, headers: stream.headers, payload: stream.payload });
        },
      },
    });
    const stream = pair.dialer.open({ hello: 1 }, { headers: { auth: 'x' } });
    assert.equal(pair.client.sent.length, 1);
    assert.equal(stream.id, 1);
    assert.deepEqual(stream.headers, { auth: 'x' });
    assert.deepEqual(stream.payload, { hello: 1 });
    await settle();
    assert.deepEqual(seen, [{ id: 1, headers: { auth: 'x' }, payload: { hello: 1 } }]);
  });

  test(`WSM-WIRE-004 ${c} the dialer opens odd ids and the acceptor even ids, each increasing`, async () => {
    using pair = sessionPair({
      codec,
      acceptor: { onStream: () => {} },
      dialer: { onStream: () => {} },
    });
    assert.deepEqual([1, 2, 3].map(() => pair.dialer.open(null).id), [1, 3, 5]);
    assert.deepEqual([1, 2, 3].map(() => pair.acceptor.open(null).id), [2, 4, 6]);
    await settle();
  });

  test(`WSM-STR-005 ${c} request() resolves with the value the handler returns`, async () => {
    using pair = sessionPair({
      codec,
      acceptor: { onStream: (stream) => ({ echo: stream.payload }) },
    });
    assert.deepEqual(await pair.dialer.request({ n: 1 }), { echo: { n: 1 } });
    await settle();
    assert.equal(pair.dialer.activeStreams, 0);
    assert.equal(pair.acceptor.activeStreams, 0);
  });

  test(`WSM-STR-003 ${c} a handler returning undefined ends with a bare END and request() resolves undefined`, async () => {
    using pair = sessionPair({ codec, acceptor: { onStream: async () => {} } });
    assert.equal(await pair.dialer.request('x'), undefined);
  });

  test(`WSM-STR-003 ${c} an async handler's resolved value is sent as the last message with END`, async () => {
    using pair = sessionPair({
      codec,
      dialer: {
        onStream: async (stream) => {
          await Promise.resolve();
          return `pong:${stream.payload}`;
        },
      },
    });
    assert.equal(await pair.acceptor.request('ping'), 'pong:ping');
  });

  test(`WSM-STR-003 ${c} a handler that ended the stream itself sends nothing more`, async () => {
    using pair = sessionPair({
      codec,
      acceptor: {
        onStream: async (stream) => {
          await stream.write('a');
          await stream.end('b');
          return 'ignored';
        },
      },
    });
    const stream = pair.dialer.open('go', { end: true });
    const got: unknown[] = [];
    for await (const message of stream) got.push(message);
    assert.deepEqual(got, ['a', 'b']);
    await stream.closed;
    await settle();
    assert.equal(pair.server.sent.length, 2);
  });

  test(`WSM-STR-004 ${c} a throwing handler resets with internal and a generic message, reported on the receiving side`, async () => {
    using pair = sessionPair({
      codec,
      acceptor: {
        onStream: () => {
          throw new Error('secret database detail');
        },
      },
    });
    const error = await pair.dialer.request('x').catch((e) => e);
    assert.ok(error instanceof StreamResetError);
    assert.equal(error.code, 'internal');
    assert.equal(error.remote, true);
    assert.ok(!error.message.includes('secret'));
    assert.equal(pair.log.acceptor.errors.length, 1);
    assert.equal((pair.log.acceptor.errors[0] as Error).message, 'secret database detail');
    assert.equal(pair.dialer.isClosed, false);
  });

  test(`WSM-STR-004 ${c} a handler throwing StreamError sends its code and message as they are`, async () => {
    using pair = sessionPair({
      codec,
      acceptor: {
        onStream: () => Promise.reject(new StreamError('not_found', 'No room named "lobby"')),
      },
    });
    const error = await pair.dialer.request('x').catch((e) => e);
    assert.ok(error instanceof StreamResetError);
    assert.equal(error.code, 'not_found');
    assert.ok(error.message.includes('No room named "lobby"'));
  });

  test(`WSM-APP-005 ${c} a StreamError a handler throws or rejects with resets with its code and is not reported, any other error is`, async () => {
    using pair = sessionPair({
      codec,
      acceptor: {
        onStream: (stream) => {
          if (stream.payload === 'sync') throw new StreamError('room_full', 'No seat left');
          if (stream.payload === 'async') {
            return Promise.reject(new StreamError('not_found', 'No room named "lobby"'));
          }
          throw new Error('secret database detail');
        },
      },
    });
    await assert.rejects(pair.dialer.request('sync'), {
      code: 'room_full',
      message: /No seat left/,
    });
    await assert.rejects(pair.dialer.request('async'), { code: 'not_found' });
    assert.deepEqual(pair.log.acceptor.errors, []);
    await assert.rejects(pair.dialer.request('other'), { code: 'internal' });
    assert.equal(pair.log.acceptor.errors.length, 1);
    assert.equal((pair.log.acceptor.errors[0] as Error).message, 'secret database detail');
  });

  test(`WSM-STR-002 ${c} both directions stream in order and closed resolves after both END`, async () => {
    using pair = sessionPair({
      codec,
      acceptor: {
        onStream: async (stream) => {
          for await (const message of stream) await stream.write(`echo:${message}`);
        },
      },
    });
    const stream = pair.dialer.open('start');
    const reader = stream.readable.getReader();
    await stream.write(1);
    await stream.write(2);
    await stream.end(3);
    const got: unknown[] = [];
    for (;;) {
      const r = await reader.read();
      if (r.done) break;
      got.push(r.value);
    }
    assert.deepEqual(got, ['echo:1', 'echo:2', 'echo:3']);
    await stream.closed;
    assert.equal(pair.dialer.activeStreams, 0);
  });

  test(`WSM-STR-002 ${c} reset() rejects pending reads on both sides with StreamResetError`, async () => {
    let remote: Stream | undefined;
    let remoteRead: Promise<unknown> | undefined;
    using pair = sessionPair({
      codec,
      acceptor: {
        onStream: (stream) => {
          remote = stream;
          remoteRead = stream[Symbol.asyncIterator]().next().catch((e) => e);
          return new Promise(() => {});
        },
      },
    });
    const stream = pair.dialer.open('x');
    const localRead = stream[Symbol.asyncIterator]().next().catch((e) => e);
    await settle();
    stream.reset('cancel', 'bored');
    const local = await localRead;
    assert.ok(local instanceof StreamResetError);
    assert.equal(local.code, 'cancel');
    assert.equal(local.remote, false);
    await settle();
    const far = await remoteRead;
    assert.ok(far instanceof StreamResetError);
    assert.equal(far.code, 'cancel');
    assert.equal(far.remote, true);
    assert.ok(far.message.includes('bored'));
    await assert.rejects(remote!.closed, StreamResetError);
    await assert.rejects(stream.write('late'), StreamResetError);
  });

  test(`WSM-STR-005 ${c} request() rejects with TimeoutError and resets the stream with timeout`, async () => {
    using clock = fakeTime();
    let remote: Stream | undefined;
    using pair = sessionPair({
      codec,
      acceptor: {
        onStream: (stream) => {
          remote = stream;
          return new Promise(() => {});
        },
      },
    });
    const pending = pair.dialer.request('slow', { timeoutMs: 500 }).catch((e) => e);
    await clock.tickAsync(499);
    assert.ok(remote);
    await clock.tickAsync(1);
    const error = await pending;
    assert.ok(error instanceof TimeoutError);
    await clock.tickAsync(0);
    await assert.rejects(
      remote.closed,
      (e: unknown) => e instanceof StreamResetError && e.code === 'timeout',
    );
    assert.equal(clock.countTimers(), 0);
  });

  test(`WSM-STR-005 ${c} later messages after the answer are discarded and credit still flows`, async () => {
    using pair = sessionPair({
      codec,
      acceptor: {
        onStream: async (stream) => {
          const chunk = 'x'.repeat(10_000);
          for (let i = 0; i < 20; i++) await stream.write(chunk); // 200 kB: needs returned credit
          return 'done';
        },
      },
    });
    const first = await pair.dialer.request('go');
    assert.equal(first, 'x'.repeat(10_000));
    await idle(pair.dialer);
    await settle();
    assert.equal(pair.acceptor.activeStreams, 0);
  });

  test(`WSM-STR-006 ${c} closing the session fails every stream with connection_lost; nothing hangs`, async () => {
    using pair = sessionPair({
      codec,
      acceptor: { onStream: () => new Promise(() => {}) },
    });
    const stream = pair.dialer.open('x');
    const read = stream[Symbol.asyncIterator]().next().catch((e) => e);
    const request = pair.dialer.request('y').catch((e) => e);
    const closed = stream.closed.catch((e) => e);
    await settle();
    pair.dialer.close(1000, 'bye');
    for (const outcome of [await read, await request, await closed]) {
      assert.ok(outcome instanceof StreamResetError);
      assert.equal(outcome.code, 'connection_lost');
      assert.equal(outcome.remote, false);
    }
    await assert.rejects(stream.write('z'), StreamResetError);
    assert.deepEqual(pair.log.dialer.closes, [{ code: 1000, reason: 'bye', local: true }]);
    await settle();
    assert.equal(pair.log.acceptor.closes.length, 1);
    assert.equal(pair.acceptor.activeStreams, 0);
    assert.throws(() => pair.dialer.open('again'), NotConnectedError);
  });

  test(`WSM-STR-007 ${c} aborting a stream's signal resets it with cancel`, async () => {
    let remoteClosed: Promise<unknown> | undefined;
    using pair = sessionPair({
      codec,
      acceptor: {
        onStream: (stream) => {
          remoteClosed = stream.closed.catch((e) => e);
          return new Promise(() => {});
        },
      },
    });
    const controller = new AbortController();
    const request = pair.dialer.request('x', { signal: controller.signal }).catch((e) => e);
    await settle();
    controller.abort();
    const error = await request;
    assert.ok(error instanceof StreamResetError);
    assert.equal(error.code, 'cancel');
    await settle();
    const far = await remoteClosed;
    assert.ok(far instanceof StreamResetError);
    assert.equal(far.code, 'cancel');
    assert.equal(far.remote, true);
  });

  test(`WSM-WIRE-003 ${c} PING is answered with PONG by either side`, async () => {
    using pair = sessionPair({ codec });
    pair.dialer.ping();
    pair.acceptor.ping();
    await settle();
    assert.deepEqual(pair.client.sent.map((m) => codec.decode(m)), [[6], [7]]);
    assert.deepEqual(pair.server.sent.map((m) => codec.decode(m)), [[6], [7]]);
  });

  test(`WSM-WIRE-003 ${c} after GOAWAY the receiver opens nothing and the sender refuses new streams`, async () => {
    using pair = sessionPair({ codec, acceptor: { onStream: () => 'ok' } });
    assert.equal(await pair.dialer.request(1), 'ok');
    goAway(pair.acceptor, 'restart', 'deploy', 1000);
    await settle();
    assert.deepEqual(pair.log.dialer.goAways, [
      { lastId: 1, code: 'restart', message: 'deploy', spreadMs: 1000 },
    ]);
    assert.deepEqual(pair.dialer.goAwayReceived, pair.log.dialer.goAways[0]);
    assert.throws(() => pair.dialer.open(2), NotConnectedError);
    await assert.rejects(pair.dialer.request(2), NotConnectedError);
  });

  test(`WSM-WIRE-003 ${c} PUBLISH reaches the dialer's onPublish`, async () => {
    const { encodePublish } = await import('../../lib/wire/publish.ts');
    using pair = sessionPair({ codec });
    assert.equal(
      sendEncoded(pair.acceptor, encodePublish(codec, 'room:1', { n: 1 }, { k: 'v' })),
      true,
    );
    await settle();
    assert.deepEqual(pair.log.dialer.publishes, [{
      tag: 'room:1',
      headers: { k: 'v' },
      payload: { n: 1 },
    }]);
  });

  test(`WSM-ACC-006 ${c} with no handler an OPEN is refused`, async () => {
    using pair = sessionPair({ codec });
    const error = await pair.dialer.request('x').catch((e) => e);
    assert.ok(error instanceof StreamResetError);
    assert.equal(error.code, 'refused');
    assert.equal(error.remote, true);
  });

  test(`WSM-WIRE-007 ${c} a probe session drops a malformed frame and reports it`, () => {
    using p = probe('acceptor', { codec });
    p.session.receive(codec.encode([42]) as string);
    assert.equal(p.log.errors.length, 1);
    assert.equal(p.session.protocolErrors, 1);
    assert.equal(p.session.isClosed, false);
  });

  test(`WSM-STR-005 ${c} over a socket with 50 ms latency a request answers in 100 ms and a 40 ms timeout fires first`, async () => {
    using clock = fakeTime();
    using pair = sessionPair({ codec, delayMs: 50, acceptor: { onStream: (s) => s.payload } });
    const started = Date.now();
    const answer = pair.dialer.request('slow road', { timeoutMs: 150 });
    await clock.tickAsync(100);
    assert.equal(await answer, 'slow road');
    assert.equal(Date.now() - started, 100);
    const early = pair.dialer.request('too slow', { timeoutMs: 40 }).catch((e) => e);
    await clock.tickAsync(40);
    assert.ok(await early instanceof TimeoutError);
    await clock.tickAsync(200); // the late answer and the RESET cross: both ignored
    assert.equal(pair.log.dialer.errors.length + pair.log.acceptor.errors.length, 0);
    assert.equal(pair.dialer.activeStreams + pair.acceptor.activeStreams, 0);
    pair.dialer.close(1000, '');
    await clock.tickAsync(100);
    assert.equal(clock.countTimers(), 0);
  });

  test(`WSM-WIRE-002 ${c} payloads arrive as the codec carries them (${codec.binary ? 'bytes as bytes' : 'JSON values'})`, async () => {
    using pair = sessionPair({ codec, acceptor: { onStream: (s) => s.payload } });
    const bytes = new Uint8Array([0, 1, 2, 255]);
    const echoed = await pair.dialer.request({
      bytes,
      list: [1, 'two', null],
      nested: { ok: true },
    });
    if (codec.binary) {
      assert.deepEqual(echoed, { bytes, list: [1, 'two', null], nested: { ok: true } });
    } else {
      assert.deepEqual(echoed, {
        bytes: { 0: 0, 1: 1, 2: 2, 3: 255 },
        list: [1, 'two', null],
        nested: { ok: true },
      });
    }
  });
}
