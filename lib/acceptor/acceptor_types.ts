/**
 * The acceptor's public types: its options, the {@linkcode Peer}, the sinks and sockets an
 * adapter hands over, and the options and results of the acceptor's methods. It imports none of
 * the acceptor's parts, so every part can import it; `lib/acceptor/acceptor.ts` re-exports it whole, and
 * the `./acceptor` entry shows these symbols.
 *
 * @module
 */
import type { Codec } from '../wire/codec.ts';
import type { Limits } from '../session/limits.ts';
import type { Stream } from '../session/stream.ts';
import type { Backplane } from '../broadcast/backplane.ts';
import type { History } from '../broadcast/history.ts';
import type { PresenceStore } from '../broadcast/presence.ts';
import type {
  ApiSpec,
  Caller,
  EventName,
  EventPayload,
  HelloOf,
  RouteContext,
  Routes,
  WelcomeOf,
} from '../routes/api.ts';

/**
 * Which `Origin` an upgrade may come from:
 * - `'*'`: any origin, and requests without one;
 * - a list of origins such as `'https://app.example'`: a request whose `Origin` is one of them
 *   (compared as URL origins, so case and default ports do not matter), or that has none;
 * - a predicate, called with the `Origin` header (`null` when absent) and the request.
 *
 * The default (no `origins` option) allows requests without an `Origin` header (non-browser
 * dialers) and requests whose `Origin` host equals the request's `Host`. That stops a page of
 * another site from opening a socket with your users' cookies, but it trusts the `Host` header,
 * which a DNS-rebinding page sets: a page at `http://attacker.example:8080` whose name is made to
 * point at your server sends `Origin` and `Host` of that same name, and passes. Such a page gets
 * none of your site's cookies, so the default is enough where `authorize` or the hello checks a
 * credential; list your pages' origins whenever browsers connect and the network alone decides
 * who may (a service on localhost or an internal address), or refuse every browser with
 * `(origin) => origin === null`.
 */
export type OriginPolicy =
  | '*'
  | readonly string[]
  | ((origin: string | null, request: Request) => boolean);

/** What a peer's close reported: the close code and reason. */
export interface PeerCloseInfo {
  /** The close code (1006 when the transport reported none). */
  code: number;
  /** The close reason. */
  reason: string;
}

/**
 * The dialer's hello as the acceptor received it: the payload and headers of its
 * OPEN of stream 1. {@linkcode Peer.hello} holds it, frozen, once it was accepted.
 */
export interface PeerHello<Payload = unknown> {
  /** The hello's payload. */
  readonly payload: Payload;
  /** The hello's headers, `null` when none were sent. */
  readonly headers: Readonly<Record<string, unknown>> | null;
}

/** What `authorize` passes beside the request. */
export interface AuthorizeInfo {
  /** The `Sec-WebSocket-Protocol` tokens the request offered, in order. */
  readonly protocols: readonly string[];
}

/**
 * An upgrade `authorize` accepted with state for the peer: its initial `data` and `tags`.
 */
export interface Authorized<PeerData = Record<string, unknown>> {
  /** The peer's initial `data`. @default {{}} */
  data?: PeerData;
  /** The peer's initial tags, each 1 to 256 characters. */
  tags?: Iterable<string>;
}

/**
 * What `authorize` decides: `true` accepts, `false` refuses with 403, a `Response` is the
 * refusal as given, an {@linkcode Authorized} object accepts and seeds the peer.
 */
export type AuthorizeResult<PeerData = Record<string, unknown>> =
  | boolean
  | Response
  | Authorized<PeerData>;

/**
 * The options of {@linkcode Acceptor}. Every field is optional. `Api` types `routes` (and the
 * routes `peer.call()` reaches on the dialer), `PeerData` the peers' `data`.
 */
