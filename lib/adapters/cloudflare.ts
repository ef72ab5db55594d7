/**
 * The Cloudflare adapter, in two forms:
 *
 * - {@linkcode upgrade} for a plain Worker: a `WebSocketPair` whose server end goes to
 *   {@linkcode Acceptor.accept}, answered with the adapter's own `101` carrying
 *   `Sec-WebSocket-Protocol` (Hono's Workers helper leaves that header out, and Chrome then fails
 *   the handshake). In a plain Worker every socket belongs to the request that upgraded it, so
 *   peers cannot reach each other's sockets; use a Durable Object for rooms and broadcast.
 * - {@linkcode DurableObjectAcceptor} for a Durable Object on the WebSocket hibernation API:
 *   sockets are accepted with `state.acceptWebSocket(ws, tags)` (the peer's initial tags are the
 *   socket's Durable Object tags), messages and closes arrive through the object's
 *   `webSocketMessage` / `webSocketClose` / `webSocketError` handlers, each peer's `id`, `tags`
 *   and `data` are kept in the socket's serialized attachment so that peers are restored when the
 *   object wakes from hibernation, and PING (the fixed text `[6]`) is answered with
 *   PONG (`[7]`) by the runtime through `state.setWebSocketAutoResponse`, so a dialer's heartbeat
 *   never wakes the object.
 *
 * Both forms await {@linkcode Acceptor.checkUpgrade}, so the acceptor's `authorize` decides the
 * upgrade and seeds the peer's `data` and tags; in the Durable Object form its
 * tags join the socket's Durable Object tags. A peer's accepted hello (`peer.hello`) is kept in
 * the attachment too, so a restored peer is not asked for it again.
 *
 * Every incoming close is answered with a close frame, as the Workers runtime leaves that to the
 * application unless the `web_socket_auto_reply_to_close` compatibility flag is on. A Workers
 * socket has no `bufferedAmount`, so backpressure (`highWaterMark`) does not apply here.
 *
 * @example A Durable Object room
 * ```ts ignore
 * import { Acceptor } from '@muxws/core/acceptor';
 * import { DurableObjectAcceptor, type DurableObjectStateLike } from '@muxws/core/cloudflare';
 *
 * export class Room {
 *   #muxws: DurableObjectAcceptor;
 *   constructor(state: DurableObjectStateLike) {
 *     // idleTimeoutMs: 0 arms no timer, so the object can hibernate.
 *     const acceptor = new Acceptor({ idleTimeoutMs: 0, onStream: (stream) => stream.payload });
 *     this.#muxws = new DurableObjectAcceptor(state, acceptor);
 *   }
 *   fetch(request: Request): Promise<Response> {
 *     return this.#muxws.upgrade(request, { tags: ['room'] });
 *   }
 *   webSocketMessage(ws: WebSocket, message: string | ArrayBuffer): void {
 *     this.#muxws.webSocketMessage(ws, message);
 *   }
 *   webSocketClose(ws: WebSocket, code: number, reason: string): void {
 *     this.#muxws.webSocketClose(ws, code, reason);
 *   }
 *   webSocketError(ws: WebSocket, error: unknown): void {
 *     this.#muxws.webSocketError(ws, error);
 *   }
 * }
 * ```
 *
 * @module
 */
import type {
  Acceptor,
  AttachedPeer,
  IncomingData,
  Peer,
  PeerHello,
  PeerSink,
} from '../acceptor/acceptor.ts';
import { type HostedPresence, hostedPresence } from '../acceptor/kit.ts';
import {
  type DurableObjectPresence,
  isDurableObjectPresence,
} from '../stores/durable_object_presence.ts';
import { reportTo } from '../util/contain.ts';
import { acceptorMaySend, CloseCode } from '../wire/codes.ts';
import { describe } from '../util/describe.ts';
import { isStreamId, isTag, MAX_TAG_LENGTH, PING, PONG } from '../wire/frame.ts';
import { encode } from '../wire/json.ts';
import { jsonCodec, subprotocol } from '../wire/codec.ts';

