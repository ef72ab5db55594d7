/**
 * One node of the `presence` scenario (`bench/presence.ts`): `<runtime>
 * bench/_presence_server.ts --redis redis://127.0.0.1:<port> --node a`, on 127.0.0.1 and a free
 * port. Its acceptor has a `redisBackplane` and `presence: { store: redisPresence(…) }` with the
 * defaults; every peer holds `room:1`. A peer dialled with `?user=<key>` is tracked in `room:1`
 * under that key as it opens (meta `{ n }`); one dialled with `?mover=1` is not, and is the peer
 * the rounds track and untrack. It prints `READY <port>` once it serves and its store is loaded,
 * and answers lines on stdin:
 * - `count`: prints `COUNT <n>`, the metas `list('room:1')` holds on this node;
 * - `join`: tracks the mover peer under the key `mover-<node>` with the meta `{ at }` and prints
 *   `TRACKED <ms>`, the epoch time of the call;
 * - `leave`: untracks it and prints `UNTRACKED <ms>`;
 * - `stats`: prints `STATS {"publish":…,"version":…}`: Redis's count of PUBLISH calls
 *   (`INFO commandstats`) and the presence store's batch version;
 * - `mem`: prints `MEM {"rss":…,"heap":…}` after a garbage collection;
 * - `quit` (or the end of stdin): exits.
 *
 * @module
 */
import process from 'node:process';
import { createClient } from 'redis';
import { Acceptor, type Peer } from 'muxws/acceptor';
import { redisBackplane, redisPresence } from 'muxws/redis';
import { serveAcceptors } from './_serve_acceptor.ts';
import { collectGarbage, epochMs, memory, option, readLines } from './_common.ts';

const redisUrl = option('redis', 'redis://127.0.0.1:6379');
const nodeId = option('node', 'a');
const ROOM = 'room:1';
/** The presence store's keys share this hash tag (`redisPresence()`'s default prefix). */
const PREFIX = '{muxws:presence}:';

function redisClient() {
  const client = createClient({ url: redisUrl, socket: { reconnectStrategy: () => 100 } });
  client.on('error', (error) => console.error(`node ${nodeId} redis:`, error));
  return client;
}

const publisher = redisClient();
const subscriber = publisher.duplicate();
const store = publisher.duplicate();
subscriber.on('error', (error) => console.error(`node ${nodeId} subscriber:`, error));
store.on('error', (error) => console.error(`node ${nodeId} store:`, error));
await Promise.all([publisher.connect(), subscriber.connect(), store.connect()]);
const backplane = redisBackplane({
  publisher,
  subscriber,
  channel: 'muxws-bench-presence',
  onError: (error) => console.error(`node ${nodeId} backplane:`, error),
});
await backplane.ready();

type Data = { user?: string; n?: number };
let mover: Peer<Record<string, never>, Data> | undefined;
const acceptor: Acceptor<Record<string, never>, Data> = new Acceptor<
  Record<string, never>,
  Data
>({
  backplane,
  nodeId,
  idleTimeoutMs: 0,
  presence: {
    store: redisPresence({ client: store, subscriber }),
  },
  authorize: (request) => {
    const query = new URL(request.url).searchParams;
    const user = query.get('user') ?? undefined;
    return { data: { user, n: Number(query.get('n') ?? 0) }, tags: [ROOM] };
  },
  onPeer: (peer) => {
    if (peer.data.user) {
      acceptor.presence.track(peer, ROOM, peer.data.user, { n: peer.data.n });
    } else mover = peer;
  },
  onError: (error) => console.error(`node ${nodeId} acceptor:`, error),
});
await acceptor.presence.ready();

function count(): number {
  let total = 0;
  for (const metas of Object.values(acceptor.presence.list(ROOM))) total += metas.length;
  return total;
}

async function stats(): Promise<string> {
  const info = await store.info('commandstats');
  const publish = Number(/cmdstat_publish:calls=(\d+)/.exec(info)?.[1] ?? 0);
  const version = Number(await store.get(`${PREFIX}v`) ?? 0);
  return `STATS ${JSON.stringify({ publish, version })}`;
}

const port = await serveAcceptors(() => acceptor as unknown as Acceptor);
readLines((line) => {
  const [command] = line.split(' ');
  if (command === 'quit') process.exit(0);
  if (command === 'count') console.log(`COUNT ${count()}`);
  if (command === 'join' || command === 'leave') {
    if (!mover) return console.log(`NOMOVER`);
    const at = epochMs();
    if (command === 'join') acceptor.presence.track(mover, ROOM, `mover-${nodeId}`, { at });
    else acceptor.presence.untrack(mover, ROOM);
    console.log(`${command === 'join' ? 'TRACKED' : 'UNTRACKED'} ${at}`);
  }
  if (command === 'stats') void stats().then((text) => console.log(text));
  if (command === 'mem') {
    void collectGarbage().then(() => console.log(`MEM ${JSON.stringify(memory())}`));
  }
});
process.stdin.on('end', () => process.exit(0));
console.log(`READY ${port}`);
