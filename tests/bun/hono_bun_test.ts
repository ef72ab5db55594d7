// The behavioural suite on Hono on Bun: hono/bun's upgradeWebSocket and websocket through the
// ./hono adapter (Hono's Bun helper makes a new context per event; the adapter keys peers by the
// raw socket).
import { Hono } from 'hono';
import { upgradeWebSocket, websocket } from 'hono/bun';
import { acceptorSuite } from '../_acceptor_suite.ts';
import { muxws } from '../../lib/adapters/hono.ts';
import type { BunServer } from '../../lib/adapters/bun.ts';

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

acceptorSuite('Hono on Bun', (acceptor) => {
  const app = new Hono();
  app.get('/ws', muxws(acceptor, { upgradeWebSocket }));
  const server = Bun.serve({ hostname: '127.0.0.1', port: 0, fetch: app.fetch, websocket });
  return Promise.resolve({
    port: server.port!,
    path: '/ws',
    close: async () => {
      await server.stop(true);
    },
  });
});
