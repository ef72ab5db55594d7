// Recovery of missed broadcasts (WSM-REC-001..005): sequence numbers, positions, the redial's
// `:resume`, replay paced by the socket, gaps, store failures and resets. The acceptor's side is
// driven with raw frames through attach(); the whole loop with connect() over in-memory sockets
// on fake time. Stores on a clock at 0 (`now: () => 0`) number each tag from 1, so the frames
// read 1, 2, 3; on a moving clock the first number is floor(now) * 1024 + 1.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  Acceptor,
  type AcceptorOptions,
  type AttachedPeer,
  type History,
  memoryHistory,
} from 'muxws/acceptor';
import {
  connect,
  type ConnectOptions,
  type PublishMessage,
  type RecoveredInfo,
  recovery,
} from 'muxws';
import { Positions } from '../../lib/dialer/_resume.ts';
import { fakeTime } from '../_fake_time.ts';
import { FakeServer, type FakeSocket } from '../_socket_pair.ts';

/** Lets queued microtasks run. */
async function settle(rounds = 50): Promise<void> {
  for (let i = 0; i < rounds; i++) await Promise.resolve();
}

/** The OPEN of a hello carrying `:resume`: stream 1, END and HELLO. */
function resumeHello(resume: Record<string, number>, payload: unknown = null): string {
  return JSON.stringify([1, 1, 3, { ':resume': resume }, payload]);
}

interface RawPeer {
  handle: AttachedPeer;
  got: unknown[];
  /** The raw messages, as sent. */
  raw: Array<string | Uint8Array>;
  /** Bytes the test has not yet let drain. */
  buffered: number;
  /** The most the buffer held right after a send. */
  peak: number;
}

/** A peer over a sink whose `bufferedAmount` grows with each send until the test drains it. */
function rawPeer(acceptor: Acceptor, tags: string[] = [], paced = false): RawPeer {
  const peer: RawPeer = { got: [], raw: [], buffered: 0, peak: 0 } as unknown as RawPeer;
  peer.handle = acceptor.attach({
    send: (data) => {
      peer.raw.push(data);
      peer.got.push(JSON.parse(String(data)));
      if (paced) {
        peer.buffered += String(data).length;
        peer.peak = Math.max(peer.peak, peer.buffered);
      }
    },
    close() {},
    get bufferedAmount() {
      return peer.buffered;
    },
  }, { tags });
  return peer;
}

/** The PUBLISH frames of `got` for `tag`, without markers. */
function published(got: unknown[], tag: string): unknown[][] {
  return (got as unknown[][]).filter((f) =>
    f[0] === 9 && f[1] === tag && f[3] !== null
  ) as unknown[][];
}

/** A store wrapped to count, gate or fail its calls. */
function wrapped(inner: History, hooks: {
  range?: (call: number) => Promise<void> | void;
} = {}): History & { ranges: number } {
  const store = {
    ranges: 0,
    append: (tag: string, data: string | Uint8Array) => inner.append(tag, data),
    head: (tag: string) => inner.head(tag),
    async range(tag: string, after: number, limit: number) {
      const call = ++store.ranges;
      await hooks.range?.(call);
      return inner.range(tag, after, limit);
    },
  };
  return store;
}

test('broadcasts to a tag carry its sequence number, increasing per tag (WSM-REC-001)', async () => {
  const acceptor = new Acceptor({ idleTimeoutMs: 0, history: memoryHistory({ now: () => 0 }) });
  const peer = rawPeer(acceptor, ['a', 'b']);
  await settle();
  await acceptor.broadcast('a', 'a1');
  await acceptor.broadcast('b', 'b1', { headers: { kind: 'x' } });
  await Promise.all([acceptor.broadcast('a', 'a2'), acceptor.broadcast('a', 'a3')]);
  assert.deepEqual(published(peer.got, 'a'), [
    [9, 'a', { ':seq': 1 }, 'a1'],
    [9, 'a', { ':seq': 2 }, 'a2'],
    [9, 'a', { ':seq': 3 }, 'a3'],
  ]);
  assert.deepEqual(published(peer.got, 'b'), [[9, 'b', { ':seq': 1, kind: 'x' }, 'b1']]);
  await acceptor.close({ drainMs: 0 });
});

