/**
 * Idle memory per peer, in one process and without sockets: `<runtime> bench/idle_peers.ts
 * [--count 20000] [--tags 1] [--rounds 3]` (Node: `node --expose-gc`, Deno: `deno run -A
 * --v8-flags=--expose-gc`). It serves an acceptor with the Bun adapter's handlers, as
 * `bench/_server.ts` does, and hands them `count` stand-ins for Bun's `ServerWebSocket`: each is
 * upgraded through `fetch` (with the origin and subprotocol a dialer sends), opened, sent the
 * hello, and tagged with `tags` tags (`all`, then `t1`, `t2`, …) as the hello is answered. After
 * garbage collection it prints the JS heap and RSS per peer, the heap measured against the same
 * stand-ins with no peer, and on Bun the object types that grew most per peer
 * (`heapStats()` of `bun:jsc`); with `--sizes 1` on Bun, also the bytes per peer of each class
 * that grew (from `Bun.generateHeapSnapshot()` before and after: `Session`, `PeerLink`, `Cell
 * Butterfly` for a `Set`'s table, …). Each round starts from no peers; the figures of every round
 * are printed, as they move from round to round.
 *
 * What it leaves out: the runtime's own socket (the same for raw and muxws) and the cost of a
 * real upgrade's request; the `idle-memory` scenario of `bench/run.ts` measures the whole.
 *
 * @module
 */
import process from 'node:process';
import { Acceptor } from 'muxws/acceptor';
import { bunHandlers, type BunServerWebSocket } from 'muxws/bun';
import { collectGarbage, numberOption, runtime } from './_common.ts';

const count = numberOption('count', 20_000);
const tagCount = numberOption('tags', 1);
const rounds = numberOption('rounds', 3);
const sizes = numberOption('sizes', 0) === 1;
const TAGS = Array.from({ length: tagCount }, (_, i) => i === 0 ? 'all' : `t${i}`);

/** A stand-in for Bun's `ServerWebSocket`: what the adapter calls, doing nothing. */
class FakeSocket implements BunServerWebSocket {
  data: unknown = undefined;
  send(): number {
    return 1;
  }
  close(): void {}
  getBufferedAmount(): number {
    return 0;
  }
  subscribe(): void {}
  unsubscribe(): void {}
}

interface JscStats {
  objectTypeCounts: Record<string, number>;
}

/** Bun's JavaScriptCore heap statistics, or `undefined` elsewhere. */
async function jscStats(): Promise<(() => JscStats) | undefined> {
  if (runtime !== 'bun') return undefined;
  const jsc = await import('bun:jsc' as string) as { heapStats(): JscStats };
  return () => jsc.heapStats();
}

/** Bytes and cells by class name in a heap snapshot of Bun's (`[id, size, class, flags]` nodes). */
type ClassSizes = Map<string, { count: number; bytes: number }>;

/** The heap's cells by class, on Bun with `--sizes 1`; `undefined` otherwise. */
function classSizes(): ClassSizes | undefined {
  const bun = (globalThis as { Bun?: { generateHeapSnapshot(): unknown } }).Bun;
  if (!sizes || bun === undefined) return undefined;
  const snapshot = bun.generateHeapSnapshot() as { nodes: number[]; nodeClassNames: string[] };
  const by: ClassSizes = new Map();
  const { nodes, nodeClassNames } = snapshot;
  for (let i = 0; i < nodes.length; i += 4) {
    const name = nodeClassNames[nodes[i + 2]];
    const entry = by.get(name) ?? { count: 0, bytes: 0 };
    entry.count++;
    entry.bytes += nodes[i + 1];
    by.set(name, entry);
  }
  return by;
}

function heapUsed(): number {
  return process.memoryUsage().heapUsed;
}

const stats = await jscStats();
const request = () =>
  new Request('http://127.0.0.1/ws', {
    headers: {
      upgrade: 'websocket',
      connection: 'Upgrade',
      'sec-websocket-key': 'dGhlIHNhbXBsZSBub25jZQ==',
      'sec-websocket-version': '13',
      'sec-websocket-protocol': 'muxws.v1.json',
    },
  });

for (let round = 1; round <= rounds; round++) {
  const acceptor = new Acceptor({
    idleTimeoutMs: 0,
    onStream: (stream, peer) => {
      if (stream.id === 1) {
        for (const tag of TAGS) peer.tags.add(tag);
        return { welcome: true };
      }
      return stream.payload;
    },
  });
  const handlers = bunHandlers(acceptor);
  const publisher = {
    upgrade(_request: Request, options: { data?: unknown }): boolean {
      pending!.data = options.data;
      return true;
    },
    publish: () => 0,
  };
  let pending: FakeSocket | undefined;
  const sockets = Array.from({ length: count }, () => new FakeSocket());
  await collectGarbage();
  const before = { heap: heapUsed(), rss: process.memoryUsage().rss };
  const typesBefore = stats?.().objectTypeCounts;
  const sizesBefore = round === rounds ? classSizes() : undefined;
  for (const [i, ws] of sockets.entries()) {
    pending = ws;
    await handlers.fetch(request(), publisher);
    handlers.websocket.open(ws);
    const hello = [1, 1, 3, null, { client: 'bench', id: i }];
    handlers.websocket.message(ws, JSON.stringify(hello));
  }
  pending = undefined;
  await collectGarbage();
  const sizesAfter = sizesBefore === undefined ? undefined : classSizes();
  const after = { heap: heapUsed(), rss: process.memoryUsage().rss };
  const peers = [...acceptor.peers()].length;
  const perPeer = (key: 'heap' | 'rss') => Math.round((after[key] - before[key]) / peers);
  console.log(
    `round ${round} ${runtime}: ${peers} peers, ${TAGS.length} tag(s): heap ${
      perPeer('heap')
    } B/peer, rss ${perPeer('rss')} B/peer`,
  );
  if (stats !== undefined && typesBefore !== undefined && round === rounds) {
    const typesAfter = stats().objectTypeCounts;
    const grown = Object.entries(typesAfter)
      .map(([type, n]) => [type, (n - (typesBefore[type] ?? 0)) / peers] as const)
      .filter(([, n]) => n >= 0.5)
      .sort((a, b) => b[1] - a[1]);
    for (const [type, n] of grown) console.log(`  ${type}: ${n.toFixed(2)} per peer`);
  }
  if (sizesBefore !== undefined && sizesAfter !== undefined) {
    const grown = [...sizesAfter]
      .map(([name, { count, bytes }]) => {
        const was = sizesBefore.get(name) ?? { count: 0, bytes: 0 };
        return { name, count: (count - was.count) / peers, bytes: (bytes - was.bytes) / peers };
      })
      .filter((row) => row.bytes >= 8)
      .sort((a, b) => b.bytes - a.bytes);
    for (const row of grown) {
      console.log(
        `  ${row.name}: ${row.bytes.toFixed(0)} B per peer (${row.count.toFixed(2)} cells)`,
      );
    }
  }
  for (const ws of sockets) handlers.websocket.close(ws, 1000, '');
  await acceptor.close();
}
