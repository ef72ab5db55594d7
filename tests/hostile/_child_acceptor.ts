/**
 * The acceptor that `serve_acceptor.ts` (Deno, Bun) and `tests/node/hostile_node_test.ts` (Node)
 * run in a child process for the hostile-input tests that kill it or measure it alone. Its
 * streams echo `{ op: 'echo' }`, hold `{ op: 'hold', ms }` for `ms` milliseconds (until the
 * stream ends without `ms`), and write `{ op: 'count', n }` messages. {@linkcode ChildApp.control}
 * answers `GET /stats` with the process's own CPU time (µs), its RSS and heap in use after a
 * garbage collection (none with `?nogc`), and every peer's close code; `GET /kick?code=1012`
 * closes one random peer with that code. `MUXWS_CHILD=items` in its environment configures it as
 * `_child_items.ts` says.
 * @module
 */
import process from 'node:process';
import { Acceptor } from 'muxws/acceptor';
import type { Stream } from 'muxws';
import { itemsChildOptions } from './_child_items.ts';

/** The child's acceptor and its control endpoints. */
export interface ChildApp {
  /** The acceptor to serve on `/ws`. */
  acceptor: Acceptor;
  /** Answers `/stats` and `/kick`; undefined for any other request. */
  control(request: Request): Promise<Response> | Response | undefined;
}

/** Builds the child's acceptor with `idleTimeoutMs`. */
export function childAcceptor(idleTimeoutMs: number): ChildApp {
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
    idleTimeoutMs,
    ...itemsChildOptions(),
  });
  return { acceptor, control };
}
