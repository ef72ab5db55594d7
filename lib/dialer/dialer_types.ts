/**
 * The dialer's public types: the states, targets, options, callback payloads and the
 * {@linkcode Connection} interface of {@linkcode connect}. It imports none of the dialer's parts,
 * so every part can use these types and none imports the file that composes it.
 * `lib/dialer/dialer.ts` re-exports all of it.
 *
 * @module
 */
import type { Codec } from '../wire/codec.ts';
import type { Hello, HelloOptions } from './hello.ts';
import type { Limits } from '../session/limits.ts';
import type { RandomDraw, Reconnect, ReconnectOptions } from './schedule.ts';
import type { StreamResetError } from '../errors.ts';
import type { PublishMessage, Stream } from '../session/stream.ts';
import type { ApiSpec, Caller, HelloOf, RouteContext, Routes, WelcomeOf } from '../routes/api.ts';

/**
 * The routes a dialer serves, as {@linkcode serve} returns them: the value of `connect()`'s
 * `routes` option.
 *
 * @example
 * ```ts
 * import { type DialerRoutes, serve } from '@muxws/core';
 * import assert from 'node:assert/strict';
 *
 * type Api = { 'client.locale': { input: { fallback: string }; output: string } };
 * const routes: DialerRoutes<Api> = serve<Api>({ 'client.locale': ({ fallback }) => fallback });
 * assert.equal(typeof routes.routes['client.locale'], 'function');
 * ```
 */
export interface DialerRoutes<Api = ApiSpec> {
  /** The routes given to {@linkcode serve}, checked. */
  readonly routes: Routes<Api, RouteContext<Connection<Api>>>;
}

/** The states of a {@linkcode Connection}. */
export type ConnectionState = 'connecting' | 'open' | 'reconnecting' | 'closed';

/** A dial target with extra subprotocols, offered after the muxws one. */
export interface DialTarget {
  /** The `ws:` or `wss:` URL to dial. */
  url: string | URL;
  /** Extra subprotocol tokens offered after `muxws.v1.<codec>`, e.g. a short-lived credential. */
  protocols?: readonly string[];
}

/** What a target or hello function is told about the attempt it prepares. */
export interface DialContext {
  /** How many consecutive attempts have failed so far (0 for the first dial after a loss). */
  readonly attempt: number;
  /** `initial` for the first connection of `connect()`, `reconnect` for every redial. */
  readonly reason: 'initial' | 'reconnect';
  /** True when this redial follows a service-restart close code or a GOAWAY. */
  readonly resumedFromServiceRestart: boolean;
  /** Epoch ms when the current outage began; undefined on the first connect. */
  readonly disconnectedAt: number | undefined;
  /**
   * The outage so far plus 5000 ms, rounded up and capped at 4294967295; 0 on the first connect,
   * where nothing was missed.
   */
  readonly replayLookbackMs: number;
  /** What ended the previous attempt or connection; undefined on the first connect. */
  readonly lastError: unknown;
  /** Aborts when this attempt is abandoned (deadline, `close()`, the `signal` option). */
  readonly signal: AbortSignal;
}

/**
 * Where to dial: a URL, a {@linkcode DialTarget} (a URL with extra subprotocols), or a function
 * called before every attempt that returns one of them.
 */
export type DialTargetInput =
  | string
  | URL
  | DialTarget
  | ((ctx: DialContext) => string | URL | DialTarget | Promise<string | URL | DialTarget>);

/**
 * The hello of {@linkcode ConnectOptions.hello}: fixed, or computed per attempt.
 * `Payload` types the options' `payload` (an `Api`'s `HelloOf<Api>`).
 */
export type HelloInput<Payload = unknown> =
  | Hello
  | TypedHelloOptions<Payload>
  | ((
    ctx: DialContext,
  ) => Hello | TypedHelloOptions<Payload> | Promise<Hello | TypedHelloOptions<Payload>>);

/** {@linkcode HelloOptions} whose `payload` is typed `Payload`. */
export type TypedHelloOptions<Payload = unknown> = Omit<HelloOptions, 'payload'> & {
  /** The hello payload, deep-copied at construction; see {@linkcode HelloOptions.payload}. */
  payload?: Payload;
};

