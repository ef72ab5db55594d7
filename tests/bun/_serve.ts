// Bun.serve on 127.0.0.1:0 for the Bun-only suites, typed here so `deno check tests/` needs no Bun
// types.
import type { Acceptor } from 'muxws/acceptor';
import { bunHandlers, type BunServer } from 'muxws/bun';

/** The part of Bun's API these tests use. */
interface BunServe {
  serve(options: {
    hostname: string;
    port: number;
    fetch: (
      request: Request,
      server: BunServer,
    ) => Response | undefined | Promise<Response | undefined>;
    websocket: unknown;
  }): {
    readonly port: number | undefined;
    stop(closeActiveConnections?: boolean): Promise<void>;
  };
}

/** The server a suite's factory returns: where to dial, and how to stop. */
export interface ServedOnBun {
  port: number;
  path: string;
  close(): Promise<void>;
}

/** Serves `fetch` and `websocket` on an ephemeral loopback port; `/ws` is where dialers go. */
export function serveOnBun(
  fetch: (
    request: Request,
    server: BunServer,
  ) => Response | undefined | Promise<Response | undefined>,
  websocket: unknown,
): ServedOnBun {
  const { Bun } = globalThis as unknown as { Bun: BunServe };
  const server = Bun.serve({ hostname: '127.0.0.1', port: 0, fetch, websocket });
  return {
    port: server.port!,
    path: '/ws',
    close: async () => {
      await server.stop(true);
    },
  };
}

/** The ./bun adapter serving `acceptor` at `/ws`, and 404 elsewhere. */
export function serveAcceptorOnBun(acceptor: Acceptor): Promise<ServedOnBun> {
  const { fetch, websocket } = bunHandlers(acceptor);
  return Promise.resolve(serveOnBun(
    (request, srv) =>
      new URL(request.url).pathname === '/ws'
        ? fetch(request, srv)
        : new Response('Not found', { status: 404 }),
    websocket,
  ));
}