test('without history broadcasts are the same bytes as ever and no position is sent (WSM-REC-005)', async () => {
  const acceptor = new Acceptor({ idleTimeoutMs: 0 });
  const peer = rawPeer(acceptor, ['room']);
  await settle();
  await acceptor.broadcast('room', { text: 'hi' }, { headers: { k: 1 } });
  await acceptor.broadcastAll('all');
  assert.deepEqual(peer.raw, ['[9,"room",{"k":1},{"text":"hi"}]', '[9,"*",null,"all"]']);
  await acceptor.close({ drainMs: 0 });
});

test('broadcastAll carries no sequence number even with history (WSM-REC-001)', async () => {
  const acceptor = new Acceptor({ idleTimeoutMs: 0, history: memoryHistory() });
  const peer = rawPeer(acceptor);
  await acceptor.broadcastAll('all');
  assert.deepEqual(peer.raw, ['[9,"*",null,"all"]']);
  await acceptor.close({ drainMs: 0 });
});

test('a peer that gains a tag is told its position before any broadcast of it (WSM-REC-002)', async () => {
  const history = memoryHistory({ now: () => 0 });
  const acceptor = new Acceptor({ idleTimeoutMs: 0, history });
  await acceptor.broadcast('room', 'before');
  await acceptor.broadcast('room', 'before');
  const peer = rawPeer(acceptor, ['room']);
  const live = acceptor.broadcast('room', 'live'); // while the position is read
  await settle();
  await live;
  peer.handle.peer.tags.add('other');
  await settle();
  // The first position also tells the dialer the identity it is known by (`:dialer`).
  const id = (peer.got[0] as [number, string, Record<string, unknown>])[2][':dialer'];
  assert.match(String(id), /^[\w-]{22}$/);
  assert.deepEqual(peer.got, [
    [9, 'room', { ':seq': 2, ':position': true, ':dialer': id }, null],
    [9, 'room', { ':seq': 3 }, 'live'],
    [9, 'other', { ':seq': 0, ':position': true }, null],
  ]);
  await acceptor.close({ drainMs: 0 });
});

test('a resumed tag is replayed in order before live broadcasts, each once (WSM-REC-003)', async () => {
  let release!: () => void;
  const gate = new Promise<void>((resolve) => release = resolve);
  const history = wrapped(memoryHistory({ now: () => 0 }), { range: () => gate });
  const acceptor = new Acceptor({
    idleTimeoutMs: 0,
    history,
    onHello: (_hello, peer) => void peer.tags.add('room'),
  });
  for (let i = 1; i <= 3; i++) await acceptor.broadcast('room', i);
  const peer = rawPeer(acceptor);
  peer.handle.message(resumeHello({ room: 1 }));
  await settle();
  await acceptor.broadcast('room', 4); // live while the replay waits for the store
  assert.deepEqual(published(peer.got, 'room'), []);
  release();
  await settle();
  await acceptor.broadcast('room', 5);
  assert.deepEqual(peer.got.filter((f) => (f as unknown[])[0] === 9), [
    [9, 'room', { ':seq': 2 }, 2],
    [9, 'room', { ':seq': 3 }, 3],
    [9, 'room', { ':seq': 4 }, 4],
    [9, 'room', { ':seq': 4, ':recovered': { replayed: 3, gap: false } }, null],
    [9, 'room', { ':seq': 5 }, 5],
  ]);
  await acceptor.close({ drainMs: 0 });
});

