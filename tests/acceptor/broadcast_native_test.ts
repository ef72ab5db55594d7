// The native paths of the acceptor's broadcast on their own: peers whose sinks offer topics (Bun)
// follow their tags' topics, a broadcast to a tag is one publish per server, and the send loop
// takes every case a publish cannot express; `ws` sockets (Node) get a text frame's bytes,
// encoded once (WSM-ACC-005, WSM-APP-005).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Broadcaster } from '../../lib/acceptor/_broadcast.ts';
import { Acceptor, type ServerWebSocket } from 'muxws/acceptor';
import { jsonCodec } from 'muxws';
import type { PeerImpl } from '../../lib/acceptor/_peer.ts';
import type { TopicPublisher, TopicSink } from '../../lib/acceptor/_topics.ts';

/** A server's topics: who is subscribed to what, and what each publish reached. */
class FakeServer implements TopicPublisher {
  readonly subscribers = new Map<string, Set<FakePeer>>();
  publishes = 0;
  fail = false;

  publish(topic: string, data: string | Uint8Array): number {
    if (this.fail) throw new Error('publish broke');
    this.publishes++;
    for (const peer of this.subscribers.get(topic) ?? []) peer.got.push(JSON.parse(String(data)));
    return 1;
  }

  /** The tags of `peer`'s topics, prefix stripped. */
  topicsOf(peer: FakePeer): string[] {
    return [...this.subscribers].filter(([, set]) => set.has(peer))
      .map(([topic]) => topic.slice(topic.lastIndexOf('\0') + 1)).sort();
  }
}

interface FakePeer {
  name: string;
  tags: Set<string>;
  isClosed: boolean;
  got: unknown[];
  /** Sent through the loop, one by one. */
  looped: number;
  full: boolean;
  /** Where the peer stands with its hello (`lib/acceptor/_admission.ts`). */
  stands: 'open' | 'shut' | 'hello' | 'refused';
  session: {
    readonly isClosed: boolean;
    congested(): boolean;
  };
  admission: {
    readonly state: FakePeer['stands'];
    readonly barred: boolean;
    sendPublish(data: string | Uint8Array): boolean;
  };
  sink: { topics: TopicSink | undefined };
}

/** A peer on `server` (with topics), or without topics when `server` is undefined. */
function fakePeer(name: string, tags: string[], server?: FakeServer): FakePeer {
  const peer: FakePeer = {
    name,
    tags: new Set(tags),
    isClosed: false,
    got: [],
    looped: 0,
    full: false,
    stands: 'open',
    session: {
      get isClosed() {
        return peer.isClosed;
      },
      congested: () => peer.full,
    },
    admission: {
      get state() {
        return peer.stands;
      },
      get barred() {
        return peer.stands === 'shut' || peer.stands === 'refused';
      },
      sendPublish(data) {
        if (peer.full) return false;
        peer.looped++;
        peer.got.push(JSON.parse(String(data)));
        return true;
      },
    },
    sink: { topics: undefined },
  };
  if (server) {
    peer.sink.topics = {
      publisher: server,
      subscribe(topic) {
        let set = server.subscribers.get(topic);
        if (!set) server.subscribers.set(topic, set = new Set());
        set.add(peer);
      },
      unsubscribe(topic) {
        server.subscribers.get(topic)?.delete(peer);
      },
    };
  }
  return peer;
}

function setUp(peers: FakePeer[]) {
  const reported: [unknown, unknown][] = [];
  const set = new Set(peers as unknown as PeerImpl[]);
  const host = {
    codec: jsonCodec,
    report: (error: unknown, peer?: unknown) => reported.push([error, peer]),
  };
  const b = new Broadcaster(host, set, undefined, '');
  for (const peer of set) for (const tag of peer.tags) b.index(peer, tag);
  const add = (peer: FakePeer, tag: string) => {
    peer.tags.add(tag);
    b.index(peer as unknown as PeerImpl, tag);
  };
  const remove = (peer: FakePeer, tag: string) => {
    peer.tags.delete(tag);
    b.unindex(peer as unknown as PeerImpl, tag);
  };
  return { b, reported, add, remove, as: (p: FakePeer) => p as unknown as PeerImpl };
}

