import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createClient } from 'redis';
import {
  type BackplaneError,
  BackplaneError as BackplaneErrorClass,
  BackplaneGapError,
  type BackplaneMessage,
  broadcastChannelBackplane,
} from 'muxws/backplane';
import {
  type RedisBackplane,
  redisBackplane,
  type RedisPublisher,
  type RedisSubscriber,
} from 'muxws/redis';
import { ClosedError } from 'muxws';
import { startRedis } from '../_redis.ts';
import { waitFor, within } from '../_wait.ts';

// Every wait below is bounded by within() or waitFor(); nothing sleeps to assert timing except
// the Redis outage, which is real time by nature (3 s with Redis stopped).

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/**
 * Deno 2.9 breaks a `BroadcastChannel` created in the same task that closed the isolate's last
 * one (its `postMessage` then throws `TypeError: expected i32`): each test lets that close finish.
 */
function afterLastChannelClosed(): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, 10));
}

function uniqueName(): string {
  return `muxws-test-${crypto.randomUUID()}`;
}

/** A message like the acceptor's: the PUBLISH frame JSON-encoded once, `n` as its payload. */
function message(
  n: number,
  origin: string,
  extra: Partial<BackplaneMessage> = {},
): BackplaneMessage {
  return {
    tag: 'room',
    headers: null,
    payload: JSON.stringify([9, 'room', null, n]),
    except: [],
    origin,
    codec: 'json',
    ...extra,
  };
}

function numberOf(m: BackplaneMessage): number {
  return JSON.parse(m.payload as string)[3];
}

// --- BroadcastChannel -------------------------------------------------------------------------

test('WSM-BP-002 broadcastChannelBackplane() hands a message to the other node once and never back to its publisher', async () => {
  const name = uniqueName();
  const a = broadcastChannelBackplane(name);
  const b = broadcastChannelBackplane(name);
  try {
    const atA: BackplaneMessage[] = [];
    const atB: BackplaneMessage[] = [];
    a.subscribe((m) => atA.push(m));
    b.subscribe((m) => atB.push(m));
    const first = message(1, 'a', { except: ['muted'], headers: { kind: 'chat' } });
    await a.publish(first);
    await a.publish(message(2, 'a'));
    await waitFor(() => atB.length >= 2, 2000, 'two messages at b', 5);
    // b answers; once its message is at a, anything a could have echoed to itself is there too.
    await b.publish(message(3, 'b'));
    await waitFor(() => atA.length >= 1, 2000, 'the message at a', 5);
    await sleep(20);
    assert.deepEqual(atB.map(numberOf), [1, 2]);
    assert.deepEqual(atB[0], first);
    assert.deepEqual(atA.map(numberOf), [3]);
    assert.equal(a.name, name);
  } finally {
    a.close();
    b.close();
    await afterLastChannelClosed();
  }
});

test('WSM-BP-002 broadcastChannelBackplane() delivers 1,000 messages of a burst complete and in order', async () => {
  const name = uniqueName();
  const a = broadcastChannelBackplane(name);
  const b = broadcastChannelBackplane(name);
  try {
    const got: number[] = [];
    b.subscribe((m) => got.push(numberOf(m)));
    const published: Promise<void>[] = [];
    for (let n = 1; n <= 1000; n++) published.push(a.publish(message(n, 'a')));
    await Promise.all(published);
    await waitFor(() => got.length >= 1000, 5000, '1,000 messages', 5);
    await sleep(20);
    assert.equal(got.length, 1000);
    assert.deepEqual(got, Array.from({ length: 1000 }, (_, i) => i + 1));
  } finally {
    a.close();
    b.close();
    await afterLastChannelClosed();
  }
});

test('WSM-BP-002 broadcastChannelBackplane() carries a binary frame as the same bytes', async () => {
  const name = uniqueName();
  const a = broadcastChannelBackplane(name);
  const b = broadcastChannelBackplane(name);
  try {
    const received = new Promise<BackplaneMessage>((resolve) => b.subscribe(resolve));
    const bytes = new Uint8Array([0x94, 0x09, 0xa4, 0x72, 0x6f, 0x6f, 0x6d, 0xc0, 0xff]);
    await a.publish(message(0, 'a', { payload: bytes, codec: 'msgpack' }));
    const m = await within(received, 2000, 'the binary message');
    assert.ok(m.payload instanceof Uint8Array);
    assert.deepEqual([...m.payload], [...bytes]);
    assert.equal(m.codec, 'msgpack');
  } finally {
    a.close();
    b.close();
    await afterLastChannelClosed();
  }
});

