/**
 * One acceptor node of a Redis-backed cluster, in its own process, for
 * tests/deno/redis_cluster_deno_test.ts. Run: `deno run -A tests/_redis_cluster_node.ts <redis url>
 * <node id>` or `bun tests/_redis_cluster_node.ts <redis url> <node id>`. It serves WebSockets on
 * 127.0.0.1 and an ephemeral port (Deno.serve or Bun.serve) and prints `PORT <n>` once listening.
 *
 * Its acceptor has a `redisBackplane` (clients reconnecting every 100 ms) and answers streams:
 * - `{ op: 'join', tags }`: the calling peer takes the tags;
 * - `{ op: 'broadcast', tag, payload, except }`: one broadcast; answers the local count;
 * - `{ op: 'burst', tag, count }`: `count` broadcasts of `{ from, n }` (n = 1…count) in one
 *   synchronous loop; answers the local counts' sum;
 * - `{ op: 'tick', tag, everyMs }` starts broadcasting `{ from, n }` every `everyMs`;
 *   `{ op: 'stop' }` stops it and answers how many it broadcast and how many broadcast() calls
 *   rejected or threw;
 * - `{ op: 'report' }`: what the node saw: errors reported by the acceptor (publish failures)
 *   and by the backplane (lost connections, gaps with and without counts).
 */
import process from 'node:process';
import { createClient } from 'redis';
import { Acceptor, type Peer } from 'muxws/acceptor';
import { upgrade } from 'muxws/deno';
import { bunHandlers } from 'muxws/bun';
import { redisBackplane } from 'muxws/redis';
import { BackplaneError, BackplaneGapError } from 'muxws/backplane';
import type { Stream } from 'muxws';

const [url, nodeId] = process.argv.slice(2);

const publisher = createClient({ url, socket: { reconnectStrategy: () => 100 } });
const subscriber = publisher.duplicate();
publisher.on('error', () => {});
subscriber.on('error', () => {});
await Promise.all([publisher.connect(), subscriber.connect()]);

const seen = {
  publishFailures: 0,
  otherAcceptorErrors: [] as string[],
  lostConnections: 0,
  outageGaps: [] as { startedAt: number; endedAt: number }[],
  missed: 0,
  otherBackplaneErrors: [] as string[],
};

const backplane = redisBackplane({
  publisher,
  subscriber,
  channel: 'muxws-cluster',
  onError: (error) => {
    if (error instanceof BackplaneGapError) {
      if (error.missed === undefined) {
        seen.outageGaps.push({ startedAt: error.startedAt, endedAt: error.endedAt });
      } else seen.missed += error.missed;
    } else if (/lost its connection/.test(error.message)) seen.lostConnections++;
    else seen.otherBackplaneErrors.push(error.message);
  },
});
await backplane.ready();

let ticker: ReturnType<typeof setInterval> | undefined;
let ticks = 0;
let tickFailures = 0;

async function onStream(stream: Stream, peer: Peer): Promise<unknown> {
  const p = stream.payload as Record<string, unknown>;
  switch (p.op) {
    case 'join':
      for (const tag of p.tags as string[]) peer.tags.add(tag);
      return 'ok';
    case 'broadcast':
      return await acceptor.broadcast(p.tag as string, p.payload, {
        except: (p.except as string[] | undefined) ?? [],
      });
    case 'burst': {
      const counts: Promise<number>[] = [];
      for (let n = 1; n <= Number(p.count); n++) {
        counts.push(acceptor.broadcast(p.tag as string, { from: nodeId, n }));
      }
      return (await Promise.all(counts)).reduce((a, b) => a + b, 0);
    }
    case 'tick':
      ticker = setInterval(() => {
        const n = ++ticks;
        try {
          acceptor.broadcast(p.tag as string, { from: nodeId, n }).catch(() => tickFailures++);
        } catch {
          tickFailures++;
        }
      }, Number(p.everyMs));
      return 'ticking';
    case 'stop':
      clearInterval(ticker);
      return { ticks, tickFailures };
    case 'report':
      return seen;
  }
  return null;
}

const acceptor = new Acceptor({
  backplane,
  nodeId,
  onStream,
  idleTimeoutMs: 0,
  onError: (error) => {
    if (error instanceof BackplaneError) seen.publishFailures++;
    else seen.otherAcceptorErrors.push(String(error));
  },
});

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
