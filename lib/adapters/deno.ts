/**
 * The Deno adapter (WSM-ACC-003): {@linkcode upgrade} answers a request with
 * `Deno.upgradeWebSocket`, after {@linkcode Acceptor.checkUpgrade} allowed it, and hands the
 * socket to {@linkcode Acceptor.accept}.
 *
 * @example Serve an acceptor on Deno
 * ```ts ignore
 * import { Acceptor } from 'muxws/acceptor';
 * import { upgrade } from 'muxws/deno';
 *
 * const acceptor = new Acceptor({ onStream: (stream) => ({ echo: stream.payload }) });
 * Deno.serve({ port: 8080 }, (request) => upgrade(request, acceptor));
 * ```
 *
 * @module
 */
import type { Acceptor, ServerWebSocket } from '../acceptor.ts';

interface DenoUpgrade {
  upgradeWebSocket(
    request: Request,
    options: { protocol?: string },
  ): { socket: ServerWebSocket; response: Response };
}

/**
 * Upgrades `request` for `acceptor` with `Deno.upgradeWebSocket`, selecting exactly the muxws
 * subprotocol (never an extra token the dialer offered after it). A request the acceptor
 * refuses gets its refusal (403, 400, 426 or 503) and no Peer exists for it.
 *
 * @param request The incoming request, e.g. from `Deno.serve`.
 * @param acceptor The acceptor that takes the socket.
 * @returns The 101 response to return from the handler, or the refusal (400 as well for an
 * upgrade `Deno.upgradeWebSocket` rejects, such as one without `Sec-WebSocket-Key`).
 * @throws {TypeError} When `Deno.upgradeWebSocket` does not exist (not running on Deno).
 *
 * @example A refused request: no upgrade header
 * ```ts
 * import { Acceptor } from 'muxws/acceptor';
 * import { upgrade } from 'muxws/deno';
 * import assert from 'node:assert/strict';
 *
 * const acceptor = new Acceptor({ idleTimeoutMs: 0 });
 * const response = upgrade(new Request('http://localhost/ws'), acceptor);
 * assert.equal(response.status, 426);
 * assert.equal(acceptor.stats.peers, 0);
 * ```
 */
export function upgrade(request: Request, acceptor: Acceptor): Response {
  const check = acceptor.checkUpgrade(request);
  if (check instanceof Response) return check;
  const deno = (globalThis as { Deno?: Partial<DenoUpgrade> }).Deno;
  if (typeof deno?.upgradeWebSocket !== 'function') {
    throw new TypeError('Cannot upgrade as Deno.upgradeWebSocket is not available: run on Deno');
  }
  let upgraded: { socket: ServerWebSocket; response: Response };
  try {
    upgraded = deno.upgradeWebSocket(request, { protocol: check.protocol });
  } catch (error) {
    // A malformed upgrade (no Sec-WebSocket-Key, a wrong version): the client's fault.
    return new Response(`Bad WebSocket upgrade request: ${(error as Error)?.message ?? error}`, {
      status: 400,
      headers: { 'content-type': 'text/plain; charset=utf-8' },
    });
  }
  acceptor.accept(upgraded.socket);
  return upgraded.response;
}
