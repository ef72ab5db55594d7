/**
 * Standing subscriptions, imported by name: {@linkcode subscribe} takes the connection first and
 * registers an interest it re-opens on every new connection. It reaches the connection through
 * the hook of `lib/dialer/_extensions.ts`, so a bundle that never calls it carries none of its
 * code.
 *
 * @module
 */
import type {
  Connection,
  RouteSubscribeOptions,
  SubscribeOptions,
  Subscription,
} from './dialer_types.ts';
import type { InputOf, MessageOf, RouteName } from '../routes/api.ts';
import { type ExtensionHost, hostOf } from './_extensions.ts';
import { checkSubscribeOptions, Subscriptions } from './_subscriptions.ts';
import { closedNow } from './_dial_requests.ts';
import { MUXWS, type WithMuxws } from '../wire/reserved.ts';
import { routeSubscribeOptions } from '../routes/route_streams.ts';

/** Each connection's subscriptions, made at its first `subscribe()`, by its host. */
const REGISTRIES = /* @__PURE__ */ new WeakMap<ExtensionHost, Subscriptions>();

/**
 * Registers a standing subscription on `connection` and returns it at once, in any state but
 * `closed`: while open its stream is opened now, otherwise at the next establishment, and it is
 * re-opened on every new connection, in registration order, before `onOpen`. It is not a
 * promise, so awaiting it gives the same subscription.
 *
 * @param connection A connection `connect()` made.
 * @param payload The OPEN's payload, captured by value.
 * @param options `onMessage` and the rest of {@linkcode SubscribeOptions}.
 * @returns The subscription.
 * @throws {TypeError} When `connection` is not a connection or an option has the wrong type.
 * @throws {RangeError} When `dedupe.window` is not an integer of at least 1.
 * @throws {ClosedError} When the connection is closed.
 *
 * @example A standing subscription, and why it was refused
 * ```ts ignore
 * import { connect, StreamResetError, subscribe } from '@muxws/core';
 *
 * await using connection = await connect('wss://example.com/ws');
 * const feed = subscribe(connection, { room: 'lobby' }, {
 *   onMessage: (message) => console.log(message),
 *   onReopen: () => console.log('resubscribed: messages may have been missed'),
 *   dedupe: { key: (message) => (message as { id: string }).id },
 * });
 * await feed.ready.catch((error) => {
 *   if (error instanceof StreamResetError) console.log(feed.state, error.code);
 * });
 * feed.unsubscribe();
 * ```
 *
 * @example Bad options are refused at once
 * ```ts
 * import { subscribe } from '@muxws/core';
 * import assert from 'node:assert/strict';
 *
 * assert.throws(() => subscribe({} as never, 'feed', { onMessage: () => {} }), {
 *   name: 'TypeError',
 *   message: /a Connection from connect\(\)/,
 * });
 * ```
 */
export function subscribe<Api>(
  connection: Connection<Api>,
  payload: unknown,
  options: SubscribeOptions,
): Subscription;
/**
 * Registers a standing subscription to a route the acceptor serves: its OPEN carries `:route`,
 * and it is re-opened on every new connection like the unrouted form's. Told apart from it by
 * its four arguments.
 *
 * @param connection A connection `connect<Api>()` made: it types the route, its input and its
 * messages.
 * @param route A route name: 1 to 256 characters, not starting with `:`.
 * @param input The route's input, the OPEN's payload (captured by value).
 * @param options As the unrouted form's, `onMessage` typed; `headers` with no reserved key.
 * @returns The subscription.
 * @throws {TypeError} For a bad route name or a reserved header, before anything is sent;
 * otherwise as the unrouted form.
 *
 * @example A typed feed
 * ```ts ignore
 * import { connect, subscribe } from '@muxws/core';
 *
 * type Api = { ticker: { input: { symbol: string }; message: { price: number } } };
 * await using connection = await connect<Api>('wss://example.com/ws');
 * const feed = subscribe(connection, 'ticker', { symbol: 'ACME' }, {
 *   onMessage: (tick) => console.log(tick.price),
 * });
 * feed.unsubscribe();
 * ```
 */
export function subscribe<Api, R extends RouteName<Api>>(
  connection: Connection<Api>,
  route: R,
  input: InputOf<Api, R>,
  options: RouteSubscribeOptions<MessageOf<Api, R>>,
): Subscription;
export function subscribe<Api>(
  connection: Connection<Api>,
  first: unknown,
  second: unknown,
  third?: RouteSubscribeOptions<never>,
): Subscription {
  const host = hostOf(connection, 'subscribe');
  // Four arguments: a routed subscription, the unrouted one with `:route` set by muxws.
  const routed = arguments.length === 4;
  const options = (routed ? routeSubscribeOptions(first, third!) : second) as WithMuxws<
    SubscribeOptions
  >;
  checkSubscribeOptions(options);
  if (connection.state === 'closed') throw closedNow('subscribe');
  if (options.signal?.aborted) throw options.signal.reason;
  const payload = routed ? second : first;
  return registryOf(host).add(
    { payload, headers: options.headers ?? null, muxws: options[MUXWS] },
    options,
  );
}

/** The subscriptions of the connection of `host`, hooked to its life at the first call. */
function registryOf(host: ExtensionHost): Subscriptions {
  let registry = REGISTRIES.get(host);
  if (registry === undefined) {
    const made = registry = new Subscriptions(host);
    REGISTRIES.set(host, made);
    host.extend({
      established: () => made.reopen(),
      closed: () => {
        made.clear();
        REGISTRIES.delete(host);
      },
    });
  }
  return registry;
}