test('a trimmed log replays what remains and reports the gap, by count and by age (WSM-REC-004)', async () => {
  using clock = fakeTime();
  const history = memoryHistory({ maxEntries: 3, maxAgeMs: 1000, now: () => Date.now() });
  const acceptor = new Acceptor({ idleTimeoutMs: 0, history, requireHello: false });
  await acceptor.broadcast('age', 'old');
  clock.tick(600);
  for (let i = 1; i <= 5; i++) await acceptor.broadcast('count', i);
  await acceptor.broadcast('age', 'new');
  clock.tick(600); // 'old' is 1200 ms old now
  const peer = rawPeer(acceptor, ['count', 'age']);
  peer.handle.message(resumeHello({ count: 0, age: 0 }));
  await settle(200);
  assert.deepEqual(published(peer.got, 'count').map((f) => f[3]), [3, 4, 5]);
  assert.deepEqual(published(peer.got, 'age').map((f) => f[3]), ['new']);
  const markers = (peer.got as unknown[][]).filter((f) =>
    f[3] === null && f[2] && ':recovered' in (f[2] as object)
  );
  assert.deepEqual(markers, [
    [
      9,
      'count',
      { ':seq': await history.head('count'), ':recovered': { replayed: 3, gap: true } },
      null,
    ],
    [
      9,
      'age',
      { ':seq': await history.head('age'), ':recovered': { replayed: 1, gap: true } },
      null,
    ],
  ]);
  await acceptor.close({ drainMs: 0 });
});

test('a replay of 10,000 waits for the socket and never overfills it by more than one message (WSM-REC-003)', async () => {
  using clock = fakeTime();
  const highWaterMark = 4096;
  const acceptor = new Acceptor({
    idleTimeoutMs: 0,
    history: memoryHistory({ now: () => Date.now() }),
    limits: { highWaterMark },
  });
  for (let i = 1; i <= 10_000; i++) void acceptor.broadcast('room', { i });
  await settle();
  const peer = rawPeer(acceptor, ['room'], true);
  peer.handle.message(resumeHello({ room: 0 }));
  let longest = 0;
  for (let round = 0; round < 20_000 && published(peer.got, 'room').length < 10_001; round++) {
    await settle(5);
    if (round % 3 === 0) void acceptor.broadcast('room', { i: 10_001 + round / 3 });
    peer.buffered = 0; // the socket drains between polls
    await clock.tickAsync(10);
    longest = Math.max(longest, ...peer.raw.slice(-1).map((d) => String(d).length));
  }
  const frames = published(peer.got, 'room');
  const seqs = frames.map((f) => (f[2] as { ':seq': number })[':seq']);
  assert.ok(frames.length > 10_000, `replayed ${frames.length}`);
  assert.deepEqual(seqs, seqs.map((_, i) => seqs[0] + i), 'every seq once, in order');
  assert.equal(seqs[0], 1_700_000_000_000 * 1024 + 1, 'from the first, drawn from the clock');
  assert.ok(peer.peak <= highWaterMark + longest, `peak ${peer.peak}`);
  await acceptor.close({ drainMs: 0 });
});

test('a store failure during the replay ends it with a gap, reported, and live ones follow (WSM-REC-004)', async () => {
  const errors: unknown[] = [];
  const failing = wrapped(memoryHistory({ now: () => 0 }), {
    range: (call) => {
      if (call === 2) throw new Error('store down');
    },
  });
  const acceptor = new Acceptor({
    idleTimeoutMs: 0,
    history: failing,
    requireHello: false,
    onError: (error) => errors.push(error),
  });
  await Promise.all(Array.from({ length: 300 }, (_, i) => acceptor.broadcast('room', i + 1)));
  const peer = rawPeer(acceptor, ['room']);
  peer.handle.message(resumeHello({ room: 0 }));
  await settle(200);
  await acceptor.broadcast('room', 301);
  const frames = published(peer.got, 'room');
  // The first batch is 32 entries (the replay learns their size before it reads more).
  assert.equal(frames.length, 33, 'the first batch, then the live one');
  assert.deepEqual(frames.at(-1), [9, 'room', { ':seq': 301 }, 301]);
  assert.ok(
    (peer.got as unknown[][]).some((f) =>
      JSON.stringify(f) ===
        JSON.stringify([
          9,
          'room',
          { ':seq': 32, ':recovered': { replayed: 32, gap: true } },
          null,
        ])
    ),
  );
  assert.equal((errors[0] as Error).message, 'store down');
  await acceptor.close({ drainMs: 0 });
});

