/**
 * The broadcast suite every acceptor runtime passes on real sockets (WSM-ACC-005, WSM-APP-005):
 * {@linkcode broadcastSuite} registers the same `node:test` cases for one runtime, given a
 * factory that serves an {@linkcode Acceptor} on 127.0.0.1 and an ephemeral port, whatever path
 * a broadcast takes there (Bun's topics, a send loop elsewhere).
 *
 * The peers are plain `WebSocket`s speaking `muxws.v1.json` (on Node, the `ws` package's), their
 * tags given by the `tags` query parameter through `authorize`; a peer that never reads is a raw
 * upgrade over `node:net` whose socket is paused. Every wait is bounded, and every socket,
 * acceptor and server is closed in `finally`.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { connect as tcpConnect, type Socket } from 'node:net';
import { Acceptor, type Peer } from 'muxws/acceptor';
import { eventually, type ServerFactory, upgradeRequest, within } from './_acceptor_suite.ts';

/** A `WebSocket` constructor, the global one or the `ws` package's. */
export type SocketConstructor = new (url: string, protocols?: string | string[]) => WebSocket;

/** Options of {@linkcode broadcastSuite}. */
export interface BroadcastSuiteOptions {
  /** The peers' `WebSocket` (Node: the `ws` package's); the global one by default. */
  WebSocket?: SocketConstructor;
}

/** One peer: its socket, the payloads of the PUBLISH frames it received, how many were binary. */
interface Client {
  socket: WebSocket;
  got: unknown[];
  binary: number;
}

/** An acceptor whose peers take their tags and `data.name` from the upgrade's query. */
function taggingAcceptor(highWaterMark?: number): Acceptor {
  return new Acceptor({
    idleTimeoutMs: 0,
    limits: highWaterMark === undefined ? undefined : { highWaterMark },
    authorize: (request) => {
      const query = new URL(request.url).searchParams;
      const tags = (query.get('tags') ?? '').split(',').filter(Boolean);
      return { tags, data: { name: query.get('name') ?? '' } };
    },
  });
}

/** The peer named `name`. */
function peerNamed(acceptor: Acceptor, name: string): Peer {
  const peer = [...acceptor.peers()].find((p) => p.data.name === name);
  assert(peer, `no peer named ${name}`);
  return peer;
}

/**
 * Registers the broadcast cases for one runtime.
 *
 * @param name The runtime, leading every test name.
 * @param serve Serves an acceptor on a real server.
 * @param options The peers' `WebSocket` where there is no global one.
 */
