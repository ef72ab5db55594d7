// Typed events over real sockets on Bun: the shared suite with the ./bun adapter, and an event to
// a tag taking Bun's native publish (one publish to the tag's topic) as a plain broadcast does.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { eventsRealSuite } from '../_events_real.ts';
import { serveAcceptorOnBun, serveOnBun } from './_serve.ts';
import { until } from '../_dialer_real.ts';
import { Acceptor } from 'muxws/acceptor';
import { bunHandlers, type BunServer } from 'muxws/bun';
import { connect, on } from 'muxws';

eventsRealSuite('Bun', serveAcceptorOnBun);

/** Bun's server, with the part this test reads. */
interface TopicServer extends BunServer {
  publish(topic: string, data: string | Uint8Array): number;
}

test('Bun: an event to a tag is one native publish to its topic, and each dialer handles it by name (WSM-API-001)', async () => {
  type Api = { ':events': { message: { text: string } } };
  const acceptor = new Acceptor<Api>({ idleTimeoutMs: 0, authorize: () => ({ tags: ['room'] }) });
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
  };
  const served = serveOnBun((request, srv) => {
    real = srv as TopicServer;
    return fetch(request, counting);
  }, websocket);
  const url = `ws://127.0.0.1:${served.port}${served.path}`;
  const heard: string[] = [];
  const connections = await Promise.all(
    ['a', 'b'].map((who) =>
      connect<Api>(url, { heartbeat: false, reconnect: false })
        .then((connection) => {
          on(connection, 'message', ({ text }) => void heard.push(`${who} ${text}`));
          return connection;
        })
    ),
  );
  try {
    await until(() => acceptor.stats.peers === 2, 5_000, 'two peers');
    assert.equal(await acceptor.emit('room', 'message', { text: 'hi' }), 2);
    assert.equal(topics.length, 1, 'one publish');
    await until(() => heard.length === 2, 5_000, 'both dialers');
    assert.deepEqual(heard.sort(), ['a hi', 'b hi']);
  } finally {
    await Promise.all(connections.map((connection) => connection.close()));
    await acceptor.close({ drainMs: 0 });
    await served.close();
  }
});
