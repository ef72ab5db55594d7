/**
 * Routes on a live connection, what both sides add to their session: the stream handler that sends
 * a received stream naming a `:route` to its route ({@linkcode serveRoute}) and any other to the
 * application's `onStream`, and the OPEN headers of a routed call, stream or subscription.
 * Internal: the acceptor's peers and the dialer's connection build on it.
 *
 * @module
 */
import {
  checkOwnHeaders,
  isEventId,
  LAST_EVENT_ID,
  MAX_EVENT_ID_LENGTH,
  MUXWS,
  type WithMuxws,
} from '../wire/reserved.ts';
import { control, type OpenOptions, type RequestOptions, type Stream } from '../session/stream.ts';
import { ResetCode } from '../wire/codes.ts';
import { StreamError } from '../errors.ts';
import { lengthNote, mustBe } from '../util/describe.ts';
import type { RouteContext } from './api.ts';
import {
  answerRoute,
  checkRouteName,
  checkRoutes,
  isThenable,
  ROUTE_HEADER,
  routeOf,
  type ServedRoutes,
} from './routes.ts';

/**
 * A side's `routes` option, checked ({@linkcode checkRoutes}).
 *
 * @param routes The option's value.
 * @param what What was attempted, for the message: `create Acceptor`, `connect`.
 * @throws {TypeError} Naming the route and the value found.
 */
export function checkedRoutes(routes: unknown, what: string): ServedRoutes | undefined {
  checkRoutes(routes, what);
  return routes;
}

/**
 * The key under which a value of the dialer's `serve()` carries the maker of its stream handler,
 * so that `connect()` reaches the serving code only through a value the application built.
 */
const SERVE: unique symbol = /* @__PURE__ */ Symbol('muxws.serve');

/** Makes a side's stream handler from its `onStream` option and the handlers' `peer`. */
type HandlerMaker<P> = (
  onStream: ((stream: Stream, peer: P) => unknown) | undefined,
  peer: P,
) => ((stream: Stream) => unknown) | undefined;

/**
 * The dialer's served routes, as `serve()` returns them: the routes, checked, and under
 * {@linkcode SERVE} the maker of their stream handler ({@linkcode streamHandler}).
 *
 * @param routes The routes given to `serve()`.
 * @throws {TypeError} As {@linkcode checkedRoutes} does, for `serve routes`.
 */
export function servedRoutes<P>(
  routes: unknown,
): { readonly routes: unknown; readonly [SERVE]: HandlerMaker<P> } {
  const checked = checkedRoutes(routes, 'serve routes');
  return Object.freeze({
    routes: checked,
    [SERVE]: (onStream: Parameters<HandlerMaker<P>>[0], peer: P) =>
      streamHandler(checked, onStream, peer),
  });
}

/**
 * The maker of the stream handler a dialer's `routes` option carries: undefined without the
 * option, {@linkcode unroutedHandler} being the dialer's then.
 *
 * @param routes The option's value: undefined, or what `serve()` returned.
 * @throws {TypeError} When `routes` is anything else (a plain object of handlers, say).
 */
export function makerOf<P>(routes: unknown): HandlerMaker<P> | undefined {
  if (routes === undefined) return undefined;
  const make = (routes as { [SERVE]?: unknown } | null)?.[SERVE];
  if (typeof make !== 'function') {
    throw new TypeError(
      mustBe('connect', 'routes', 'what serve() returns (routes: serve({ ... }))', routes),
    );
  }
  return make as HandlerMaker<P>;
}

/** Without routes: `onStream`, handed `peer` as its second argument; undefined without one. */
export function unroutedHandler<P>(
  onStream: ((stream: Stream, peer: P) => unknown) | undefined,
  peer: P,
): ((stream: Stream) => unknown) | undefined {
  return onStream === undefined ? undefined : (stream) => onStream(stream, peer);
}

/** Why an unrouted stream is refused when only `routes` are served. */
const NO_HANDLER =
  'Only routes are served here and the stream names none: use a route, call(route, input) or stream(route, input), not request() or open()';

/**
 * The session's stream handler for a side serving `routes` (when set) beside `onStream`: a
 * stream whose OPEN carries `:route` is served as {@linkcode serveRoute} serves it, with `ctx = {
 * peer, stream, headers, signal }` (a route answering with a plain value answers at once, as an
 * `onStream` returning one does; `ctx.lastEventId` is the OPEN's `:last-event-id`, and one that is
 * not a string of 1 to 256 characters refuses the stream with `invalid`), any other goes to
 * `onStream`, or, without one, is refused with
 * `refused` (counted toward the reset budget, as the session's own refusal is; so are a routed
 * stream's `not_found` and `invalid`, whoever threw them). `undefined` when
 * neither is set, so the session refuses every stream itself.
 *
 * @param routes The side's checked `routes` option.
 * @param onStream The side's `onStream` option.
 * @param peer The handlers' second argument: the acceptor's `Peer`, the dialer's `Connection`.
 */