test('WSM-BP-004 broadcastChannelBackplane() reports a message structuredClone cannot copy through the publish promise, never by throwing', async () => {
  const name = uniqueName();
  const a = broadcastChannelBackplane(name);
  const errors: BackplaneError[] = [];
  const b = broadcastChannelBackplane(name, { onError: (error) => errors.push(error) });
  try {
    const atB: number[] = [];
    b.subscribe((m) => atB.push(numberOf(m)));
    await a.publish(message(0, 'a'));
    let result: Promise<void> | undefined;
    assert.doesNotThrow(() => {
      result = a.publish(message(1, 'a', { headers: { callback: () => {} } }));
    });
    await assert.rejects(result!, (error: unknown) => {
      assert.ok(error instanceof BackplaneErrorClass);
      assert.match(error.message, /cannot be structured-cloned/);
      assert.ok(error.cause !== undefined);
      return true;
    });
    // The channel still works after the failure, and b learns that one message never came.
    await a.publish(message(2, 'a'));
    await waitFor(() => atB.length >= 2, 2000, 'the next message', 5);
    await sleep(20);
    assert.deepEqual(atB, [0, 2]);
    assert.equal(errors.length, 1);
    assert.ok(errors[0] instanceof BackplaneGapError);
    assert.equal(errors[0].missed, 1);
    assert.equal(errors[0].origin, 'a');
  } finally {
    a.close();
    b.close();
    await afterLastChannelClosed();
  }
});

test('WSM-BP-001 broadcastChannelBackplane() reports what is not a backplane message and contains a throwing subscriber', async () => {
  const name = uniqueName();
  const errors: BackplaneError[] = [];
  const b = broadcastChannelBackplane(name, { onError: (error) => errors.push(error) });
  const raw = new BroadcastChannel(name);
  const a = broadcastChannelBackplane(name);
  try {
    const got: number[] = [];
    b.subscribe(() => {
      throw new Error('subscriber bug');
    });
    b.subscribe((m) => got.push(numberOf(m)));
    raw.postMessage({ hello: 'not a backplane message' });
    await a.publish(message(7, 'a'));
    await waitFor(() => got.length >= 1 && errors.length >= 2, 2000, 'the message and 2 errors', 5);
    assert.deepEqual(got, [7]);
    assert.match(errors[0].message, /not a backplane envelope/);
    assert.match(errors[1].message, /subscriber threw/);
    assert.equal((errors[1].cause as Error).message, 'subscriber bug');
  } finally {
    raw.close();
    a.close();
    b.close();
    await afterLastChannelClosed();
  }
});

test('WSM-BP-002 broadcastChannelBackplane() drops repeated and older envelopes and reports skipped sequence numbers as missed messages', async () => {
  const name = uniqueName();
  const errors: BackplaneError[] = [];
  const b = broadcastChannelBackplane(name, { onError: (error) => errors.push(error) });
  const raw = new BroadcastChannel(name);
  try {
    const got: number[] = [];
    b.subscribe((m) => got.push(numberOf(m)));
    const post = (sender: string, seq: number, n: number) =>
      raw.postMessage({ v: 1, sender, seq, message: message(n, `node-${sender}`) });
    for (
      const [sender, seq, n] of [
        ['x', 1, 1],
        ['x', 2, 2],
        ['x', 2, 2],
        ['y', 7, 70],
        ['x', 1, 1],
        ['x', 5, 5],
        ['y', 8, 80],
      ] as const
    ) post(sender, seq, n);
    await waitFor(() => got.length >= 5, 2000, 'five messages', 5);
    await sleep(20);
    assert.deepEqual(got, [1, 2, 70, 5, 80]);
    assert.equal(errors.length, 1);
    const gap = errors[0];
    assert.ok(gap instanceof BackplaneGapError);
    assert.equal(gap.missed, 2);
    assert.equal(gap.origin, 'node-x');
    assert.ok(gap.endedAt >= gap.startedAt);
  } finally {
    raw.close();
    b.close();
    await afterLastChannelClosed();
  }
});