/** The close-code policy of the redial loop. */
export interface CloseCodes {
  /**
   * Codes that take the fast path: redial after `serviceRestartDelayMs`, consuming no attempt.
   *
   * @default {[1012]}
   */
  serviceRestart?: readonly number[];
  /**
   * Codes after which the dialer never redials.
   *
   * @default {[1002, 1003, 1007, 1008, 1009, 1010, 4401, 4403]}
   */
  terminal?: readonly number[];
}

/** Heartbeat settings. */
export interface HeartbeatOptions {
  /**
   * Silence, in milliseconds, after which a PING is sent.
   *
   * @default {20000}
   */
  intervalMs?: number;
  /**
   * How long, in milliseconds, to wait after a PING for anything to arrive before the connection
   * counts as lost (close 4000, `heartbeat timeout`).
   *
   * @default {10000}
   */
  timeoutMs?: number;
}

/**
 * What {@linkcode DialerRecoveryOptions.onRecovered} receives for each tag a redial resumed, once the
 * acceptor replayed what the dialer missed of it.
 *
 * @example
 * ```ts
 * import type { RecoveredInfo } from '@muxws/core';
 * import assert from 'node:assert/strict';
 *
 * const info: RecoveredInfo = { tag: 'room:lobby', replayed: 3, gap: false };
 * assert.equal(info.gap ? 'some were lost' : 'nothing was lost', 'nothing was lost');
 * ```
 */
export interface RecoveredInfo {
  /** The tag. */
  readonly tag: string;
  /**
   * How many missed broadcasts were replayed (each handed to `onPublish` or an `on()` handler,
   * unless seen).
   */
  readonly replayed: number;
  /**
   * True when some broadcasts the dialer missed were no longer in the acceptor's log (the
   * outage outlasted its retention, or the store lost its log): they are lost.
   */
  readonly gap: boolean;
}

/**
 * What {@linkcode ConnectOptions.onOpen} receives on every establishment; `Welcome` is the
 * `':hello'` output of the `Api` given to `connect<Api>()` (`WelcomeOf<Api>`).
 */
export interface OpenInfo<Welcome = unknown> {
  /** False for the first connection of `connect()`, true after a redial. */
  reconnected: boolean;
  /** How many attempts had failed before this establishment. */
  attempts: number;
  /** The value the acceptor's hello handler returned (undefined without one). */
  welcome: Welcome | undefined;
}

/** What {@linkcode ConnectOptions.onClose} (and {@linkcode Connection.closed}) receives. */
export interface CloseInfo {
  /** The close code (a missing or 0 code reads as 1006). */
  code: number;
  /** The close reason. */
  reason: string;
  /** Whether the closing handshake completed (as far as this side knows). */
  wasClean: boolean;
  /** Whether a redial is scheduled. */
  willRetry: boolean;
  /**
   * What ended the connection, when it was an error (heartbeat, protocol, failed redial, or the
   * acceptor's close for the hello it requires and this connection did not send).
   */
  error?: unknown;
  /** Consecutive failed attempts so far. */
  attempts: number;
  /** When `willRetry`: the delay before the redial, in milliseconds. */
  delayMs?: number;
}

/** What {@linkcode ConnectOptions.onReconnecting} receives before each scheduled redial. */
export interface ReconnectingInfo {
  /** Consecutive failed attempts so far: the `attempt` of the coming dial's context. */
  attempt: number;
  /** The delay before the redial, in milliseconds. */
  delayMs: number;
  /** What ended the previous attempt or connection. */
  error: unknown;
}

/**
 * The minimal `WebSocket` surface the dialer uses, typed loosely enough that the WHATWG
 * `WebSocket` (browsers, Deno, Bun, Node 22 and later), the `ws` package's class and test fakes
 * all fit without a cast: `binaryType` and `protocol` are any string, and a
 * listener takes any event, since `ws` passes events of its own shape (no `Event` fields such
 * as `timeStamp`) and the dialer reads only `data`, `code`, `reason` and `wasClean` of them.
 */
