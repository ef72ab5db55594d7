// lib/acceptor/_peer.ts: a peer and its link over a small host, without an acceptor.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { type PeerHost, type PeerImpl, PeerLink } from '../../lib/acceptor/_peer.ts';
import { jsonCodec } from 'muxws';
import type { Peer, PeerCloseInfo, ServerWebSocket } from 'muxws/acceptor';
import { webSocketDriver } from '../../lib/sockets/socket_driver.ts';
import { sessionLimits } from '../../lib/session/session.ts';

interface FakeHost extends PeerHost {
  closeCode: number | undefined;
  closeSpreadMs: number;
  events: string[];
  ended(peer: PeerImpl, info: PeerCloseInfo): void;
}

function host(): FakeHost {
  const events: string[] = [];
  return {
    codec: jsonCodec,
    limits: sessionLimits(undefined),
    onStream: (stream) => stream.payload,
    onPeer: (peer: Peer) => void events.push(`peer ${peer.id}`),
    onHello: undefined,
    requireHello: false,
    helloTimeoutMs: 10_000,
    closeCode: undefined,
    closeSpreadMs: 0,
    events,
    report: (error) => void events.push(`report ${(error as Error).message}`),
    admitted: (peer) => void events.push(`admitted ${peer.id}`),
    discarded: (count) => void events.push(`discarded ${count}`),
    index: (_peer, tag) => void events.push(`index ${tag}`),
    unindex: (_peer, tag) => void events.push(`unindex ${tag}`),
    ended(peer, info) {
      if (peer.ended(info)) events.push(`ended ${info.code} ${info.reason}`);
    },
  };
}

function sink() {
  const sent: unknown[] = [];
  const closes: Array<[number, string]> = [];
  return {
    sent,
    closes,
    send: (data: string | Uint8Array) => void sent.push(JSON.parse(String(data))),
    close: (code: number, reason: string) => void closes.push([code, reason]),
  };
}

test('PeerLink takes the id, tags, data and first stream id from its options (WSM-WIRE-004)', () => {
  const cases: Array<[number | undefined, number]> = [[undefined, 2], [2, 2], [40, 40]];
  for (const [nextStreamId, expected] of cases) {
    const link = new PeerLink(host(), sink(), undefined, {
      id: 'p1',
      tags: ['a'],
      data: { user: 'ada' },
      nextStreamId,
    });
    assert.equal(link.peer.id, 'p1');
    assert.deepEqual([...link.peer.tags], ['a']);
    assert.deepEqual(link.peer.data, { user: 'ada' });
    assert.equal(link.peer.nextStreamId, expected);
    assert.equal(link.firstStreamId, nextStreamId);
  }
  assert.throws(() => new PeerLink(host(), sink(), undefined, { nextStreamId: 3 }), RangeError);
  assert.throws(() => new PeerLink(host(), sink(), undefined, { tags: [''] }), TypeError);
});

test('PeerImpl makes its id when first read, once, and keeps a restored one', () => {
  const crypto = globalThis.crypto as { randomUUID(): string };
  const original = crypto.randomUUID;
  let made = 0;
  crypto.randomUUID = () => `00000000-0000-4000-8000-00000000000${++made}`;
  try {
    const fresh = new PeerLink(host(), sink(), undefined, {}).peer;
    const restored = new PeerLink(host(), sink(), undefined, { id: 'p1' }).peer;
    assert.equal(made, 0);
    assert.equal(fresh.id, '00000000-0000-4000-8000-000000000001');
    assert.equal(fresh.id, '00000000-0000-4000-8000-000000000001');
    assert.equal(restored.id, 'p1');
    assert.equal(made, 1);
  } finally {
    crypto.randomUUID = original;
  }
});

test('PeerLink announces once, or while its acceptor closes sends GOAWAY and closes with the terms of the code (WSM-ACC-008)', () => {
  const cases: Array<[number | undefined, string | undefined, string | undefined]> = [
    [undefined, undefined, undefined],
    [1012, 'restart', 'service restart'],
    [1001, 'shutdown', 'shutdown'],
  ];
  for (const [code, goAway, reason] of cases) {
    const h = host();
    h.closeCode = code;
    h.closeSpreadMs = 250;
    const s = sink();
    const link = new PeerLink(h, s, undefined, { id: 'p' });
    link.announce();
    link.announce();
    if (code === undefined) {
      assert.deepEqual(h.events, ['peer p']);
      assert.equal(link.peer.announced, true);
      continue;
    }
    assert.deepEqual(s.sent, [[8, 0, goAway, 'The acceptor is closing', 250]]);
    assert.deepEqual(s.closes, [[code, reason]]);
    assert.equal(link.peer.announced, false);
    assert.ok(!h.events.includes('peer p'));
  }
});

test('PeerLink queues sends while its socket connects and counts them as buffered', () => {
  const sent: unknown[] = [];
  const socket = {
    readyState: 0,
    bufferedAmount: 5,
    send: (data: string | Uint8Array) => void sent.push(data),
    close() {},
    addEventListener() {},
    removeEventListener() {},
  } as ServerWebSocket & { readyState: number };
  const link = new PeerLink(host(), socket, webSocketDriver, {});
  link.send('abc');
  link.send(new Uint8Array(4));
  assert.equal(sent.length, 0);
  assert.equal(link.bufferedAmount, 5 + 3 + 4);
  socket.readyState = 1;
  link.opened();
  assert.deepEqual(sent, ['abc', new Uint8Array(4)]);
  assert.equal(link.bufferedAmount, 5);
});

test('PeerLink feeds a Blob before what follows it, the close last, and reads 0 as 1006 (WSM-WIRE-009)', async () => {
  const h = host();
  const s = sink();
  const link = new PeerLink(h, s, undefined, {});
  link.message(new Blob(['[1,1,1,null,"a"]']));
  link.message('[1,3,1,null,"b"]');
  link.closed(0, undefined);
  assert.equal(s.sent.length, 0, 'everything waits for the Blob');
  await link.peer.closed;
  assert.deepEqual(h.events, ['ended 1006 ']);
});

test('PeerLink reports a sink whose close throws', () => {
  const h = host();
  const link = new PeerLink(
    h,
    {
      send() {},
      close() {
        throw new Error('gone');
      },
    },
    undefined,
    {},
  );
  link.close(1000, '');
  assert.deepEqual(h.events, ['report gone']);
});
