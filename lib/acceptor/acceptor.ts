/**
 * The acceptor: the side that accepted the WebSocket. An {@linkcode Acceptor} is
 * transport-neutral: it never creates a socket. A runtime adapter (`./deno`, `./bun`, `./node`,
 * `./hono`, `./cloudflare`) first asks {@linkcode Acceptor.checkUpgrade} whether to upgrade a request, and
 * then hands the socket over with {@linkcode Acceptor.accept} (a standard server-side
 * `WebSocket`) or {@linkcode Acceptor.attach} (a push-style socket: Bun's `ServerWebSocket`,
 * Hono's `WSContext`, a Durable Object's hibernation handlers). Each accepted socket becomes a
 * {@linkcode Peer}; a dialer's redial arrives as a new Peer with empty tags.
 *
 * The acceptor answers PING with PONG (the session does) and never pings. It arms at most two
 * timers of its own: one idle sweep, only while peers exist and `idleTimeoutMs` is on, and one
 * drain deadline, only while {@linkcode Acceptor.close} runs. With `idleTimeoutMs: 0` an idle
 * acceptor holds no timer at all, so a Durable Object can hibernate.
 *
 * This entry also re-exports the backplane (`broadcastChannelBackplane`, and the `Backplane`
 * types), the history (`memoryHistory`, and the `History` types) and {@linkcode tracked} (which
 * a route's generator yields), so a server imports them from `@muxws/core/acceptor`;
 * `@muxws/core/redis` stays its own entry.
 *
 * @example A hello answered with a welcome, over a sink that records what is sent
 * ```ts
 * import { Acceptor } from '@muxws/core/acceptor';
 * import assert from 'node:assert/strict';
 *
 * const acceptor = new Acceptor({
 *   idleTimeoutMs: 0,
 *   onStream: (stream, peer) => {
 *     peer.tags.add('lobby');
 *     return { welcome: stream.payload };
 *   },
 * });
 * const sent: unknown[] = [];
 * const handle = acceptor.attach({ send: (data) => sent.push(data), close() {} });
 * handle.message(JSON.stringify([1, 1, 1, null, 'ada'])); // OPEN stream 1 with END
 * await new Promise((resolve) => setTimeout(resolve, 0));
 * assert.deepEqual(JSON.parse(String(sent[0])), [2, 1, 1, { welcome: 'ada' }]);
 * assert.deepEqual([...acceptor.peers('lobby')], [handle.peer]);
 * await acceptor.close();
 * ```
 *
 * @module
 */
import { type Codec, subprotocol } from '../wire/codec.ts';
import { JSON_CODEC } from '../wire/json.ts';
import type { Limits } from '../session/limits.ts';
import type { Stream } from '../session/stream.ts';
import type {
  AcceptOptions,
  AcceptorCloseOptions,
  AcceptorOptions,
  AcceptorPresence,
  AcceptorStats,
  AttachedPeer,
  AttachOptions,
  BroadcastAllOptions,
  BroadcastOptions,
  Peer,
  PeerCloseInfo,
  PeerHello,
  PeerSink,
  ServerWebSocket,
  UpgradeAccepted,
} from './acceptor_types.ts';
import { sessionLimits } from '../session/session.ts';
import { idle } from '../session/acceptor_api.ts';
import { CloseCode, closingTerms } from '../wire/codes.ts';
import { callContained, reportTo } from '../util/contain.ts';
import { checkAcceptorOptions, checkClose, checkMs } from './_acceptor_checks.ts';
import { checkTag } from './_tags.ts';
import {
  type Authorize,
  authorizeUpgrade,
  checkUpgrade,
  offers,
  originCheck,
  registerUpgradeCheck,
  type UpgradeHead,
  type UpgradeRules,
} from './_upgrade.ts';
import { socketDriver } from '../sockets/node_ws.ts';
import type { SocketDriver } from '../sockets/socket_driver.ts';
import { type PeerHost, type PeerImpl, PeerLink, sayGoAway } from './_peer.ts';
import type { ApiSpec, EventName, EventPayload, PresenceMetaOf } from '../routes/api.ts';
import { checkEventName } from './_events.ts';
import { checkedRoutes } from '../routes/route_streams.ts';
import { Broadcaster, type BroadcastHost } from './_broadcast.ts';
import { Recovery, recoveryBounds } from './_recovery.ts';
import type { History } from '../broadcast/history.ts';
import { describe } from '../util/describe.ts';
import { Presence } from './_presence.ts';