export interface AcceptorOptions<Api = ApiSpec, PeerData = Record<string, unknown>> {
  /**
   * The codec of every peer; the acceptor selects the subprotocol `muxws.v1.<codec.name>`.
   *
   * @default {jsonCodec}
   */
  codec?: Codec;
  /** Per-connection limits; missing fields take the defaults of `DEFAULT_LIMITS`. */
  limits?: Partial<Limits>;
  /**
   * The `Origin` policy of {@linkcode Acceptor.checkUpgrade}: list the origins your pages are
   * served from when browsers connect, as the default trusts the `Host` header, which a
   * DNS-rebinding page controls (see {@linkcode OriginPolicy}).
   *
   * @default {undefined} no `Origin`, or an `Origin` whose host equals the request's `Host`
   */
  origins?: OriginPolicy;
  /**
   * A peer from which nothing arrived for this long is closed with 1001. `0` or
   * `false` disables the sweep (a Durable Object that must hibernate; its platform ends dead
   * sockets).
   *
   * @default {60000}
   */
  idleTimeoutMs?: number | false;
  /**
   * Runs once per stream a dialer opens. Its return value is sent with END, a throw resets the
   * stream. With `routes`, only streams whose OPEN carries no `:route` come
   * here. Not set: every such stream is refused with `refused`.
   */
  onStream?: (stream: Stream, peer: Peer<Api, PeerData>) => unknown;
  /**
   * Runs for the dialer's hello, the OPEN of stream 1 with the HELLO flag. Its
   * return value (or what its promise resolves to) is sent as the last message with END: the
   * dialer's `welcome`; the hello is then acknowledged and stays readable as `peer.hello`. A
   * throw or rejection resets stream 1 (a `StreamError` with its code, message and `issues`, not
   * reported to `onError`; anything else with `internal`, reported), which the dialer reports as
   * `HelloRejectedError`, and then closes the peer with 1000 `hello rejected`: the dialer's next
   * attempt (with fresh credentials from its hello function) is a new peer. Not set: the hello
   * goes to `onStream` with `stream.isHello`.
   *
   * Broadcasts that reach the peer while it runs (to a tag it just added, or `broadcastAll`) wait,
   * at most 4096 of them and 1 MiB, and are sent right after the welcome, in order; past that
   * they are dropped and counted in `stats.dropped`. A refused peer is sent none of them.
   */
  onHello?: (
    hello: PeerHello<HelloOf<Api>>,
    peer: Peer<Api, PeerData>,
  ) => WelcomeOf<Api> | Promise<WelcomeOf<Api>>;
  /**
   * Until the hello is acknowledged, every other OPEN is reset with `hello_required` and never
   * reaches a handler, and a peer that sends no hello within `helloTimeoutMs` of opening is
   * closed with 1008 `hello required`. Needs `onHello`. Until its hello arrives, such a peer is
   * sent no broadcast, and `broadcastAll` leaves it out too.
   *
   * @default {true when onHello is set}
   */
  requireHello?: boolean;
  /**
   * How long a peer may take to send its hello when one is required, from its socket's open.
   *
   * @default {10000}
   */
  helloTimeoutMs?: number;
  /**
   * Decides an upgrade before any socket exists, inside
   * {@linkcode Acceptor.checkUpgrade} after the origin and subprotocol checks: `true` accepts,
   * `false` refuses with 403, a `Response` is the refusal as given, an object accepts and seeds
   * the peer's `data` and tags. A throw or rejection refuses with 500 and reaches `onError`.
   * Browsers see every refused upgrade as a close with 1006 and no status, so a refusal a
   * browser user must be told about belongs in `onHello`.
   */
  authorize?: (
    request: Request,
    info: AuthorizeInfo,
  ) => AuthorizeResult<PeerData> | Promise<AuthorizeResult<PeerData>>;
  /**
   * The routes this acceptor serves: each route name maps to a handler `(input,
   * ctx) => output`, an async generator of messages, or a route with Standard Schemas (as
   * `route()` makes it, or `{ input?, upload?, handler }`); `ctx` holds `peer`, `stream`,
   * `headers`, `signal` and `lastEventId` (the id of the last `tracked()` message a re-opened
   * subscription received). A stream whose OPEN header `:route` names one is served by it; one
   * naming no route is reset with `not_found`, an input or upload its schema refuses with
   * `invalid`, and an output or message its schema refuses with `internal` (the error goes to
   * `onError`). Checked at construction (`TypeError`).
   */
  routes?: Routes<Api, RouteContext<Peer<Api, PeerData>>>;
  /** A socket opened: the peer exists, before any of its streams. */
  onPeer?: (peer: Peer<Api, PeerData>) => void;
  /** A peer's session ended, for any reason; its streams have already failed. */
  onPeerClose?: (peer: Peer<Api, PeerData>, info: PeerCloseInfo) => void;
  /**
   * Contained errors: malformed frames, failed handlers, callbacks that throw or return a
   * promise that rejects, backplane failures. An `onError` that throws or rejects is reported to
   * `console.error`; without `onError`, errors go to `console.error`.
   */
  onError?: (error: unknown, peer?: Peer<Api, PeerData>) => void;
  /**
   * Carries every broadcast to the acceptor nodes sharing it, and theirs to this node's peers. Give each acceptor its own backplane object; the application closes it after
   * {@linkcode Acceptor.close}.
   */
  backplane?: Backplane;
  /**
   * This node's id in backplane messages; a node ignores messages carrying its own.
   *
   * @default {crypto.randomUUID()} drawn in the constructor when a backplane is set
   */
  nodeId?: string;
  /**
   * The broadcast log that lets a dialer recover what it missed while reconnecting: every
   * broadcast to a tag is appended first and carries the tag's sequence number; a peer that
   * gains a tag is told its position; a redialled peer whose hello names its positions (a dialer
   * given `recovery: recovery()`, imported from `@muxws/core`) is replayed what came after them
   * before any live broadcast of those tags. `memoryHistory()` keeps one node's log; `redisHistory()` (entry `./redis`) one
   * shared by every node. Without it nothing of this happens or costs anything.
   *
   * @example Each broadcast to a tag carries its number in `:seq`
   * ```ts
   * import { Acceptor, memoryHistory } from '@muxws/core/acceptor';
   * import assert from 'node:assert/strict';
   *
   * const acceptor = new Acceptor({ idleTimeoutMs: 0, history: memoryHistory() });
   * const sent: unknown[] = [];
   * acceptor.attach({ send: (data) => sent.push(JSON.parse(String(data))), close() {} }, {
   *   tags: ['room'],
   * });
   * await acceptor.broadcast('room', 'hi');
   * await acceptor.broadcast('room', 'again');
   * // Where the tag stood when the peer joined it: nothing logged yet.
   * const [, tag, position] = sent[0] as [number, string, Record<string, unknown>, null];
   * assert.equal(tag, 'room');
   * assert.equal(position[':seq'], 0);
   * assert.equal(position[':position'], true);
   * const [first, second] = sent.slice(1) as [number, string, { ':seq': number }, string][];
   * assert.equal(second[2][':seq'], first[2][':seq'] + 1); // one more per broadcast
   * assert.deepEqual([first[3], second[3]], ['hi', 'again']);
   * await acceptor.close();
   * ```
   */
  history?: History;
  /**
   * With `history`, how much recovery may hold and replay for one peer: the live broadcasts held
   * while its tags wait for their position or replay, the entries one resume replays, and how
   * long its recovery may wait for its socket.
   */
  recovery?: RecoveryOptions;
  /**
   * Who is present per tag ({@linkcode Acceptor.presence}): where the presences are kept, how
   * long a closed peer's stay, and how changes are gathered. Without it `acceptor.presence` still
   * works, on this node alone.
   */
  presence?: PresenceOptions;
}