export interface DialerSocket {
  /** `WebSocket.readyState`: 0 connecting, 1 open, 2 closing, 3 closed. */
  readonly readyState: number;
  /** The subprotocol the acceptor selected. */
  readonly protocol: string;
  /** Bytes queued but not yet sent. */
  readonly bufferedAmount: number;
  /** Set to `arraybuffer` by the dialer (`ws` also knows `nodebuffer` and `fragments`). */
  binaryType: string;
  /** Sends one message. */
  send(data: string | Uint8Array): void;
  /** Closes the socket. */
  close(code?: number, reason?: string): void;
  /** Adds an event listener (`open`, `message`, `error`, `close`). */
  // deno-lint-ignore no-explicit-any
  addEventListener(type: string, listener: (event: any) => void): void;
  /** Removes an event listener. */
  // deno-lint-ignore no-explicit-any
  removeEventListener(type: string, listener: (event: any) => void): void;
  /**
   * Set by the dialer to a no-op for the socket's whole life: an EventEmitter-based socket
   * (`ws` on Node) throws an `error` event that has no listener, and it emits one after an
   * abandoned handshake or a transport failure, when the dialer's own listeners are gone. The
   * close event that follows is what the dialer acts on.
   */
  // deno-lint-ignore no-explicit-any
  onerror?: ((event: any) => void) | null;
}

/**
 * A constructor with the `WebSocket` signature: `globalThis.WebSocket` (browsers, Deno, Bun,
 * Node 22 and later), or the `ws` package's default export, as `wsDialer(WebSocket)` of
 * `@muxws/core/node` returns it or as it is.
 */
export type DialerSocketConstructor = new (
  url: string,
  protocols?: string | string[],
) => DialerSocket;

/** Options of {@linkcode SubscribeOptions.dedupe}. */
export interface DedupeOptions {
  /** The identity of a message; a message whose key was among the last `window` is dropped. */
  key: (message: unknown) => string;
  /**
   * How many recent keys are remembered, across reconnects.
   *
   * @default {1024}
   */
  window?: number;
}

/** What {@linkcode SubscribeOptions.onReopen} receives after each re-open. */
export interface ReopenInfo {
  /** Always true: the subscription was re-opened on a new connection and may have gaps. */
  resubscribed: true;
}

/** Options of {@linkcode subscribe}. */
export interface SubscribeOptions {
  /** Headers of the subscription's OPEN, captured by value. */
  headers?: Record<string, unknown> | null;
  /** Called with each message the acceptor sends on the subscription. */
  onMessage: (message: unknown) => unknown;
  /** Called after each re-open on a new connection, before `onOpen`. */
  onReopen?: (info: ReopenInfo) => unknown;
  /**
   * Called with every reset of the subscription's stream except the refusal of its first open,
   * which rejects {@linkcode Subscription.ready} instead: a later refusal (the subscription is
   * then `refused`), or any other reset (it is re-opened at the next establishment). A stream
   * lost with its connection is no reset: `onReopen` reports the re-open. Contained like every
   * callback; none set: the connection's `onError` receives them.
   */
  onError?: (error: StreamResetError) => unknown;
  /** Aborting it cancels the subscription, as `unsubscribe()` does. */
  signal?: AbortSignal;
  /** Drops messages whose key was seen recently. */
  dedupe?: DedupeOptions;
}

/**
 * Options of a routed {@linkcode subscribe} (a route and its input): those of the unrouted form,
 * with `onMessage` typed by the route's messages; `headers` must not use a reserved key.
 */
export interface RouteSubscribeOptions<Message = unknown>
  extends Omit<SubscribeOptions, 'onMessage'> {
  /** Called with each message the route's handler writes. */
  onMessage: (message: Message) => unknown;
}

/**
 * Where a {@linkcode Subscription} stands:
 * - `pending`: registered, its current stream not yet confirmed: no connection is established,
 *   or its OPEN was sent and no message has come back on it yet;
 * - `active`: its current stream delivered a message, so the acceptor took it;
 * - `refused`: the acceptor reset it with `not_found`, `invalid`, `unauthorized` or `forbidden`;
 *   it is never re-opened (final);
 * - `closed`: unsubscribed, or the connection closed for good (final).
 *
 * A stream lost with its connection, or reset with any other code, goes back to `pending` and is
 * re-opened at the next establishment.
 */
