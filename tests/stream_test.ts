// Unit tests of Stream itself over two in-memory sessions (tests/_session_pair.ts) or one session
// fed hand-made frames (`probe`): writing, ending, resetting, the `closed` outcome, reading by
// async iteration and by `readable`, waiting for credit, the one overshooting message, and
// cancelling through an AbortSignal.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { StreamResetError } from 'muxws';
import type { Stream } from 'muxws';
import { probe, sessionPair, settle } from './_session_pair.ts';

const WINDOW = 65536;

/** A pair whose acceptor keeps the last stream opened to it, with a handler that never returns. */
function accepting(): { pair: ReturnType<typeof sessionPair>; remote: () => Stream } {
  let remote: Stream | undefined;
  const pair = sessionPair({
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
