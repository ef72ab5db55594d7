// The acceptor's broadcast part on its own: the tag index, who a broadcast reaches, the delivered
// and dropped counters, and the backplane bridge both ways (WSM-ACC-005, WSM-APP-005, WSM-BP-004).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Broadcaster } from '../../lib/acceptor/_broadcast.ts';
import { jsonCodec } from 'muxws';
import type { Backplane, BackplaneMessage } from 'muxws/backplane';
import type { BroadcastAllOptions } from 'muxws/acceptor';
import type { PeerImpl } from '../../lib/acceptor/_peer.ts';

interface FakePeer {
  name: string;
  tags: Set<string>;
  isClosed: boolean;
  got: unknown[];
  admission: { readonly barred: boolean; sendPublish(data: string | Uint8Array): boolean };
  /** No topics: every broadcast goes through the send loop. */
  sink: Record<string, never>;
}

/** A peer whose socket takes a frame (`'ok'`), is over its high-water mark (`'full'`) or throws. */
function fakePeer(name: string, tags: string[], socket: 'ok' | 'full' | 'throws' = 'ok'): FakePeer {
  const got: unknown[] = [];
  return {
    name,
    tags: new Set(tags),
    isClosed: false,
    got,
    sink: {},
    admission: {
      barred: false,
      sendPublish(data) {
        if (socket === 'throws') throw new Error(`${name} broke`);
        if (socket === 'full') return false;
        got.push(JSON.parse(String(data)));
        return true;
      },
    },
  };
}

/** A broadcaster over `peers`, indexed by their tags, with the errors it reports. */
function setUp(peers: FakePeer[], backplane?: Backplane) {
  const reported: [unknown, unknown][] = [];
  const set = new Set(peers as unknown as PeerImpl[]);
  const host = {
    codec: jsonCodec,
    report: (error: unknown, peer?: unknown) => reported.push([error, peer]),
  };
  const b = new Broadcaster(host, set, backplane, 'node-a');
  for (const peer of set) for (const tag of peer.tags) b.index(peer, tag);
  return { b, reported, set };
}

test('Broadcaster.broadcast() reaches the tagged live peers not left out, once each', () => {
  const cases: [string | undefined, BroadcastAllOptions, string[]][] = [
    ['room', {}, ['a', 'b']],
    ['room', { except: ['muted'] }, ['a']],
    [undefined, {}, ['a', 'b', 'c']],
    [undefined, { except: ['room'] }, ['c']],
    ['nobody', {}, []],
  ];
  for (const [tag, options, expected] of cases) {
    const peers = [fakePeer('a', ['room']), fakePeer('b', ['room', 'muted']), fakePeer('c', [])];
    const { b } = setUp(peers);
    assert.equal(
      b.broadcast(tag, 'hi', options),
      expected.length,
      `${tag} ${JSON.stringify(options)}`,
    );
    assert.deepEqual(peers.filter((p) => p.got.length === 1).map((p) => p.name), expected);
    assert.equal(b.delivered, expected.length);
  }
});

test('Broadcaster.broadcast() leaves out an except peer and a closed one, and checks the tags', () => {
  const peers = [fakePeer('a', ['room']), fakePeer('b', ['room']), fakePeer('c', ['room'])];
  const { b } = setUp(peers);
  peers[2].isClosed = true;
  assert.equal(b.broadcast('room', 'hi', { except: [peers[0] as never] }), 1);
  assert.deepEqual(peers.map((p) => p.got.length), [0, 1, 0]);
  assert.deepEqual(peers[1].got, [[9, 'room', null, 'hi']]);
  assert.equal(b.broadcast(undefined, 'hi', { tag: 'news' }), 2);
  assert.deepEqual(peers[1].got[1], [9, 'news', null, 'hi']);
  assert.throws(() => b.broadcast(undefined, 'hi', { tag: '' }), TypeError);
  assert.throws(() => b.broadcast('room', 'hi', { except: [42 as never] }), TypeError);
});

test('Broadcaster counts a full socket as dropped and reports a throwing one with its peer', () => {
  const peers = [
    fakePeer('a', ['t']),
    fakePeer('b', ['t'], 'full'),
    fakePeer('c', ['t'], 'throws'),
  ];
  const { b, reported } = setUp(peers);
  assert.equal(b.broadcast('t', 1, {}), 1);
  assert.deepEqual([b.delivered, b.dropped], [1, 1]);
  assert.equal(reported.length, 1);
  assert.equal(reported[0][1], peers[2]);
});