export type SubscriptionState = 'pending' | 'active' | 'refused' | 'closed';

/**
 * A standing interest registered by {@linkcode subscribe}.
 *
 * @example Wait until the acceptor took it, or learn why it refused
 * ```ts ignore
 * import { connect, StreamResetError, subscribe } from '@muxws/core';
 *
 * await using connection = await connect('wss://example.com/ws');
 * const feed = subscribe(connection, { ticker: 'ACME' }, {
 *   onMessage: (price) => console.log(price),
 *   onError: (error) => console.warn('feed reset', error.code),
 * });
 * try {
 *   await feed.ready; // the first message arrived
 * } catch (error) {
 *   if (error instanceof StreamResetError) console.log(feed.state, error.code); // refused not_found
 * }
 * ```
 */
export interface Subscription {
  /** False once cancelled, refused, or closed with the connection. */
  readonly active: boolean;
  /** `pending`, `active`, `refused` or `closed`; see {@linkcode SubscriptionState}. */
  readonly state: SubscriptionState;
  /**
   * Settles once, at the first open's outcome: resolves when the first message arrives on the
   * subscription's stream (the acceptor took it); rejects with the `StreamResetError` when that
   * stream is refused first, or with `ClosedError` when `unsubscribe()` or the connection's close
   * comes first. A loss or another reset before the first message only re-opens the
   * subscription, so `ready` keeps waiting. An acceptor whose feed may stay quiet should send
   * something at once (the current value), so `ready` settles promptly. Marked handled: leaving
   * it unobserved never causes an unhandled rejection.
   */
  readonly ready: Promise<void>;
  /** Resets the live stream with `cancel`, removes the interest, clears the dedupe window. */
  unsubscribe(): void;
}

/**
 * A tag's presence as a follower holds it: per key (who is present), the metas of its presences
 * (one per tab or device), in the order they joined. Frozen; a new object after each change.
 *
 * @example Who is here, and on how many tabs
 * ```ts
 * import type { PresenceState } from '@muxws/core';
 * import assert from 'node:assert/strict';
 *
 * const state: PresenceState<{ tab: number }> = {
 *   ada: [{ tab: 1 }, { tab: 2 }],
 *   bob: [{ tab: 1 }],
 * };
 * assert.deepEqual(Object.keys(state), ['ada', 'bob']);
 * assert.equal(Object.values(state).flat().length, 3);
 * ```
 */
export type PresenceState<Meta = unknown> = Readonly<Record<string, readonly Meta[]>>;

/**
 * Options of {@linkcode presence}. The callbacks are contained like every callback: what one
 * throws or rejects with goes to the connection's `onError`. Within one change, every `onLeave`
 * comes before every `onJoin`, keys in the order the acceptor sent them; `current` is the key's
 * metas once the whole change is applied.
 *
 * @example The snapshot, then a new meta for ada: her old one leaves, the new one joins
 * ```ts
 * import { connect, presence, type PresenceFollowOptions } from '@muxws/core';
 * import { Acceptor } from '@muxws/core/acceptor';
 * import { upgrade } from '@muxws/core/deno';
 * import assert from 'node:assert/strict';
 *
 * type Meta = { tab: number };
 * type Api = { ':presence': Meta };
 * const tracked = Promise.withResolvers<void>();
 * const acceptor = new Acceptor<Api>({
 *   authorize: () => ({ tags: ['room:1'] }),
 *   onPeer: (peer) => {
 *     acceptor.presence.track(peer, 'room:1', 'ada', { tab: 1 });
 *     tracked.resolve();
 *   },
 * });
 * const options = { port: 0, hostname: '127.0.0.1', onListen() {} };
 * await using server = Deno.serve(options, (request) => upgrade(request, acceptor));
 * await using connection = await connect<Api>(`ws://127.0.0.1:${server.addr.port}/`);
 * await tracked.promise;
 * await acceptor.presence.flush(); // ada is in the store before the dialer follows
 *
 * const seen: string[] = [];
 * const secondTab = Promise.withResolvers<void>();
 * const follow: PresenceFollowOptions<Meta> = {
 *   onSync: (state) => seen.push(`sync ${Object.keys(state)}`),
 *   onLeave: (key, left, current) => seen.push(`leave ${key} ${left[0].tab}, ${current.length} now`),
 *   onJoin: (key, joined, current) => {
 *     seen.push(`join ${key} ${joined[0].tab}, ${current.length} now`);
 *     if (joined[0].tab === 2) secondTab.resolve();
 *   },
 * };
 * const room = presence(connection, 'room:1', follow);
 * await room.ready;
 * for (const peer of acceptor.peers('room:1')) {
 *   acceptor.presence.track(peer, 'room:1', 'ada', { tab: 2 });
 * }
 * await secondTab.promise;
 * // One change: the leave comes first, and both see the key's metas after the whole change.
 * assert.deepEqual(seen, ['sync ada', 'leave ada 1, 1 now', 'join ada 2, 1 now']);
 * room.stop();
 * await acceptor.close({ drainMs: 0 });
 * ```
 */
