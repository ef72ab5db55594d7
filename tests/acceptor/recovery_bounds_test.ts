// Recovery's bounds (WSM-REC-006): what an acceptor holds for a peer whose position or replay is
// pending, how much one resume replays, the deadline of a stalled recovery, one timer for every
// stalled peer, and the dialer identity a redial sends back. The acceptor is driven with raw
// frames through attach() over sinks whose `bufferedAmount` the test sets, on fake time.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Acceptor, type AttachedPeer, type History, memoryHistory } from 'muxws/acceptor';
import { Positions } from '../../lib/dialer/_resume.ts';
import { fakeTime } from '../_fake_time.ts';

/** Lets queued microtasks run. */
async function settle(rounds = 50): Promise<void> {
  for (let i = 0; i < rounds; i++) await Promise.resolve();
}

/** A peer over a sink whose `bufferedAmount` is what the test sets, and how it was closed. */
interface SinkPeer {
  handle: AttachedPeer;
  got: unknown[][];
  buffered: number;
  closed: { code: number; reason: string } | undefined;
}

/** Attaches a peer holding `tags` whose socket starts with `buffered` bytes unsent. */
function sinkPeer(acceptor: Acceptor, tags: string[], buffered = 0): SinkPeer {
  const peer = { got: [], buffered, closed: undefined } as unknown as SinkPeer;
  peer.handle = acceptor.attach({
    send: (data) => void peer.got.push(JSON.parse(String(data))),
    close: (code, reason) => peer.closed ??= { code: code ?? 1005, reason: reason ?? '' },
    get bufferedAmount() {
      return peer.buffered;
    },
  }, { tags });
  return peer;
}

/** The OPEN of a hello with `headers` and a null payload: stream 1, END and HELLO. */
function hello(headers: Record<string, unknown>): string {
  return JSON.stringify([1, 1, 3, headers, null]);
}

/** The PUBLISH payloads `got` for `tag`, markers left out. */
function payloads(got: unknown[][], tag: string): unknown[] {
  return got.filter((f) => f[0] === 9 && f[1] === tag && f[3] !== null).map((f) => f[3]);
}

/** `got` without the `:dialer` identity a peer's first position carries. */
function anonymous(got: unknown[][]): unknown[][] {
  return got.map(([kind, tag, headers, payload]) => {
    const { ':dialer': _, ...rest } = headers as Record<string, unknown>;
    return [kind, tag, rest, payload];
  });
}

/** The `:recovered` markers of `got`, as `[tag, headers]`. */
function markers(got: unknown[][]): unknown[][] {
  return got.filter((f) => f[0] === 9 && f[3] === null && ':recovered' in (f[2] as object))
    .map((f) => [f[1], f[2]]);
}

const CONGESTED = 2 * 1024 * 1024; // above the default highWaterMark of 1 MiB

test('an acceptor closes with 1013 a peer whose pending replay holds more than maxHeldBytes of broadcasts, and drops them (WSM-REC-006)', async () => {
  using clock = fakeTime();
  const history = memoryHistory({ now: () => 0 });
  const acceptor = new Acceptor({
    idleTimeoutMs: 0,
    history,
    recovery: { maxHeldBytes: 10_000 },
  });
  const text = 'x'.repeat(1000);
  for (let i = 0; i < 3; i++) await acceptor.broadcast('room', text);
  const other = sinkPeer(acceptor, ['room']);
  // It resumes from 0 and reads nothing: the replay waits for its socket.
  const stuck = sinkPeer(acceptor, ['room'], CONGESTED);
  stuck.handle.message(hello({ ':resume': { room: 0 } }));
  await settle();
  for (let i = 0; i < 9; i++) await acceptor.broadcast('room', text);
  assert.equal(stuck.closed, undefined, '9 broadcasts of about 1 KB are held');
  await acceptor.broadcast('room', text);
  assert.deepEqual(stuck.closed, { code: 1013, reason: 'recovery held too much' });
  assert.equal(stuck.handle.peer.isClosed, true);
  // Nothing it held is sent after, whatever its socket does.
  stuck.buffered = 0;
  await clock.tickAsync(100);
  assert.deepEqual(payloads(stuck.got, 'room'), []);
  assert.equal(payloads(other.got, 'room').length, 10, 'the other peer had every live one');
  assert.equal(clock.countTimers(), 0, 'no timer left for the closed peer');
  await acceptor.close({ drainMs: 0 });
});