test("a peer joins a tag's topic at the first broadcast to the tag, then follows its tags", () => {
  const server = new FakeServer();
  const a = fakePeer('a', ['room', 'news'], server);
  const late = fakePeer('late', [], server);
  const { b, add, remove } = setUp([a, late]);
  assert.deepEqual(server.topicsOf(a), [], 'no topic before a broadcast to it');
  b.broadcast('room', 1, {});
  b.broadcast('news', 2, {});
  assert.deepEqual(server.topicsOf(a), ['news', 'room']);
  add(late, 'room');
  add(a, 'vip');
  remove(a, 'news');
  assert.deepEqual([server.topicsOf(a), server.topicsOf(late)], [['room'], ['room']]);
  b.broadcast('vip', 3, {});
  assert.deepEqual(server.topicsOf(a), ['room', 'vip']);
  // Once nobody holds a tag its topic is out of use, until the next broadcast to it.
  remove(a, 'vip');
  add(a, 'vip');
  assert.deepEqual(server.topicsOf(a), ['room']);
  const topic = [...server.subscribers.keys()][0];
  assert.match(topic, /^\0muxws [0-9a-f-]{36}\0/);
});

test('two broadcasters on one server use topics of their own', () => {
  const server = new FakeServer();
  const a = fakePeer('a', ['room'], server);
  const b = fakePeer('b', ['room'], server);
  const first = setUp([a]);
  setUp([b]);
  assert.equal(first.b.broadcast('room', 'hi', {}), 1);
  assert.deepEqual([a.got.length, b.got.length], [1, 0]);
});

test('a broadcast to a tag is one publish per server, the send loop for peers without topics, and counts each delivery', () => {
  const one = new FakeServer();
  const two = new FakeServer();
  const peers = [
    fakePeer('a', ['room'], one),
    fakePeer('b', ['room'], one),
    fakePeer('c', ['room'], two),
    fakePeer('d', ['room']),
    fakePeer('e', ['other'], one),
  ];
  const { b } = setUp(peers);
  assert.equal(b.broadcast('room', 'hi', {}), 4);
  assert.deepEqual([one.publishes, two.publishes], [1, 1]);
  assert.deepEqual(peers.map((p) => p.got.length), [1, 1, 1, 1, 0]);
  assert.deepEqual(peers.map((p) => p.looped), [0, 0, 0, 1, 0]);
  assert.deepEqual(peers[0].got[0], [9, 'room', null, 'hi']);
  assert.deepEqual([b.delivered, b.dropped], [4, 0]);
});

test('a broadcast that finds a peer over highWaterMark goes through the send loop, skipping and counting it', () => {
  const server = new FakeServer();
  const peers = [fakePeer('a', ['room'], server), fakePeer('b', ['room'], server)];
  const { b } = setUp(peers);
  peers[1].full = true;
  assert.equal(b.broadcast('room', 'hi', {}), 1);
  assert.equal(server.publishes, 0);
  assert.deepEqual(peers.map((p) => p.got.length), [1, 0]);
  assert.deepEqual([b.delivered, b.dropped], [1, 1]);
  peers[1].full = false;
  assert.equal(b.broadcast('room', 'again', {}), 2);
  assert.equal(server.publishes, 1);
  assert.deepEqual([b.delivered, b.dropped], [3, 1]);
});

test('except and broadcastAll go through the send loop and leave out whom they name', () => {
  const server = new FakeServer();
  const peers = [fakePeer('a', ['room'], server), fakePeer('b', ['room', 'muted'], server)];
  const { b, as } = setUp(peers);
  assert.equal(b.broadcast('room', 1, { except: ['muted'] }), 1);
  assert.equal(b.broadcast('room', 2, { except: [as(peers[0])] }), 1);
  assert.equal(b.broadcast(undefined, 3, { except: ['muted'] }), 1);
  assert.equal(server.publishes, 0);
  assert.deepEqual(peers.map((p) => p.got.map((m) => (m as unknown[])[3])), [[1, 3], [2]]);
  assert.equal(b.delivered, 3);
});

test('a closed peer is neither published to nor counted', () => {
  const server = new FakeServer();
  const peers = [fakePeer('a', ['room'], server), fakePeer('b', ['room'], server)];
  const { b } = setUp(peers);
  peers[1].isClosed = true;
  assert.equal(b.broadcast('room', 'hi', {}), 1);
  assert.deepEqual([b.delivered, b.dropped], [1, 0]);
});

