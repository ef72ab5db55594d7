/**
 * The Deno adapter: {@linkcode upgrade} answers a request with
 * `Deno.upgradeWebSocket`, after {@linkcode Acceptor.checkUpgrade} (and the acceptor's
 * `authorize`) allowed it, and hands the socket to {@linkcode Acceptor.accept} with
 * the peer's initial `data` and `tags`. `Deno.serve` takes the promise it returns.
 *
 * @example Serve an acceptor on Deno
 * ```ts ignore
 * import { Acceptor } from '@muxws/core/acceptor';
 * import { upgrade } from '@muxws/core/deno';
 *
 * const acceptor = new Acceptor({ onStream: (stream) => ({ echo: stream.payload }) });
 * Deno.serve({ port: 8080 }, (request) => upgrade(request, acceptor));
 * ```
 *
 * @module
 */
import type { Acceptor, ServerWebSocket } from '../acceptor/acceptor.ts';
import { malformedUpgrade } from '../acceptor/kit.ts';

interface DenoUpgrade {
  upgradeWebSocket(
    request: Request,
    options: { protocol?: string },
  ): { socket: ServerWebSocket; response: Response };
}

/**
 * Upgrades `request` for `acceptor` with `Deno.upgradeWebSocket`, selecting exactly the muxws
 * subprotocol (never an extra token the dialer offered after it). A request the acceptor
 * refuses gets its refusal (403, 400, 426 or 503, or what `authorize` decided) and no Peer
 * exists for it; an accepted one's peer starts with the `data` and `tags` `authorize` returned.
 *
 * @param request The incoming request, e.g. from `Deno.serve`.
 * @param acceptor The acceptor that takes the socket.
 * @returns The 101 response to return from the handler, or the refusal (400 as well for an
 * upgrade `Deno.upgradeWebSocket` rejects, such as one without `Sec-WebSocket-Key`, with a text
 * naming what was expected rather than the runtime's error).
 * @throws {TypeError} When `Deno.upgradeWebSocket` does not exist (not running on Deno).
 *
 * @example A refused request: no upgrade header
 * ```ts
 * import { Acceptor } from '@muxws/core/acceptor';
 * import { upgrade } from '@muxws/core/deno';
 * import assert from 'node:assert/strict';
 *
 * const acceptor = new Acceptor({ idleTimeoutMs: 0 });
 * const response = await upgrade(new Request('http://localhost/ws'), acceptor);
 * assert.equal(response.status, 426);
 * assert.equal(acceptor.stats.peers, 0);
 * ```
 *
 * @example A refusal of `authorize`: no session cookie, 401 before any socket
 * ```ts
 * import { Acceptor } from '@muxws/core/acceptor';
 * import { upgrade } from '@muxws/core/deno';
 * import assert from 'node:assert/strict';
 *
 * const acceptor = new Acceptor({
 *   idleTimeoutMs: 0,
 *   authorize: (request) =>
 *     request.headers.has('cookie')
 *       ? { data: { user: 'ada' } }
 *       : new Response('Sign in first', { status: 401 }),
 * });
 * const request = new Request('http://localhost/ws', {
 *   headers: { upgrade: 'websocket', 'sec-websocket-protocol': 'muxws.v1.json' },
 * });
 * assert.equal((await upgrade(request, acceptor)).status, 401);
 * assert.equal(acceptor.stats.peers, 0);
 * ```
 */
export async function upgrade(
  request: Request,
  // deno-lint-ignore no-explicit-any
  acceptor: Acceptor<any, any>,
): Promise<Response> {
  const check = await acceptor.checkUpgrade(request);
  if (check instanceof Response) return check;
  const deno = (globalThis as { Deno?: Partial<DenoUpgrade> }).Deno;
  if (typeof deno?.upgradeWebSocket !== 'function') {
    throw new TypeError('Cannot upgrade as Deno.upgradeWebSocket is not available: run on Deno');
  }
  let upgraded: { socket: ServerWebSocket; response: Response };
  try {
    upgraded = deno.upgradeWebSocket(request, { protocol: check.protocol });
  } catch {
    // A malformed upgrade (no Sec-WebSocket-Key, a wrong version): the client's fault, answered
    // in muxws's words rather than the runtime's.
    return malformedUpgrade(request);
  }
  acceptor.accept(upgraded.socket, { data: check.data, tags: check.tags });
  return upgraded.response;
}