export interface PresenceFollowOptions<Meta = unknown> {
  /**
   * Called with the whole state at every snapshot: the first (the follower's only callback for
   * it), and each later one (after a redial), after the `onLeave`/`onJoin` of what changed since
   * the state held.
   */
  onSync?: (state: PresenceState<Meta>) => unknown;
  /** Called when presences of `key` join: their metas, and the key's metas now. */
  onJoin?: (key: string, joined: Meta[], current: Meta[]) => unknown;
  /** Called when presences of `key` leave: their metas, and the key's metas now (maybe none). */
  onLeave?: (key: string, left: Meta[], current: Meta[]) => unknown;
  /**
   * Called when the acceptor refuses the follow (it does not hold the tag for this connection,
   * or it keeps no presence); the follower then stops, and `ready` rejects if it had not settled.
   * Any other reset of the follow (the acceptor's presence store failed) goes to `onError`, and
   * the tag is followed again on the next connection.
   */
  onRefused?: (error: StreamResetError) => unknown;
  /** Aborting it stops the follower, as `stop()` does. */
  signal?: AbortSignal;
}

/**
 * A tag's presence followed by {@linkcode presence}.
 *
 * @example Wait for the snapshot, read the state, stop
 * ```ts
 * import { connect, presence } from '@muxws/core';
 * import { Acceptor } from '@muxws/core/acceptor';
 * import { upgrade } from '@muxws/core/deno';
 * import assert from 'node:assert/strict';
 *
 * type Api = { ':presence': { tab: number } };
 * const tracked = Promise.withResolvers<void>();
 * const acceptor = new Acceptor<Api>({
 *   authorize: () => ({ tags: ['room:1'] }),
 *   onPeer: (peer) => {
 *     acceptor.presence.track(peer, 'room:1', 'ada', { tab: 1 });
 *     tracked.resolve();
 *   },
 * });
 * const options = { port: 0, hostname: '127.0.0.1', onListen() {} };
 * await using server = Deno.serve(options, (request) => upgrade(request, acceptor));
 * await using connection = await connect<Api>(`ws://127.0.0.1:${server.addr.port}/`);
 * await tracked.promise;
 * await acceptor.presence.flush();
 *
 * const room = presence(connection, 'room:1', {});
 * assert.equal(room.synced, false);
 * await room.ready;
 * assert.equal(room.tag, 'room:1');
 * assert.equal(room.synced, true);
 * assert.deepEqual(room.state, { ada: [{ tab: 1 }] });
 * room.stop();
 * assert.equal(room.synced, false);
 * assert.deepEqual(room.state, {});
 * await acceptor.close({ drainMs: 0 });
 * ```
 */