test('a store answering a full batch with nothing new ends the replay with a gap, reported, instead of asking forever (WSM-REC-004)', async () => {
  const errors: unknown[] = [];
  const inner = memoryHistory({ now: () => 0 });
  let ranges = 0;
  const stuck: History = {
    append: (tag, data) => inner.append(tag, data),
    head: (tag) => inner.head(tag),
    async range(tag, _after, limit) {
      ranges++;
      // Always the first entries, whatever was asked for.
      return await inner.range(tag, 0, limit);
    },
  };
  const acceptor = new Acceptor({
    idleTimeoutMs: 0,
    history: stuck,
    requireHello: false,
    onError: (error) => errors.push(error),
  });
  await Promise.all(Array.from({ length: 600 }, (_, i) => acceptor.broadcast('room', i + 1)));
  const peer = rawPeer(acceptor, ['room']);
  peer.handle.message(resumeHello({ room: 0 }));
  await settle(400);
  // 32 entries, then 256 from the start again (224 of them new), then 256 with nothing new.
  assert.equal(ranges, 3, 'the first batches, then one that brought nothing new');
  assert.equal(published(peer.got, 'room').length, 256);
  const marker = (peer.got as unknown[][]).find((f) =>
    f[0] === 9 && f[3] === null && f[2] !== null &&
    ':recovered' in (f[2] as Record<string, unknown>)
  );
  assert.deepEqual(marker, [
    9,
    'room',
    { ':seq': 256, ':recovered': { replayed: 256, gap: true } },
    null,
  ]);
  assert.match(
    String((errors[0] as Error).message),
    /answered a range after 256 with 256 entries, none after 256/,
  );
  await acceptor.close({ drainMs: 0 });
});

test('a hello with only :resume is acknowledged without onHello and never reaches onStream (WSM-REC-002)', async () => {
  const streams: unknown[] = [];
  const acceptor = new Acceptor({
    idleTimeoutMs: 0,
    history: memoryHistory({ now: () => 0 }),
    onStream: (stream) => void streams.push(stream),
  });
  await acceptor.broadcast('room', 'missed');
  const peer = rawPeer(acceptor, ['room']);
  peer.handle.message(resumeHello({ room: 0 }));
  await settle();
  assert.deepEqual(streams, []);
  assert.deepEqual(peer.got.filter((f) => (f as unknown[])[0] !== 9), [[3, 1]]);
  assert.deepEqual(published(peer.got, 'room'), [[9, 'room', { ':seq': 1 }, 'missed']]);
  await acceptor.close({ drainMs: 0 });
});

for (
  const [what, options] of [
    ['an onHello that throws', { onHello: () => Promise.reject(new Error('down')) }],
    ['an onStream that throws', {
      onStream: () => {
        throw new Error('down');
      },
    }],
    ['an onStream whose welcome cannot be encoded', { onStream: () => 1n }],
  ] as Array<[string, AcceptorOptions]>
) {
  test(`a hello with :resume answered by ${what} refuses the peer: a RESET, then closed, nothing replayed (WSM-REC-002)`, async () => {
    const errors: unknown[] = [];
    const acceptor = new Acceptor({
      idleTimeoutMs: 0,
      history: memoryHistory({ now: () => 0 }),
      onError: (error) => void errors.push(error),
      ...options,
    });
    try {
      await acceptor.broadcast('room', 'missed');
      const peer = rawPeer(acceptor, ['room']);
      peer.handle.message(resumeHello({ room: 0 }, 'token'));
      await settle();
      assert.equal(await acceptor.broadcast('room', 'live'), 0, 'a refused peer is skipped');
      await settle();
      assert.deepEqual(peer.got.map((f) => (f as unknown[])[0]), [4], 'only the RESET');
      assert.equal(peer.handle.peer.isClosed, true);
      assert.deepEqual(await peer.handle.peer.closed, { code: 1000, reason: 'hello rejected' });
      assert.equal(errors.length, 1);
    } finally {
      await acceptor.close({ drainMs: 0 });
    }
  });
}

/**
 * An acceptor served to connect() over in-memory sockets that deliver on fake time (1 ms), as a
 * real socket delivers a message only after the dialer listens; `sockets` holds each server end.
 */