/**
 * The options of the acceptor's presence (its `presence` option).
 *
 * With the defaults a heartbeat goes to a shared store every 2000 ms (10000 / 5), a node silent
 * for 6000 ms (3/5 of 10000) is dead, and its presences are gone within 8000 ms, plus delivery.
 *
 * @example Presences kept 2 seconds after their peer closed
 * ```ts
 * import { Acceptor, memoryPresence, type PresenceOptions } from '@muxws/core/acceptor';
 *
 * const presence: PresenceOptions = { store: memoryPresence(), graceMs: 2000 };
 * const acceptor = new Acceptor({ idleTimeoutMs: 0, presence });
 * await acceptor.close();
 * ```
 */
export interface PresenceOptions {
  /**
   * Where the presences are kept: one store shared by every node that should see the same
   * presences (`redisPresence()` from `./redis` across processes).
   *
   * @default {memoryPresence()} this acceptor's alone
   */
  store?: PresenceStore;
  /**
   * How long, in milliseconds, the presences of a closed peer stay: a track of the same key and
   * tag within it, on any node sharing the store, takes the presence over with no leave and no
   * join.
   *
   * @default {5000}
   */
  graceMs?: number;
  /**
   * How long, in milliseconds, a node may fail to beat before another removes its presences: a
   * node beats every fifth of it, when the store has heartbeats, and is dead after 3/5 of it.
   *
   * @default {10000}
   */
  nodeTimeoutMs?: number;
  /**
   * How long, in milliseconds, changes are gathered into one call to the store and one diff frame
   * per tag.
   *
   * @default {50}
   */
  batchMs?: number;
}

