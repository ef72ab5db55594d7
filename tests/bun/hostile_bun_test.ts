// The hostile rows of issue 7 on raw Bun: Bun.serve with the ./bun adapter.
import { hostileRows } from '../_hostile_rows.ts';
import { spawnAcceptor } from '../hostile/_spawn.ts';
import { bunHandlers, type BunServer } from '../../lib/adapters/bun.ts';

/** The part of Bun's API this file uses (typed here, so `deno check` needs no Bun types). */
interface BunServe {
  serve(options: {
    hostname: string;
    port: number;
    fetch: (request: Request, server: BunServer) => Response | undefined | Promise<Response>;
    websocket: unknown;
  }): {
    readonly port: number | undefined;
    stop(closeActiveConnections?: boolean): Promise<void>;
  };
}
const { Bun } = globalThis as unknown as { Bun: BunServe };

hostileRows('Bun', (acceptor) => {
  const { fetch, websocket } = bunHandlers(acceptor);
  const server = Bun.serve({
    hostname: '127.0.0.1',
    port: 0,
    fetch: (request, srv) =>
      new URL(request.url).pathname === '/ws'
        ? fetch(request, srv)
        : new Response('Not found', { status: 404 }),
    websocket,
  });
  return Promise.resolve({
    port: server.port!,
    path: '/ws',
    close: async () => {
      await server.stop(true);
    },
  });
}, { spawnAcceptor });