function served(options: AcceptorOptions) {
  const acceptor = new Acceptor({ idleTimeoutMs: 0, ...options });
  const sockets: FakeSocket[] = [];
  const server = new FakeServer({
    delayMs: 1,
    onConnection: (c) =>
      queueMicrotask(() => {
        c.accept();
        sockets.push(c.server);
        acceptor.accept(c.server as never);
      }),
  });
  return { acceptor, sockets, server, WebSocket: server.WebSocket as never };
}

/** A dialer's options that record what it delivers. */
function recording(WebSocket: never, extra: ConnectOptions = {}) {
  const seen: PublishMessage[] = [];
  const recovered: RecoveredInfo[] = [];
  const options: ConnectOptions = {
    WebSocket,
    heartbeat: false,
    reconnect: { initialDelayMs: 100, jitter: 0 },
    onPublish: (message) => void seen.push(message),
    recovery: recovery({ onRecovered: (info) => void recovered.push(info) }),
    ...extra,
  };
  return { seen, recovered, options };
}

test('a redialled dialer gets what it missed once, in order, then live ones, and onRecovered counts (WSM-REC-002, WSM-REC-004)', async () => {
  using clock = fakeTime();
  const { acceptor, sockets, server, WebSocket } = served({
    history: memoryHistory({ now: () => 0 }),
    onHello: (hello, peer) =>
      void peer.tags.add(`room:${(hello.payload as { room: string }).room}`),
  });
  const { seen, recovered, options } = recording(WebSocket, {
    hello: { payload: { room: 'a' } },
  });
  const connecting = connect('ws://test/ws', options);
  await clock.tickAsync(10);
  const connection = await connecting;
  await clock.tickAsync(10);
  await acceptor.broadcast('room:a', 1, { headers: { from: 'x' } });
  await clock.tickAsync(10);
  const firstHello = server.connections[0].client.sent[0];
  assert.ok(!String(firstHello).includes(':resume'), 'the first connect resumes nothing');
  sockets[0].close(1011, 'cut');
  await clock.tickAsync(10);
  await acceptor.broadcast('room:a', 2);
  await acceptor.broadcast('room:a', 3);
  await clock.tickAsync(100);
  await clock.tickAsync(10);
  assert.equal(connection.state, 'open');
  assert.match(String(server.connections[1].client.sent[0]), /":resume":\{"room:a":1\}/);
  await acceptor.broadcast('room:a', 4);
  await clock.tickAsync(10);
  assert.deepEqual(seen.map((m) => [m.payload, m.seq]), [[1, 1], [2, 2], [3, 3], [4, 4]]);
  assert.deepEqual(seen[0].headers, { from: 'x' }, 'reserved headers are left out');
  assert.equal(seen[1].headers, null);
  assert.deepEqual(recovered, [{ tag: 'room:a', replayed: 2, gap: false }]);
  await connection.close();
  await acceptor.close({ drainMs: 0 });
});

test('without recovery() a dialer resumes nothing and hands each broadcast on as it arrives, its seq shown and its reserved headers left out (WSM-API-006)', async () => {
  using clock = fakeTime();
  const { acceptor, sockets, server, WebSocket } = served({
    history: memoryHistory({ now: () => 0 }),
    onHello: (hello, peer) =>
      void peer.tags.add(`room:${(hello.payload as { room: string }).room}`),
  });
  const { seen, options } = recording(WebSocket, { hello: { payload: { room: 'a' } } });
  delete options.recovery;
  const connecting = connect('ws://test/ws', options);
  await clock.tickAsync(10);
  const connection = await connecting;
  await clock.tickAsync(10);
  await acceptor.broadcast('room:a', 1, { headers: { from: 'x' } });
  await clock.tickAsync(10);
  sockets[0].close(1011, 'cut');
  await clock.tickAsync(10);
  await acceptor.broadcast('room:a', 2);
  await clock.tickAsync(110);
  assert.equal(connection.state, 'open');
  assert.ok(!String(server.connections[1].client.sent[0]).includes(':resume'));
  await acceptor.broadcast('room:a', 3);
  await clock.tickAsync(10);
  assert.deepEqual(seen.map((m) => [m.payload, m.seq]), [[1, 1], [3, 3]]);
  assert.deepEqual(seen[0].headers, { from: 'x' }, 'reserved headers are left out');
  const end = server.connections[1].server;
  for (
    const frame of [
      [9, 't', { ':seq': 1 }, 'a'],
      [9, 't', { ':seq': 1 }, 'a again'],
      [9, 't', { ':seq': 9, ':position': true }, 'position'],
      [9, 't', { ':seq': 9, ':recovered': null }, 'marker'],
      [9, 't', { ':seq': 'x' }, 'no seq'],
    ]
  ) end.send(JSON.stringify(frame));
  await clock.tickAsync(10);
  assert.deepEqual(seen.slice(2).map((m) => [m.payload, m.seq]), [
    ['a', 1],
    ['a again', 1],
    ['no seq', undefined],
  ]);
  await connection.close();
  await acceptor.close({ drainMs: 0 });
});