export {
  durableObjectHistory,
  type DurableObjectStorageLike,
} from '../stores/durable_object_history.ts';
export {
  type DurableObjectPresence,
  durableObjectPresence,
  type DurableObjectPresenceOptions,
  type DurableObjectPresenceStorage,
} from '../stores/durable_object_presence.ts';

/**
 * The part of a Workers `WebSocket` the adapter uses (the runtime's `WebSocket`, including the
 * hibernation API's attachment methods).
 */
export interface WorkersWebSocket {
  /** 0 connecting, 1 open, 2 closing, 3 closed. */
  readonly readyState: number;
  /** Sends one message. */
  send(data: string | ArrayBuffer | ArrayBufferView): void;
  /** Closes the socket. */
  close(code?: number, reason?: string): void;
  /** Starts delivering events for a `WebSocketPair` end handled in this Worker. */
  accept(): void;
  /** Adds a listener for `message`, `close` or `error`. */
  // deno-lint-ignore no-explicit-any
  addEventListener(type: any, listener: (event: any) => void): void;
  /** Removes a listener. */
  // deno-lint-ignore no-explicit-any
  removeEventListener(type: any, listener: (event: any) => void): void;
  /** Keeps a structured-clonable value with the socket across hibernation. */
  serializeAttachment(value: unknown): void;
  /** The value last given to `serializeAttachment`, or `null`. */
  deserializeAttachment(): unknown;
}

/** The part of a Durable Object's `DurableObjectState` (`ctx`) the adapter uses. */
export interface DurableObjectStateLike {
  /** Accepts a socket for the hibernation API, with up to 10 tags. */
  acceptWebSocket(ws: WorkersWebSocket, tags?: string[]): void;
  /** The object's hibernatable sockets, optionally only those with `tag`. */
  getWebSockets(tag?: string): WorkersWebSocket[];
  /** Sets (or, without a pair, clears) the request/response pair the runtime answers itself. */
  setWebSocketAutoResponse(pair?: unknown): void;
  /**
   * Runs `callback` while no other event is delivered to the object; used, when present, to load
   * the presence store as the object wakes.
   */
  blockConcurrencyWhile?<T>(callback: () => Promise<T>): Promise<T>;
}

/** Options of {@linkcode DurableObjectAcceptor}. */
export interface DurableObjectAcceptorOptions {
  /**
   * Let the runtime answer PING with PONG (`state.setWebSocketAutoResponse`), so heartbeats do
   * not wake a hibernating object. Applies only when the acceptor's codec is the JSON codec: a
   * binary codec's PING is a binary message, which the runtime cannot auto-answer.
   *
   * @default {true}
   */
  autoResponse?: boolean;
  /**
   * Errors the adapter contains: a peer state that cannot be saved in the socket's attachment
   * (not structured-clonable, or over the runtime's size limit), a socket that cannot be
   * restored. Not set: `console.error`. An `onError` that throws or returns a promise that
   * rejects is reported to `console.error`.
   */
  onError?: (error: unknown, peer?: Peer) => void;
}

/** Options of {@linkcode DurableObjectAcceptor.upgrade}. */
export interface DurableObjectUpgradeOptions {
  /**
   * The peer's initial tags, also given to `state.acceptWebSocket` as the socket's Durable Object
   * tags (so `state.getWebSockets(tag)` finds them). At most 10, each 1 to 256 characters.
   */
  tags?: readonly string[];
  /** The peer's initial `data`. */
  data?: Record<string, unknown>;
}

/** What a peer's state looks like in its socket's attachment. */
interface PeerAttachment {
  muxws: 1;
  id: string;
  tags: string[];
  data: Record<string, unknown>;
  /** The peer's next stream id, so streams opened after a wake keep rising (absent before). */
  next?: number;
  /** The peer's accepted hello, once there is one. */
  hello?: PeerHello;
  /** The tags whose presence the peer follows, when there are any. */
  follows?: string[];
}