/**
 * Who is present per tag (`acceptor.presence`): each peer has at most one presence per tag, a
 * `key` (who: a user id) with a JSON `meta` (a tab, a status). Peers of one key form one entry of
 * {@linkcode AcceptorPresence.list}; a dialer that holds the tag follows the same state with
 * `presence()` from `@muxws/core`. Changes are gathered for `batchMs` and reach `list()` once the
 * store echoed them: call {@linkcode AcceptorPresence.flush} to wait for them.
 *
 * A closed peer's presences stay `graceMs`, so a redial (to any node sharing the store) takes
 * them over unseen. {@linkcode AcceptorPresence.untrack} leaves at once.
 *
 * @example Two tabs of one user are one key
 * ```ts
 * import { Acceptor } from '@muxws/core/acceptor';
 * import assert from 'node:assert/strict';
 *
 * type Api = { ':presence': { tab: number } };
 * const acceptor = new Acceptor<Api>({ idleTimeoutMs: 0 });
 * const sink = { send() {}, close() {} };
 * const [a, b] = [acceptor.attach(sink).peer, acceptor.attach(sink).peer];
 * acceptor.presence.track(a, 'room:1', 'ada', { tab: 1 });
 * acceptor.presence.track(b, 'room:1', 'ada', { tab: 2 });
 * await acceptor.presence.flush();
 * assert.deepEqual(acceptor.presence.list('room:1'), { ada: [{ tab: 1 }, { tab: 2 }] });
 * acceptor.presence.untrack(b, 'room:1');
 * await acceptor.presence.flush();
 * assert.deepEqual(acceptor.presence.list('room:1'), { ada: [{ tab: 1 }] });
 * await acceptor.close();
 * ```
 */
export interface AcceptorPresence<Meta = unknown, P = Peer> {
  /**
   * Tracks `peer` as `key` in `tag`, with `meta`; again for the same peer and tag, changes its
   * meta (or its key). A closed peer is ignored.
   *
   * @param peer A peer of this acceptor.
   * @param tag The tag, 1 to 256 characters.
   * @param key Who is present: 1 to 256 characters.
   * @param meta What the followers see of this presence: JSON of at most 4096 characters.
   * @throws {TypeError} For a bad tag or key, a meta that is not JSON (naming the path), or a
   * `peer` that is not a peer.
   * @throws {RangeError} For a meta longer than 4096 characters once encoded as JSON.
   */
  track(peer: P, tag: string, key: string, meta: Meta): void;
  /**
   * Ends the presence of `peer` in `tag` at once, with no grace; nothing when it has none.
   *
   * @throws {TypeError} For a bad tag.
   */
  untrack(peer: P, tag: string): void;
  /**
   * This node's view of `tag`: per key, the metas of its presences on every node sharing the
   * store, as far as their changes have arrived here.
   *
   * @throws {TypeError} For a bad tag.
   */
  list(tag: string): Record<string, Meta[]>;
  /**
   * Resolves once the changes made so far are in the store and in this node's `list()`. It reads
   * the whole table from the store: for a test or one change that must show, not every request.
   */
  flush(): Promise<void>;
  /**
   * Resolves once the store is open and loaded here (in a Durable Object, await it in
   * `blockConcurrencyWhile`); rejects with the store's error.
   */
  ready(): Promise<void>;
}