export function streamHandler<P>(
  routes: ServedRoutes | undefined,
  onStream: ((stream: Stream, peer: P) => unknown) | undefined,
  peer: P,
): ((stream: Stream) => unknown) | undefined {
  if (routes === undefined) return unroutedHandler(onStream, peer);
  return (stream) => {
    if (routeOf(stream.headers) === undefined) {
      if (onStream !== undefined) return onStream(stream, peer);
      control.fail(stream, ResetCode.Refused, NO_HANDLER);
      return undefined;
    }
    const headers = stream.headers ?? {};
    const lastEventId = headers[LAST_EVENT_ID];
    if (lastEventId !== undefined && !isEventId(lastEventId)) {
      control.fail(stream, ResetCode.Invalid, badLastEventId(lastEventId));
      return undefined;
    }
    const ctx = { peer, stream, headers, lastEventId };
    // Read on demand: a handler that never asks makes no AbortController (they are costly). An
    // accessor defined on the object, not written in its literal, which costs several times more.
    Object.defineProperty(ctx, 'signal', SIGNAL);
    let answer: unknown;
    try {
      // A route answering with a plain value answers now; any other, with a promise.
      answer = answerRoute(routes, stream, ctx as RouteContext<P>);
    } catch (error) {
      return refusedOrThrown(stream, error);
    }
    return isThenable(answer)
      ? answer.then(undefined, (error: unknown) => refusedOrThrown(stream, error))
      : answer;
  };
}

/** Why a routed stream whose `:last-event-id` is not an event id is refused. */
function badLastEventId(value: unknown): string {
  return `${
    mustBe(
      'serve the route',
      LAST_EVENT_ID,
      `a non-empty string of at most ${MAX_EVENT_ID_LENGTH} characters`,
      value,
    )
  }${lengthNote(value, MAX_EVENT_ID_LENGTH)}`;
}

/** `ctx.signal` of a routed stream: its stream's `signal`, read when asked for. */
const SIGNAL: PropertyDescriptor = {
  get(this: { stream: Stream }): AbortSignal {
    return this.stream.signal;
  },
  enumerable: true,
  configurable: true,
};

/**
 * A routed stream's `not_found` or `invalid`, whoever threw it, is drawn at will by what the
 * other side sent: counted toward the reset budget. Anything else is the handler's failure.
 */
function refusedOrThrown(stream: Stream, error: unknown): undefined {
  if (
    error instanceof StreamError &&
    (error.code === ResetCode.NotFound || error.code === ResetCode.Invalid)
  ) {
    control.fail(stream, error.code, error.message, error.issues);
    return undefined;
  }
  throw error;
}

/**
 * The options of a routed call, stream or subscription: the application's, with muxws's own part
 * setting `:route` to `route` (see `lib/wire/reserved.ts`), once the route name and the application's
 * `headers` are checked, before anything is sent.
 *
 * @param route The route name.
 * @param options The application's options (their `headers`: a plain object, `null` or absent).
 * @param action What was attempted, for the messages: `call a route`, `subscribe to a route`.
 * @param operation The operation an encode error names: `call()`, `stream()`, `subscribe()`.
 * @throws {TypeError} When `route` is not a route name, `headers` not a plain object or null, or
 * `headers` uses a reserved key.
 */
function routed<O extends { headers?: Record<string, unknown> | null }>(
  route: unknown,
  options: O | undefined,
  action: string,
  operation: string,
): WithMuxws<O> {
  checkRouteName(route, action);
  // The message's prefix is built only when the check fails: this runs on every routed call.
  checkOwnHeaders(options?.headers, () => `${action} ${JSON.stringify(route)}`);
  const muxws = { headers: { [ROUTE_HEADER]: route }, operation };
  return { ...options, [MUXWS]: muxws } as unknown as WithMuxws<O>;
}

/** What a routed call or stream goes through: a side's unrouted `request()` and `open()`. */
interface RouteOpener {
  /** The side's `request()`. */
  request(payload: unknown, options?: WithMuxws<RequestOptions>): Promise<unknown>;
  /** The side's `open()`. */
  open(payload: unknown, options?: WithMuxws<OpenOptions>): Stream;
}

/**
 * Gives the instances of `target` the routed half of `Caller` (`lib/routes/api.ts`, where both
 * are documented): `call()` and `stream()`, methods on its prototype over the instance's own
 * `request()` and `open()`, each with `:route` set in the OPEN headers once the route name and
 * the headers are checked (a bad one rejects, or throws, before anything is sent). The one copy
 * of them both sides use: the acceptor's `Peer` and the dialer's `Connection` declare the two
 * methods and call this once with their class.
 */
export function defineRouteCalls(target: { readonly prototype: RouteOpener }): void {
  const prototype = target.prototype as RouteOpener & { call: unknown; stream: unknown };
  prototype.call = call;
  prototype.stream = stream;
}

/** `Caller.call()`: a routed request through the instance's `request()`. */
function call(
  this: RouteOpener,
  route: unknown,
  input: unknown,
  options?: RequestOptions,
): Promise<unknown> {
  let routedOptions: WithMuxws<RequestOptions>;
  try {
    routedOptions = routed(route, options, 'call a route', 'call()');
  } catch (error) {
    return Promise.reject(error);
  }
  return this.request(input, routedOptions);
}

/** `Caller.stream()`: a routed stream through the instance's `open()`. */
function stream(this: RouteOpener, route: unknown, input: unknown, options?: OpenOptions): Stream {
  return this.open(input, routed(route, options, 'open a routed stream', 'stream()'));
}

/**
 * The options of a routed subscription as the unrouted form takes them: `:route` in their
 * {@linkcode MUXWS} part (muxws's own, see `lib/wire/reserved.ts`), not in their `headers`, once
 * the route name and the headers are checked. Options that are not an object
 * are returned as they are, for the unrouted form's checks to name.
 *
 * @throws {TypeError} For a bad route name or headers.
 */
export function routeSubscribeOptions<O extends { headers?: Record<string, unknown> | null }>(
  route: unknown,
  options: O,
): WithMuxws<O> {
  return options !== null && typeof options === 'object'
    ? routed(route, options, 'subscribe to a route', 'subscribe()')
    : (checkRouteName(route, 'subscribe to a route'), options);
}
