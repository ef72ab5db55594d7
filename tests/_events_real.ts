// Typed events over real sockets on one runtime's server (WSM-API-001): the acceptor emits to a
// tag (with except), to every peer and to one peer, and the dialer's on() handlers receive them
// by name; an event with no handler reaches onPublish; recovery replays an event after a redial;
// a BroadcastChannel backplane carries an event to another node's dialers. Loopback ephemeral
// ports, bounded waits, everything closed in `finally`.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Acceptor, broadcastChannelBackplane, memoryHistory } from 'muxws/acceptor';
import { connect, type ConnectOptions, on, type PublishMessage, recovery } from 'muxws';
import { startFaultProxy } from './_fault_proxy.ts';
import { until } from './_dialer_real.ts';

/** What a suite's server factory returns. */
export interface EventsServer {
  port: number;
  path: string;
  close(): Promise<void>;
}

/** The chat's Api: the events its acceptor emits. */
type Api = {
  ':hello': { input: { room: string } };
  ':events': { message: { from: string; text: string }; notice: string; typing: string };
};

/** An acceptor whose dialers join the room their hello names. */
function chatAcceptor(options: ConstructorParameters<typeof Acceptor<Api>>[0] = {}): Acceptor<Api> {
  return new Acceptor<Api>({
    idleTimeoutMs: 0,
    onHello: (hello, peer) => void peer.tags.add(`room:${hello.payload.room}`),
    ...options,
  });
}

