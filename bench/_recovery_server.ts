/**
 * One node of the `recovery` scenario (`bench/recovery.ts`): `<runtime>
 * bench/_recovery_server.ts --subject muxws|socketio --redis redis://127.0.0.1:<port> --node a`,
 * on 127.0.0.1 and a free port. It prints `READY <port>` once it serves and its Redis clients
 * are connected, and answers lines on stdin:
 * - `burst <first> <count> <spanMs>`: broadcasts `{ n, body }` to the room `room:1` for n =
 *   first … first + count − 1, spread evenly over `spanMs`, then prints `SENT <count>`;
 * - `mem`: prints `MEM {"rss":…,"heap":…}` after a garbage collection;
 * - `quit` (or the end of stdin): exits.
 *
 * The subjects, each on the same Redis:
 * - muxws: an acceptor with `history: redisHistory({ client })` (the log every node shares) and
 *   a `redisBackplane`; the dialer's hello tags its peer `room:1`; a broadcast is
 *   `acceptor.broadcast('room:1', …)`. A dialer that lost its node redials another, names the
 *   last sequence it delivered in its hello, and gets what it missed from the log.
 * - socketio: `socket.io` on `node:http` with `@socket.io/redis-streams-adapter` and
 *   `connectionStateRecovery`; a new socket joins `room:1` (a restored one is back in it); a
 *   broadcast is `io.to('room:1').emit('b', …)`. Socket.IO persists a session when the node
 *   that holds it sees the socket disconnect, so a node that dies persists nothing.
 *
 * @module
 */
import { createServer } from 'node:http';
import process from 'node:process';
import { Server as SocketIoServer } from 'socket.io';
import { createAdapter } from '@socket.io/redis-streams-adapter';
import { createClient } from 'redis';
import { Acceptor } from 'muxws/acceptor';
import { redisBackplane, redisHistory } from 'muxws/redis';
import { listen, serveAcceptor } from './_serve_acceptor.ts';
import { collectGarbage, memory, option, PAYLOADS, readLines, sleep } from './_common.ts';

const subject = option('subject', 'muxws');
const redisUrl = option('redis', 'redis://127.0.0.1:6379');
const nodeId = option('node', 'a');
const ROOM = 'room:1';

function redisClient() {
  const client = createClient({ url: redisUrl, socket: { reconnectStrategy: () => 100 } });
  client.on('error', (error) => console.error(`node ${nodeId} redis:`, error));
  return client;
}

let broadcast: (n: number) => void = () => {};

async function serveMuxws(): Promise<number> {
  const publisher = redisClient();
  const subscriber = publisher.duplicate();
  subscriber.on('error', (error) => console.error(`node ${nodeId} subscriber:`, error));
  const store = publisher.duplicate();
  store.on('error', (error) => console.error(`node ${nodeId} history:`, error));
  await Promise.all([publisher.connect(), subscriber.connect(), store.connect()]);
  const backplane = redisBackplane({
    publisher,
    subscriber,
    channel: 'muxws-bench-recovery',
    onError: (error) => console.error(`node ${nodeId} backplane:`, error),
  });
  await backplane.ready();
  const acceptor: Acceptor = new Acceptor({
    backplane,
    nodeId,
    history: redisHistory({ client: store, prefix: 'muxws-bench:' }),
    idleTimeoutMs: 0,
    onHello: (_hello, peer) => {
      peer.tags.add(ROOM);
      return null;
    },
    onError: (error) => console.error(`node ${nodeId} acceptor:`, error),
  });
  broadcast = (n) => {
    acceptor.broadcast(ROOM, { n, body: PAYLOADS[n % PAYLOADS.length] }).catch((error) =>
      console.error(`node ${nodeId} broadcast ${n}:`, error)
    );
  };
  return await serveAcceptor(acceptor);
}

async function serveSocketIo(): Promise<number> {
  const client = redisClient();
  await client.connect();
  const server = createServer((_req, res) => res.writeHead(404).end());
  const io = new SocketIoServer(server, {
    adapter: createAdapter(client, { streamName: 'socketio-bench-recovery' }),
    connectionStateRecovery: { maxDisconnectionDuration: 120_000, skipMiddlewares: true },
  });
  io.on('connection', (socket) => {
    if (!socket.recovered) socket.join(ROOM);
  });
  broadcast = (n) => void io.to(ROOM).emit('b', { n, body: PAYLOADS[n % PAYLOADS.length] });
  return await listen(server);
}

async function burst(first: number, count: number, spanMs: number): Promise<void> {
  const started = Date.now();
  for (let k = 0; k < count; k++) {
    const due = started + (count > 1 ? (spanMs * k) / (count - 1) : 0);
    const wait = due - Date.now();
    if (wait > 0) await sleep(wait);
    broadcast(first + k);
  }
  console.log(`SENT ${count}`);
}

const port = subject === 'socketio' ? await serveSocketIo() : await serveMuxws();
readLines((line) => {
  const [command, ...rest] = line.split(' ');
  if (command === 'quit') process.exit(0);
  if (command === 'burst') {
    const [first, count, spanMs] = rest.map(Number);
    void burst(first, count, spanMs);
  }
  if (command === 'mem') {
    void collectGarbage().then(() => console.log(`MEM ${JSON.stringify(memory())}`));
  }
});
process.stdin.on('end', () => process.exit(0));
console.log(`READY ${port}`);
