// Who a broadcast reaches when the tag changes while it is being delivered: the send loop walks
// the peers tagged when the broadcast began, once each, and a broadcast started from inside it
// (an error report) walks its own (WSM-ACC-005).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Broadcaster } from '../../lib/acceptor/_broadcast.ts';
import { jsonCodec } from 'muxws';
import type { PeerImpl } from '../../lib/acceptor/_peer.ts';

interface FakePeer {
  name: string;
  tags: Set<string>;
  isClosed: boolean;
  got: unknown[];
  admission: { readonly barred: boolean; sendPublish(data: string | Uint8Array): boolean };
  sink: Record<string, never>;
}

function fakePeer(name: string, throws = false): FakePeer {
  const got: unknown[] = [];
  return {
    name,
    tags: new Set(['room']),
    isClosed: false,
    got,
    sink: {},
    admission: {
      barred: false,
      sendPublish(data) {
        if (throws) throw new Error(`${name} broke`);
        got.push(JSON.parse(String(data))[3]);
        return true;
      },
    },
  };
}

test('A broadcast reaches the peers tagged when it began, once each, though a report mid-loop re-tags, tags and broadcasts again (WSM-ACC-005)', () => {
  const [a, b, c] = [fakePeer('a', true), fakePeer('b'), fakePeer('c')];
  const d = fakePeer('d');
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
  assert.deepEqual(b.got, ['inner', 'outer 0', 'outer 1', 'outer 2']);
  assert.deepEqual(c.got, ['inner', 'outer 0', 'outer 1', 'outer 2']);
  assert.deepEqual(d.got, ['inner', 'outer 1', 'outer 2']);
  assert.equal(reports, 4);
});