test('WSM-BP-002 broadcastChannelBackplane() validates its arguments and rejects publishing after close()', async () => {
  assert.throws(
    () => broadcastChannelBackplane(''),
    {
      name: 'TypeError',
      message:
        'Cannot create broadcastChannelBackplane as "name" must be a non-empty string: current value is ""',
    },
  );
  assert.throws(
    // @ts-expect-error: a wrong type on purpose
    () => broadcastChannelBackplane('x', { onError: 'log' }),
    /"onError" must be a function: current value is "log"/,
  );
  const a = broadcastChannelBackplane(uniqueName());
  const unsubscribe = a.subscribe(() => {});
  unsubscribe();
  unsubscribe();
  // @ts-expect-error: a wrong type on purpose
  await assert.rejects(a.publish({ tag: 'x' }), /is not a backplane message/);
  a.close();
  a.close();
  await assert.rejects(a.publish(message(1, 'a')), ClosedError);
  await afterLastChannelClosed();
});

// --- Redis: in-memory stand-ins for the edge cases ---------------------------------------------

type Listener = (message: string, channel: string) => void;
type EventListener = (error?: unknown) => void;

/** A stand-in for a node-redis client whose connection state the test drives. */
class FakeClient implements RedisPublisher, RedisSubscriber {
  isReady = true;
  published: [string, string][] = [];
  listeners = new Map<string, Set<Listener>>();
  events = new Map<string, Set<EventListener>>();
  subscribeCalls = 0;
  failSubscribe = false;

  on(event: string, listener: EventListener): this {
    if (!this.events.has(event)) this.events.set(event, new Set());
    this.events.get(event)!.add(listener);
    return this;
  }
  off(event: string, listener: EventListener): this {
    this.events.get(event)?.delete(listener);
    return this;
  }
  emit(event: string, error?: unknown): void {
    for (const listener of [...(this.events.get(event) ?? [])]) listener(error);
  }
  publish(channel: string, text: string): Promise<number> {
    this.published.push([channel, text]);
    return Promise.resolve(1);
  }
  subscribe(channel: string, listener: Listener): Promise<void> {
    this.subscribeCalls++;
    if (this.failSubscribe) return Promise.reject(new Error('subscribe refused'));
    if (!this.listeners.has(channel)) this.listeners.set(channel, new Set());
    this.listeners.get(channel)!.add(listener);
    return Promise.resolve();
  }
  unsubscribe(channel: string, listener: Listener): Promise<void> {
    this.listeners.get(channel)?.delete(listener);
    return Promise.resolve();
  }
  deliver(channel: string, text: string): void {
    for (const listener of [...(this.listeners.get(channel) ?? [])]) listener(text, channel);
  }
  eventCount(): number {
    let n = 0;
    for (const set of this.events.values()) n += set.size;
    return n;
  }
}

function envelope(sender: string, seq: number, n: number, origin = 'node-x'): string {
  return JSON.stringify({
    v: 1,
    sender,
    seq,
    origin,
    tag: 'room',
    except: [],
    codec: 'json',
    headers: null,
    frame: JSON.stringify([9, 'room', null, n]),
  });
}

