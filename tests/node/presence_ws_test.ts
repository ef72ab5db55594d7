// Presence over real `ws` sockets on Node: a follower's snapshot, END and diffs arrive as text
// messages (the acceptor hands `ws` a diff's UTF-8 bytes, encoded once for every follower).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import WebSocket from 'ws';
import { Acceptor } from 'muxws/acceptor';
import { serveWs } from './_serve.ts';
import { waitFor, within } from '../_wait.ts';

const TAG = 'room:1';

/** A raw dialer: every message it receives, decoded, with whether it came as binary. */
async function rawDialer(port: number) {
  const socket = new WebSocket(`ws://127.0.0.1:${port}/`, 'muxws.v1.json');
  const received: Array<{ frame: unknown[]; binary: boolean }> = [];
  socket.on('message', (data, isBinary) => {
    received.push({ frame: JSON.parse(String(data)), binary: isBinary });
  });
  await within(
    new Promise<void>((resolve, reject) => {
      socket.once('open', () => resolve());
      socket.once('error', reject);
    }),
    5000,
    'the dialer to open',
  );
  return { socket, received };
}

test('a follower on a ws socket gets the snapshot, END, then each diff as text (WSM-PRS-002)', async () => {
  const acceptor = new Acceptor({ idleTimeoutMs: 0, onPeer: (peer) => peer.tags.add(TAG) });
  const { server, wss, port } = await serveWs(acceptor);
  const followers = [await rawDialer(port), await rawDialer(port)];
  try {
    for (const { socket } of followers) {
      socket.send(JSON.stringify([1, 1, 1, { ':presence': TAG }, true]));
    }
    for (const { received } of followers) {
      await waitFor(() => received.length >= 2, 5000, 'the snapshot and END');
      assert.deepEqual(received.map((r) => r.frame), [
        [9, TAG, { ':presence': 'sync' }, {}],
        [3, 1],
      ]);
    }
    const [first] = [...acceptor.peers(TAG)];
    acceptor.presence.track(first, TAG, 'ada', { name: 'Ada' });
    await acceptor.presence.flush();
    for (const { received } of followers) {
      await waitFor(() => received.length >= 3, 5000, 'the diff');
      const { frame, binary } = received[2];
      assert.equal(binary, false, 'a text message, as the codec is JSON');
      const [kind, tag, headers, diff] = frame as [number, string, unknown, {
        leaves: object;
        joins: Record<string, Record<string, unknown>>;
      }];
      assert.deepEqual([kind, tag, headers, diff.leaves], [9, TAG, { ':presence': 'diff' }, {}]);
      assert.deepEqual(Object.values(diff.joins.ada), [{ name: 'Ada' }]);
    }
  } finally {
    for (const { socket } of followers) socket.terminate();
    await acceptor.close({ drainMs: 0 });
    for (const client of wss.clients) client.terminate();
    await new Promise((resolve) => server.close(resolve));
  }
});
