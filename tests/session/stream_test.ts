// Unit tests of Stream itself over two in-memory sessions (tests/_session_pair.ts) or one session
// fed hand-made frames (`probe`): writing, ending, resetting, the `closed` outcome, reading by
// async iteration and by `readable`, waiting for credit, the one overshooting message, and
// cancelling through an AbortSignal, and `signal`, which tells a handler the stream failed.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { StreamError, StreamResetError, TimeoutError } from 'muxws';
import type { Codec, Stream } from 'muxws';
import { control } from '../../lib/session/stream.ts';
import { codecs } from '../_codecs.ts';
import { fakeTime } from '../_fake_time.ts';
import { probe, sessionPair, settle } from '../_session_pair.ts';

const WINDOW = 65536;

/** A pair whose acceptor keeps the last stream opened to it, with a handler that never returns. */
function accepting(codec?: Codec): { pair: ReturnType<typeof sessionPair>; remote: () => Stream } {
  let remote: Stream | undefined;
  const pair = sessionPair({
    codec,
    acceptor: {
      onStream: (stream) => {
        remote = stream;
        return new Promise(() => {});
      },
    },
  });
  return {
    pair,
    remote: () => {
      assert.ok(remote, 'the acceptor got the stream');
      return remote;
    },
  };
}

/** Collects every message of `stream` by async iteration. */
async function readAll(stream: Stream): Promise<unknown[]> {
  const out: unknown[] = [];
  for await (const message of stream) out.push(message);
  return out;
}

test('Stream.write() delivers messages in order and Stream.end() ends the direction with a last one (WSM-STR-002)', async () => {
  const { pair, remote } = accepting();
  using _ = pair;
  const stream = pair.dialer.open('first');
  await settle();
  const read = readAll(remote());
  await stream.write('a');
  await stream.write({ b: 2 });
  await stream.end('c');
  assert.equal(remote().payload, 'first');
  assert.deepEqual(await read, ['a', { b: 2 }, 'c']);
});

test('Stream.write() after end() rejects with TypeError, a second end() without a value does nothing, with a value rejects', async () => {
  const { pair } = accepting();
  using _ = pair;
  const stream = pair.dialer.open(null);
  await stream.end();
  await assert.rejects(stream.write('late'), {
    name: 'TypeError',
    message: `Cannot write to stream ${stream.id} as its direction has ended`,
  });
  await stream.end();
  await assert.rejects(stream.end('late'), TypeError);
});

test('Stream.closed resolves once both directions ended (WSM-STR-002)', async () => {
  const { pair, remote } = accepting();
  using _ = pair;
  const stream = pair.dialer.open(null);
  let closed = false;
  stream.closed.then(() => closed = true);
  await stream.end();
  await settle();
  assert.equal(closed, false, 'the other direction is still open');
  await remote().end();
  await settle();
  assert.equal(closed, true);
  assert.equal(pair.dialer.activeStreams, 0);
});

test('Stream.reset() fails pending reads and closed locally and reaches the other side as remote (WSM-STR-002, WSM-WIRE-005)', async () => {
  const { pair, remote } = accepting();
  using _ = pair;
  const stream = pair.dialer.open(null);
  await settle();
  const localRead = stream[Symbol.asyncIterator]().next();
  const remoteRead = remote()[Symbol.asyncIterator]().next();
  stream.reset('gone', 'bye');
  await assert.rejects(localRead, { name: 'StreamResetError', code: 'gone', remote: false });
  await assert.rejects(stream.closed, { code: 'gone', remote: false });
  await assert.rejects(stream.write('x'), StreamResetError);
  await assert.rejects(remoteRead, { code: 'gone', remote: true });
  await assert.rejects(remote().closed, { message: /reset by the other side with "gone": bye/ });
  stream.reset('again'); // does nothing once finished
});

test('Stream.reset() rejects a code outside the reset code pattern and a message that is not a string', () => {
  const { pair } = accepting();
  using _ = pair;
  const stream = pair.dialer.open(null);
  assert.throws(() => stream.reset('Bad'), {
    name: 'TypeError',
    message:
      `Cannot reset stream ${stream.id} as "code" must match ^[a-z][a-z0-9_.-]{0,63}$: current value is "Bad"`,
  });
  assert.throws(
    () => stream.reset('fine', 7 as unknown as string),
    /"message" must be a string: current value is 7/,
  );
});