test('a dialer that received nothing before the outage still recovers, without a hello of its own (WSM-REC-002)', async () => {
  using clock = fakeTime();
  const { acceptor, sockets, WebSocket } = served({
    history: memoryHistory({ now: () => Date.now() }),
    onPeer: (peer) => void peer.tags.add('news'),
  });
  const { seen, recovered, options } = recording(WebSocket);
  const connecting = connect('ws://test/ws', options);
  await clock.tickAsync(10);
  const connection = await connecting;
  await clock.tickAsync(10);
  sockets[0].close(1011, 'cut');
  await clock.tickAsync(10);
  await acceptor.broadcast('news', 'while away');
  await clock.tickAsync(100);
  await clock.tickAsync(10);
  assert.deepEqual(seen.map((m) => m.payload), ['while away']);
  assert.deepEqual(recovered, [{ tag: 'news', replayed: 1, gap: false }]);
  await connection.close();
  await acceptor.close({ drainMs: 0 });
});

/**
 * A store that can lose its state as a restart without persistence does: `lose()` puts a new
 * memoryHistory in its place, on the same (fake) clock.
 */
function resettable(): History & { lose(): void } {
  let history = memoryHistory({ now: () => Date.now() });
  return {
    append: (tag, data) => history.append(tag, data),
    head: (tag) => history.head(tag),
    range: (tag, after, limit) => history.range(tag, after, limit),
    lose: () => void (history = memoryHistory({ now: () => Date.now() })),
  };
}

/** A dialer connected to an acceptor over `store` whose peers hold the tag "room". */
async function roomDialer(clock: ReturnType<typeof fakeTime>, store: History) {
  const { acceptor, sockets, WebSocket } = served({
    history: store,
    onPeer: (peer) => void peer.tags.add('room'),
  });
  const { seen, recovered, options } = recording(WebSocket);
  const connecting = connect('ws://test/ws', options);
  await clock.tickAsync(10);
  const connection = await connecting;
  await clock.tickAsync(10);
  return { acceptor, sockets, seen, recovered, connection };
}

test('a dialer connected through a store that lost its state keeps receiving live broadcasts (WSM-REC-001, WSM-REC-004)', async () => {
  using clock = fakeTime();
  const store = resettable();
  const { acceptor, seen, recovered, connection } = await roomDialer(clock, store);
  for (let i = 1; i <= 3; i++) await acceptor.broadcast('room', `old ${i}`);
  await clock.tickAsync(10);
  store.lose(); // Redis restarted without persistence while the dialer stayed connected
  for (let i = 1; i <= 2; i++) await acceptor.broadcast('room', `new ${i}`);
  await clock.tickAsync(10);
  assert.deepEqual(seen.map((m) => m.payload), ['old 1', 'old 2', 'old 3', 'new 1', 'new 2']);
  assert.ok(seen[3].seq! > seen[2].seq!, `numbers go on: ${seen[2].seq}, then ${seen[3].seq}`);
  assert.deepEqual(recovered, []);
  await connection.close();
  await acceptor.close({ drainMs: 0 });
});