test('an acceptor closes with 1013 a peer whose position waits behind its own congestion once its held broadcasts pass maxHeldBytes (WSM-REC-006)', async () => {
  using clock = fakeTime();
  const acceptor = new Acceptor({
    idleTimeoutMs: 0,
    history: memoryHistory({ now: () => 0 }),
    recovery: { maxHeldBytes: 5_000 },
  });
  const stuck = sinkPeer(acceptor, ['room'], CONGESTED);
  await settle();
  const text = 'y'.repeat(1000);
  for (let i = 0; i < 4; i++) await acceptor.broadcast('room', text);
  assert.equal(stuck.closed, undefined);
  await acceptor.broadcast('room', text);
  assert.deepEqual(stuck.closed, { code: 1013, reason: 'recovery held too much' });
  await clock.tickAsync(20);
  assert.equal(clock.countTimers(), 0);
  await acceptor.close({ drainMs: 0 });
});

test('stalled recoveries are re-checked by one timer of the acceptor, woken by a drain, and closed with 1013 after stallTimeoutMs (WSM-REC-006)', async () => {
  using clock = fakeTime();
  const acceptor = new Acceptor({
    idleTimeoutMs: 0,
    history: memoryHistory({ now: () => 0 }),
    recovery: { stallTimeoutMs: 5000 },
  });
  await acceptor.broadcast('room', 'logged');
  const base = clock.countTimers();
  const peers = Array.from({ length: 50 }, () => sinkPeer(acceptor, ['room'], CONGESTED));
  await settle();
  assert.equal(clock.countTimers() - base, 1, 'one timer for 50 stalled peers');
  // One drains: it is told its position at the next re-check.
  peers[0].buffered = 0;
  await clock.tickAsync(10);
  assert.deepEqual(anonymous(peers[0].got), [[9, 'room', { ':seq': 1, ':position': true }, null]]);
  assert.equal(peers[1].got.length, 0);
  await clock.tickAsync(4980);
  assert.ok(peers.every((peer) => peer.closed === undefined), 'none closed before the deadline');
  await clock.tickAsync(20);
  for (const peer of peers.slice(1)) {
    assert.deepEqual(peer.closed, { code: 1013, reason: 'recovery stalled' });
  }
  assert.equal(peers[0].closed, undefined);
  assert.equal(clock.countTimers(), base, 'the shared timer is gone with the last stalled peer');
  await acceptor.close({ drainMs: 0 });
});

test('a drain reported by the socket wakes a stalled recovery at once (WSM-REC-006)', async () => {
  using clock = fakeTime();
  const acceptor = new Acceptor({ idleTimeoutMs: 0, history: memoryHistory({ now: () => 0 }) });
  const peer = sinkPeer(acceptor, ['room'], CONGESTED);
  await settle();
  peer.buffered = 0;
  peer.handle.drain();
  await settle();
  assert.deepEqual(anonymous(peer.got), [[9, 'room', { ':seq': 0, ':position': true }, null]]);
  assert.equal(clock.countTimers(), 0);
  await acceptor.close({ drainMs: 0 });
});

test('a resume replays at most maxReplay entries, all its tags together, and ends with a gap where entries were left (WSM-REC-006)', async () => {
  using _clock = fakeTime();
  const history = memoryHistory({ now: () => 0 });
  const acceptor = new Acceptor({ idleTimeoutMs: 0, history, recovery: { maxReplay: 20 } });
  for (let i = 1; i <= 30; i++) await acceptor.broadcast('a', i);
  for (let i = 1; i <= 5; i++) await acceptor.broadcast('b', i);
  await acceptor.broadcast('c', 1);
  const peer = sinkPeer(acceptor, ['a', 'b', 'c']);
  peer.handle.message(hello({ ':resume': { a: 0, b: 0, c: 1 } }));
  await settle(200);
  assert.deepEqual(payloads(peer.got, 'a'), Array.from({ length: 20 }, (_, i) => i + 1));
  assert.deepEqual(payloads(peer.got, 'b'), []);
  assert.deepEqual(markers(peer.got), [
    ['a', { ':seq': 20, ':recovered': { replayed: 20, gap: true } }],
    ['b', { ':seq': 0, ':recovered': { replayed: 0, gap: true } }],
    // Nothing was logged after its position: no gap.
    ['c', { ':seq': 1, ':recovered': { replayed: 0, gap: false } }],
  ]);
  await acceptor.broadcast('a', 31);
  assert.deepEqual(payloads(peer.got, 'a').at(-1), 31, 'live ones follow');
  await acceptor.close({ drainMs: 0 });
});