export interface PresenceFollower<Meta = unknown> {
  /** The tag followed. */
  readonly tag: string;
  /**
   * The state as the last snapshot and the diffs since made it: empty before the first snapshot
   * and once stopped; kept, and reconciled at the next snapshot, while the connection redials.
   */
  readonly state: PresenceState<Meta>;
  /**
   * True while the state is live: a snapshot arrived on the current connection and the acceptor
   * still sends the changes. False before it, while the connection redials, after the acceptor
   * stopped the follow (the connection lost the tag), and once stopped.
   */
  readonly synced: boolean;
  /**
   * Resolves at the first snapshot; rejects with the `StreamResetError` of a refusal, or with
   * `ClosedError` when `stop()`, the signal or the connection's close for good comes first.
   * Marked handled: leaving it unobserved never causes an unhandled rejection.
   */
  readonly ready: Promise<void>;
  /**
   * Stops following: no callback runs after it, the state is forgotten, and the acceptor is told
   * (when no other follower of the tag remains on the connection and it is open). Idempotent.
   */
  stop(): void;
}

/** Options of {@linkcode recovery}. */
export interface DialerRecoveryOptions {
  /**
   * After a redial, once per tag it resumed, when the acceptor has replayed what this dialer
   * missed of it: how many, and whether some were lost (`gap`). Only with an acceptor that
   * keeps a `history`.
   */
  onRecovered?: (info: RecoveredInfo) => unknown;
}

/** What {@linkcode recovery} returns: the value of `connect()`'s `recovery` option. */
export interface DialerRecovery {
  /** The option it is the value of. */
  readonly feature: 'recovery';
}

/** Options of {@linkcode waitWhileReconnecting}. */
export interface WaitWhileReconnectingOptions {
  /**
   * How many requests may wait for the connection at once; one more rejects at once with
   * `NotConnectedError`.
   *
   * @default {1000}
   */
  maxWaiting?: number;
}

/**
 * What {@linkcode waitWhileReconnecting} returns: the value of `connect()`'s `whileReconnecting`
 * option.
 */
export interface WaitWhileReconnecting {
  /** The option it is the value of. */
  readonly feature: 'whileReconnecting';
}

/** What {@linkcode onlineHints} returns: the value of `connect()`'s `onlineHints` option. */
export interface OnlineHints {
  /** The option it is the value of. */
  readonly feature: 'onlineHints';
}

/** Options of {@linkcode Connection.opened}. */
export interface OpenedOptions {
  /** Stops waiting; the promise rejects with the signal's reason. */
  signal?: AbortSignal;
}

/**
 * Options of {@linkcode connect}. Every field is optional.
 *
 * @example A fresh credential per attempt, a hello, and a patient schedule
 * ```ts
 * import { type ConnectOptions, type DialContext, Reconnect } from '@muxws/core';
 * import assert from 'node:assert/strict';
 *
 * const target = (ctx: DialContext) => ({
 *   url: 'wss://example.com/ws',
 *   protocols: [`token.${ctx.attempt}`],
 * });
 * const options: ConnectOptions = {
 *   hello: { payload: { client: 'docs' }, timeoutMs: 5000 },
 *   reconnect: new Reconnect({ initialDelayMs: 500, maxAttempts: 10 }),
 *   heartbeat: { intervalMs: 15_000, timeoutMs: 5000 },
 *   onClose: ({ code, willRetry }) => console.log('closed', code, willRetry),
 * };
 * assert.equal((options.reconnect as Reconnect).maxAttempts, 10);
 * assert.deepEqual(target({ attempt: 2 } as DialContext).protocols, ['token.2']);
 * ```
 */