/** Runs the real-socket event tests with `serve` (the runtime's server and adapter). */
export function eventsRealSuite(
  name: string,
  // deno-lint-ignore no-explicit-any
  serve: (acceptor: Acceptor<any, any>) => Promise<EventsServer>,
  dial: { WebSocket?: ConnectOptions['WebSocket'] } = {},
): void {
  test(`${name}: events reach their typed handlers by name, to a tag with except, to every peer and to one peer, and an event with no handler reaches onPublish (WSM-API-001)`, async () => {
    const acceptor = chatAcceptor();
    const server = await serve(acceptor);
    const url = `ws://127.0.0.1:${server.port}${server.path}`;
    const seen: string[][] = [[], []];
    const published: PublishMessage[] = [];
    const errors: unknown[] = [];
    const [a, b] = await Promise.all(['a', 'b'].map((who, i) =>
      connect<Api>(url, {
        hello: { payload: { room: 'lobby' } },
        ...dial,
        heartbeat: false,
        reconnect: false,
        onPublish: (message) => void (i === 1 && published.push(message)),
        onError: (error) => void errors.push(error),
      }).then((connection) => {
        on(connection, 'message', ({ from, text }, { tag, event }) => {
          seen[i].push(`${who} ${tag} ${event} ${from}: ${text}`);
        });
        on(connection, 'notice', (notice) => void seen[i].push(`${who} notice ${notice}`));
        return connection;
      })
    ));
    try {
      await until(() => [...acceptor.peers('room:lobby')].length === 2, 2000, 'both peers');
      const [peerA, peerB] = [...acceptor.peers('room:lobby')];
      const message = { from: 'ada', text: 'hi' };
      assert.equal(await acceptor.emit('room:lobby', 'message', message, { except: [peerA] }), 1);
      assert.equal(await acceptor.emitAll('notice', 'deploying'), 2);
      assert.equal(peerA.emit('notice', 'just you'), true);
      assert.equal(await acceptor.emit('room:lobby', 'typing', 'ada'), 2);
      await acceptor.broadcast('room:lobby', 'plain');
      await until(() => published.length === 2, 2000, 'what no handler took');
      await until(() => seen[0].length === 2, 2000, "a's events");
      assert.deepEqual(seen, [
        ['a notice deploying', 'a notice just you'],
        ['b room:lobby message ada: hi', 'b notice deploying'],
      ]);
      assert.deepEqual(published, [
        { tag: 'room:lobby', headers: null, payload: 'ada', event: 'typing' },
        { tag: 'room:lobby', headers: null, payload: 'plain' },
      ]);
      assert.deepEqual(errors, []);
      assert.equal(peerB.isClosed, false);
    } finally {
      await Promise.all([a.close(), b.close()]);
      await acceptor.close({ drainMs: 0 });
      await server.close();
    }
  });

  test(`${name}: a handler removed hears nothing more, and one that throws goes to onError while the next still runs (WSM-API-001)`, async () => {
    const acceptor = chatAcceptor();
    const server = await serve(acceptor);
    const heard: string[] = [];
    const errors: unknown[] = [];
    const published: unknown[] = [];
    const connection = await connect<Api>(`ws://127.0.0.1:${server.port}${server.path}`, {
      hello: { payload: { room: 'lobby' } },
      ...dial,
      heartbeat: false,
      reconnect: false,
      onPublish: ({ payload }) => void published.push(payload),
      onError: (error) => void errors.push(error),
    });
    try {
      const first = on(connection, 'notice', (notice) => {
        heard.push(`first ${notice}`);
        throw new Error(`handler failed on ${notice}`);
      });
      on(connection, 'notice', (notice) => void heard.push(`second ${notice}`));
      await until(() => acceptor.stats.peers === 1, 2000, 'the peer');
      await acceptor.emit('room:lobby', 'notice', 'one');
      await until(() => heard.length === 2, 2000, 'both handlers');
      first();
      first();
      await acceptor.emit('room:lobby', 'notice', 'two');
      await until(() => heard.length === 3, 2000, 'the second handler');
      assert.deepEqual(heard, ['first one', 'second one', 'second two']);
      assert.deepEqual(errors.map((error) => (error as Error).message), ['handler failed on one']);
      assert.deepEqual(published, []);
    } finally {
      await connection.close();
      await acceptor.close({ drainMs: 0 });
      await server.close();
    }
  });

  test(`${name}: a dialer with recovery() whose connection was reset is replayed the events it missed, by name, once and in order (WSM-API-001)`, async () => {
    const acceptor = chatAcceptor({ history: memoryHistory() });
    const server = await serve(acceptor);
    const proxy = await startFaultProxy(server.port);
    const heard: { text: string; seq: number | undefined }[] = [];
    const connection = await connect<Api>(`ws://127.0.0.1:${proxy.port}${server.path}`, {
      hello: { payload: { room: 'lobby' } },
      ...dial,
      heartbeat: false,
      reconnect: { initialDelayMs: 300, jitter: 0 },
      recovery: recovery(),
    });
    on(connection, 'message', ({ text }, { seq }) => void heard.push({ text, seq }));
    try {
      await until(() => [...acceptor.peers('room:lobby')].length === 1, 2000, 'the tag');
      await acceptor.emit('room:lobby', 'message', { from: 'ada', text: '1' });
      await until(() => heard.length === 1, 2000, 'the first event');
      proxy.reset();
      await until(() => connection.state === 'reconnecting', 2000, 'the loss');
      for (let i = 2; i <= 5; i++) {
        await acceptor.emit('room:lobby', 'message', { from: 'ada', text: String(i) });
      }
      await until(() => heard.length === 5, 5000, 'the replay');
      await acceptor.emit('room:lobby', 'message', { from: 'ada', text: '6' });
      await until(() => heard.length === 6, 2000, 'the live event');
      assert.deepEqual(heard.map((h) => h.text), ['1', '2', '3', '4', '5', '6']);
      const first = heard[0].seq!;
      assert.deepEqual(heard.map((h) => h.seq), [0, 1, 2, 3, 4, 5].map((i) => first + i));
    } finally {
      await connection.close();
      await acceptor.close({ drainMs: 0 });
      await proxy.close();
      await server.close();
    }
  });

  test(`${name}: a backplane carries an event emitted on one node to the dialers of another, by name (WSM-API-001)`, async () => {
    const channel = `muxws-events-${crypto.randomUUID()}`;
    const planes = [broadcastChannelBackplane(channel), broadcastChannelBackplane(channel)];
    const [one, two] = planes.map((backplane) => chatAcceptor({ backplane }));
    const servers = [await serve(one), await serve(two)];
    const heard: string[] = [];
    const connection = await connect<Api>(`ws://127.0.0.1:${servers[1].port}${servers[1].path}`, {
      hello: { payload: { room: 'lobby' } },
      ...dial,
      heartbeat: false,
      reconnect: false,
    });
    on(connection, 'message', ({ from, text }) => void heard.push(`${from}: ${text}`));
    on(connection, 'notice', (notice) => void heard.push(`notice ${notice}`));
    try {
      await until(() => two.stats.peers === 1, 2000, 'the peer on the second node');
      assert.equal(await one.emit('room:lobby', 'message', { from: 'ada', text: 'hi' }), 0);
      await until(() => heard.length === 1, 2000, 'the event from the first node');
      await one.emitAll('notice', 'deploying');
      await until(() => heard.length === 2, 2000, 'the event to every peer');
      assert.deepEqual(heard, ['ada: hi', 'notice deploying']);
    } finally {
      await connection.close();
      await Promise.all([one.close({ drainMs: 0 }), two.close({ drainMs: 0 })]);
      await Promise.all(servers.map((server) => server.close()));
      for (const plane of planes) plane.close();
    }
  });
}
