// The broadcast suite on raw Bun (Bun.serve with the ./bun adapter, where a broadcast to a tag
// is one publish to a topic), and what the topics themselves do: a peer's socket follows its
// tags' topics as they are added and deleted and as it closes.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { broadcastSuite } from '../_broadcast_suite.ts';
import { eventually, within } from '../_acceptor_suite.ts';
import { serveAcceptorOnBun, serveOnBun } from './_serve.ts';
import { Acceptor, type Peer } from 'muxws/acceptor';
import { bunHandlers, type BunServer } from 'muxws/bun';

broadcastSuite('Bun', serveAcceptorOnBun);

/** Bun's server, with the part these tests read. */
interface TopicServer extends BunServer {
  publish(topic: string, data: string | Uint8Array): number;
  subscriberCount(topic: string): number;
}

test("Bun: a peer socket joins a tag's topic at its first broadcast and follows its tags as they are added, deleted and cleared and as it closes, and a broadcast to a tag is one publish (WSM-ACC-005)", async () => {
  const acceptor = new Acceptor({
    idleTimeoutMs: 0,
    authorize: (request) => ({ tags: [new URL(request.url).searchParams.get('tag') ?? 'none'] }),
  });
  const { fetch, websocket } = bunHandlers(acceptor);
  const topics: string[] = [];
  let real: TopicServer | undefined;
  // One object for the server, as Bun passes one: it records each publish's topic.
  const counting: TopicServer = {
    upgrade: (request, options) => real!.upgrade(request, options),
    publish(topic, data) {
      topics.push(topic);
      return real!.publish(topic, data);
    },
    subscriberCount: (topic) => real!.subscriberCount(topic),
  };
  const served = serveOnBun((request, srv) => {
    real = srv as TopicServer;
    return fetch(request, counting);
  }, websocket);
  const sockets: WebSocket[] = [];
  try {
    const got: unknown[][] = [[], []];
    for (const [i, tag] of ['room', 'room'].entries()) {
      const socket = new WebSocket(`ws://127.0.0.1:${served.port}/ws?tag=${tag}`, 'muxws.v1.json');
      socket.onmessage = (event) => got[i].push(JSON.parse(String(event.data))[3]);
      sockets.push(socket);
      await within(new Promise((resolve) => socket.onopen = resolve), 5_000, 'a socket to open');
    }
    await eventually(() => acceptor.stats.peers === 2, 5_000, 'two peers');
    const [a, b] = [...acceptor.peers()] as Peer[];
    assert.equal(await acceptor.broadcast('room', 1), 2);
    assert.equal(topics.length, 1, 'one publish');
    const room = topics[0];
    assert.match(room, /^\0muxws [0-9a-f-]{36}\0room$/);
    assert.equal(counting.subscriberCount(room), 2);
    a.tags.add('news');
    const news = room.replace(/room$/, 'news');
    assert.equal(counting.subscriberCount(news), 0, 'no topic before a broadcast to it');
    assert.equal(await acceptor.broadcast('news', 'n'), 1);
    assert.equal(counting.subscriberCount(news), 1);
    b.tags.delete('room');
    assert.equal(counting.subscriberCount(room), 1);
    assert.equal(await acceptor.broadcast('room', 2, { except: [a] }), 0);
    assert.equal(await acceptor.broadcastAll(3), 2);
    assert.equal(topics.length, 2, 'except and broadcastAll send one by one');
    a.tags.clear();
    assert.deepEqual([counting.subscriberCount(room), counting.subscriberCount(news)], [0, 0]);
    a.tags.add('room');
    b.tags.add('room');
    assert.equal(await acceptor.broadcast('room', 4), 2);
    assert.equal(topics.length, 3);
    await eventually(() => got[0].includes(4), 5_000, 'a to receive');
    sockets[0].close();
    await eventually(() => acceptor.stats.peers === 1, 5_000, 'a to leave');
    assert.equal(counting.subscriberCount(room), 1);
    assert.equal(await acceptor.broadcast('room', 5), 1);
    await eventually(() => got[1].includes(5), 5_000, 'the last broadcast');
    assert.deepEqual(got, [[1, 'n', 3, 4], [1, 3, 4, 5]]);
    assert.deepEqual([acceptor.stats.delivered, acceptor.stats.dropped], [8, 0]);
  } finally {
    for (const socket of sockets) socket.close();
    await acceptor.close({ drainMs: 0, spreadMs: 0 }).catch(() => {});
    await served.close();
  }
});