/** The Durable Object tag limits of the hibernation API. */
const MAX_DO_TAGS = 10;

interface WebSocketPairLike {
  0: WorkersWebSocket;
  1: WorkersWebSocket;
}

function newPair(): WebSocketPairLike {
  const Pair = (globalThis as { WebSocketPair?: new () => WebSocketPairLike }).WebSocketPair;
  if (typeof Pair !== 'function') {
    throw new TypeError(
      'Cannot upgrade as WebSocketPair is not available: run on Cloudflare Workers (workerd)',
    );
  }
  return new Pair();
}

/** The 101 response handing `client` to the runtime, with the selected subprotocol. */
function switching(client: WorkersWebSocket, protocol: string): Response {
  // `webSocket` is a Workers extension of ResponseInit; only workerd accepts status 101.
  const init = {
    status: 101,
    webSocket: client,
    headers: { 'sec-websocket-protocol': protocol },
  } as ResponseInit;
  return new Response(null, init);
}

/** Answers a received close frame, unless the socket is closed already. */
function replyClose(ws: WorkersWebSocket, code: number, reason: string): void {
  try {
    if (ws.readyState === 3) return;
    // A received 1005 or 1006 cannot be echoed: the reply is a plain 1000.
    if (acceptorMaySend(code)) ws.close(code, reason);
    else ws.close(CloseCode.Normal, '');
  } catch {
    // closed by the runtime in the meantime (auto-reply, or the socket is gone)
  }
}