test('a connection is replayed once: a second hello naming the same tags replays nothing (WSM-REC-006)', async () => {
  using _clock = fakeTime();
  const errors: unknown[] = [];
  const acceptor = new Acceptor({
    idleTimeoutMs: 0,
    history: memoryHistory({ now: () => 0 }),
    onError: (error) => void errors.push(error),
  });
  for (let i = 1; i <= 5; i++) await acceptor.broadcast('room', i);
  const peer = sinkPeer(acceptor, ['room']);
  peer.handle.message(hello({ ':resume': { room: 0 } }));
  await settle(100);
  peer.handle.message(hello({ ':resume': { room: 0 } }));
  peer.handle.message(JSON.stringify([1, 3, 3, { ':resume': { room: 0 } }, null]));
  await settle(100);
  assert.deepEqual(payloads(peer.got, 'room'), [1, 2, 3, 4, 5]);
  assert.equal(markers(peer.got).length, 1);
  assert.equal(errors.length, 2, 'each later hello is a protocol error');
  await acceptor.close({ drainMs: 0 });
});

test('a replay reads large entries in batches of about maxHeldBytes (WSM-REC-006)', async () => {
  using _clock = fakeTime();
  const inner = memoryHistory({ now: () => 0 });
  const limits: number[] = [];
  const history: History = {
    append: (tag, data) => inner.append(tag, data),
    head: (tag) => inner.head(tag),
    range: (tag, after, limit) => {
      limits.push(limit);
      return inner.range(tag, after, limit);
    },
  };
  const acceptor = new Acceptor({ idleTimeoutMs: 0, history, recovery: { maxHeldBytes: 100_000 } });
  const text = 'z'.repeat(10_000);
  for (let i = 0; i < 60; i++) await acceptor.broadcast('room', text);
  const peer = sinkPeer(acceptor, ['room']);
  peer.handle.message(hello({ ':resume': { room: 0 } }));
  await settle(400);
  assert.equal(payloads(peer.got, 'room').length, 60);
  assert.equal(limits[0], 32);
  // About 10 KB an entry: 100 KB is 9 of them (each frame is a little over 10,000 bytes).
  assert.deepEqual(limits.slice(1, 3), [9, 9]);
  await acceptor.close({ drainMs: 0 });
});

test('the dialer keeps the identity an acceptor told it and sends it back with :resume (WSM-REC-006)', () => {
  const untold = new Positions(() => {}, () => {});
  untold.receive({ tag: 't', headers: { ':seq': 1 }, payload: 1 });
  assert.deepEqual(untold.resume(true), { ':resume': { t: 1 }, ':dialer': undefined }, 'none told');
  const positions = new Positions(() => {}, () => {});
  positions.receive({ tag: 't', headers: { ':seq': 1 }, payload: 1 });
  positions.receive({
    tag: 't',
    headers: { ':seq': 2, ':position': true, ':dialer': 'id-1' },
    payload: null,
  });
  assert.deepEqual(positions.resume(true), { ':resume': { t: 2 }, ':dialer': 'id-1' });
});

test('new Acceptor() refuses a recovery bound that is not a positive integer', () => {
  assert.throws(
    () => new Acceptor({ history: memoryHistory(), recovery: { maxHeldBytes: 0.5 } }),
    {
      name: 'RangeError',
      message:
        'Cannot create Acceptor as "recovery.maxHeldBytes" must be a positive integer: current value is 0.5',
    },
  );
  assert.throws(
    () => new Acceptor({ recovery: { stallTimeoutMs: 0 } }),
    /"recovery.stallTimeoutMs" must be a positive integer: current value is 0/,
  );
});
