/**
 * One node of `bench/broadcast.ts`: `<runtime> bench/_broadcast_server.ts --subject
 * muxws|socketio [--redis redis://127.0.0.1:<port>] [--node a]`, on 127.0.0.1 and a free port. It
 * prints `READY <port>` once it serves (and, with `--redis`, once it is subscribed), answers the
 * line `cpu` on stdin with `CPU <µs>` (its CPU time so far, user + system), and exits when its
 * stdin ends or reads `quit`.
 *
 * It answers the clients of `bench/_clients.ts` as `bench/_server.ts` does for its broadcast
 * scenario, with an optional Redis hop to the other nodes:
 * - muxws (`Deno.serve` + `./deno` on Deno, `Bun.serve` + `./bun` on Bun, `ws` + `accept()` on
 *   Node): the hello tags the peer `all`; a request with the header `op: 'bcast'` is
 *   `acceptor.broadcast('all', payload)`, answered with the local count. With `--redis`, the
 *   acceptor has a `redisBackplane` (node-redis clients, channel `muxws-bench`).
 * - socketio (`socket.io` on `node:http`): every socket joins the room `all`; `bcast` is
 *   `io.to('all').emit('b', payload)`, acked with the local count. With `--redis`, the server
 *   uses `@socket.io/redis-adapter` (`createAdapter(pub, sub)`, node-redis clients).
 *
 * The payload is the ~100-byte `PAYLOADS[7]` of `bench/_common.ts`, the same for both.
 *
 * @module
 */
import { createServer } from 'node:http';
import process from 'node:process';
import { Server as SocketIoServer } from 'socket.io';
import { createAdapter } from '@socket.io/redis-adapter';
import { createClient } from 'redis';
import { Acceptor } from 'muxws/acceptor';
import { redisBackplane } from 'muxws/redis';
import type { Backplane } from 'muxws/backplane';
import { listen, serveAcceptor } from './_serve_acceptor.ts';
import { cpuMicros, option, PAYLOADS, readLines } from './_common.ts';

const subject = option('subject', 'muxws');
const redisUrl = option('redis', '');
const nodeId = option('node', 'a');
const BROADCAST = PAYLOADS[7];

/** Two connected node-redis clients (a subscribed connection cannot publish). */
async function redisPair() {
  const publisher = createClient({ url: redisUrl, socket: { reconnectStrategy: () => 100 } });
  const subscriber = publisher.duplicate();
  publisher.on('error', (error) => console.error(`node ${nodeId} publisher:`, error));
  subscriber.on('error', (error) => console.error(`node ${nodeId} subscriber:`, error));
  await Promise.all([publisher.connect(), subscriber.connect()]);
  return { publisher, subscriber };
}

async function serveMuxws(): Promise<number> {
  let backplane: Backplane | undefined;
  if (redisUrl) {
    const { publisher, subscriber } = await redisPair();
    const redis = redisBackplane({
      publisher,
      subscriber,
      channel: 'muxws-bench',
      onError: (error) => console.error(`node ${nodeId} backplane:`, error),
    });
    await redis.ready();
    backplane = redis;
  }
  const acceptor: Acceptor = new Acceptor({
    backplane,
    nodeId: backplane ? nodeId : undefined,
    idleTimeoutMs: 0,
    onStream: async (stream, peer) => {
      if (stream.id === 1) {
        peer.tags.add('all');
        return { welcome: true };
      }
      if (stream.headers?.op === 'bcast') return await acceptor.broadcast('all', BROADCAST);
      return stream.payload;
    },
    onError: (error) => console.error(`node ${nodeId} acceptor:`, error),
  });
  return await serveAcceptor(acceptor);
}

async function serveSocketIo(): Promise<number> {
  const server = createServer((_req, res) => res.writeHead(404).end());
  const io = new SocketIoServer(server);
  if (redisUrl) {
    const { publisher, subscriber } = await redisPair();
    io.adapter(createAdapter(publisher, subscriber, { key: 'socketio-bench' }));
  }
  io.on('connection', (socket) => {
    socket.join('all');
    socket.on('req', (value: unknown, ack: (value: unknown) => void) => ack(value));
    // The clients of bench/_clients.ts send a frame size first; this scenario has one size.
    socket.on('bcast', (_size: unknown, ack: (count: number) => void) => {
      io.to('all').emit('b', BROADCAST);
      ack(io.of('/').sockets.size);
    });
  });
  const port = await listen(server);
  // The adapter subscribes as it is created; a round trip on the subscriber's connection would
  // prove it, but a PUBLISH from another node before then is what the warm-up round absorbs.
  return port;
}

const port = subject === 'socketio' ? await serveSocketIo() : await serveMuxws();
readLines((line) => {
  if (line === 'quit') process.exit(0);
  if (line === 'cpu') console.log(`CPU ${cpuMicros()}`);
});
process.stdin.on('end', () => process.exit(0));
console.log(`READY ${port}`);