test('a dialer redialling after its store lost its state is replayed all that was logged since, with a gap (WSM-REC-004)', async () => {
  using clock = fakeTime();
  const store = resettable();
  const { acceptor, sockets, seen, recovered, connection } = await roomDialer(clock, store);
  for (let i = 1; i <= 3; i++) await acceptor.broadcast('room', `old ${i}`);
  await clock.tickAsync(10);
  sockets[0].close(1011, 'cut');
  await clock.tickAsync(10);
  store.lose();
  // More broadcasts than the dialer's old position while it is away.
  for (let i = 1; i <= 5; i++) await acceptor.broadcast('room', `away ${i}`);
  await clock.tickAsync(100);
  await clock.tickAsync(10);
  await acceptor.broadcast('room', 'new');
  await clock.tickAsync(10);
  assert.deepEqual(seen.map((m) => m.payload), [
    'old 1',
    'old 2',
    'old 3',
    'away 1',
    'away 2',
    'away 3',
    'away 4',
    'away 5',
    'new',
  ]);
  assert.deepEqual(recovered, [{ tag: 'room', replayed: 5, gap: true }]);
  await connection.close();
  await acceptor.close({ drainMs: 0 });
});

test('after the store lost its state with nothing logged since, the marker resets the position, so new broadcasts are delivered (WSM-REC-004)', async () => {
  using clock = fakeTime();
  const store = resettable();
  const { acceptor, sockets, seen, recovered, connection } = await roomDialer(clock, store);
  for (let i = 1; i <= 3; i++) await acceptor.broadcast('room', `old ${i}`);
  await clock.tickAsync(10);
  sockets[0].close(1011, 'cut');
  await clock.tickAsync(10);
  store.lose();
  await clock.tickAsync(100);
  await clock.tickAsync(10);
  await acceptor.broadcast('room', 'new');
  await clock.tickAsync(10);
  assert.deepEqual(seen.map((m) => m.payload), ['old 1', 'old 2', 'old 3', 'new']);
  assert.deepEqual(recovered, [{ tag: 'room', replayed: 0, gap: true }]);
  await connection.close();
  await acceptor.close({ drainMs: 0 });
});

test('the dialer hands a sequence number on at most once (WSM-REC-004)', async () => {
  const server = new FakeServer();
  const seen: PublishMessage[] = [];
  const connection = await connect('ws://test/ws', {
    WebSocket: server.WebSocket as never,
    heartbeat: false,
    reconnect: false,
    recovery: recovery(),
    onPublish: (message) => void seen.push(message),
  });
  const end = server.connections[0].server;
  for (
    const frame of [
      [9, 't', { ':seq': 1 }, 'a'],
      [9, 't', { ':seq': 1 }, 'a again'],
      [9, 't', { ':seq': 2 }, 'b'],
      [9, 't', { ':seq': 1 }, 'late'],
      [9, 'u', { ':seq': 1 }, 'other tag'],
      [9, 't', null, 'no seq'],
    ]
  ) end.send(JSON.stringify(frame));
  await settle();
  assert.deepEqual(seen.map((m) => m.payload), ['a', 'b', 'other tag', 'no seq']);
  await connection.close();
});

test('while a tag is resumed, broadcasts ahead of the replay wait for their turn and a stale position is ignored (WSM-REC-003)', () => {
  const seen: unknown[] = [];
  const recovered: RecoveredInfo[] = [];
  const positions = new Positions((m) => seen.push(m.payload), (info) => recovered.push(info));
  positions.receive({ tag: 't', headers: { ':seq': 0, ':position': true }, payload: null });
  positions.receive({ tag: 't', headers: { ':seq': 1 }, payload: 1 });
  assert.equal(positions.resume(false), undefined, 'the first connect resumes nothing');
  assert.deepEqual(positions.resume(true), { ':resume': { t: 1 }, ':dialer': undefined });
  const send = (headers: Record<string, unknown>, payload: unknown = null) =>
    positions.receive({ tag: 't', headers, payload });
  send({ ':seq': 4, ':position': true }); // the new peer's position, before its hello arrived
  send({ ':seq': 5 }, 5); // live, before the replay
  send({ ':seq': 2 }, 2);
  send({ ':seq': 3 }, 3);
  send({ ':seq': 4 }, 4);
  send({ ':seq': 5 }, 5); // the replay sends it too
  send({ ':seq': 5, ':recovered': { replayed: 4, gap: false } });
  send({ ':seq': 6 }, 6);
  assert.deepEqual(seen, [1, 2, 3, 4, 5, 6]);
  assert.deepEqual(recovered, [{ tag: 't', replayed: 4, gap: false }]);
  // A replay that starts after a gap is handed on in order at its marker.
  positions.resume(true);
  send({ ':seq': 9 }, 9);
  send({ ':seq': 10 }, 10);
  send({ ':seq': 10, ':recovered': { replayed: 2, gap: true } });
  assert.deepEqual(seen.slice(6), [9, 10]);
  assert.deepEqual(recovered[1], { tag: 't', replayed: 2, gap: true });
});