/**
 * Upgrades `request` in a plain Worker: creates a `WebSocketPair`, accepts its server end,
 * hands it to {@linkcode Acceptor.accept}, and returns the `101` response carrying
 * `Sec-WebSocket-Protocol` with exactly the muxws token (never an extra token the dialer offered
 * after it). A request the acceptor refuses gets its refusal (403 for a foreign `Origin`, 400,
 * 426 or 503, or what the acceptor's `authorize` decided) and no Peer exists for it.
 *
 * Each socket of a plain Worker belongs to the request that upgraded it: a peer can talk to its
 * own dialer, not to other peers' sockets. Give the acceptor `idleTimeoutMs: 0` (its sweep timer
 * would otherwise belong to one request too) and use a {@linkcode DurableObjectAcceptor} for
 * anything shared.
 *
 * @param request The upgrade request given to the Worker's `fetch`.
 * @param acceptor The acceptor that takes the socket.
 * @returns The `101` response to return from `fetch`, or the refusal.
 * @throws {TypeError} (as a rejection) When `WebSocketPair` does not exist (not running on
 * Workers).
 *
 * @example A refused request: a foreign Origin gets 403 and no peer
 * ```ts
 * import { Acceptor } from '@muxws/core/acceptor';
 * import { upgrade } from '@muxws/core/cloudflare';
 * import assert from 'node:assert/strict';
 *
 * const acceptor = new Acceptor({ idleTimeoutMs: 0 });
 * const request = new Request('https://api.example/ws', {
 *   headers: {
 *     upgrade: 'websocket',
 *     origin: 'https://evil.example',
 *     'sec-websocket-protocol': 'muxws.v1.json',
 *   },
 * });
 * const response = await upgrade(request, acceptor);
 * assert.equal(response.status, 403);
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
  const pair = newPair();
  const server = pair[1];
  server.accept();
  // deno-lint-ignore no-explicit-any
  const onClose = (event: any) => {
    server.removeEventListener('close', onClose);
    replyClose(server, event?.code, event?.reason ?? '');
  };
  acceptor.accept(server, { data: check.data, tags: check.tags });
  server.addEventListener('close', onClose);
  return switching(pair[0], check.protocol);
}

/**
 * The Durable Object form on the WebSocket hibernation API. Create it in the object's
 * constructor with the object's `state` (`ctx`) and an acceptor made with `idleTimeoutMs: 0`
 * (an armed sweep timer keeps an object from hibernating), and forward the object's handlers:
 * `fetch` to {@linkcode DurableObjectAcceptor.upgrade}, `webSocketMessage`, `webSocketClose` and
 * `webSocketError` to the methods of the same names.
 *
 * Hibernation: the constructor re-attaches a peer for every socket the object still holds,
 * with the `id`, `tags` and `data` saved in the socket's attachment, so `acceptor.peers(tag)`
 * and `acceptor.broadcast()` reach every socket at once after a wake (`onPeer` fires again for
 * each restored peer). A peer's state is saved when it is accepted and again, batched in a
 * microtask, whenever a message arrives from it or is sent to it (a hello handler that adds
 * tags and returns its welcome is saved as the welcome goes out); call
 * {@linkcode DurableObjectAcceptor.save} after changing a peer outside those moments. `data`
 * must be structured-clonable and small (the runtime limits an attachment to 2 KiB). Streams do
 * not survive hibernation: the object only hibernates when no event is running, and a stream
 * still open then is forgotten (the dialer's `request()` ends by its timeout). The peer's next
 * stream id is saved with it, so streams an object opens to a dialer after waking keep rising
 * above the ids that dialer has seen.
 *
 * Presence: with `presence: { store: durableObjectPresence(ctx.storage) }` on the acceptor,
 * forward the object's `alarm()` to {@linkcode DurableObjectAcceptor.alarm}. A closed peer's
 * presences then wait out their grace on the object's alarm rather than a timer, so the object
 * can hibernate meanwhile; the tags each peer follows are saved in its attachment; and on a wake
 * the constructor loads the store (inside `blockConcurrencyWhile`), takes back the restored
 * peers' presences and follows (no new snapshot: their dialers hold the state), and puts in grace
 * from then the presences whose peer did not come back.
 *
 * @example Peers restored from their sockets' attachments after a wake
 * ```ts
 * import { Acceptor } from '@muxws/core/acceptor';
 * import { DurableObjectAcceptor, type WorkersWebSocket } from '@muxws/core/cloudflare';
 * import assert from 'node:assert/strict';
 *
 * // A socket the object held when it hibernated, as the runtime hands it back.
 * const sent: unknown[] = [];
 * let attachment: unknown = { muxws: 1, id: 'peer-1', tags: ['room'], data: { user: 'ada' } };
 * const socket = {
 *   readyState: 1,
 *   send: (data: unknown) => sent.push(data),
 *   close() {},
 *   accept() {},
 *   addEventListener() {},
 *   removeEventListener() {},
 *   serializeAttachment: (value: unknown) => attachment = value,
 *   deserializeAttachment: () => attachment,
 * } satisfies WorkersWebSocket;
 * const state = {
 *   acceptWebSocket() {},
 *   getWebSockets: () => [socket],
 *   setWebSocketAutoResponse() {},
 * };
 *
 * const acceptor = new Acceptor({
 *   idleTimeoutMs: 0,
 *   onStream: (stream, peer) => `${peer.data.user} said ${stream.payload}`,
 * });
 * const room = new DurableObjectAcceptor(state, acceptor);
 * const [peer] = acceptor.peers('room');
 * assert.equal(peer.id, 'peer-1');
 *
 * room.webSocketMessage(socket, JSON.stringify([1, 1, 1, null, 'hi'])); // OPEN 1 with END
 * await new Promise((resolve) => setTimeout(resolve, 0));
 * assert.deepEqual(JSON.parse(String(sent[0])), [2, 1, 1, 'ada said hi']);
 * await acceptor.close();
 * ```
 */