/**
 * The bounds of recovery for one peer (the acceptor's `recovery` option, with `history`). A peer
 * that passes `maxHeldBytes` or `stallTimeoutMs` is closed with 1013; its dialer redials and
 * resumes from what it had, so nothing it missed is lost while the log still holds it.
 *
 * @example Half the held bytes, and a replay of at most 1,000 entries
 * ```ts
 * import { Acceptor, memoryHistory, type RecoveryOptions } from '@muxws/core/acceptor';
 *
 * const recovery: RecoveryOptions = { maxHeldBytes: 2 * 1024 * 1024, maxReplay: 1000 };
 * const acceptor = new Acceptor({ idleTimeoutMs: 0, history: memoryHistory(), recovery });
 * await acceptor.close();
 * ```
 */
export interface RecoveryOptions {
  /**
   * Bytes of live broadcasts held for one peer while its tags wait for their position or
   * replay (each counted at its encoded size); one more closes the peer with 1013.
   *
   * @default {4194304}
   */
  maxHeldBytes?: number;
  /**
   * Entries one resume replays, all its tags together; where entries are left past it, the
   * replay of that tag ends with `gap: true` and the tags after it replay nothing (`gap: true`
   * where their log held something after the position).
   *
   * @default {10000}
   */
  maxReplay?: number;
  /**
   * How long, in milliseconds, a peer's recovery (its replay, or the broadcasts held for it) may
   * wait for its socket's `bufferedAmount` to fall to `highWaterMark`, without a break; past it
   * the peer is closed with 1013.
   *
   * @default {30000}
   */
  stallTimeoutMs?: number;
}

/**
 * One accepted socket. Created by {@linkcode Acceptor.accept} or
 * {@linkcode Acceptor.attach}, never constructed directly. As a {@linkcode Caller} it opens
 * streams, sends requests and calls routes on the dialer (its `routes` option): `Api` types
 * those routes, `PeerData` its `data`. It throws `NotConnectedError` from `open()` and
 * `stream()`, and rejects with it from `request()` and `call()`, after it closed or after a
 * GOAWAY from the dialer.
 */
export interface Peer<Api = ApiSpec, PeerData = Record<string, unknown>> extends Caller<Api> {
  /** A random id from `crypto.randomUUID()`. */
  readonly id: string;
  /**
   * The peer's tags, for {@linkcode Acceptor.peers} and {@linkcode Acceptor.broadcast}. Starts
   * empty. `add()` throws `TypeError` for anything but a string of 1 to 256 characters.
   */
  readonly tags: Set<string>;
  /** Application state; starts `{}`, or what `authorize` returned as `data`. */
  data: PeerData;
  /**
   * The dialer's hello once `onHello` accepted it: its payload and headers as they were decoded,
   * frozen all the way down (no second copy is kept); `undefined` before, and without `onHello`.
   */
  readonly hello: PeerHello<HelloOf<Api>> | undefined;
  /** True once the peer's session has ended. */
  readonly isClosed: boolean;
  /**
   * The id the next stream opened to the dialer will take. An adapter that restores peers over
   * sockets that outlive them (a Durable Object) saves it and passes it back through
   * {@linkcode AttachOptions.nextStreamId}.
   */
  readonly nextStreamId: number;
  /**
   * Closes the socket. Idempotent.
   *
   * @param code 1000–1003, 1007–1014 or 3000–4999. Default 1000.
   * @param reason At most 123 UTF-8 bytes. Default `''`.
   * @throws {RangeError} For any other code or a longer reason, before anything is sent.
   */
  close(code?: number, reason?: string): void;
  /** Resolves once the peer's session has ended, with the close code and reason. */
  readonly closed: Promise<PeerCloseInfo>;
  /**
   * Sends the event `name` (one of `Api[':events']`) to this peer alone: a PUBLISH with the tag
   * `'*'` (or `options.tag`) whose reserved header `:event` carries the name, which the dialer's
   * `on(connection, name, handler)` receives. It is not a broadcast: no `history` logs it (so a
   * redialled dialer is not replayed it), no backplane carries it, and `stats` do not count it.
   * Sent before the peer's hello is acknowledged, it waits and follows the welcome, when
   * `onHello` is set and the hello is required (the default); with `requireHello: false`, one
   * sent before any hello arrived goes out at once, as the dialer may send none, and one sent
   * while `onHello` runs waits. At most 4096 frames or 1 MiB wait, together with the broadcasts
   * that wait for the same peer.
   *
   * @param name The event's name: 1 to 256 characters, not starting with `:`.
   * @param payload The event's payload, as `Api[':events'][name]` types it.
   * @param options `tag` the dialer sees, `headers` of the frame.
   * @returns True when it was handed to the socket (or waits for the welcome); false, sending
   * nothing, when the peer has ended, its socket is over `highWaterMark`, its hello was refused,
   * or the frames waiting for its welcome are at their cap.
   * @throws {TypeError} For a bad name, tag or headers, or a payload the codec cannot encode.
   */
  emit<E extends EventName<Api>>(
    name: E,
    payload: EventPayload<Api, E>,
    options?: EmitOptions,
  ): boolean;
}