test('Stream async iteration ends when the other side ends; leaving early discards later messages without a reset', async () => {
  const { pair, remote } = accepting();
  using _ = pair;
  const stream = pair.dialer.open(null);
  await settle();
  await stream.write(1);
  await stream.write(2);
  await settle();
  for await (const message of remote()) {
    assert.equal(message, 1);
    break;
  }
  await stream.write(3);
  await stream.end();
  await settle();
  assert.deepEqual(await readAll(remote()), [], 'nothing is queued after the reader left');
  await remote().end();
  await stream.closed; // resolves: leaving the loop did not reset
});

test('Stream.readable yields the same messages and its cancel() stops queueing', async () => {
  const { pair, remote } = accepting();
  using _ = pair;
  const stream = pair.dialer.open(null);
  await settle();
  await stream.write('x');
  await stream.write('y');
  await settle();
  const reader = remote().readable.getReader();
  assert.deepEqual(await reader.read(), { value: 'x', done: false });
  assert.deepEqual(await reader.read(), { value: 'y', done: false });
  await reader.cancel();
  await stream.end('z');
  await settle();
  assert.deepEqual(await readAll(remote()), [], 'z was discarded');
  assert.equal(remote().readable, remote().readable, 'made once');
});

test('Stream.write() waits while the credit is used up and one overshooting message leaves whole (WSM-WIRE-006)', async () => {
  using p = probe('dialer');
  const stream = p.session.open(null);
  const chunk = 'w'.repeat(30_000);
  // 30 KiB, 60 KiB, then a third message while 5 KiB of credit remain: it leaves whole.
  for (let i = 0; i < 3; i++) await stream.write(chunk);
  const data = () => p.sent.filter((frame) => (frame as unknown[])[0] === 2).length;
  assert.equal(data(), 3);
  let written = false;
  const waiting = stream.write(chunk).then(() => written = true);
  await settle();
  assert.equal(written, false, 'the credit is spent');
  assert.equal(data(), 3);
  p.session.receive(JSON.stringify([5, stream.id, WINDOW / 2]));
  await waiting;
  assert.equal(data(), 4);
});

test('Stream is reset with cancel when its signal aborts, and born reset when it was aborted already (WSM-STR-007)', async () => {
  using p = probe('dialer');
  const controller = new AbortController();
  const stream = p.session.open(null, { signal: controller.signal });
  const read = stream[Symbol.asyncIterator]().next();
  controller.abort();
  await assert.rejects(read, { name: 'StreamResetError', code: 'cancel', remote: false });
  assert.deepEqual(p.sent.at(-1), [4, stream.id, 'cancel', 'Aborted']);
  const before = p.sent.length;
  const unsent = p.session.open(null, { signal: controller.signal });
  await assert.rejects(unsent.closed, { code: 'cancel' });
  assert.equal(p.sent.length, before, 'nothing is sent for an aborted signal');
  assert.equal(p.session.nextStreamId, stream.id + 2, 'and no id is used');
});

test('Stream fails with connection_lost when its session ends', async () => {
  using p = probe('dialer');
  const stream = p.session.open(null);
  const write = stream.write('x');
  await write;
  p.session.closed(1006, '');
  await assert.rejects(stream.closed, { code: 'connection_lost', remote: false });
  await assert.rejects(stream.write('y'), { code: 'connection_lost' });
});

for (const codec of codecs) {
  const c = `[${codec.name}]`;

  test(`Stream.signal aborts with the StreamResetError when the other side resets the stream ${c} (WSM-APP-005)`, async () => {
    const { pair, remote } = accepting(codec);
    using _ = pair;
    const stream = pair.dialer.open('x');
    const signal = stream.signal;
    await settle();
    assert.equal(signal.aborted, false);
    remote().reset('room_full', 'No seat left');
    await settle();
    assert.equal(signal.aborted, true);
    assert.ok(signal.reason instanceof StreamResetError);
    assert.equal(signal.reason.code, 'room_full');
    assert.equal(signal.reason.remote, true);
    await assert.rejects(stream.closed, (error) => error === signal.reason);
  });

  test(`Stream.signal aborts when this side resets the stream, and the other side's signal too ${c} (WSM-APP-005)`, async () => {
    const { pair, remote } = accepting(codec);
    using _ = pair;
    const stream = pair.dialer.open('x');
    await settle();
    const theirs = remote().signal;
    const aborted: unknown[] = [];
    stream.signal.addEventListener('abort', () => aborted.push(stream.signal.reason));
    stream.reset('cancel', 'Changed my mind');
    assert.equal(aborted.length, 1, 'at once, from reset()');
    assert.deepEqual([
      (aborted[0] as StreamResetError).code,
      (aborted[0] as StreamResetError).remote,
    ], [
      'cancel',
      false,
    ]);
    await settle();
    assert.equal(theirs.aborted, true);
    assert.equal((theirs.reason as StreamResetError).code, 'cancel');
    assert.equal((theirs.reason as StreamResetError).remote, true);
  });

  test(`Stream.signal aborts with connection_lost when the connection is lost ${c} (WSM-APP-005, WSM-STR-006)`, async () => {
    const { pair, remote } = accepting(codec);
    using _ = pair;
    const stream = pair.dialer.open('x');
    await settle();
    const ours = stream.signal;
    const theirs = remote().signal;
    pair.client.drop();
    pair.dialer.closed(1006, '');
    pair.acceptor.closed(1006, '');
    for (const signal of [ours, theirs]) {
      assert.equal(signal.aborted, true);
      assert.equal((signal.reason as StreamResetError).code, 'connection_lost');
      assert.equal((signal.reason as StreamResetError).remote, false);
    }
  });
}