test('Broadcaster.index() and unindex() keep tagged() to the peers holding a tag', () => {
  const a = fakePeer('a', []) as unknown as PeerImpl;
  const { b } = setUp([]);
  assert.equal(b.tagged('t'), undefined);
  b.index(a, 't');
  assert.deepEqual([...b.tagged('t')!], [a]);
  b.unindex(a, 't');
  b.unindex(a, 'never');
  assert.equal(b.tagged('t'), undefined);
});

test("Broadcaster publishes to the backplane and delivers other nodes' broadcasts until unsubscribed", () => {
  let handler: ((message: BackplaneMessage) => void) | undefined;
  const published: BackplaneMessage[] = [];
  const backplane: Backplane = {
    publish: (message) => {
      published.push(message);
      return Promise.reject(new Error('bus down'));
    },
    subscribe: (h) => {
      handler = h;
      return () => handler = undefined;
    },
  };
  const peers = [fakePeer('a', ['room']), fakePeer('b', [])];
  const { b, reported } = setUp(peers, backplane);
  // No local peer holds the tag, but another node may: it is still encoded and published.
  assert.equal(b.broadcast('elsewhere', 'x', { except: ['muted'] }), 0);
  assert.equal(published.length, 1);
  assert.deepEqual({ ...published[0], payload: undefined }, {
    tag: 'elsewhere',
    headers: null,
    payload: undefined,
    except: ['muted'],
    origin: 'node-a',
    codec: 'json',
  });
  const all = '*'.repeat(257);
  const from = (origin: string, tag: string, codec = 'json'): BackplaneMessage => ({
    tag,
    headers: null,
    payload: JSON.stringify([9, tag === all ? '*' : tag, null, origin]),
    except: [],
    origin,
    codec,
  });
  handler!(from('node-a', 'room')); // its own, come back: skipped
  handler!(from('node-b', 'room'));
  handler!(from('node-b', all));
  handler!(from('node-b', 'room', 'msgpack'));
  assert.deepEqual(peers.map((p) => p.got.length), [2, 1]);
  b.unsubscribe();
  assert.equal(handler, undefined);
  return Promise.resolve().then(() => {
    const messages = reported.map(([error]) => (error as Error).message);
    assert.equal(messages.length, 2);
    assert.match(messages[0], /encoded with codec "msgpack": this acceptor uses "json"$/);
    assert.equal(messages[1], 'bus down');
  });
});

// Who a broadcast reaches when the tag changes while it is being delivered: the send loop walks the
// peers tagged when the broadcast began, once each, and a broadcast started from inside it (an
// error report) walks its own.
test('A broadcast reaches the peers tagged when it began, once each, though a report mid-loop re-tags, tags and broadcasts again (WSM-ACC-005)', () => {
  const [a, b, c] = [
    fakePeer('a', ['room'], 'throws'),
    fakePeer('b', ['room']),
    fakePeer('c', ['room']),
  ];
  const d = fakePeer('d', ['room']);
  /** The payloads a peer got (a PUBLISH's fourth element). */
  const payloads = (peer: FakePeer) => peer.got.map((frame) => (frame as unknown[])[3]);
  const peers = new Set([a, b, c] as unknown as PeerImpl[]);
  let reports = 0;
  const host = {
    codec: jsonCodec,
    report: () => {
      if (reports++ > 0) return;
      // b leaves the tag and joins it again (the end of the tag's set), d joins it: neither is
      // reached a second time, or at all, by the broadcast under way.
      broadcaster.unindex(b as unknown as PeerImpl, 'room');
      broadcaster.index(b as unknown as PeerImpl, 'room');
      broadcaster.index(d as unknown as PeerImpl, 'room');
      assert.equal(broadcaster.broadcast('room', 'inner', {}), 3);
    },
  };
  const broadcaster: Broadcaster = new Broadcaster(host, peers, undefined, 'node-a');
  for (const peer of peers) broadcaster.index(peer, 'room');
  for (let round = 0; round < 3; round++) {
    const count = broadcaster.broadcast('room', `outer ${round}`, {});
    assert.equal(count, round === 0 ? 2 : 3);
  }
  assert.deepEqual(payloads(b), ['inner', 'outer 0', 'outer 1', 'outer 2']);
  assert.deepEqual(payloads(c), ['inner', 'outer 0', 'outer 1', 'outer 2']);
  assert.deepEqual(payloads(d), ['inner', 'outer 1', 'outer 2']);
  assert.equal(reports, 4);
});