/** The options of {@linkcode Peer.emit}. */
export interface EmitOptions {
  /** The PUBLISH frame's headers, beside `:event`. @default {null} */
  headers?: Record<string, unknown> | null;
  /** The tag the dialer receives the event with. @default {'*'} */
  tag?: string;
}

/**
 * The socket side of {@linkcode Acceptor.attach}: what the acceptor calls to send and close.
 * `bufferedAmount`, when present, is read for backpressure (`highWaterMark`).
 */
export interface PeerSink {
  /** Sends one WebSocket message: text for a string, binary for bytes. */
  send(data: string | Uint8Array): void;
  /** Closes the socket with a code and reason. */
  close(code: number, reason: string): void;
  /** Bytes queued but not yet sent. */
  readonly bufferedAmount?: number;
}

/** The data a WebSocket message event may carry, as the adapters receive it. */
export type IncomingData = string | ArrayBuffer | ArrayBufferView | Blob;

/** The handle {@linkcode Acceptor.attach} returns: the adapter feeds it the socket's events. */
export interface AttachedPeer<Api = ApiSpec, PeerData = Record<string, unknown>> {
  /** The peer of this socket. */
  readonly peer: Peer<Api, PeerData>;
  /** One received message. Blobs are read in order: later messages wait for them. */
  message(data: IncomingData): void;
  /** The socket closed. A missing or 0 code counts as 1006. Idempotent. */
  closed(code?: number, reason?: string): void;
  /** The socket's send buffer drained (Bun's `drain`): waiting writes re-check. */
  drain(): void;
}

/**
 * The peer's initial state, for {@linkcode Acceptor.accept} and {@linkcode Acceptor.attach}: what
 * `authorize` returned ({@linkcode UpgradeAccepted}), so an adapter passes it on.
 */
export interface AcceptOptions<PeerData = Record<string, unknown>> {
  /** The peer's initial tags. */
  tags?: Iterable<string>;
  /** The peer's initial `data`. */
  data?: PeerData;
}

/**
 * Options of {@linkcode Acceptor.attach}, for an adapter that restores a peer (a Durable Object
 * woken from hibernation).
 */
export interface AttachOptions<PeerData = Record<string, unknown>> extends AcceptOptions<PeerData> {
  /** The peer's id instead of a fresh `crypto.randomUUID()`. */
  id?: string;
  /**
   * A restored peer's accepted hello ({@linkcode Peer.hello}): the peer needs none again, and
   * no hello timer is armed.
   */
  hello?: PeerHello;
  /**
   * The id of the next stream the acceptor opens to this dialer: the restored peer's
   * {@linkcode Peer.nextStreamId}, so its streams keep rising over the same socket. @default {2}
   */
  nextStreamId?: number;
}