test('WSM-BP-003 redisBackplane() rejects a publish at once while the publisher is not connected, queueing nothing', async () => {
  const publisher = new FakeClient();
  const subscriber = new FakeClient();
  const errors: BackplaneError[] = [];
  const bp = redisBackplane({
    publisher,
    subscriber,
    channel: 'c',
    onError: (e) => errors.push(e),
  });
  try {
    await within(bp.ready(), 1000, 'ready');
    publisher.isReady = false;
    publisher.emit('error', new Error('ECONNRESET'));
    publisher.emit('reconnecting');
    publisher.emit('error', new Error('ECONNREFUSED'));
    let result: Promise<void> | undefined;
    assert.doesNotThrow(() => (result = bp.publish(message(1, 'a'))));
    await assert.rejects(result!, /the publisher is not connected/);
    assert.equal(publisher.published.length, 0);
    // One report per outage, however many errors the client emits while reconnecting.
    assert.equal(errors.length, 1);
    assert.match(
      errors[0].message,
      /The Redis publisher of channel "c" lost its connection: ECONNRESET/,
    );
    publisher.isReady = true;
    publisher.emit('ready');
    await bp.publish(message(2, 'a'));
    assert.equal(publisher.published.length, 1);
    const sent = JSON.parse(publisher.published[0][1]);
    assert.equal(publisher.published[0][0], 'c');
    // The failed publish used sequence number 1, so receivers can count it as missed.
    assert.equal(sent.seq, 2);
    assert.equal(sent.frame, '[9,"room",null,2]');
  } finally {
    await bp.close();
  }
});

test('WSM-BP-003 redisBackplane() resubscribes when the subscriber is ready again and reports the gap', async () => {
  const publisher = new FakeClient();
  const subscriber = new FakeClient();
  const errors: BackplaneError[] = [];
  const bp = redisBackplane({
    publisher,
    subscriber,
    channel: 'c',
    onError: (e) => errors.push(e),
  });
  try {
    await within(bp.ready(), 1000, 'ready');
    assert.equal(subscriber.subscribeCalls, 1);
    const before = Date.now();
    subscriber.isReady = false;
    subscriber.listeners.clear(); // a client that forgets its subscriptions on reconnect
    subscriber.emit('error', new Error('socket closed'));
    subscriber.emit('reconnecting');
    assert.equal(errors.length, 1);
    subscriber.isReady = true;
    subscriber.failSubscribe = true;
    subscriber.emit('ready');
    await waitFor(() => errors.length >= 2, 1000, 'the failed resubscribe', 5);
    assert.match(errors[1].message, /Cannot subscribe to Redis channel "c": subscribe refused/);
    subscriber.failSubscribe = false;
    subscriber.emit('ready');
    await within(bp.ready(), 1000, 'ready again');
    assert.equal(subscriber.subscribeCalls, 3);
    const gap = errors[2];
    assert.ok(gap instanceof BackplaneGapError);
    assert.ok(gap.startedAt >= before && gap.endedAt >= gap.startedAt);
    assert.equal(gap.missed, undefined);
    const got: number[] = [];
    bp.subscribe((m) => got.push(numberOf(m)));
    subscriber.deliver('c', envelope('s1', 1, 10));
    assert.deepEqual(got, [10]);
  } finally {
    await bp.close();
  }
});

test('WSM-BP-003 redisBackplane() drops repeated and older envelopes and reports a sequence jump as missed messages', async () => {
  const publisher = new FakeClient();
  const subscriber = new FakeClient();
  const errors: BackplaneError[] = [];
  const bp = redisBackplane({ publisher, subscriber, onError: (e) => errors.push(e) });
  try {
    await within(bp.ready(), 1000, 'ready');
    const got: number[] = [];
    bp.subscribe((m) => got.push(numberOf(m)));
    for (
      const [sender, seq, n] of [
        ['s1', 1, 1],
        ['s1', 2, 2],
        ['s1', 2, 2],
        ['s2', 5, 50],
        ['s1', 1, 1],
        ['s1', 6, 6],
        ['s2', 6, 60],
      ] as const
    ) {
      subscriber.deliver('muxws', envelope(sender, seq, n));
    }
    assert.deepEqual(got, [1, 2, 50, 6, 60]);
    assert.equal(errors.length, 1);
    const gap = errors[0];
    assert.ok(gap instanceof BackplaneGapError);
    assert.equal(gap.missed, 3);
    assert.equal(gap.origin, 'node-x');
    // Its own envelopes (same sender id) are never handed back.
    await bp.publish(message(99, 'me'));
    subscriber.deliver('muxws', publisher.published[0][1]);
    assert.deepEqual(got, [1, 2, 50, 6, 60]);
  } finally {
    await bp.close();
  }
});