export class DurableObjectAcceptor {
  readonly #state: DurableObjectStateLike;
  // deno-lint-ignore no-explicit-any
  readonly #acceptor: Acceptor<any, any>;
  readonly #onError: ((error: unknown, peer?: Peer) => void) | undefined;
  readonly #handles = new WeakMap<WorkersWebSocket, AttachedPeer>();
  readonly #sockets = new WeakMap<Peer, WorkersWebSocket>();
  readonly #pendingSaves = new Set<WorkersWebSocket>();
  #restored = 0;
  /** The acceptor's presence, when its store is `durableObjectPresence()`. */
  readonly #presence: HostedPresence | undefined;
  readonly #store: DurableObjectPresence | undefined;
  /** The presence resumed after the wake (settles, never rejects). */
  readonly #woken: Promise<void> = Promise.resolve();
  /** While the constructor restores peers: each restored peer, with the tags it followed. */
  #restoring: Map<Peer, string[]> | undefined;

  /**
   * Sets the PING auto-response and restores a peer for every socket `state` still holds.
   *
   * @param state The Durable Object's state (`ctx`).
   * @param acceptor The acceptor of this object's sockets, made with `idleTimeoutMs: 0`.
   * @param options `autoResponse` and `onError`.
   * @throws {TypeError} When `state` lacks the hibernation API or `onError` is not a function.
   */
  constructor(
    state: DurableObjectStateLike,
    // deno-lint-ignore no-explicit-any
    acceptor: Acceptor<any, any>,
    options: DurableObjectAcceptorOptions = {},
  ) {
    const what = 'Cannot create DurableObjectAcceptor';
    for (
      const method of ['acceptWebSocket', 'getWebSockets', 'setWebSocketAutoResponse'] as const
    ) {
      if (typeof state?.[method] !== 'function') {
        throw new TypeError(
          `${what} as "state" must have the hibernation API: current value has no ${method}()`,
        );
      }
    }
    if (options.onError !== undefined && typeof options.onError !== 'function') {
      throw new TypeError(
        `${what} as "onError" must be a function: current value is ${describe(options.onError)}`,
      );
    }
    this.#state = state;
    this.#acceptor = acceptor;
    this.#onError = options.onError;
    if (options.autoResponse ?? true) this.#setAutoResponse();
    const hosted = hostedPresence(acceptor.presence);
    if (hosted !== undefined && isDurableObjectPresence(hosted.store)) {
      // Graces end on the object's alarm, so a pending grace never keeps the object awake.
      hosted.graceInStore();
      this.#presence = hosted;
      this.#store = hosted.store;
    }
    const restored = this.#restoring = new Map();
    for (const ws of state.getWebSockets()) this.#handle(ws);
    this.#restoring = undefined;
    if (this.#presence) this.#woken = this.#resume(restored, true);
  }

  /**
   * How many peers were restored from sockets that outlived a hibernation: by the constructor,
   * or later for a socket first seen in a handler.
   */
  get restored(): number {
    return this.#restored;
  }

  /**
   * Upgrades `request` with a `WebSocketPair` whose server end is accepted for hibernation with
   * `options.tags` as its Durable Object tags, and returns the `101` response carrying
   * `Sec-WebSocket-Protocol` (exactly the muxws token). A refused request gets its refusal
   * (403, 400, 426 or 503, or what the acceptor's `authorize` decided) and no Peer exists for
   * it. The peer's initial tags are `options.tags` followed by those `authorize` returned, and
   * its `data` is what `authorize` returned, else `options.data`.
   *
   * @param request The request forwarded to the object's `fetch`.
   * @param options The peer's initial `tags` and `data`.
   * @returns The `101` response, or the refusal.
   * @throws {TypeError} (as a rejection) When `WebSocketPair` does not exist (not running on
   * Workers) or a tag is not a string of 1 to 256 characters.
   * @throws {RangeError} (as a rejection) When more than 10 tags are given in all (the
   * hibernation API's limit).
   */
  async upgrade(request: Request, options: DurableObjectUpgradeOptions = {}): Promise<Response> {
    checkDoTags(options.tags ?? []);
    const check = await this.#acceptor.checkUpgrade(request);
    if (check instanceof Response) return check;
    const tags = [...new Set([...(options.tags ?? []), ...(check.tags ?? [])])];
    checkDoTags(tags);
    const pair = newPair();
    const server = pair[1];
    this.#state.acceptWebSocket(server, tags);
    const handle = this.#acceptor.attach(this.#sink(server), {
      tags,
      data: check.data ?? options.data ?? {},
    });
    this.#bind(server, handle);
    this.#save(server, handle.peer);
    return switching(pair[0], check.protocol);
  }

  /**
   * Forward the object's `alarm()` here (and return its promise): with `durableObjectPresence()`
   * as the acceptor's presence store, the graces of closed peers' presences that are due end
   * (followers see them leave) and the alarm is set for the next one. Without it, resolves at
   * once.
   *
   * @returns Resolves once the due graces are ended and stored.
   * @throws (as a rejection) What the storage threw; the runtime then retries the alarm.
   */
  async alarm(): Promise<void> {
    if (this.#store === undefined) return;
    await this.#woken;
    await this.#store.expire();
  }

  /** Forward the object's `webSocketMessage(ws, message)` here. */
  webSocketMessage(ws: WorkersWebSocket, message: string | ArrayBuffer): void {
    const handle = this.#handle(ws);
    if (!handle) return;
    handle.message(message as IncomingData);
    this.#scheduleSave(ws);
  }

  /** Forward the object's `webSocketClose(ws, code, reason, wasClean)` here. */
  webSocketClose(ws: WorkersWebSocket, code: number, reason: string, _wasClean?: boolean): void {
    this.#handles.get(ws)?.closed(code, reason);
    replyClose(ws, code, reason);
  }

  /** Forward the object's `webSocketError(ws, error)` here. */
  webSocketError(ws: WorkersWebSocket, error: unknown): void {
    const handle = this.#handles.get(ws);
    this.#report(error, handle?.peer);
    handle?.closed(CloseCode.Abnormal, '');
  }

  /** The peer of a socket, restoring it when the object has just woken up. */
  peer(ws: WorkersWebSocket): Peer | undefined {
    return this.#handle(ws)?.peer;
  }

  /**
   * Saves `peer`'s `id`, `tags` and `data` in its socket's attachment now, for a change made
   * outside a message to or from that peer (a timer, another peer's stream).
   */
  save(peer: Peer): void {
    const ws = this.#sockets.get(peer);
    if (ws) this.#save(ws, peer);
  }

  #setAutoResponse(): void {
    const Pair =
      (globalThis as { WebSocketRequestResponsePair?: new (a: string, b: string) => unknown })
        .WebSocketRequestResponsePair;
    if (typeof Pair !== 'function') return;
    if (this.#acceptor.protocol(subprotocol(jsonCodec)) === undefined) return;
    try {
      // The JSON codec's PING and PONG frames are fixed text, so the runtime can answer one.
      this.#state.setWebSocketAutoResponse(new Pair(encode([PING]), encode([PONG])));
    } catch (error) {
      this.#report(error);
    }
  }

  /** The handle of `ws`, attaching a peer restored from its attachment when it has none. */
  #handle(ws: WorkersWebSocket): AttachedPeer | undefined {
    const known = this.#handles.get(ws);
    if (known) return known;
    if (ws.readyState !== 1) return undefined;
    let saved: Partial<PeerAttachment> = {};
    try {
      const value = ws.deserializeAttachment();
      if (isAttachment(value)) saved = value;
    } catch (error) {
      this.#report(error);
    }
    let handle: AttachedPeer;
    try {
      handle = this.#acceptor.attach(this.#sink(ws), {
        id: saved.id,
        tags: saved.tags,
        data: saved.data ?? {},
        nextStreamId: saved.next,
        hello: saved.hello,
      });
    } catch (error) {
      this.#report(error);
      replyClose(ws, CloseCode.Internal, 'cannot restore peer');
      return undefined;
    }
    this.#restored++;
    this.#bind(ws, handle);
    if (this.#presence !== undefined) {
      const follows = saved.follows ?? [];
      if (this.#restoring) this.#restoring.set(handle.peer, follows);
      else void this.#woken.then(() => this.#resume(new Map([[handle.peer, follows]]), false));
    }
    return handle;
  }

  /**
   * Takes back the presences of `peers` and their follows (see `HostedPresence.resume`): inside
   * `blockConcurrencyWhile` at the wake, so no event runs before it.
   */
  #resume(peers: Map<Peer, string[]>, block: boolean): Promise<void> {
    const run = () => this.#presence!.resume(peers).catch((error) => this.#report(error));
    const state = this.#state;
    return block && typeof state.blockConcurrencyWhile === 'function'
      ? state.blockConcurrencyWhile(run)
      : run();
  }

  #bind(ws: WorkersWebSocket, handle: AttachedPeer): void {
    this.#handles.set(ws, handle);
    this.#sockets.set(handle.peer, ws);
  }

  /** A sink for `ws` that saves the peer's state after the session sends it something. */
  #sink(ws: WorkersWebSocket): PeerSink {
    return {
      send: (data) => {
        if (ws.readyState !== 1) return;
        ws.send(data);
        this.#scheduleSave(ws);
      },
      close: (code, reason) => ws.close(code, reason),
    };
  }

  #scheduleSave(ws: WorkersWebSocket): void {
    if (this.#pendingSaves.has(ws)) return;
    this.#pendingSaves.add(ws);
    queueMicrotask(() => {
      this.#pendingSaves.delete(ws);
      const peer = this.#handles.get(ws)?.peer;
      if (peer && !peer.isClosed) this.#save(ws, peer);
    });
  }

  #save(ws: WorkersWebSocket, peer: Peer): void {
    const value: PeerAttachment = {
      muxws: 1,
      id: peer.id,
      tags: [...peer.tags],
      data: peer.data,
      next: peer.nextStreamId,
    };
    if (peer.hello !== undefined) value.hello = peer.hello;
    const follows = this.#presence?.following(peer);
    if (follows !== undefined && follows.length > 0) value.follows = follows;
    try {
      ws.serializeAttachment(value);
    } catch (error) {
      this.#report(error, peer);
    }
  }

  #report(error: unknown, peer?: Peer): void {
    reportTo(this.#onError, error, peer);
  }
}