export interface ConnectOptions<Api = ApiSpec> {
  /**
   * The codec; its name selects the subprotocol `muxws.v1.<name>`.
   *
   * @default {jsonCodec}
   */
  codec?: Codec;
  /** The hello sent on id 1 of every connection; none: established when the socket opens. */
  hello?: HelloInput<HelloOf<Api>>;
  /**
   * The backoff schedule, or `false` to never redial.
   *
   * @default {new Reconnect()}
   */
  reconnect?: Reconnect | ReconnectOptions | false;
  /**
   * The jitter source, returning -1 to 1.
   *
   * @default {uniform}
   */
  draw?: RandomDraw;
  /** The close-code policy; each list defaults separately to {@linkcode DEFAULT_CLOSE_CODES}. */
  closeCodes?: CloseCodes;
  /**
   * The fast-path delay after a service restart, jittered with the schedule's jitter.
   *
   * @default {250}
   */
  serviceRestartDelayMs?: number;
  /**
   * How long an established connection must stay up before the attempt counter resets; 0 resets
   * it at establishment.
   *
   * @default {0}
   */
  stableAfterMs?: number;
  /**
   * Spreads the first dial over `(draw() + 1) / 2 * firstDialDelayMs`.
   *
   * @default {0}
   */
  firstDialDelayMs?: number;
  /**
   * One deadline over target resolution, the hello function, the socket opening and the
   * subprotocol check.
   *
   * @default {15000}
   */
  handshakeTimeoutMs?: number;
  /**
   * Liveness probing, or `false` for none.
   *
   * @default {{ intervalMs: 20000, timeoutMs: 10000 }}
   */
  heartbeat?: HeartbeatOptions | false;
  /**
   * How long a `request()` that sets no `timeoutMs` waits for its answer, in milliseconds; `0`
   * waits as long as its stream lives. A request that waits for the connection
   * (`whileReconnecting`) counts that wait toward it.
   *
   * A request times out no earlier than this, and may fire up to 100 ms late (it is on time unless
   * the event loop is busy or the wall clock went back; a wall clock set forward times it out by as
   * much early): the requests of a connection share one
   * timer, which fires at least every 100 ms while any of them waits and stops at most 100 ms after
   * the last one settled, so an idle connection holds no timer.
   *
   * @default {30000}
   */
  requestTimeoutMs?: number;
  /**
   * What a `request()` does while the connection is `connecting` or `reconnecting`, or drains
   * after a GOAWAY: without this option it rejects at once with `NotConnectedError`; with
   * {@linkcode waitWhileReconnecting}'s value it waits for the next establishment.
   */
  whileReconnecting?: WaitWhileReconnecting;
  /**
   * The dialer's side of recovery, as {@linkcode recovery} makes it: each broadcast handed over
   * at most once across reconnects, what was missed while reconnecting first (from an acceptor
   * that keeps a `history`), and `onRecovered`. Without it, every broadcast goes to `onPublish`
   * as it arrives and a redial resumes nothing.
   */
  recovery?: DialerRecovery;
  /**
   * Online and offline hints, as {@linkcode onlineHints} makes them: where the runtime has
   * `navigator.onLine`, an `online` event shortens a redial wait and an `offline` event probes
   * the heartbeat. Without it nothing is listened to.
   */
  onlineHints?: OnlineHints;
  /** Per-connection limits. */
  limits?: Partial<Limits>;
  /**
   * The WebSocket constructor; on Node, `wsDialer(WebSocket)` of `@muxws/core/node` with the `ws`
   * package's class.
   *
   * The `ws` class passed as it is also dials, without what `wsDialer()` adds: the `Retry-After`
   * of a refused upgrade (a refusal is then a failed dial on the ordinary backoff) and sends made
   * in one tick coalesced into one write.
   *
   * @default {globalThis.WebSocket}
   */
  WebSocket?: DialerSocketConstructor;
  /** Aborting it closes the connection for good (before the first connection: `connect()` rejects). */
  signal?: AbortSignal;
  /**
   * Acceptor-opened streams (with `routes`, those whose OPEN carries no `:route`); none set:
   * they are refused with `refused`.
   */
  onStream?: (stream: Stream, connection: Connection<Api>) => unknown;
  /**
   * The routes this dialer serves for the acceptor's `peer.call()` and `peer.stream()`, as
   * {@linkcode serve} makes them (`routes: serve({ ... })`): the same handler
   * shapes as the acceptor's `routes`, `ctx.peer` being this connection. A `:route` naming none
   * is reset with `not_found`. Anything but `serve()`'s value is refused by `connect()`
   * (`TypeError`). Taking it from `serve()` keeps the serving code out of the bundle of an
   * application that serves no routes.
   */
  routes?: DialerRoutes<Api>;
  /**
   * PUBLISH frames no `on()` handler takes: plain broadcasts, and events with no handler (named
   * in `message.event`). With `recovery` and an acceptor that keeps a `history`, each broadcast
   * is handed over at most once across reconnects, and what was missed while reconnecting first.
   * Never called for a connection before its `onOpen`, nor before the `connect()` that made it
   * resolved.
   */
  onPublish?: (message: PublishMessage) => unknown;
  /** Every establishment. */
  onOpen?: (info: OpenInfo<WelcomeOf<Api>>) => unknown;
  /** The loss of an established connection, giving up, and `close()`. */
  onClose?: (info: CloseInfo) => unknown;
  /** Before each scheduled redial. */
  onReconnecting?: (info: ReconnectingInfo) => unknown;
  /** Contained errors: bad frames, throwing callbacks. Default: `console.error`. */
  onError?: (error: unknown) => unknown;
}