test('WSM-BP-003 redisBackplane() reports an unreadable envelope, contains a throwing subscriber, and close() unsubscribes', async () => {
  const publisher = new FakeClient();
  const subscriber = new FakeClient();
  const errors: BackplaneError[] = [];
  const bp = redisBackplane({
    publisher,
    subscriber,
    channel: 'c',
    onError: (e) => errors.push(e),
  });
  await within(bp.ready(), 1000, 'ready');
  const got: number[] = [];
  bp.subscribe(() => {
    throw new Error('handler bug');
  });
  bp.subscribe((m) => got.push(numberOf(m)));
  subscriber.deliver('c', 'not json');
  subscriber.deliver('c', JSON.stringify({ v: 2, sender: 's', seq: 1 }));
  subscriber.deliver('c', JSON.stringify({ v: 1, sender: 's', seq: 1, tag: 5 }));
  subscriber.deliver('c', envelope('s', 1, 1));
  assert.deepEqual(got, [1]);
  assert.equal(errors.length, 4);
  for (const error of errors.slice(0, 3)) {
    assert.match(error.message, /not a muxws backplane envelope/);
  }
  assert.match(errors[3].message, /subscriber threw/);
  assert.ok(subscriber.eventCount() > 0 && publisher.eventCount() > 0);
  const pending = bp.ready();
  await bp.close();
  await bp.close();
  await pending; // it was already subscribed
  assert.equal(subscriber.listeners.get('c')?.size ?? 0, 0);
  assert.equal(subscriber.eventCount() + publisher.eventCount(), 0);
  await assert.rejects(bp.publish(message(1, 'a')), ClosedError);
  await assert.rejects(bp.ready(), ClosedError);
});

test('WSM-BP-003 redisBackplane() validates its options at construction', () => {
  const client = new FakeClient();
  assert.throws(
    // @ts-expect-error: a wrong type on purpose
    () => redisBackplane({ publisher: {}, subscriber: client }),
    {
      name: 'TypeError',
      message:
        'Cannot create redisBackplane as "publisher" must have a publish() method: current value is undefined',
    },
  );
  assert.throws(
    // @ts-expect-error: a wrong type on purpose
    () => redisBackplane({ publisher: client, subscriber: null }),
    /"subscriber" must be a Redis client: current value is null/,
  );
  assert.throws(
    () => redisBackplane({ publisher: client, subscriber: client, channel: '' }),
    /"channel" must be a non-empty string: current value is ""/,
  );
});

// --- Redis: a real redis-server and the `redis` npm client --------------------------------------

/** What the tests do with a client once the backplane has it. */
interface Client {
  destroy(): void;
}

async function redisNode(
  url: string,
  origin: string,
  errors: BackplaneError[],
): Promise<{ backplane: RedisBackplane; clients: Client[] }> {
  const publisher = createClient({ url, socket: { reconnectStrategy: () => 100 } });
  const subscriber = publisher.duplicate();
  const clients = [publisher, subscriber];
  for (const client of clients) client.on('error', () => {}); // the backplane reports them
  await within(Promise.all(clients.map((c) => c.connect())), 5000, `${origin} connecting`);
  const backplane = redisBackplane({
    publisher,
    subscriber,
    channel: 'muxws-test',
    onError: (error) => errors.push(error),
  });
  await within(backplane.ready(), 5000, `${origin} subscribed`);
  return { backplane, clients };
}

async function closeNode(node: { backplane: RedisBackplane; clients: Client[] } | undefined) {
  if (!node) return;
  await within(node.backplane.close(), 2000, 'backplane close').catch(() => {});
  for (const client of node.clients) {
    try {
      client.destroy();
    } catch {
      // already closed
    }
  }
}

