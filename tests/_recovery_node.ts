/**
 * One acceptor node with a shared broadcast history, in its own process, for
 * tests/deno/recovery_cluster_deno_test.ts. Run: `deno run -A tests/_recovery_node.ts <redis url>
 * <node id> [<retention json>]` or `bun tests/_recovery_node.ts …`, where the retention is
 * `{ "maxEntries": n, "maxAgeMs": n }` (either optional). It serves WebSockets on 127.0.0.1 and an
 * ephemeral port (Deno.serve or Bun.serve) and prints `PORT <n>` once listening.
 *
 * Its acceptor has `history: redisHistory(...)` (its own client, on a clock this process can
 * move forward) and a `redisBackplane`, all clients reconnecting every 100 ms. The dialer's hello
 * `{ tags: [...] }` gives its peer those tags. Lines on stdin, each answered by one line on stdout:
 * - `broadcast <tag> <first> <count>`: broadcasts `{ from, n }` for n = first … first + count − 1
 *   (all started at once, so the acceptor orders them); answers `SENT {"delivered":…,"failed":…}`
 *   (the local deliveries summed, and how many broadcast() calls rejected) once all settled;
 * - `advance <ms>`: moves the history's clock forward; answers `ADVANCED <total ms>`;
 * - `redis`: waits (at most 10 s) until the history's client answers PING; answers `REDIS ok`
 *   or `REDIS down`;
 * - `report`: answers `REPORT {"errors":[…]}`, every error reported to the acceptor's `onError`.
 */
import process from 'node:process';
import { createClient } from 'redis';
import { Acceptor } from 'muxws/acceptor';
import { upgrade } from 'muxws/deno';
import { bunHandlers } from 'muxws/bun';
import { redisBackplane, redisHistory } from 'muxws/redis';
import { readLines } from '../bench/_common.ts';

const [url, nodeId, retentionText] = process.argv.slice(2);
const retention = JSON.parse(retentionText ?? '{}') as { maxEntries?: number; maxAgeMs?: number };

const errors: string[] = [];
const publisher = createClient({ url, socket: { reconnectStrategy: () => 100 } });
const subscriber = publisher.duplicate();
const store = publisher.duplicate();
for (const client of [publisher, subscriber, store]) client.on('error', () => {});
await Promise.all([publisher.connect(), subscriber.connect(), store.connect()]);

let clockOffsetMs = 0;
const backplane = redisBackplane({
  publisher,
  subscriber,
  channel: 'muxws-recovery',
  onError: () => {},
});
await backplane.ready();

const acceptor = new Acceptor({
  backplane,
  nodeId,
  history: redisHistory({
    client: store,
    prefix: 'recovery-test:',
    ...retention,
    now: () => Date.now() + clockOffsetMs,
  }),
  idleTimeoutMs: 0,
  onHello: (hello, peer) => {
    const tags = (hello.payload as { tags?: unknown } | null)?.tags;
    if (Array.isArray(tags)) { for (const tag of tags) peer.tags.add(String(tag)); }
    return { node: nodeId };
  },
  onError: (error) => errors.push(String(error)),
});

async function broadcast(tag: string, first: number, count: number): Promise<string> {
  const calls: Promise<number>[] = [];
  for (let n = first; n < first + count; n++) {
    try {
      calls.push(acceptor.broadcast(tag, { from: nodeId, n }));
    } catch (error) {
      calls.push(Promise.reject(error));
    }
  }
  const settled = await Promise.allSettled(calls);
  let delivered = 0;
  let failed = 0;
  for (const outcome of settled) {
    if (outcome.status === 'fulfilled') delivered += outcome.value;
    else failed++;
  }
  return `SENT ${JSON.stringify({ delivered, failed })}`;
}

async function redisUp(): Promise<string> {
  const deadline = Date.now() + 10_000;
  while (Date.now() < deadline) {
    try {
      if (store.isReady && await store.ping() === 'PONG') return 'REDIS ok';
    } catch {
      // still reconnecting
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return 'REDIS down';
}

async function answer(line: string): Promise<string> {
  const [command, ...rest] = line.split(' ');
  switch (command) {
    case 'broadcast':
      return await broadcast(rest[0], Number(rest[1]), Number(rest[2]));
    case 'advance':
      clockOffsetMs += Number(rest[0]);
      return `ADVANCED ${clockOffsetMs}`;
    case 'redis':
      return await redisUp();
    case 'report':
      return `REPORT ${JSON.stringify({ errors })}`;
  }
  return `UNKNOWN ${line}`;
}

// One command at a time, answered in order.
let queue: Promise<void> = Promise.resolve();
readLines((line) => queue = queue.then(async () => console.log(await answer(line))));

// deno-lint-ignore no-explicit-any
const runtime = globalThis as any;
if (runtime.Bun) {
  const server = runtime.Bun.serve({ hostname: '127.0.0.1', port: 0, ...bunHandlers(acceptor) });
  console.log(`PORT ${server.port}`);
} else {
  const server = runtime.Deno.serve(
    { hostname: '127.0.0.1', port: 0, onListen() {} },
    (request: Request) => upgrade(request, acceptor),
  );
  console.log(`PORT ${server.addr.port}`);
}