/**
 * Checks Durable Object tags: at most 10, each 1 to 256 characters.
 *
 * @throws {TypeError} For a tag that is not a string of 1 to 256 characters.
 * @throws {RangeError} For more than 10 tags.
 */
function checkDoTags(tags: readonly string[]): void {
  if (tags.length > MAX_DO_TAGS) {
    throw new RangeError(
      `Cannot upgrade as "tags" must have at most ${MAX_DO_TAGS} entries: current value has ${tags.length}`,
    );
  }
  for (const tag of tags) {
    if (!isTag(tag)) {
      throw new TypeError(
        `Cannot upgrade as every tag must be a string of 1 to ${MAX_TAG_LENGTH} characters: current value is ${
          describe(tag)
        }`,
      );
    }
  }
}

function isAttachment(value: unknown): value is PeerAttachment {
  if (typeof value !== 'object' || value === null) return false;
  const v = value as Partial<PeerAttachment>;
  return v.muxws === 1 && typeof v.id === 'string' && Array.isArray(v.tags) &&
    typeof v.data === 'object' && v.data !== null &&
    (v.next === undefined || (isStreamId(v.next) && v.next % 2 === 0)) &&
    (v.hello === undefined || (typeof v.hello === 'object' && v.hello !== null)) &&
    (v.follows === undefined ||
      (Array.isArray(v.follows) && v.follows.every((tag) => isTag(tag))));
}
