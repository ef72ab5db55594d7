/**
 * What the benchmark servers of several nodes share: an acceptor served on a loopback port of
 * its own on the runtime this process runs on (Deno.serve, Bun.serve, or `node:http` with `ws`),
 * and a `node:http` server listening on a free loopback port.
 *
 * @module
 */
import { createServer } from 'node:http';
import type { Acceptor } from 'muxws/acceptor';
import { upgrade as denoUpgrade } from 'muxws/deno';
import { bunHandlers } from 'muxws/bun';
import { acceptUpgrades } from './_ws_upgrade.ts';
import { runtime } from './_common.ts';

/** Listens on a free loopback port; resolves with it. */
export function listen(server: ReturnType<typeof createServer>): Promise<number> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      resolve(typeof address === 'object' && address ? address.port : 0);
    });
  });
}

/** Serves `acceptor` on a free loopback port of this runtime's server; resolves with the port. */
export async function serveAcceptor(acceptor: Acceptor): Promise<number> {
  if (runtime === 'deno') {
    const deno = (globalThis as unknown as { Deno: typeof Deno }).Deno;
    return await new Promise((resolve) => {
      deno.serve(
        { hostname: '127.0.0.1', port: 0, onListen: ({ port }) => resolve(port) },
        (request) => denoUpgrade(request, acceptor),
      );
    });
  }
  if (runtime === 'bun') {
    const bun = (globalThis as unknown as {
      Bun: {
        serve(options: { hostname: string; port: number } & ReturnType<typeof bunHandlers>): {
          port: number;
        };
      };
    }).Bun;
    return bun.serve({ hostname: '127.0.0.1', port: 0, ...bunHandlers(acceptor) }).port;
  }
  const server = createServer((_req, res) => res.writeHead(404).end());
  acceptUpgrades(server, () => acceptor);
  return await listen(server);
}
