// The `ws` package's server in front of an Acceptor on Node, as the Node tests use it: a
// `node:http` server on 127.0.0.1 (404 for any plain request) with the acceptor attached to its
// upgrades by the Node adapter's `attach()` on every path, so every Node test that serves an
// acceptor this way goes through the adapter. Each test keeps its own way of closing.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { WebSocketServer } from 'ws';
import type { Acceptor } from 'muxws/acceptor';
import { attach } from 'muxws/node';

/** A listening `ws` server feeding an acceptor. */
export interface WsServer {
  /** The HTTP server (404 for anything but an upgrade). */
  server: Server;
  /** The `ws` server, in `noServer` mode; its `clients` are the accepted sockets. */
  wss: WebSocketServer;
  /** The port it listens on, on 127.0.0.1. */
  port: number;
}

/** Serves `acceptor` (of any `Api` and peer data) with `ws` on 127.0.0.1:`port` (0: ephemeral). */
export async function serveWs(
  // deno-lint-ignore no-explicit-any
  acceptor: Acceptor<any, any>,
  port = 0,
): Promise<WsServer> {
  const server = createServer((_req, res) => res.writeHead(404).end());
  const { wss } = attach(server, acceptor);
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', () => {
      server.off('error', reject);
      resolve();
    });
  });
  return { server, wss: wss as WebSocketServer, port: (server.address() as AddressInfo).port };
}

/** A served acceptor as the shared suites take it: where to dial, and how to stop at once. */
export interface ServedWs {
  /** The port, on 127.0.0.1. */
  port: number;
  /** The path dialers use (`attach()` takes every path). */
  path: string;
  /** Terminates every client and closes the server. */
  close(): Promise<void>;
}

/** Serves `acceptor` as {@linkcode serveWs} does, with a close that terminates every client. */
export async function servedWs(
  // deno-lint-ignore no-explicit-any
  acceptor: Acceptor<any, any>,
): Promise<ServedWs> {
  const { server, wss, port } = await serveWs(acceptor);
  return {
    port,
    path: '/ws',
    close: () =>
      new Promise<void>((resolve) => {
        for (const client of wss.clients) client.terminate();
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