export function broadcastSuite(
  name: string,
  serve: ServerFactory,
  options: BroadcastSuiteOptions = {},
): void {
  const Socket = options.WebSocket ??
    (globalThis as unknown as { WebSocket: SocketConstructor }).WebSocket;

  async function open(port: number, path: string, peer: string, tags: string[]): Promise<Client> {
    const url = `ws://127.0.0.1:${port}${path}?name=${peer}&tags=${tags.join(',')}`;
    const socket = new Socket(url, 'muxws.v1.json');
    const client: Client = { socket, got: [], binary: 0 };
    socket.onmessage = (event: MessageEvent) => {
      if (typeof event.data !== 'string') client.binary++;
      const frame = JSON.parse(String(event.data));
      if (Array.isArray(frame) && frame[0] === 9) client.got.push(frame[3]);
    };
    await within(
      new Promise<void>((resolve, reject) => {
        socket.onopen = () => resolve();
        socket.onerror = () => reject(new Error(`${peer} could not connect`));
      }),
      5_000,
      `${peer} to connect`,
    );
    return client;
  }

  test(`${name}: a broadcast reaches exactly the peers holding the tag as tags change and peers leave, except leaves out whom it names, delivered counts each, and every frame is text (WSM-ACC-005, WSM-APP-005)`, async () => {
    const acceptor = taggingAcceptor();
    const server = await serve(acceptor);
    const clients: Client[] = [];
    try {
      const [a, b, c] = [
        await open(server.port, server.path, 'a', ['room']),
        await open(server.port, server.path, 'b', ['room', 'muted']),
        await open(server.port, server.path, 'c', ['other']),
      ];
      clients.push(a, b, c);
      await eventually(() => acceptor.stats.peers === 3, 5_000, 'three peers');
      assert.equal(await acceptor.broadcast('room', 1), 2);
      assert.equal(await acceptor.broadcast('room', 2, { except: ['muted'] }), 1);
      assert.equal(await acceptor.broadcast('room', 3, { except: [peerNamed(acceptor, 'a')] }), 1);
      peerNamed(acceptor, 'c').tags.add('room');
      peerNamed(acceptor, 'a').tags.delete('room');
      assert.equal(await acceptor.broadcast('room', 4), 2);
      peerNamed(acceptor, 'b').tags.clear();
      assert.equal(await acceptor.broadcast('room', 5), 1);
      peerNamed(acceptor, 'b').tags.add('room');
      await eventually(() => c.got.includes(5), 5_000, 'c to receive');
      c.socket.close();
      await eventually(() => acceptor.stats.peers === 2, 5_000, 'c to leave');
      assert.equal(await acceptor.broadcast('room', 6), 1);
      assert.equal(await acceptor.broadcastAll('end'), 2);
      await eventually(
        () => a.got.includes('end') && b.got.includes('end'),
        5_000,
        'the last broadcast',
      );
      assert.deepEqual(a.got, [1, 2, 'end']);
      assert.deepEqual(b.got, [1, 3, 4, 6, 'end']);
      assert.deepEqual(c.got, [4, 5]);
      assert.deepEqual(clients.map((client) => client.binary), [0, 0, 0], 'text frames only');
      assert.deepEqual([acceptor.stats.delivered, acceptor.stats.dropped], [10, 0]);
    } finally {
      for (const client of clients) client.socket.close();
      await acceptor.close({ drainMs: 0, spreadMs: 0 }).catch(() => {});
      await server.close();
    }
  });

  test(`${name}: a broadcast skips a peer whose socket is over highWaterMark and counts it dropped, while the others receive it (WSM-ACC-005)`, async () => {
    const acceptor = taggingAcceptor(16 * 1024);
    const server = await serve(acceptor);
    let fast: Client | undefined;
    let slow: Socket | undefined;
    try {
      fast = await open(server.port, server.path, 'fast', ['room']);
      slow = await stalledPeer(server.port, server.path, 'slow', ['room', 'flood']);
      await eventually(() => acceptor.stats.peers === 2, 5_000, 'two peers');
      // Up to 64 MiB, far more than loopback buffers hold: the stalled peer's socket backs up.
      const flood = 'x'.repeat(64 * 1024);
      for (let i = 0; i < 1_000 && acceptor.stats.dropped === 0; i++) {
        await acceptor.broadcast('flood', flood);
        if (i % 16 === 15) await new Promise((resolve) => setTimeout(resolve, 1));
      }
      assert.equal(acceptor.stats.dropped, 1, 'the stalled peer backed up');
      const delivered = acceptor.stats.delivered;
      assert.equal(await acceptor.broadcast('room', 'hi'), 1);
      assert.deepEqual(
        [acceptor.stats.delivered - delivered, acceptor.stats.dropped],
        [1, 2],
      );
      await eventually(() => fast!.got.includes('hi'), 5_000, 'the fast peer to receive');
      assert.deepEqual(fast.got, ['hi']);
    } finally {
      fast?.socket.close();
      slow?.destroy();
      await acceptor.close({ drainMs: 0, spreadMs: 0 }).catch(() => {});
      await server.close();
    }
  });
}

/**
 * A peer that never reads: a raw upgrade over `node:net`, paused once the 101 arrived, so what
 * the acceptor sends it piles up in the socket buffers.
 */
function stalledPeer(port: number, path: string, name: string, tags: string[]): Promise<Socket> {
  return within(
    new Promise<Socket>((resolve, reject) => {
      const socket = tcpConnect(port, '127.0.0.1', () => {
        socket.write(
          upgradeRequest(port, `${path}?name=${name}&tags=${tags.join(',')}`, {
            'Sec-WebSocket-Protocol': 'muxws.v1.json',
          }),
        );
      });
      let head = '';
      const onData = (chunk: Uint8Array) => {
        head += new TextDecoder().decode(chunk);
        if (!head.includes('\r\n\r\n')) return;
        socket.off('data', onData);
        socket.pause();
        if (head.startsWith('HTTP/1.1 101')) resolve(socket);
        else reject(new Error(`upgrade refused: ${head.split('\r\n')[0]}`));
      };
      socket.on('data', onData);
      socket.on('error', reject);
    }),
    5_000,
    `${name} to upgrade`,
  );
}
