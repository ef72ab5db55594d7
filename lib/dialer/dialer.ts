/**
 * The dialer: {@linkcode connect} opens a WebSocket, establishes it (subprotocol, hello), and
 * keeps a {@linkcode Connection} over it, redialling on the jittered schedule of
 * {@linkcode Reconnect} whenever an established socket is lost. The public types live in `lib/dialer/dialer_types.ts` and are re-exported here; the
 * parts are `lib/dialer/_connection.ts` (the state machine) and the files it names.
 *
 * @module
 */
import type {
  CloseCodes,
  ConnectArgs,
  Connection,
  ConnectOptions,
  DialerRoutes,
  DialTargetInput,
} from './dialer_types.ts';
import { DEFAULT_SERVICE_RESTART, DEFAULT_TERMINAL } from '../wire/codes.ts';
import { connectOver } from './_connection.ts';
import type { ApiSpec, RouteContext, Routes } from '../routes/api.ts';
import { servedRoutes } from '../routes/route_streams.ts';

export * from './dialer_types.ts';

/**
 * The default close-code policy: 1012 redials fast; protocol, policy and size
 * violations and the application's 4401/4403 stop; every other code backs off.
 *
 * @example Extend the terminal codes with an application code
 * ```ts
 * import { type CloseCodes, DEFAULT_CLOSE_CODES } from '@muxws/core';
 * import assert from 'node:assert/strict';
 *
 * const closeCodes: CloseCodes = { terminal: [...DEFAULT_CLOSE_CODES.terminal, 4409] };
 * assert(closeCodes.terminal?.includes(4401));
 * assert.deepEqual(DEFAULT_CLOSE_CODES.serviceRestart, [1012]);
 * ```
 */
export const DEFAULT_CLOSE_CODES: Readonly<Required<CloseCodes>> = /* @__PURE__ */ Object.freeze({
  serviceRestart: frozenCopy(DEFAULT_SERVICE_RESTART),
  terminal: frozenCopy(DEFAULT_TERMINAL),
});

/** A frozen copy of `codes`; free of side effects, so a bundle without its result drops it. */
/* @__NO_SIDE_EFFECTS__ */
function frozenCopy(codes: readonly number[]): readonly number[] {
  return Object.freeze([...codes]);
}

/**
 * Dials `target` and resolves with the established {@linkcode Connection}.
 *
 * An attempt resolves the target, opens a WebSocket offering `muxws.v1.<codec>` first (then the
 * target's extra `protocols`), checks the selected subprotocol, and sends the hello (if any) as
 * the OPEN of stream 1 with END; it is acknowledged by the acceptor's END, and the last message
 * before that END is `connection.welcome`. The first connection's failure rejects with
 * {@linkcode ConnectError} and nothing is retried.
 * Once established, a lost socket is redialled after `backoffDelay(attempts, reconnect, draw)`
 * (with the defaults about 250, 500, 1000, … capped at 30000 ms, each ±30 %), after
 * `serviceRestartDelayMs` for a service restart (1012) or a GOAWAY, and never for a terminal
 * code (a socket closed with one during a redial's handshake or hello stops too). A refusal at
 * upgrade whose `Retry-After` the runtime exposes (the Node `ws` package does, given as
 * `wsDialer(WebSocket)` of `@muxws/core/node`; browsers, Deno and Bun do not) holds the next
 * redial at least that long, capped at the schedule's `maxDelayMs`.
 *
 * @param target A URL (`string` or `URL`), a {@linkcode DialTarget} (`{ url, protocols }`), or a
 * function returning one of them, called before every attempt.
 * @param options See {@linkcode ConnectOptions}; required, with its `hello`, when `Api` declares
 * `':hello'` ({@linkcode ConnectArgs}).
 * @returns The connection, once established.
 * @throws {TypeError} (rejection) When an option has the wrong type.
 * @throws {RangeError} (rejection) When a duration or code is out of range.
 * @throws {ConnectError} (rejection) When the first connection fails; `cause` says why.
 *
 * @example Connect, make a request, close
 * ```ts ignore
 * import { connect } from '@muxws/core';
 *
 * await using connection = await connect('wss://example.com/ws', {
 *   hello: { payload: { client: 'docs' } },
 *   onClose: ({ code, willRetry }) => console.log('closed', code, willRetry),
 * });
 * console.log(await connection.request({ op: 'time' }));
 * ```
 *
 * @example A fixed target with an extra subprotocol
 * ```ts ignore
 * import { connect } from '@muxws/core';
 *
 * await using connection = await connect({
 *   url: new URL('wss://example.com/ws'),
 *   protocols: ['token.abc'],
 * });
 * console.log(connection.state);
 * ```
 *
 * @example The first connection's failure rejects with ConnectError
 * ```ts
 * import { ConnectError, connect } from '@muxws/core';
 * import assert from 'node:assert/strict';
 *
 * const error = await connect(() => {
 *   throw new Error('no credentials');
 * }, { reconnect: false }).catch((e) => e);
 * assert(error instanceof ConnectError);
 * assert.equal((error.cause as Error).message, 'no credentials');
 * ```
 */
export async function connect<Api = ApiSpec>(
  target: DialTargetInput,
  ...[options = {}]: ConnectArgs<Api>
): Promise<Connection<Api>> {
  // The connection is untyped inside: `Api` types only what the caller sees.
  const connection = await connectOver(undefined, target, options as unknown as ConnectOptions);
  return connection as unknown as Connection<Api>;
}

/**
 * The routes a dialer serves for the acceptor's `peer.call()` and `peer.stream()`,
 * for `connect()`'s `routes` option: `routes: serve({ ... })`. The handlers take the same shapes
 * as the acceptor's `routes` (a function, or `{ input?, upload?, handler }` with Standard Schemas), with
 * `ctx.peer` being the connection. Route serving is reached only through this function, so the
 * bundle of an application that never calls it carries no serving code.
 *
 * @param routes The route handlers, by route name.
 * @returns The value of the `routes` option.
 * @throws {TypeError} When `routes` is not an object of route handlers, naming the route and the
 * value found.
 *
 * @example Serve a route the acceptor calls with `peer.call()`
 * ```ts ignore
 * import { connect, serve } from '@muxws/core';
 *
 * type Api = { 'client.locale': { input: { fallback: string }; output: string } };
 * await using connection = await connect<Api>('wss://example.com/ws', {
 *   routes: serve({ 'client.locale': ({ fallback }) => navigator.language ?? fallback }),
 * });
 * ```
 *
 * @example A bad handler is refused at once
 * ```ts
 * import { serve } from '@muxws/core';
 * import assert from 'node:assert/strict';
 *
 * assert.throws(() => serve({ 'client.locale': 5 } as never), {
 *   name: 'TypeError',
 *   message: /routes\["client\.locale"\]/,
 * });
 * ```
 */
export function serve<Api = ApiSpec>(
  routes: Routes<Api, RouteContext<Connection<Api>>>,
): DialerRoutes<Api> {
  return servedRoutes<Connection<Api>>(routes) as unknown as DialerRoutes<Api>;
}