test('Stream.signal read after the stream failed is aborted already, with the same reason (WSM-APP-005)', async () => {
  using p = probe('dialer');
  const stream = p.session.open(null);
  p.session.receive(JSON.stringify([4, stream.id, 'nope', 'no']));
  const error = await stream.closed.catch((e) => e);
  const signal = stream.signal;
  assert.equal(signal.aborted, true);
  assert.equal(signal.reason, error);
  assert.equal(stream.signal, signal, 'one signal per stream');
  const unsent = p.session.open(null, { signal: AbortSignal.abort() });
  assert.equal(unsent.signal.aborted, true);
  assert.equal((unsent.signal.reason as StreamResetError).code, 'cancel');
});

test('Stream.signal read late, while the stream lives, still aborts when it fails; a stream that ends never aborts it (WSM-APP-005)', async () => {
  using p = probe('dialer');
  const stream = p.session.open(null);
  await stream.write('a');
  p.session.receive(JSON.stringify([2, stream.id, 0, 'b']));
  const signal = stream.signal;
  p.session.receive(JSON.stringify([4, stream.id, 'gone', '']));
  assert.equal(signal.aborted, true);
  assert.equal((signal.reason as StreamResetError).code, 'gone');
  const ended = p.session.open(null, { end: true });
  const early = ended.signal;
  p.session.receive(JSON.stringify([3, ended.id]));
  await ended.closed;
  assert.equal(early.aborted, false);
  assert.equal(ended.signal.aborted, false);
});

test('Stream.signal of a request that times out aborts with the TimeoutError (WSM-APP-005, WSM-STR-005)', async () => {
  using clock = fakeTime();
  using p = probe('dialer');
  const stream = p.session.open('q', { end: true });
  const answer = control.request(stream, 250).catch((e) => e);
  const signal = stream.signal;
  await clock.tickAsync(250);
  const error = await answer;
  assert.ok(error instanceof TimeoutError);
  assert.equal(signal.aborted, true);
  assert.equal(signal.reason, error);
  assert.deepEqual(p.sent.at(-1), [4, stream.id, 'timeout', 'No answer within 250 ms']);
  assert.equal(stream.signal.reason, error, 'read again later: the same reason');
});

test('Stream.signal of a stream never read makes no AbortController (WSM-APP-005)', () => {
  using p = probe('dialer');
  const original = globalThis.AbortController;
  let made = 0;
  globalThis.AbortController = class extends original {
    constructor() {
      super();
      made++;
    }
  };
  try {
    const stream = p.session.open(null);
    stream.reset('cancel');
    assert.equal(made, 0);
    assert.equal(stream.signal.aborted, true);
    assert.equal(made, 1);
  } finally {
    globalThis.AbortController = original;
  }
});

for (const codec of codecs) {
  test(`an onStream handler sees stream.signal abort when the dialer cancels [${codec.name}] (WSM-APP-005, WSM-STR-007)`, async () => {
    let reason: unknown;
    let stopped!: () => void;
    const handlerDone = new Promise<void>((resolve) => (stopped = resolve));
    using pair = sessionPair({
      codec,
      acceptor: {
        onStream: async (stream) => {
          await new Promise<void>((resolve) => {
            stream.signal.addEventListener('abort', () => resolve(), { once: true });
          });
          reason = stream.signal.reason;
          stopped();
          throw new StreamError('late', 'the caller left');
        },
      },
    });
    const controller = new AbortController();
    const answer = pair.dialer.request('work', { signal: controller.signal });
    await settle();
    controller.abort();
    await assert.rejects(answer, { name: 'StreamResetError', code: 'cancel', remote: false });
    await handlerDone;
    assert.ok(reason instanceof StreamResetError);
    assert.equal(reason.code, 'cancel');
    assert.equal(reason.remote, true);
    await settle();
    assert.deepEqual(pair.log.acceptor.errors, []);
  });
}