test('a held peer leaves its topics and takes broadcasts through the loop until released', () => {
  const server = new FakeServer();
  const peers = [fakePeer('a', ['room'], server), fakePeer('b', ['room'], server)];
  const { b, add, as } = setUp(peers);
  b.hold(as(peers[1]));
  add(peers[1], 'news');
  assert.deepEqual(server.topicsOf(peers[1]), []);
  assert.equal(b.broadcast('room', 'hi', {}), 2);
  assert.deepEqual(peers.map((p) => [p.got.length, p.looped]), [[1, 0], [1, 1]]);
  b.release(as(peers[1]));
  assert.deepEqual(server.topicsOf(peers[1]), ['room'], "the topics in use: room's");
  assert.equal(b.broadcast('room', 'again', {}), 2);
  assert.deepEqual(peers.map((p) => [p.got.length, p.looped]), [[2, 0], [2, 1]]);
  assert.equal(b.delivered, 4);
});

test('a peer not yet accepted is on no topic and skipped by broadcasts, and joins its topics once admitted (WSM-LIM-003)', () => {
  const server = new FakeServer();
  const peers = [fakePeer('a', ['room'], server), fakePeer('b', ['room'], server)];
  peers[1].stands = 'shut';
  const { b, as } = setUp(peers);
  assert.equal(b.broadcast('room', 'hi', {}), 1);
  assert.equal(b.broadcast(undefined, 'all', {}), 1);
  assert.deepEqual(server.topicsOf(peers[1]), []);
  assert.deepEqual(peers[1].got, []);
  // While its hello is handled, its admission keeps what the loop hands it (lib/acceptor/_admission.ts).
  peers[1].stands = 'hello';
  assert.equal(b.broadcast('room', 'during', {}), 2);
  assert.deepEqual([server.topicsOf(peers[1]), peers[1].looped], [[], 1]);
  peers[1].stands = 'open';
  b.admitted(as(peers[1]));
  assert.deepEqual(server.topicsOf(peers[1]), ['room']);
  assert.equal(b.broadcast('room', 'after', {}), 2);
  assert.equal(peers[1].looped, 1, 'the accepted peer takes the native path');
  peers[1].stands = 'refused';
  assert.equal(b.broadcast(undefined, 'all', {}), 1);
  assert.deepEqual([b.delivered, b.dropped], [7, 0]);
});

test('a throwing publish is reported and its peers counted as dropped', () => {
  const server = new FakeServer();
  const peers = [fakePeer('a', ['room'], server), fakePeer('b', ['room'])];
  const { b, reported } = setUp(peers);
  server.fail = true;
  assert.equal(b.broadcast('room', 'hi', {}), 1);
  assert.equal(reported.length, 1);
  assert.deepEqual([b.delivered, b.dropped], [1, 1]);
});

/** A socket that passes for the `ws` package's: an EventEmitter with `terminate()`. */
function fakeWs() {
  const sent: [string | Uint8Array, unknown][] = [];
  const socket = {
    readyState: 1,
    binaryType: 'nodebuffer',
    bufferedAmount: 0,
    sent,
    on() {},
    removeListener() {},
    terminate() {},
    addEventListener() {},
    removeEventListener() {},
    send(data: string | Uint8Array, options?: unknown) {
      sent.push([data, options]);
    },
    close() {},
  };
  return socket;
}

test('a broadcast hands every ws socket the same UTF-8 bytes of its text frame, sent as text', async () => {
  const acceptor = new Acceptor({ idleTimeoutMs: 0 });
  const sockets = [fakeWs(), fakeWs()];
  for (const socket of sockets) {
    acceptor.accept(socket as unknown as ServerWebSocket, { tags: ['room'] });
  }
  assert.equal(await acceptor.broadcast('room', 'héllo'), 2);
  const [[a, aOptions], [b, bOptions]] = sockets.map((s) => s.sent.at(-1)!);
  assert.ok(a instanceof Uint8Array, 'bytes, not a string');
  assert.equal(a, b, 'encoded once');
  assert.deepEqual([aOptions, bOptions], [{ binary: false }, { binary: false }]);
  assert.deepEqual(JSON.parse(new TextDecoder().decode(a)), [9, 'room', null, 'héllo']);
  await acceptor.close({ drainMs: 0, spreadMs: 0 });
});
