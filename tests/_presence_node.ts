/**
 * One presence node in its own process, for tests/node/presence_runtimes_test.ts: run as
 * `deno run -A tests/_presence_node.ts <redis url> <node id>` or `bun tests/_presence_node.ts …`.
 *
 * Its acceptor has a `redisBackplane` and `presence: { store: redisPresence(…), graceMs: 1500,
 * nodeTimeoutMs: 2000 }`, its Redis clients reconnecting every 100 ms. Every peer holds `room:1`
 * (given by `authorize`); a peer dialled with `?user=<key>&tab=<n>` is tracked in `room:1` under
 * `key` with the meta `{ tab: n }` as it opens, one dialled without `user` only follows. It serves
 * WebSockets on 127.0.0.1 and an ephemeral port (Deno.serve or Bun.serve) and prints
 * `READY <port>` once its presence store is loaded. Lines on stdin, each answered by one line on
 * stdout, in order:
 * - `LIST <tag>`: answers `LIST <json>`, `acceptor.presence.list(tag)` as it stands;
 * - `READY`: waits for `acceptor.presence.flush()` (at most 5 s), answers `READY ok` or
 *   `READY timeout`;
 * - `ERRORS`: answers `ERRORS <json>`, every error reported to the acceptor's `onError`.
 */
import process from 'node:process';
import { createClient } from 'redis';
import { Acceptor } from 'muxws/acceptor';
import { upgrade } from 'muxws/deno';
import { bunHandlers } from 'muxws/bun';
import { redisBackplane, redisPresence } from 'muxws/redis';
import { readLines } from '../bench/_common.ts';

const [url, nodeId] = process.argv.slice(2);

/** The metas of the test: which tab of its user a peer is. */
type Api = { ':presence': { tab: number } };
type Data = { user?: string; tab: number };

const errors: string[] = [];
const publisher = createClient({ url, socket: { reconnectStrategy: () => 100 } });
const subscriber = publisher.duplicate();
const store = publisher.duplicate();
for (const client of [publisher, subscriber, store]) client.on('error', () => {});
await Promise.all([publisher.connect(), subscriber.connect(), store.connect()]);

const backplane = redisBackplane({
  publisher,
  subscriber,
  channel: 'muxws-presence-runtimes',
  onError: () => {},
});
await backplane.ready();

const acceptor: Acceptor<Api, Data> = new Acceptor<Api, Data>({
  backplane,
  nodeId,
  idleTimeoutMs: 0,
  presence: {
    store: redisPresence({ client: store, subscriber }),
    graceMs: 1500,
    nodeTimeoutMs: 2000,
  },
  authorize: (request) => {
    const query = new URL(request.url).searchParams;
    const user = query.get('user') ?? undefined;
    return { data: { user, tab: Number(query.get('tab') ?? 1) }, tags: ['room:1'] };
  },
  onPeer: (peer) => {
    if (peer.data.user) {
      acceptor.presence.track(peer, 'room:1', peer.data.user, { tab: peer.data.tab });
    }
  },
  onError: (error) => errors.push(String(error)),
});
await acceptor.presence.ready();

async function flushed(): Promise<string> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<string>((resolve) => (timer = setTimeout(resolve, 5000, 'timeout')));
  const done = acceptor.presence.flush().then(() => 'ok', (error) => `failed ${error}`);
  const outcome = await Promise.race([done, late]);
  clearTimeout(timer);
  return `READY ${outcome}`;
}

async function answer(line: string): Promise<string> {
  const [command, ...rest] = line.split(' ');
  switch (command) {
    case 'LIST':
      return `LIST ${JSON.stringify(acceptor.presence.list(rest[0]))}`;
    case 'READY':
      return await flushed();
    case 'ERRORS':
      return `ERRORS ${JSON.stringify(errors)}`;
  }
  return `UNKNOWN ${line}`;
}

// One command at a time, answered in order.
let queue: Promise<void> = Promise.resolve();
readLines((line) => queue = queue.then(async () => console.log(await answer(line))));
process.stdin.on('end', () => process.exit(0));

// deno-lint-ignore no-explicit-any
const runtime = globalThis as any;
if (runtime.Bun) {
  const server = runtime.Bun.serve({ hostname: '127.0.0.1', port: 0, ...bunHandlers(acceptor) });
  console.log(`READY ${server.port}`);
} else {
  const server = runtime.Deno.serve(
    { hostname: '127.0.0.1', port: 0, onListen() {} },
    (request: Request) => upgrade(request, acceptor),
  );
  console.log(`READY ${server.addr.port}`);
}