/**
 * True when `Api` declares the key `':hello'` itself (an index signature, as the untyped
 * `ApiSpec` has, does not count).
 *
 * @example
 * ```ts
 * import type { ApiSpec, DeclaresHello } from '@muxws/core';
 * import assert from 'node:assert/strict';
 *
 * const typed: DeclaresHello<{ ':hello': { input: { token: string } } }> = true;
 * const untyped: DeclaresHello<ApiSpec> = false;
 * assert.notEqual(typed, untyped);
 * ```
 */
export type DeclaresHello<Api> = string extends keyof Api ? false
  : ':hello' extends keyof Api ? true
  : false;

/**
 * What {@linkcode connect} takes after its target: its {@linkcode ConnectOptions}, optional, or,
 * when `Api` declares `':hello'`, required with their `hello`, so that forgetting the hello an
 * acceptor requires is a type error rather than calls refused with `hello_required`.
 *
 * @example
 * ```ts
 * import type { ConnectArgs } from '@muxws/core';
 * import assert from 'node:assert/strict';
 *
 * type Api = { ':hello': { input: { token: string } } };
 * const args: ConnectArgs<Api> = [{ hello: { payload: { token: 't' } } }];
 * const none: ConnectArgs<{ ping: { output: 'pong' } }> = [];
 * assert.equal(args.length + none.length, 1);
 * ```
 */
export type ConnectArgs<Api> = DeclaresHello<Api> extends true
  ? [options: ConnectOptions<Api> & { hello: HelloInput<HelloOf<Api>> }]
  : [options?: ConnectOptions<Api>];

/**
 * A dialled connection that redials lost sockets. As a {@linkcode Caller} it opens streams,
 * sends requests and calls routes on the acceptor; it adds the state and `close()`. Standing
 * subscriptions are {@linkcode subscribe}'s, which takes the connection first.
 *
 * Callback order on a loss: every stream of the lost socket fails with `connection_lost`, then
 * `onClose`, then (when a redial is scheduled) `onReconnecting`. On establishment: standing
 * subscriptions are re-opened in registration order (each `onReopen`), then the requests waiting
 * for a connection are sent (with `whileReconnecting`), then `onOpen`. The state is always
 * updated before a callback runs.
 *
 * @example Requests and a stream
 * ```ts ignore
 * import { connect } from '@muxws/core';
 *
 * await using connection = await connect('wss://example.com/ws');
 * const answer = await connection.request({ op: 'sum', args: [1, 2] }, { timeoutMs: 5000 });
 * const stream = connection.open({ op: 'upload' });
 * await stream.write('chunk');
 * await stream.end();
 * console.log(answer, connection.state);
 * ```
 */
export interface Connection<Api = ApiSpec> extends Caller<Api>, AsyncDisposable {
  /** `connecting`, `open`, `reconnecting` or `closed`. */
  readonly state: ConnectionState;
  /** The acceptor's hello acknowledgement value on the current (or last) connection. */
  readonly welcome: WelcomeOf<Api> | undefined;
  /** Resolves once the connection is closed for good, with the final close information. */
  readonly closed: Promise<CloseInfo>;
  /**
   * Resolves once requests can be made: at once when open, at the next establishment when
   * connecting, reconnecting or draining after a GOAWAY (which refuses new requests with
   * `NotConnectedError`); rejects with `ClosedError` when the connection closes for good, or with
   * the signal's reason.
   */
  opened(options?: OpenedOptions): Promise<void>;
  /**
   * Closes for good; idempotent.
   *
   * @throws {RangeError} When `code` is not 1000 or 3000–4999, or `reason` is over 123 UTF-8 bytes.
   */
  close(code?: number, reason?: string): Promise<CloseInfo>;
}