test(
  "WSM-BP-003 redisBackplane() over a real Redis hands each node the other node's messages once, text and binary",
  { timeout: 30_000 },
  async () => {
    const redis = await startRedis();
    let a, b;
    try {
      const errors: BackplaneError[] = [];
      a = await redisNode(redis.url, 'node-a', errors);
      b = await redisNode(redis.url, 'node-b', errors);
      const atA: BackplaneMessage[] = [];
      const atB: BackplaneMessage[] = [];
      a.backplane.subscribe((m) => atA.push(m));
      b.backplane.subscribe((m) => atB.push(m));
      const bytes = new Uint8Array(300).map((_, i) => (i * 7) & 0xff);
      await a.backplane.publish(message(1, 'node-a', { except: ['muted'], headers: { k: 'v' } }));
      await a.backplane.publish(message(2, 'node-a', { payload: bytes, codec: 'msgpack' }));
      await b.backplane.publish(message(3, 'node-b'));
      await waitFor(() => atB.length >= 2 && atA.length >= 1, 5000, 'the messages', 5);
      // A marker from each side; once it arrives, any echo or repeat would have arrived before it.
      await a.backplane.publish(message(4, 'node-a'));
      await b.backplane.publish(message(5, 'node-b'));
      await waitFor(() => atB.length >= 3 && atA.length >= 2, 5000, 'the markers', 5);
      assert.deepEqual(atB[0], message(1, 'node-a', { except: ['muted'], headers: { k: 'v' } }));
      assert.ok(atB[1].payload instanceof Uint8Array);
      assert.deepEqual([...atB[1].payload], [...bytes]);
      assert.equal(atB[1].codec, 'msgpack');
      assert.deepEqual(atB.map((m) => m.origin), ['node-a', 'node-a', 'node-a']);
      assert.deepEqual(atA.map(numberOf), [3, 5]);
      assert.deepEqual(errors, []);
    } finally {
      await closeNode(a);
      await closeNode(b);
      await redis.stop();
    }
  },
);

test(
  'WSM-BP-003 redisBackplane() over a real Redis delivers two 1,000-message bursts complete and in order per publisher',
  { timeout: 30_000 },
  async () => {
    const redis = await startRedis();
    let a, b, c;
    try {
      const errors: BackplaneError[] = [];
      a = await redisNode(redis.url, 'node-a', errors);
      b = await redisNode(redis.url, 'node-b', errors);
      c = await redisNode(redis.url, 'node-c', errors);
      const atC = new Map<string, number[]>([['node-a', []], ['node-b', []]]);
      const atA: number[] = [];
      c.backplane.subscribe((m) => atC.get(m.origin)!.push(numberOf(m)));
      a.backplane.subscribe((m) => atA.push(numberOf(m)));
      const published: Promise<void>[] = [];
      for (let n = 1; n <= 1000; n++) {
        published.push(a.backplane.publish(message(n, 'node-a')));
        published.push(b.backplane.publish(message(n, 'node-b')));
      }
      await within(Promise.all(published), 10_000, '2,000 publishes');
      const all = () => atC.get('node-a')!.length + atC.get('node-b')!.length;
      await waitFor(() => all() >= 2000 && atA.length >= 1000, 10_000, 'every message', 5);
      const expected = Array.from({ length: 1000 }, (_, i) => i + 1);
      assert.deepEqual(atC.get('node-a'), expected);
      assert.deepEqual(atC.get('node-b'), expected);
      assert.deepEqual(atA, expected);
      assert.deepEqual(errors, []);
    } finally {
      await closeNode(a);
      await closeNode(b);
      await closeNode(c);
      await redis.stop();
    }
  },
);

