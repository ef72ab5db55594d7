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

/** Where {@linkcode serveAcceptors} listens and what it tells of each request. */
export interface ServeOptions {
  /** The loopback port; 0 (the default) for a free one. */
  port?: number;
  /** Called with the URL of each request (upgrades included) before it is served. */
  onRequest?: (url: string) => void;
}

/** Listens on loopback `port` (a free one by default); resolves with it. */
export function listen(server: ReturnType<typeof createServer>, port = 0): Promise<number> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', () => {
      const address = server.address();
      resolve(typeof address === 'object' && address ? address.port : 0);
    });
  });
}

/** Serves `acceptor` on a free loopback port of this runtime's server; resolves with the port. */
export function serveAcceptor(acceptor: Acceptor): Promise<number> {
  return serveAcceptors(() => acceptor);
}

/**
 * Serves the acceptor `current()` returns, read at each upgrade, on a free loopback port of this
 * runtime's server (or on `options.port`); resolves with the port. A bench puts a fresh acceptor in place after a GOAWAY
 * (the old one's `close()`): the fresh one takes the redials on the same port while the closing
 * one keeps serving its own sockets until they close.
 */
export async function serveAcceptors(
  current: () => Acceptor,
  options: ServeOptions = {},
): Promise<number> {
  const { port = 0, onRequest } = options;
  if (runtime === 'deno') {
    const deno = (globalThis as unknown as { Deno: typeof Deno }).Deno;
    return await new Promise((resolve) => {
      deno.serve(
        { hostname: '127.0.0.1', port, onListen: (address) => resolve(address.port) },
        (request) => {
          onRequest?.(request.url);
          return denoUpgrade(request, current());
        },
      );
    });
  }
  if (runtime === 'bun') return serveBun(current, port, onRequest);
  const server = createServer((_req, res) => res.writeHead(404).end());
  acceptUpgrades(server, current);
  if (onRequest) {
    server.prependListener('upgrade', (req) => onRequest(req.url ?? ''));
    server.prependListener('request', (req) => onRequest(req.url ?? ''));
  }
  return await listen(server, port);
}

type Handlers = ReturnType<typeof bunHandlers>;
type BunWs = Parameters<Handlers['websocket']['open']>[0] & { data: { handlers: Handlers } };
interface BunServer {
  upgrade(request: Request, options: { headers?: Record<string, string>; data?: unknown }): boolean;
  publish(topic: string, data: string | Uint8Array): number;
}

/**
 * Bun: one set of handlers per acceptor. Each socket carries the set that upgraded it in its
 * `data`, and its events go there; each set gets one server object, as Bun passes one, through
 * which the adapter publishes to its peers' topics.
 */
function serveBun(
  current: () => Acceptor,
  port: number,
  onRequest: ((url: string) => void) | undefined,
): number {
  const bun = (globalThis as unknown as {
    Bun: {
      serve(options: {
        hostname: string;
        port: number;
        fetch(request: Request, server: BunServer): Promise<Response | undefined>;
        websocket: Record<string, unknown>;
      }): { port: number };
    };
  }).Bun;
  let handlersOf: Acceptor | undefined;
  let handlers: Handlers | undefined;
  let proxy: BunServer | undefined;
  return bun.serve({
    hostname: '127.0.0.1',
    port,
    fetch(request, server) {
      onRequest?.(request.url);
      const acceptor = current();
      if (handlers === undefined || handlersOf !== acceptor) {
        const mine = bunHandlers(acceptor);
        handlers = mine;
        handlersOf = acceptor;
        proxy = {
          upgrade: (req, options) =>
            server.upgrade(req, {
              ...options,
              data: { ...options.data as object, handlers: mine },
            }),
          publish: (topic, data) => server.publish(topic, data),
        };
      }
      return handlers.fetch(request, proxy!);
    },
    websocket: {
      open: (ws: BunWs) => ws.data.handlers.websocket.open(ws),
      message: (ws: BunWs, message: string | Uint8Array) =>
        ws.data.handlers.websocket.message(ws, message),
      close: (ws: BunWs, code: number, reason: string) =>
        ws.data.handlers.websocket.close(ws, code, reason),
      drain: (ws: BunWs) => ws.data.handlers.websocket.drain(ws),
    },
  }).port;
}