// The public types live apart so the acceptor's parts can import them; the entry shows them here.
export * from './acceptor_types.ts';
// A server needs the backplane beside the acceptor: one import serves both.
export * from '../broadcast/backplane.ts';
// And the broadcast history recovery keeps (the Redis store is in `./redis`).
export * from '../broadcast/history.ts';
// And the presence store (the Redis one is in `./redis`).
export * from '../broadcast/presence.ts';
// A route's generator marks the messages a re-opened subscription continues after.
export { type Tracked, tracked } from '../routes/tracked.ts';

/**
 * What the acceptor's parts read of it (the peers, the upgrade check, the broadcaster), one object
 * per acceptor; {@linkcode Acceptor.close} sets its closing state.
 */
interface AcceptorHost extends PeerHost, UpgradeRules, BroadcastHost {
  report(error: unknown, peer?: Peer): void;
  closing: boolean;
  closeCode: number | undefined;
  closeSpreadMs: number;
}

/** Peers {@linkcode Acceptor.close} sends GOAWAY to (and closes, when idle) per event-loop turn. */
const DRAIN_SLICE = 100;

/**
 * The acceptor: peers, tags, broadcast, graceful close and the idle sweep.
 *
 * Callback order for one peer: `onPeer` when its socket is open, then `onHello` for its hello
 * (with `onHello` set), then `onStream` for each stream the dialer opens, then `onPeerClose`
 * once, after every stream of the peer has failed. The dialer is sent its welcome before any
 * broadcast: what is broadcast to the peer while `onHello` runs follows the welcome, and a
 * refused hello closes the peer (1000 `hello rejected`) right after its RESET.
 * A peer accepted after {@linkcode Acceptor.close} began is closed at once with the close code,
 * and neither `onPeer` nor `onPeerClose` fires for it. Every callback is contained: a throw, or
 * the rejection of a promise it returns, goes to `onError`, and an `onError` that throws or
 * rejects to `console.error`.
 *
 * @example Origins, subprotocols and refusals
 * ```ts
 * import { Acceptor } from '@muxws/core/acceptor';
 * import assert from 'node:assert/strict';
 *
 * const acceptor = new Acceptor({ origins: ['https://app.example'] });
 * assert.equal(acceptor.protocol('muxws.v1.json, token.abc'), 'muxws.v1.json');
 * assert.equal(acceptor.protocol(['chat']), undefined);
 *
 * const upgrade = (headers: Record<string, string>) =>
 *   new Request('http://api.example/ws', {
 *     headers: { upgrade: 'websocket', connection: 'Upgrade', ...headers },
 *   });
 * const ok = await acceptor.checkUpgrade(upgrade({
 *   origin: 'https://app.example',
 *   'sec-websocket-protocol': 'muxws.v1.json, token.abc',
 * }));
 * assert.deepEqual(ok, { protocol: 'muxws.v1.json' });
 * const foreign = await acceptor.checkUpgrade(upgrade({
 *   origin: 'https://evil.example',
 *   'sec-websocket-protocol': 'muxws.v1.json',
 * }));
 * assert(foreign instanceof Response && foreign.status === 403);
 * await acceptor.close();
 * ```
 */
export class Acceptor<Api = ApiSpec, PeerData = Record<string, unknown>> {
  readonly #protocol: string;
  readonly #idleTimeoutMs: number;
  readonly #onPeerClose: ((peer: Peer, info: PeerCloseInfo) => void) | undefined;
  readonly #onError: ((error: unknown, peer?: Peer) => void) | undefined;
  readonly #authorize: Authorize | undefined;
  /** What the peers and the upgrade checks need of this acceptor: one object for all of them. */
  readonly #host: AcceptorHost;

  readonly #peers = new Set<PeerImpl>();
  /** The tag index, broadcasts and the backplane bridge. */
  readonly #broadcaster: Broadcaster;
  /** Sequence numbers, positions and replays: only with a `history` store. */
  readonly #recovery: Recovery | undefined;
  /** Who is present per tag, and the peers that follow it. */
  readonly #presence: Presence;
  #sweepTimer: ReturnType<typeof setTimeout> | undefined;
  #closing: Promise<void> | undefined;
  #accepted = 0;
  #refused = 0;
  #idleClosed = 0;

