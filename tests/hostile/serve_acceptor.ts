/**
 * An acceptor in its own process, for the rows that kill it (issue 7 row 25, the chaos run):
 * serves `/ws` on 127.0.0.1 and an ephemeral port with Deno.serve or Bun.serve, whichever runtime
 * runs it, and prints `PORT <n>` on stdout once listening. Its streams echo `{ op: 'echo' }`,
 * hold `{ op: 'hold', ms }` for `ms` milliseconds (until the stream ends without `ms`), and write
 * `{ op: 'count', n }` messages. `GET /stats` answers the process's own CPU time (µs), its RSS
 * and heap in use after a garbage collection, and every peer's close code, so a test measures
 * the acceptor alone; `GET /kick?code=1012` closes one random peer with that code.
 *
 * `MUXWS_IDLE_MS` sets `idleTimeoutMs` (default 30000).
 *
 * Run: `deno run -A tests/hostile/serve_acceptor.ts` or `bun tests/hostile/serve_acceptor.ts`.
 */
import process from 'node:process';
import { Acceptor } from '../../lib/acceptor.ts';
import type { Stream } from '../../lib/stream.ts';
import { upgrade } from '../../lib/adapters/deno.ts';
import { bunHandlers } from '../../lib/adapters/bun.ts';

async function onStream(stream: Stream): Promise<unknown> {
  const p = (stream.payload ?? {}) as Record<string, unknown>;
  switch (p.op) {
    case 'echo':
      return { echo: p.value };
    case 'hold':
      if (p.ms === undefined) await stream.closed.catch(() => {});
      else await new Promise((resolve) => setTimeout(resolve, Number(p.ms)));
      return 'held';
    case 'count':
      for (let i = 1; i <= Number(p.n); i++) await stream.write(i);
      return 'done';
  }
  return p;
}

/** This process's CPU time and memory, after a garbage collection. */
async function stats(collect: boolean): Promise<Response> {
  // deno-lint-ignore no-explicit-any
  const bun = (globalThis as any).Bun;
  if (!collect) {
    // CPU time only: a collection would cost CPU itself.
  } else if (bun) bun.gc(true);
  else {
    const v8 = await import('node:v8');
    const vm = await import('node:vm');
    v8.setFlagsFromString('--expose-gc');
    (vm.runInNewContext('gc') as () => void)();
  }
  const cpu = process.cpuUsage();
  const memory = process.memoryUsage();
  return Response.json({
    cpuUs: cpu.user + cpu.system,
    rss: memory.rss,
    heapUsed: memory.heapUsed,
    peers: acceptor.stats.peers,
    closes,
  });
}

/** Closes one live peer, picked at random, with `code` (a service restart, 1012, by default). */
function kick(code: number): Response {
  const peers = [...acceptor.peers()];
  const peer = peers[Math.floor(Math.random() * peers.length)];
  peer?.close(code, 'kicked');
  return Response.json({ kicked: peer ? 1 : 0 });
}

/** Answers `/stats` and `/kick`; undefined for anything else. */
function control(request: Request): Promise<Response> | Response | undefined {
  const url = new URL(request.url);
  if (url.pathname === '/stats') return stats(!url.searchParams.has('nogc'));
  if (url.pathname === '/kick') return kick(Number(url.searchParams.get('code') ?? 1012));
  return undefined;
}

/** The close code of every peer so far. */
const closes: number[] = [];
const acceptor = new Acceptor({
  onStream,
  onError: () => {},
  onPeerClose: (_, { code }) => void closes.push(code),
  idleTimeoutMs: Number(process.env.MUXWS_IDLE_MS ?? 30_000),
});

// deno-lint-ignore no-explicit-any
const runtime = globalThis as any;
if (runtime.Bun) {
  const { fetch, websocket } = bunHandlers(acceptor);
  const server = runtime.Bun.serve({
    hostname: '127.0.0.1',
    port: 0,
    // deno-lint-ignore no-explicit-any
    fetch: (request: Request, srv: any) => control(request) ?? fetch(request, srv),
    websocket,
  });
  console.log(`PORT ${server.port}`);
} else {
  const server = runtime.Deno.serve(
    { hostname: '127.0.0.1', port: 0, onListen() {} },
    (request: Request) => control(request) ?? upgrade(request, acceptor),
  );
  console.log(`PORT ${server.addr.port}`);
}