test(
  'WSM-BP-003 WSM-BP-004 redisBackplane() survives Redis stopped for 3 s: publish failures reported, gap reported, delivery back within 1 s, nothing duplicated',
  { timeout: 60_000 },
  async () => {
    const redis = await startRedis();
    let a, b;
    let ticker: ReturnType<typeof setInterval> | undefined;
    try {
      const errorsA: BackplaneError[] = [];
      const errorsB: BackplaneError[] = [];
      a = await redisNode(redis.url, 'node-a', errorsA);
      b = await redisNode(redis.url, 'node-b', errorsB);
      const received: { n: number; at: number }[] = [];
      b.backplane.subscribe((m) => received.push({ n: numberOf(m), at: Date.now() }));

      // node-a keeps broadcasting every 10 ms, as an acceptor would, whatever Redis does.
      let n = 0;
      let thrown = 0;
      const accepted: { n: number; at: number }[] = [];
      const rejected: unknown[] = [];
      const inFlight = new Set<Promise<void>>();
      const node = a;
      ticker = setInterval(() => {
        const mine = ++n;
        const at = Date.now();
        try {
          const p = node.backplane.publish(message(mine, 'node-a')).then(
            () => void accepted.push({ n: mine, at }),
            (error) => void rejected.push(error),
          );
          inFlight.add(p);
          void p.finally(() => inFlight.delete(p));
        } catch {
          thrown++;
        }
      }, 10);

      await waitFor(() => received.length >= 20, 5000, 'traffic before the outage', 5);
      await redis.stop();
      const stoppedAt = Date.now();
      await sleep(3000);
      await redis.start();
      const backAt = Date.now();
      await waitFor(
        () => received.some((r) => r.at >= backAt),
        5000,
        'delivery after the outage',
        5,
      );
      const resumed = received.find((r) => r.at >= backAt)!;
      await waitFor(
        () => errorsB.some((e) => e instanceof BackplaneGapError && e.missed === undefined),
        5000,
        'the gap report',
        5,
      );
      await sleep(200);
      clearInterval(ticker);
      ticker = undefined;
      await within(Promise.all([...inFlight]), 5000, 'the last publishes');
      const lastAccepted = Math.max(...accepted.map((r) => r.n));
      await waitFor(() => received.some((r) => r.n === lastAccepted), 5000, 'the last message', 5);

      // Nothing was thrown into the broadcasting loop; the failures came as rejections.
      assert.equal(thrown, 0);
      assert.ok(rejected.length > 0, 'publishes during the outage reject');
      for (const error of rejected) assert.ok(error instanceof BackplaneErrorClass);
      // Each node reported its lost connection once, and node-b the gap with its bounds.
      assert.equal(
        errorsA.filter((e) => /publisher .* lost its connection/.test(e.message)).length,
        1,
      );
      assert.equal(
        errorsB.filter((e) => /subscriber .* lost its connection/.test(e.message)).length,
        1,
      );
      const gap = errorsB.find((e) =>
        e instanceof BackplaneGapError && e.missed === undefined
      ) as BackplaneGapError;
      assert.ok(
        gap.startedAt >= stoppedAt - 1000 && gap.startedAt <= stoppedAt + 500,
        `gap start ${gap.startedAt - stoppedAt} ms from the stop`,
      );
      // Redis was down from stoppedAt until at least stoppedAt + 3000; the client may notice its
      // return a little before this test's own PING does (backAt).
      assert.ok(
        gap.endedAt >= stoppedAt + 3000 && gap.endedAt <= backAt + 1000,
        `gap end ${gap.endedAt - stoppedAt} ms after the stop, Redis back after ${
          backAt - stoppedAt
        } ms`,
      );
      console.log(
        `Redis outage: ${rejected.length} publishes rejected, gap ${
          gap.endedAt - gap.startedAt
        } ms, delivery back ${resumed.at - backAt} ms after Redis answered PING`,
      );
      // Delivery resumed within 1 s of Redis answering again.
      assert.ok(
        resumed.at - backAt <= 1000,
        `resumed ${resumed.at - backAt} ms after Redis returned`,
      );
      // At most once, in order: strictly increasing, so nothing is duplicated.
      const ns = received.map((r) => r.n);
      for (let i = 1; i < ns.length; i++) {
        assert.ok(ns[i] > ns[i - 1], `${ns[i]} after ${ns[i - 1]}`);
      }
      assert.equal(ns[0], 1);
      // Every message Redis accepted after node-b had resubscribed arrived.
      const missing = accepted.filter((r) => r.at > gap.endedAt && !ns.includes(r.n));
      assert.deepEqual(missing, []);
      // The sequence jumps account exactly for what node-b never received.
      const missed = errorsB
        .filter((e): e is BackplaneGapError =>
          e instanceof BackplaneGapError && e.missed !== undefined
        )
        .reduce((sum, e) => sum + e.missed!, 0);
      assert.equal(missed, ns[ns.length - 1] - ns.length);
    } finally {
      if (ticker) clearInterval(ticker);
      await closeNode(a);
      await closeNode(b);
      await redis.stop();
    }
  },
);