  /**
   * Creates an acceptor, validating its options.
   *
   * @param options See {@linkcode AcceptorOptions}.
   * @throws {TypeError} When `origins` is not `'*'`, a list of origins or a function, a
   * callback is not a function, or `presence.store` lacks a method.
   * @throws {RangeError} When `idleTimeoutMs` is not a finite number of at least 0 (or `false`),
   * a limit is invalid, or a `presence` duration is negative (`nodeTimeoutMs`: 0).
   */
  constructor(options: AcceptorOptions<Api, PeerData> = {}) {
    // Inside, a peer is the untyped `Peer`: `Api` and `PeerData` type only what the caller sees.
    const o = options as unknown as AcceptorOptions;
    const routes = checkedRoutes(o.routes, 'create Acceptor');
    // The plain codec, as connect()'s default: a bundle without `jsonCodec` has no strict codec.
    const codec: Codec = o.codec ?? JSON_CODEC;
    const protocol = subprotocol(codec);
    const limits: Readonly<Limits> = sessionLimits(o.limits);
    const origin = originCheck(o.origins);
    const checked = checkAcceptorOptions(o);
    this.#idleTimeoutMs = checked.idleTimeoutMs;
    this.#protocol = protocol;
    this.#onPeerClose = o.onPeerClose;
    this.#onError = o.onError;
    this.#authorize = o.authorize;
    const onStream: ((stream: Stream, peer: Peer) => unknown) | undefined = o.onStream;
    const onPeer: ((peer: Peer) => void) | undefined = o.onPeer;
    const onHello: ((hello: PeerHello, peer: Peer) => unknown) | undefined = o.onHello;
    const history = checkHistory(o.history);
    const report = (error: unknown, peer?: Peer) => this.#report(error, peer);
    const bounds = recoveryBounds(o.recovery);
    const recovery = history === undefined
      ? undefined
      : new Recovery({ codec, report }, history, bounds);
    this.#recovery = recovery;
    const presence = new Presence({ codec, peers: this.#peers, report }, checked.presence);
    this.#presence = presence;
    this.#host = {
      codec,
      limits,
      onStream,
      routes,
      onPeer,
      onHello,
      requireHello: checked.requireHello,
      helloTimeoutMs: checked.helloTimeoutMs,
      protocol,
      origin,
      closing: false,
      closeCode: undefined,
      closeSpreadMs: 0,
      report,
      recovery,
      admitted: (peer) => this.#broadcaster.admitted(peer),
      discarded: (count) => this.#broadcaster.discarded(count),
      index: (peer, tag) => this.#index(peer, tag),
      unindex: (peer, tag) => {
        this.#broadcaster.unindex(peer, tag);
        presence.lost(peer, tag);
      },
      ended: (peer, info) => this.#ended(peer, info),
      presence,
    };
    const backplane = o.backplane;
    const nodeId = o.nodeId ?? (backplane ? crypto.randomUUID() : '');
    this.#broadcaster = new Broadcaster(this.#host, this.#peers, backplane, nodeId, recovery);
    registerUpgradeCheck(
      this,
      (request) => this.#checkUpgrade(request),
      limits.maxMessageBytes,
      (sink, options) => this.#attach(sink, undefined, options, true),
    );
  }

  /** Counters: live peers, accepted, refused, idle-closed, delivered and dropped broadcasts. */
  get stats(): AcceptorStats {
    return {
      peers: this.#peers.size,
      accepted: this.#accepted,
      refused: this.#refused,
      idleClosed: this.#idleClosed,
      delivered: this.#broadcaster.delivered,
      dropped: this.#broadcaster.dropped,
    };
  }

  /**
   * Who is present per tag ({@linkcode AcceptorPresence}), kept in the `presence.store`; a
   * dialer holding the tag follows it with `presence()`. Nothing runs until the first track.
   */
  get presence(): AcceptorPresence<PresenceMetaOf<Api>, Peer<Api, PeerData>> {
    return this.#presence as unknown as AcceptorPresence<PresenceMetaOf<Api>, Peer<Api, PeerData>>;
  }

  /** True once {@linkcode Acceptor.close} was called. */
  get isClosing(): boolean {
    return this.#closing !== undefined;
  }

  /**
   * The subprotocol to select for an offer: exactly the muxws token
   * of this acceptor's codec when it is offered, never an extra token offered with it.
   *
   * @param offered The `Sec-WebSocket-Protocol` header value(s), comma-separated or as a list.
   * @returns The muxws token, or `undefined`: refuse the upgrade, open no socket.
   */
  protocol(offered: string | readonly string[] | null | undefined): string | undefined {
    return offers(offered, this.#protocol) ? this.#protocol : undefined;
  }

  /**
   * Decides an upgrade request before any socket exists. In order:
   * 426 when the request is not a WebSocket upgrade (`GET` with `Upgrade: websocket`), 503 once
   * {@linkcode Acceptor.close} began, 403 when its `Origin` is not allowed, 400 when the muxws
   * subprotocol is not offered; then the `authorize` option, when set: `false` refuses with 403,
   * a `Response` is the refusal as given, an object accepts with the peer's initial `data` and
   * `tags`, a throw refuses with 500 and goes to `onError`. An adapter hands what it accepted to
   * {@linkcode Acceptor.accept} or {@linkcode Acceptor.attach} as their options.
   *
   * @param request The incoming HTTP request.
   * @returns `{ protocol, data?, tags? }`, or the refusal `Response` to send as it is.
   */
  checkUpgrade(request: Request): Promise<UpgradeAccepted<PeerData> | Response> {
    return this.#checkUpgrade(request) as Promise<UpgradeAccepted<PeerData> | Response>;
  }

  /** {@linkcode Acceptor.checkUpgrade} over a `Request` or an adapter's request head. */
  async #checkUpgrade(request: Request | UpgradeHead): Promise<UpgradeAccepted | Response> {
    let decision = checkUpgrade(request, this.#host);
    if (!(decision instanceof Response) && this.#authorize !== undefined) {
      decision = await authorizeUpgrade(
        request,
        decision,
        this.#authorize,
        (error) => this.#report(error),
      );
    }
    if (decision instanceof Response) this.#refused++;
    return decision;
  }

  /**
   * Takes a standard server-side WebSocket and returns its {@linkcode Peer}. The
   * socket may still be connecting (Deno's socket until its 101 response is sent): `onPeer`
   * fires on `open`, and anything sent before is queued. Messages may be strings,
   * `ArrayBuffer`s, any `ArrayBufferView` (the `ws` package's `Buffer`) or `Blob`s; their order
   * is kept. A Workers `WebSocketPair` end must be `accept()`ed by the caller first. A `ws`
   * socket is listened to on its EventEmitter side, and gets an `error` listener, so an error
   * (a dialer's malformed frame) ends the peer through the close that follows it instead of
   * being thrown out of the process.
   *
   * @param socket The server side of an upgraded connection.
   * @param options The peer's initial `data` and `tags`: what {@linkcode Acceptor.checkUpgrade}
   * accepted.
   * @returns The new peer.
   * @throws {TypeError} For an invalid tag.
   */
  accept(socket: ServerWebSocket, options: AcceptOptions<PeerData> = {}): Peer<Api, PeerData> {
    try {
      if ('binaryType' in socket) socket.binaryType = 'arraybuffer';
    } catch {
      // a runtime that fixes binaryType still delivers something we read (Blob included)
    }
    const driver = socketDriver(socket);
    const link = this.#attach(
      socket,
      driver,
      { data: options.data as Record<string, unknown> | undefined, tags: options.tags },
      socket.readyState === 1,
    );
    driver.listen(socket, link);
    return this.#typed(link.peer);
  }

  /**
   * The push form of {@linkcode Acceptor.accept} for sockets that are not `WebSocket`s (Bun's
   * `ServerWebSocket`, Hono's `WSContext`, Durable Object hibernation handlers): call it when
   * the socket is open (`onPeer` fires before it returns), then feed the handle every message
   * and the close.
   *
   * @param sink How to send, close and read the send buffer.
   * @param options The initial `tags` and `data` (what {@linkcode Acceptor.checkUpgrade}
   * accepted), and a restored peer's `id`, `hello` and `nextStreamId`.
   * @returns The handle taking `message(data)`, `closed(code, reason)` and `drain()`.
   * @throws {TypeError} For an invalid tag. @throws {RangeError} For an invalid stream id.
   */
  attach(sink: PeerSink, options: AttachOptions<PeerData> = {}): AttachedPeer<Api, PeerData> {
    const link = this.#attach(sink, undefined, options as AttachOptions, true);
    // Plain functions, so the handle's methods may be called detached, as they always could.
    return {
      peer: this.#typed(link.peer),
      message: (data) => link.message(data),
      closed: (code, reason) => link.closed(code, reason),
      drain: () => link.drain(),
    };
  }

  /**
   * The live peers, optionally only those holding `tag`. A snapshot: peers that
   * join or leave while iterating do not affect it.
   *
   * @param tag Only peers holding this tag.
   */
  peers(tag?: string): IterableIterator<Peer<Api, PeerData>> {
    const peers = tag === undefined ? this.#peers : this.#broadcaster.tagged(tag) ?? [];
    return [...peers].values() as IterableIterator<unknown> as IterableIterator<
      Peer<Api, PeerData>
    >;
  }

  /** A peer as the application sees it: typed by `Api` and `PeerData`. */
  #typed(peer: PeerImpl): Peer<Api, PeerData> {
    return peer as unknown as Peer<Api, PeerData>;
  }