test('a hello naming more tags than the dialer keeps is answered for the first 1024 only (WSM-REC-002)', async () => {
  const acceptor = new Acceptor({ idleTimeoutMs: 0, history: memoryHistory() });
  const peer = rawPeer(acceptor);
  const resume = Object.fromEntries(Array.from({ length: 5000 }, (_, i) => [`t${i}`, 1]));
  peer.handle.message(resumeHello(resume));
  await settle();
  const markers = (peer.got as unknown[][]).filter((f) => f[0] === 9);
  assert.equal(markers.length, 1024);
  assert.deepEqual(markers[0], [9, 't0', { ':seq': 1, ':recovered': null }, null]);
  await acceptor.close({ drainMs: 0 });
});

test('the dialer keeps the positions of at most 1024 tags, forgetting the oldest (WSM-REC-002)', () => {
  const positions = new Positions(() => {}, () => {});
  for (let i = 0; i < 1100; i++) {
    positions.receive({ tag: `t${i}`, headers: { ':seq': 1 }, payload: i });
  }
  const resume = positions.resume(true)![':resume'] as Record<string, number>;
  assert.equal(Object.keys(resume).length, 1024);
  assert.equal(resume.t0, undefined);
  assert.equal(resume.t1099, 1);
});

test('the dialer resumes a tag named __proto__ like any other (WSM-REC-002)', () => {
  const positions = new Positions(() => {}, () => {});
  positions.receive({ tag: '__proto__', headers: { ':seq': 3 }, payload: null });
  positions.receive({ tag: 'room', headers: { ':seq': 5 }, payload: null });
  const resume = positions.resume(true)![':resume'];
  assert.equal(JSON.stringify(resume), '{"__proto__":3,"room":5}');
  const seen: unknown[] = [];
  const recovered: RecoveredInfo[] = [];
  const again = new Positions((m) => seen.push(m.payload), (info) => recovered.push(info));
  again.receive({ tag: '__proto__', headers: { ':seq': 3 }, payload: 3 });
  again.resume(true);
  // The store lost its log: a marker below the position resumed from sets the position.
  again.receive({
    tag: '__proto__',
    headers: { ':seq': 1, ':recovered': { replayed: 0 } },
    payload: null,
  });
  again.receive({ tag: '__proto__', headers: { ':seq': 2 }, payload: 2 });
  assert.deepEqual(seen, [3, 2]);
  assert.deepEqual(recovered, [{ tag: '__proto__', replayed: 0, gap: false }]);
});

test('a dialer left out of a broadcast by name is not replayed it after a redial, while one that missed it is (WSM-REC-006)', async () => {
  using clock = fakeTime();
  const { acceptor, sockets, seen, recovered, connection } = await roomDialer(
    clock,
    memoryHistory({ now: () => 0 }),
  );
  await acceptor.broadcast('room', 'to all');
  await clock.tickAsync(10);
  const [sender] = acceptor.peers();
  sockets[0].close(1011, 'cut'); // the connection drops right after this dialer's own message
  await acceptor.broadcast('room', 'not to the sender', { except: [sender] });
  await acceptor.broadcast('room', 'to all again');
  await clock.tickAsync(200);
  assert.deepEqual(seen.map((m) => m.payload), ['to all', 'to all again']);
  assert.deepEqual(recovered, [{ tag: 'room', replayed: 1, gap: false }]);
  await connection.close();
  await acceptor.close({ drainMs: 0 });
});