/**
 * The server-side WebSocket surface {@linkcode Acceptor.accept} uses: the WHATWG `WebSocket`
 * (Deno, a Workers `WebSocketPair` end after `accept()`) or the `ws` package's `WebSocket`.
 */
export interface ServerWebSocket {
  /** 0 connecting, 1 open, 2 closing, 3 closed. */
  readonly readyState: number;
  /** Set to `'arraybuffer'` by `accept()` when present. */
  binaryType?: string;
  /** Bytes queued but not yet sent. */
  readonly bufferedAmount?: number;
  /** Sends one message. */
  send(data: string | Uint8Array): void;
  /** Closes the socket. */
  close(code?: number, reason?: string): void;
  /** Adds a listener for `open`, `message`, `close` or `error`. */
  addEventListener(type: 'open' | 'message' | 'close' | 'error', listener: SocketListener): void;
  /** Removes a listener. */
  removeEventListener(
    type: 'open' | 'message' | 'close' | 'error',
    listener: SocketListener,
  ): void;
}

/**
 * A listener {@linkcode Acceptor.accept} registers: it reads `data` from message events and
 * `code` and `reason` from close events. Its event is `any` so that sockets whose event types
 * differ from the DOM's (the `ws` package's) fit {@linkcode ServerWebSocket}.
 */
// deno-lint-ignore no-explicit-any
export type SocketListener = (event: any) => void;

/** What {@linkcode Acceptor.checkUpgrade} returns for an upgrade it accepts. */
export interface UpgradeAccepted<PeerData = Record<string, unknown>>
  extends AcceptOptions<PeerData> {
  /** The subprotocol to select: exactly the muxws token. */
  protocol: string;
}

/** The options of {@linkcode Acceptor.broadcast}; the type parameters are the acceptor's. */
export interface BroadcastOptions<Api = ApiSpec, PeerData = Record<string, unknown>> {
  /** The PUBLISH frame's headers. @default {null} */
  headers?: Record<string, unknown> | null;
  /**
   * Skipped: peers holding any of these tags, and these peers themselves (so the sender of a
   * message can be left out of its broadcast). Only tags reach other nodes.
   */
  except?: Iterable<string | Peer<Api, PeerData>>;
}

/** The options of {@linkcode Acceptor.broadcastAll}. */
export interface BroadcastAllOptions<Api = ApiSpec, PeerData = Record<string, unknown>>
  extends BroadcastOptions<Api, PeerData> {
  /** The tag the dialers receive the PUBLISH with (their `onPublish`). @default {'*'} */
  tag?: string;
}

/** The options of {@linkcode Acceptor.close}. */
export interface AcceptorCloseOptions {
  /**
   * The close code for every peer: 1000–1003, 1007–1014 or 3000–4999.
   *
   * @default {1012}
   */
  code?: number;
  /**
   * How long in-flight streams may run after the GOAWAY before their peer is closed anyway.
   *
   * @default {5000}
   */
  drainMs?: number;
  /**
   * Sent in the GOAWAY: dialers spread their redials uniformly over this many milliseconds.
   *
   * @default {1000}
   */
  spreadMs?: number;
}

/** Counters of an {@linkcode Acceptor}, read through {@linkcode Acceptor.stats}. */
export interface AcceptorStats {
  /** Live peers now. */
  readonly peers: number;
  /** Peers accepted since the acceptor was created. */
  readonly accepted: number;
  /** Upgrades {@linkcode Acceptor.checkUpgrade} refused. */
  readonly refused: number;
  /** Peers closed by the idle sweep. */
  readonly idleClosed: number;
  /** PUBLISH frames sent by {@linkcode Acceptor.broadcast} (one per peer reached). */
  readonly delivered: number;
  /**
   * PUBLISH frames skipped because the peer's socket was over `highWaterMark`, or because too
   * many already waited for the peer's hello to be acknowledged, or dropped because that hello
   * was refused.
   */
  readonly dropped: number;
}