  /**
   * Sends one PUBLISH frame, encoded once, to every live peer holding `tag`, except the peers
   * `except` names and those holding a tag it names. A peer whose socket is over `highWaterMark` is
   * skipped and counted in `stats.dropped`, so a slow peer never stalls a broadcast. Only
   * accepted peers are reached: with `requireHello`, a peer whose hello has not arrived, or was
   * refused, is sent nothing; one whose `onHello` still runs gets the frame right after its
   * welcome. With a
   * `backplane`, the same encoded frame is then published to the other nodes, which send it to
   * their own tagged peers; a backplane failure goes to `onError` and never stops the local
   * delivery.
   *
   * @param tag The tag to reach, 1 to 256 characters; the dialer receives it in `onPublish`.
   * @param payload The message; encoded once by the codec.
   * @param options `headers` of the frame; `except`: tags and peers to leave out (only the tags
   * reach other nodes, since a peer lives on one node).
   * @returns How many local peers it was handed to (other nodes count theirs in their stats).
   * @throws {TypeError} (as a rejection) When `tag` or an `except` tag is not a valid tag, or an
   * `except` entry is neither a tag nor a peer.
   */
  broadcast(
    tag: string,
    payload: unknown,
    options: BroadcastOptions<Api, PeerData> = {},
  ): Promise<number> {
    try {
      checkTag('Cannot broadcast', tag);
      const checked = options as unknown as BroadcastOptions;
      return Promise.resolve(this.#broadcaster.broadcast(tag, payload, checked));
    } catch (error) {
      return Promise.reject(error);
    }
  }

  /**
   * {@linkcode Acceptor.broadcast} to every live peer, whatever its tags, and with
   * a backplane to every peer of every node; as with `broadcast`, only accepted peers are reached
   * (none whose required hello is still to come, or was refused). The dialer receives it in `onPublish` with the tag
   * `options.tag` (default `'*'`); `except` leaves out tags and peers as in `broadcast`.
   *
   * @example Everyone but the sender
   * ```ts
   * import { Acceptor } from '@muxws/core/acceptor';
   * import assert from 'node:assert/strict';
   *
   * const acceptor = new Acceptor({ idleTimeoutMs: 0 });
   * const sent: unknown[][] = [[], []];
   * const [a, b] = sent.map((box) =>
   *   acceptor.attach({ send: (data) => box.push(JSON.parse(String(data))), close() {} })
   * );
   * assert.equal(await acceptor.broadcastAll('deploying', { except: [a.peer] }), 1);
   * assert.deepEqual(sent, [[], [[9, '*', null, 'deploying']]]);
   * assert.equal(b.peer.isClosed, false);
   * await acceptor.close();
   * ```
   *
   * @param payload The message; encoded once by the codec.
   * @param options `tag` the dialers see, `headers` of the frame, `except` tags and peers.
   * @returns How many local peers it was handed to.
   * @throws {TypeError} (as a rejection) As {@linkcode Acceptor.broadcast} does.
   */
  broadcastAll(
    payload: unknown,
    options: BroadcastAllOptions<Api, PeerData> = {},
  ): Promise<number> {
    try {
      return Promise.resolve(
        this.#broadcaster.broadcast(undefined, payload, options as unknown as BroadcastAllOptions),
      );
    } catch (error) {
      return Promise.reject(error);
    }
  }

  /**
   * {@linkcode Acceptor.broadcast} of the event `name`: the frame carries the name in the
   * reserved header `:event`, which the dialer's `on(connection, name, handler)` handles (with
   * no handler, `onPublish` gets it, `message.event` naming it). `except`, `history` (replayed
   * with its name), the backplane and the native publish work as for any broadcast. The
   * example of `on()` (entry `.`) shows both sides.
   *
   * @param tag The tag to reach, 1 to 256 characters.
   * @param name One of `Api[':events']`: 1 to 256 characters, not starting with `:`.
   * @param payload Its payload, as `Api[':events'][name]` types it; encoded once.
   * @param options `headers` of the frame (beside `:event`), `except` tags and peers.
   * @returns How many local peers it was handed to.
   * @throws {TypeError} (as a rejection) For a bad name, and as `broadcast` does.
   */
  emit<E extends EventName<Api>>(
    tag: string,
    name: E,
    payload: EventPayload<Api, E>,
    options: BroadcastOptions<Api, PeerData> = {},
  ): Promise<number> {
    try {
      checkTag('Cannot emit', tag);
      const event = checkEventName(name);
      const checked = options as unknown as BroadcastOptions;
      return Promise.resolve(this.#broadcaster.broadcast(tag, payload, checked, event));
    } catch (error) {
      return Promise.reject(error);
    }
  }

  /**
   * {@linkcode Acceptor.broadcastAll} of the event `name`, as {@linkcode Acceptor.emit} is for
   * a tag: the dialers receive it with the tag `options.tag` (default `'*'`); no `history` logs it.
   *
   * @returns How many local peers it was handed to.
   * @throws {TypeError} (as a rejection) As {@linkcode Acceptor.emit} does.
   */
  emitAll<E extends EventName<Api>>(
    name: E,
    payload: EventPayload<Api, E>,
    options: BroadcastAllOptions<Api, PeerData> = {},
  ): Promise<number> {
    try {
      const event = checkEventName(name);
      const checked = options as unknown as BroadcastAllOptions;
      return Promise.resolve(this.#broadcaster.broadcast(undefined, payload, checked, event));
    } catch (error) {
      return Promise.reject(error);
    }
  }

  /**
   * Closes every peer gracefully: sends GOAWAY carrying `spreadMs`, refuses new
   * streams and upgrades, closes each peer with `code` as soon as its in-flight streams have
   * finished (an idle peer at once), and the rest when `drainMs` runs out. Resolves when every
   * peer is closed; calling it again returns the same promise. With the default `spreadMs`,
   * 1,000 dialers redial at about 100 per 100 ms rather than all at once. GOAWAY goes out to 100
   * peers per turn of the event loop, so a server taking the redials keeps accepting meanwhile.
   *
   * @param options `code`, `drainMs`, `spreadMs`.
   * @throws {RangeError} (as a rejection) For a code an acceptor may not send, or a negative
   * or non-finite `drainMs` or `spreadMs`.
   */
  close(options: AcceptorCloseOptions = {}): Promise<void> {
    if (this.#closing) return this.#closing;
    const what = 'Cannot close Acceptor';
    const { code = CloseCode.ServiceRestart, drainMs = 5000, spreadMs = 1000 } = options;
    try {
      checkClose(what, code, '');
      checkMs(what, 'drainMs', drainMs);
      checkMs(what, 'spreadMs', spreadMs);
    } catch (error) {
      return Promise.reject(error);
    }
    this.#host.closing = true;
    this.#host.closeCode = code;
    this.#host.closeSpreadMs = Math.floor(spreadMs);
    // Peers still draining keep receiving other nodes' broadcasts; then the subscription ends.
    // Then the presences of this node become orphans in grace, and the store lets it go.
    this.#closing = drain(this.#host, [...this.#peers], code, drainMs, Math.floor(spreadMs))
      .finally(() => this.#presence.close())
      .finally(() => this.#broadcaster.unsubscribe());
    return this.#closing;
  }

  /** `await using acceptor = new Acceptor(...)`: {@linkcode Acceptor.close} with the defaults. */
  [Symbol.asyncDispose](): Promise<void> {
    return this.close();
  }

  #attach(
    transport: PeerSink | ServerWebSocket,
    driver: SocketDriver | undefined,
    options: AttachOptions,
    open: boolean,
  ): PeerLink {
    const link = new PeerLink(this.#host, transport, driver, options);
    const peer = link.peer;
    this.#accepted++;
    this.#peers.add(peer);
    for (const tag of peer.tags) this.#index(peer, tag);
    peer.tags.bind(link);
    this.#armSweep();
    if (open) link.announce();
    return link;
  }

  /** `peer` holds `tag`: index it, and with recovery tell the peer the tag's position. */
  #index(peer: PeerImpl, tag: string): void {
    this.#broadcaster.index(peer, tag);
    this.#recovery?.gained(peer, tag);
  }

  #ended(peer: PeerImpl, info: PeerCloseInfo): void {
    if (!peer.ended(info)) return;
    this.#peers.delete(peer);
    peer.tags.bind(undefined);
    for (const tag of peer.tags) this.#broadcaster.unindex(peer, tag);
    this.#broadcaster.release(peer);
    this.#recovery?.ended(peer);
    this.#presence.ended(peer);
    if (this.#peers.size === 0) this.#disarmSweep();
    if (!peer.announced) return;
    callContained((error) => this.#report(error, peer), this.#onPeerClose, peer, info);
  }

  /** Arms the idle sweep for the earliest deadline, when peers exist and the sweep is on. */
  // An armed sweep is never later than a new peer's deadline (it was computed from an earlier
  // activity), so accepting a peer costs nothing here; only a sweep scans the peers.
  #armSweep(): void {
    if (this.#idleTimeoutMs <= 0 || this.#peers.size === 0 || this.#sweepTimer !== undefined) {
      return;
    }
    let earliest = Infinity;
    for (const peer of this.#peers) earliest = Math.min(earliest, peer.lastActivityAt);
    const at = earliest + this.#idleTimeoutMs;
    this.#sweepTimer = setTimeout(() => this.#sweep(), Math.max(0, at - Date.now()));
  }

  #disarmSweep(): void {
    if (this.#sweepTimer !== undefined) clearTimeout(this.#sweepTimer);
    this.#sweepTimer = undefined;
  }

  #sweep(): void {
    this.#sweepTimer = undefined;
    const now = Date.now();
    for (const peer of [...this.#peers]) {
      if (peer.isClosed || peer.lastActivityAt + this.#idleTimeoutMs > now) continue;
      this.#idleClosed++;
      peer.session.close(CloseCode.Idle, 'idle timeout');
    }
    this.#armSweep();
  }

  #report(error: unknown, peer?: Peer): void {
    reportTo(this.#onError, error, peer);
  }
}

/**
 * Drains `peers` for {@linkcode Acceptor.close}: GOAWAY to each, then its close once its streams
 * finished (an idle peer at once) or `drainMs` ran out.
 */
async function drain(
  host: PeerHost,
  peers: PeerImpl[],
  code: number,
  drainMs: number,
  spreadMs: number,
): Promise<void> {
  if (peers.length === 0) return;
  let timer: ReturnType<typeof setTimeout> | undefined;
  const deadline = new Promise<void>((resolve) => timer = setTimeout(resolve, drainMs));
  const drainPeer = async (peer: PeerImpl) => {
    if (peer.isClosed) return;
    sayGoAway(host, peer, code, spreadMs);
    await Promise.race([idle(peer.session), deadline, peer.closed]);
    if (!peer.isClosed) peer.session.close(code, closingTerms(code).reason);
    await peer.closed;
  };
  try {
    // GOAWAY and the close of idle peers go out DRAIN_SLICE peers per turn of the event loop,
    // so the loop keeps taking redials meanwhile (docs/performance.md, "Herd").
    const drained: Promise<void>[] = [];
    for (let i = 0; i < peers.length; i += DRAIN_SLICE) {
      if (i > 0) await new Promise((resolve) => setTimeout(resolve, 0));
      for (const peer of peers.slice(i, i + DRAIN_SLICE)) drained.push(drainPeer(peer));
    }
    await Promise.all(drained);
  } finally {
    clearTimeout(timer);
  }
}

/** The `history` option: undefined, or an object with `append()`, `head()` and `range()`. */
function checkHistory(history: unknown): History | undefined {
  if (history === undefined) return undefined;
  const h = history as Partial<History> | null;
  if (
    h === null || typeof h !== 'object' || typeof h.append !== 'function' ||
    typeof h.head !== 'function' || typeof h.range !== 'function'
  ) {
    throw new TypeError(
      `Cannot create Acceptor as "history" must have append(), head() and range(): current value is ${
        describe(history)
      }`,
    );
  }
  return h as History;
}
