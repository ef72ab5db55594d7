// One node of a chat cluster: an acceptor whose broadcasts cross to the other nodes through Redis
// pub/sub (redisBackplane). A peer joins a room with its hello (onHello); what it says
// (`chat.say`) is broadcast to the room, which reaches the room's members on every node.
//
// Run (see examples/cluster/README.md): a redis-server on 127.0.0.1:6379, then
//   deno run -A examples/cluster/node.ts 8001 a
//   bun examples/cluster/node.ts 8002 b
// Arguments: the port (0 picks a free one) and the node id. REDIS_URL overrides
// redis://127.0.0.1:6379. Prints `node <id> listening on ws://127.0.0.1:<port>` once it serves;
// stops cleanly on SIGINT or SIGTERM, and exits 1 if no Redis answers within 5 s.
import process from 'node:process';
import { createClient } from 'redis';
import { Acceptor } from '@muxws/core/acceptor';
import { upgrade } from '@muxws/core/deno';
import { bunHandlers } from '@muxws/core/bun';
import { redisBackplane } from '@muxws/core/redis';
import type { Api } from './api.ts';

const [portArg = '8001', nodeId = 'a'] = process.argv.slice(2);
const url = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';

// Two clients: a subscribed Redis connection cannot publish. Reconnect every 100 ms, so delivery
// across nodes resumes soon after a Redis restart (docs/backplane.md).
const publisher = createClient({ url, socket: { reconnectStrategy: () => 100 } });
const subscriber = publisher.duplicate();
publisher.on('error', () => {}); // node-redis wants a listener; the backplane reports errors
subscriber.on('error', () => {});
const noRedis = setTimeout(() => {
  console.error(`node ${nodeId}: no Redis answered at ${url} within 5 s; start redis-server first`);
  process.exit(1);
}, 5000);
await Promise.all([publisher.connect(), subscriber.connect()]);
clearTimeout(noRedis);
const backplane = redisBackplane({
  publisher,
  subscriber,
  channel: 'chat-cluster',
  onError: (error) => console.error(`node ${nodeId}: ${error.message}`),
});
await backplane.ready(); // from here on, other nodes' broadcasts reach this one

/** What a node keeps for each peer: who it is, and the room its hello joined. */
interface Member {
  user: string;
  room: string;
}

const acceptor: Acceptor<Api, Member> = new Acceptor<Api, Member>({
  backplane,
  nodeId,
  onHello({ payload: { room, user } }, peer) {
    peer.data = { user, room };
    peer.tags.add(`room:${room}`);
    return `${user} joined ${room} on node ${nodeId}`;
  },
  routes: {
    // Delivered to this node's members at once, then published once to the other nodes.
    'chat.say': ({ text }, { peer }) =>
      acceptor.broadcast(`room:${peer.data.room}`, `${peer.data.user}@${nodeId}: ${text}`),
  },
  onError: (error) => console.error(`node ${nodeId}: ${error}`),
});

/** Bun's global, typed here so that `deno check` can check this file too. */
interface BunGlobal {
  serve(options: { hostname: string; port: number } & ReturnType<typeof bunHandlers>): {
    port: number;
    stop(closeActiveConnections?: boolean): Promise<void>;
  };
}
declare const Bun: BunGlobal | undefined;
const bun = typeof Bun === 'undefined' ? undefined : Bun;
let port: number;
let stopServer: () => Promise<void>;
if (bun) {
  const server = bun.serve({
    hostname: '127.0.0.1',
    port: Number(portArg),
    ...bunHandlers(acceptor),
  });
  port = server.port;
  stopServer = () => server.stop(true);
} else {
  const server = Deno.serve(
    { hostname: '127.0.0.1', port: Number(portArg), onListen() {} },
    (request) => upgrade(request, acceptor),
  );
  port = server.addr.port;
  stopServer = () => server.shutdown();
}
console.log(`node ${nodeId} listening on ws://127.0.0.1:${port}`);

let stopping = false;
async function stop(): Promise<void> {
  if (stopping) return;
  stopping = true;
  await acceptor.close(); // GOAWAY to its peers, drains, then leaves the backplane
  await backplane.close();
  await Promise.all([publisher.close(), subscriber.close()]);
  await stopServer();
  process.exit(0);
}
process.on('SIGINT', () => void stop());
process.on('SIGTERM', () => void stop());
