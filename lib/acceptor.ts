/**
 * The acceptor: the side that accepted the WebSocket (SPEC §6). An {@linkcode Acceptor} is
 * transport-neutral: it never creates a socket. A runtime adapter (`./deno`, `./bun`, `./hono`,
 * `./cloudflare`) first asks {@linkcode Acceptor.checkUpgrade} whether to upgrade a request, and
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
 * This entry also re-exports the backplane (`broadcastChannelBackplane`, the `Backplane` types;
 * SPEC §7), so a server imports both from `muxws/acceptor`; `muxws/redis` stays its own entry.
 *
 * @example A hello answered with a welcome, over a sink that records what is sent
 * ```ts
 * import { Acceptor } from 'muxws/acceptor';
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
import { type Codec, jsonCodec, subprotocol } from './codec.ts';
import type { Limits } from './limits.ts';
import type { OpenOptions, RequestOptions, Stream } from './stream.ts';
import { encodePublish, Session, sessionLimits, type SessionOptions } from './_session.ts';
import { cork } from './_cork.ts';
import { callContained, reportTo } from './_contain.ts';
import { type Backplane, BackplaneError, type BackplaneMessage } from './backplane.ts';

// A server needs the backplane beside the acceptor: one import serves both.
export * from './backplane.ts';

/**
 * Which `Origin` an upgrade may come from (WSM-ACC-003):
 * - `'*'`: any origin, and requests without one;
 * - a list of origins such as `'https://app.example'`: a request whose `Origin` is one of them
 *   (compared as URL origins, so case and default ports do not matter), or that has none;
 * - a predicate, called with the `Origin` header (`null` when absent) and the request.
 *
 * The default (no `origins` option) allows requests without an `Origin` header (non-browser
 * dialers) and requests whose `Origin` host equals the request's `Host`.
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

/** The options of {@linkcode Acceptor}. Every field is optional. */
export interface AcceptorOptions {
  /**
   * The codec of every peer; the acceptor selects the subprotocol `muxws.v1.<codec.name>`.
   *
   * @default {jsonCodec}
   */
  codec?: Codec;
  /** Per-connection limits (WSM-ACC-006); missing fields take the defaults of `DEFAULT_LIMITS`. */
  limits?: Partial<Limits>;
  /**
   * The `Origin` policy of {@linkcode Acceptor.checkUpgrade}.
   *
   * @default {undefined} no `Origin`, or an `Origin` whose host equals the request's `Host`
   */
  origins?: OriginPolicy;
  /**
   * A peer from which nothing arrived for this long is closed with 1001 (WSM-ACC-007). `0` or
   * `false` disables the sweep (a Durable Object that must hibernate; its platform ends dead
   * sockets).
   *
   * @default {60000}
   */
  idleTimeoutMs?: number | false;
  /**
   * Runs once per stream a dialer opens. Its return value is sent with END, a throw resets the
   * stream (WSM-STR-003/004). Not set: every stream is refused with `refused`.
   */
  onStream?: (stream: Stream, peer: Peer) => unknown;
  /** A socket opened: the peer exists, before any of its streams. */
  onPeer?: (peer: Peer) => void;
  /** A peer's session ended, for any reason; its streams have already failed. */
  onPeerClose?: (peer: Peer, info: PeerCloseInfo) => void;
  /**
   * Contained errors: malformed frames, failed handlers, callbacks that throw or return a
   * promise that rejects, backplane failures. An `onError` that throws or rejects is reported to
   * `console.error`; without `onError`, errors go to `console.error`.
   */
  onError?: (error: unknown, peer?: Peer) => void;
  /**
   * Carries every broadcast to the acceptor nodes sharing it, and theirs to this node's peers
   * (SPEC §7). Give each acceptor its own backplane object; the application closes it after
   * {@linkcode Acceptor.close}.
   */
  backplane?: Backplane;
  /**
   * This node's id in backplane messages; a node ignores messages carrying its own.
   *
   * @default {crypto.randomUUID()} drawn in the constructor when a backplane is set
   */
  nodeId?: string;
}

/**
 * One accepted socket (WSM-ACC-004). Created by {@linkcode Acceptor.accept} or
 * {@linkcode Acceptor.attach}, never constructed directly.
 */
export interface Peer {
  /** A random id from `crypto.randomUUID()`. */
  readonly id: string;
  /**
   * The peer's tags, for {@linkcode Acceptor.peers} and {@linkcode Acceptor.broadcast}. Starts
   * empty. `add()` throws `TypeError` for anything but a string of 1 to 256 characters.
   */
  readonly tags: Set<string>;
  /** Application state; starts `{}`. */
  data: Record<string, unknown>;
  /** True once the peer's session has ended. */
  readonly isClosed: boolean;
  /**
   * The id the next stream opened to the dialer will take. An adapter that restores peers over
   * sockets that outlive them (a Durable Object) saves it and passes it back through
   * {@linkcode AttachOptions.nextStreamId}.
   */
  readonly nextStreamId: number;
  /**
   * Opens a stream to the dialer (WSM-STR-001).
   *
   * @throws {NotConnectedError} After the peer closed, or after a GOAWAY from the dialer.
   */
  open(payload: unknown, options?: OpenOptions): Stream;
  /** Sends a request to the dialer and resolves with its first answer (WSM-STR-005). */
  request(payload: unknown, options?: RequestOptions): Promise<unknown>;
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

/**
 * One peer's plumbing inside the acceptor (see `Acceptor.#Link`): the session's sink, and the
 * receiver of the socket's events. Internal.
 */
interface PeerLink extends PeerSink, TagIndex, SessionOptions {
  readonly peer: PeerImpl;
  /** accept()'s socket opened. */
  opened(): void;
  /** Fires `onPeer` once (or turns the peer away while the acceptor closes). */
  announce(): void;
  message(data: IncomingData): void;
  closed(code?: number, reason?: string): void;
  drain(): void;
}

/** The data a WebSocket message event may carry, as the adapters receive it. */
export type IncomingData = string | ArrayBuffer | ArrayBufferView | Blob;

/** The handle {@linkcode Acceptor.attach} returns: the adapter feeds it the socket's events. */
export interface AttachedPeer {
  /** The peer of this socket. */
  readonly peer: Peer;
  /** One received message. Blobs are read in order: later messages wait for them. */
  message(data: IncomingData): void;
  /** The socket closed. A missing or 0 code counts as 1006 (WSM-WIRE-009). Idempotent. */
  closed(code?: number, reason?: string): void;
  /** The socket's send buffer drained (Bun's `drain`): waiting writes re-check. */
  drain(): void;
}

/**
 * Options of {@linkcode Acceptor.attach}, for an adapter that restores a peer (a Durable Object
 * woken from hibernation).
 */
export interface AttachOptions {
  /** The peer's id instead of a fresh `crypto.randomUUID()`. */
  id?: string;
  /** The peer's initial tags. */
  tags?: Iterable<string>;
  /** The peer's initial `data`. */
  data?: Record<string, unknown>;
  /**
   * The id of the next stream the acceptor opens to this dialer: the restored peer's
   * {@linkcode Peer.nextStreamId}, so its streams keep rising over the same socket
   * (WSM-WIRE-004). @default {2}
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
export interface UpgradeAccepted {
  /** The subprotocol to select: exactly the muxws token. */
  protocol: string;
}

/** The options of {@linkcode Acceptor.broadcast}. */
export interface BroadcastOptions {
  /** The PUBLISH frame's headers. @default {null} */
  headers?: Record<string, unknown> | null;
  /** Peers holding any of these tags are skipped. */
  except?: Iterable<string>;
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
  /** PUBLISH frames skipped because the peer's socket was over `highWaterMark`. */
  readonly dropped: number;
}

const MAX_TAG_LENGTH = 256;
const MAX_REASON_BYTES = 123;
const encoder = new TextEncoder();

function describe(value: unknown): string {
  if (typeof value === 'string') return JSON.stringify(value);
  if (typeof value === 'bigint') return `${value}n`;
  if (typeof value === 'function') return 'a function';
  if (Array.isArray(value)) return 'an array';
  if (value !== null && typeof value === 'object') return 'an object';
  return String(value);
}

function isTag(value: unknown): value is string {
  return typeof value === 'string' && value.length >= 1 && value.length <= MAX_TAG_LENGTH;
}

function checkTag(what: string, value: unknown): string {
  if (!isTag(value)) {
    throw new TypeError(
      `${what} as the tag must be a string of 1 to ${MAX_TAG_LENGTH} characters: current value is ${
        describe(value)
      }`,
    );
  }
  return value;
}

/** Close codes an acceptor may send: 1000–1003, 1007–1014 and 3000–4999. */
function isAcceptorCloseCode(code: unknown): code is number {
  return Number.isInteger(code) && (
    ((code as number) >= 1000 && (code as number) <= 1003) ||
    ((code as number) >= 1007 && (code as number) <= 1014) ||
    ((code as number) >= 3000 && (code as number) <= 4999)
  );
}

function checkClose(what: string, code: unknown, reason: unknown): void {
  if (!isAcceptorCloseCode(code)) {
    throw new RangeError(
      `${what} as "code" must be 1000–1003, 1007–1014 or 3000–4999: current value is ${
        describe(code)
      }`,
    );
  }
  if (typeof reason !== 'string' || encoder.encode(reason).byteLength > MAX_REASON_BYTES) {
    throw new RangeError(
      `${what} as "reason" must be a string of at most ${MAX_REASON_BYTES} UTF-8 bytes: current value is ${
        describe(reason)
      }`,
    );
  }
}

function checkMs(what: string, field: string, value: unknown): number {
  if (typeof value !== 'number' || !Number.isFinite(value) || value < 0) {
    throw new RangeError(
      `${what} as "${field}" must be a finite number of at least 0: current value is ${
        describe(value)
      }`,
    );
  }
  return value;
}

/**
 * Whether a `Sec-WebSocket-Protocol` value (or several) offers `token`. Runs on every upgrade
 * (twice on Node: `handleProtocols` and {@linkcode Acceptor.checkUpgrade}), so the usual offer,
 * exactly the token, is answered without splitting anything.
 */
function offers(offered: string | readonly string[] | null | undefined, token: string): boolean {
  if (offered === null || offered === undefined) return false;
  if (typeof offered === 'string') return listOffers(offered, token);
  for (const item of offered) {
    if (typeof item === 'string' && listOffers(item, token)) return true;
  }
  return false;
}

/** Whether the comma-separated `list` holds `token` (surrounding spaces ignored). */
function listOffers(list: string, token: string): boolean {
  if (list === token) return true;
  if (!list.includes(token)) return false;
  let start = 0;
  while (start <= list.length) {
    let end = list.indexOf(',', start);
    if (end === -1) end = list.length;
    if (list.slice(start, end).trim() === token) return true;
    start = end + 1;
  }
  return false;
}

function originOf(value: string): string | undefined {
  try {
    const origin = new URL(value).origin;
    return origin === 'null' ? undefined : origin;
  } catch {
    return undefined;
  }
}

type OriginCheck = (origin: string | null, request: Request) => boolean;

function sameHost(origin: string | null, request: Request): boolean {
  if (origin === null) return true;
  let url: URL;
  try {
    url = new URL(origin);
  } catch {
    return false;
  }
  if (url.origin === 'null') return false;
  const host = request.headers.get('host');
  let expected: string;
  try {
    expected = host ? new URL(`${url.protocol}//${host}`).host : new URL(request.url).host;
  } catch {
    return false;
  }
  return url.host === expected;
}

function originCheck(policy: OriginPolicy | undefined): OriginCheck {
  if (policy === undefined) return sameHost;
  if (policy === '*') return () => true;
  if (typeof policy === 'function') return policy;
  if (Array.isArray(policy)) {
    const allowed = new Set<string>();
    for (const entry of policy as readonly unknown[]) {
      const origin = typeof entry === 'string' ? originOf(entry) : undefined;
      if (origin === undefined) {
        throw new TypeError(
          `Cannot create Acceptor as "origins" must list origins such as "https://app.example": found ${
            describe(entry)
          }`,
        );
      }
      allowed.add(origin);
    }
    return (origin) => {
      if (origin === null) return true;
      const normalized = originOf(origin);
      return normalized !== undefined && allowed.has(normalized);
    };
  }
  throw new TypeError(
    `Cannot create Acceptor as "origins" must be '*', a list of origins or a function: current value is ${
      describe(policy)
    }`,
  );
}

/**
 * The `ws` package's socket (Node), seen through its EventEmitter side: `message` with the data
 * (a `Buffer` for text, an `ArrayBuffer` for binary once `binaryType` is `'arraybuffer'`) and
 * `isBinary`, `close` with the code and the reason's bytes.
 */
interface WsSocket extends ServerWebSocket {
  // deno-lint-ignore no-explicit-any
  on(type: 'message' | 'close' | 'error', listener: (...args: any[]) => void): unknown;
  // deno-lint-ignore no-explicit-any
  removeListener(type: 'message' | 'close' | 'error', listener: (...args: any[]) => void): unknown;
}

/**
 * Whether `socket` is a `ws` socket (an EventEmitter with `terminate()`). Its `addEventListener`
 * wraps every listener in a function of its own and every message in an event object; its
 * EventEmitter side takes the three listeners every `ws` socket shares below instead, which
 * saves about half a kilobyte per idle peer and an allocation per message.
 */
function isWs(socket: ServerWebSocket): socket is WsSocket {
  const s = socket as Partial<WsSocket> & { terminate?: unknown };
  return typeof s.on === 'function' && typeof s.removeListener === 'function' &&
    typeof s.terminate === 'function';
}

/** Peers {@linkcode Acceptor.close} sends GOAWAY to (and closes, when idle) per event-loop turn. */
const DRAIN_SLICE = 100;

/** The links of accept()'s `ws` sockets, for the listeners they share. */
const wsLinks = new WeakMap<object, PeerLink>();

function onWsMessage(this: WsSocket, data: unknown, isBinary?: boolean): void {
  // ws 8 hands text over as a Buffer (ws 7 as a string): decoded as UTF-8, as its events do.
  wsLinks.get(this)?.message((isBinary === false ? String(data) : data) as IncomingData);
}

function onWsClose(this: WsSocket, code?: number, reason?: unknown): void {
  const link = wsLinks.get(this);
  if (link === undefined) return;
  wsLinks.delete(this);
  this.removeListener('message', onWsMessage);
  this.removeListener('close', onWsClose);
  link.closed(code, reason === undefined ? '' : String(reason));
}

/**
 * A `ws` socket's error (a malformed frame from the dialer, a reset connection) is followed by
 * its close, which ends the peer; the listener only keeps `ws` from throwing it.
 */
function onWsError(): void {}

/** The GOAWAY code string for a close code: `restart` for 1012, `shutdown` otherwise. */
function goAwayCodeFor(code: number): string {
  return code === 1012 ? 'restart' : 'shutdown';
}

function refusal(status: number, message: string, headers?: Record<string, string>): Response {
  return new Response(message, {
    status,
    headers: { 'content-type': 'text/plain; charset=utf-8', ...headers },
  });
}

/** Told when a peer's tags change: the acceptor's tag index (the peer's link). */
interface TagIndex {
  tagAdded(tag: string): void;
  tagDeleted(tag: string): void;
}

/**
 * A peer's tag set: validates additions and keeps the acceptor's tag index current, through
 * the peer's link rather than two closures per peer (an idle peer's memory).
 */
class TagSet extends Set<string> {
  #index: TagIndex | undefined;

  bind(index: TagIndex | undefined): void {
    this.#index = index;
  }

  override add(tag: string): this {
    checkTag('Cannot add a tag to a Peer', tag);
    if (!super.has(tag)) {
      super.add(tag);
      this.#index?.tagAdded(tag);
    }
    return this;
  }

  override delete(tag: string): boolean {
    const had = super.delete(tag);
    if (had) this.#index?.tagDeleted(tag);
    return had;
  }

  override clear(): void {
    for (const tag of [...this]) this.delete(tag);
  }
}

/**
 * A fresh peer id. Node builds `crypto.randomUUID()` as a rope of some twenty pieces (~480 bytes
 * held for the life of the peer); reading a character makes V8 flatten it to one 36-character
 * string (~60 bytes). Elsewhere the id is flat already and this costs nothing.
 */
function newPeerId(): string {
  const id = crypto.randomUUID();
  id.charCodeAt(0);
  return id;
}

/**
 * A {@linkcode Peer}. Its `closed` promise and `data` object are created when first read, and
 * its idle clock is its session's (which starts when the peer is accepted): an idle peer holds
 * as little as it can (docs/performance.md).
 */
class PeerImpl implements Peer {
  readonly id: string;
  readonly tags: TagSet = new TagSet();
  session!: Session;
  sink!: PeerSink;
  /** onPeer has fired, so onPeerClose will. */
  announced = false;
  #data: Record<string, unknown> | undefined;
  #closed: Promise<PeerCloseInfo> | undefined;
  #resolveClosed: ((info: PeerCloseInfo) => void) | undefined;
  #closeInfo: PeerCloseInfo | undefined;

  constructor(id: string, data: Record<string, unknown> | undefined) {
    this.id = id;
    this.#data = data;
  }

  get data(): Record<string, unknown> {
    return this.#data ??= {};
  }

  set data(value: Record<string, unknown>) {
    this.#data = value;
  }

  get closed(): Promise<PeerCloseInfo> {
    if (this.#closed === undefined) {
      const info = this.#closeInfo;
      this.#closed = info !== undefined
        ? Promise.resolve(info)
        : new Promise((resolve) => this.#resolveClosed = resolve);
    }
    return this.#closed;
  }

  get isClosed(): boolean {
    return this.#closeInfo !== undefined;
  }

  get nextStreamId(): number {
    return this.session.nextStreamId;
  }

  /** When the last message arrived, or when the peer was accepted (its session created). */
  get lastActivityAt(): number {
    return this.session.lastReceivedAt;
  }

  open(payload: unknown, options?: OpenOptions): Stream {
    return this.session.open(payload, options);
  }

  request(payload: unknown, options?: RequestOptions): Promise<unknown> {
    return this.session.request(payload, options);
  }

  close(code: number = 1000, reason: string = ''): void {
    checkClose('Cannot close a Peer', code, reason);
    this.session.close(code, reason);
  }

  /** Records the end; returns false when it was already recorded. */
  ended(info: PeerCloseInfo): boolean {
    if (this.#closeInfo) return false;
    this.#closeInfo = info;
    const resolve = this.#resolveClosed;
    this.#resolveClosed = undefined;
    resolve?.(info);
    return true;
  }
}

/**
 * The acceptor: peers, tags, broadcast, graceful close and the idle sweep (SPEC §6).
 *
 * Callback order for one peer: `onPeer` when its socket is open, then `onStream` for each
 * stream the dialer opens, then `onPeerClose` once, after every stream of the peer has failed.
 * A peer accepted after {@linkcode Acceptor.close} began is closed at once with the close code,
 * and neither `onPeer` nor `onPeerClose` fires for it. Every callback is contained: a throw, or
 * the rejection of a promise it returns, goes to `onError`, and an `onError` that throws or
 * rejects to `console.error`.
 *
 * @example Origins, subprotocols and refusals
 * ```ts
 * import { Acceptor } from 'muxws/acceptor';
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
 * const ok = acceptor.checkUpgrade(upgrade({
 *   origin: 'https://app.example',
 *   'sec-websocket-protocol': 'muxws.v1.json, token.abc',
 * }));
 * assert.deepEqual(ok, { protocol: 'muxws.v1.json' });
 * const foreign = acceptor.checkUpgrade(upgrade({
 *   origin: 'https://evil.example',
 *   'sec-websocket-protocol': 'muxws.v1.json',
 * }));
 * assert(foreign instanceof Response && foreign.status === 403);
 * await acceptor.close();
 * ```
 */
export class Acceptor {
  readonly #codec: Codec;
  readonly #protocol: string;
  readonly #limits: Readonly<Limits>;
  readonly #origin: OriginCheck;
  readonly #idleTimeoutMs: number;
  readonly #onStream: ((stream: Stream, peer: Peer) => unknown) | undefined;
  readonly #onPeer: ((peer: Peer) => void) | undefined;
  readonly #onPeerClose: ((peer: Peer, info: PeerCloseInfo) => void) | undefined;
  readonly #onError: ((error: unknown, peer?: Peer) => void) | undefined;
  readonly #backplane: Backplane | undefined;
  readonly #nodeId: string;
  #unsubscribeBackplane: (() => void) | undefined;

  readonly #peers = new Set<PeerImpl>();
  readonly #byTag = new Map<string, Set<PeerImpl>>();
  #sweepTimer: ReturnType<typeof setTimeout> | undefined;
  #closing: Promise<void> | undefined;
  #closeCode = 1012;
  #closeSpreadMs = 0;
  #accepted = 0;
  #refused = 0;
  #idleClosed = 0;
  #delivered = 0;
  #dropped = 0;

  /**
   * Creates an acceptor, validating its options.
   *
   * @param options See {@linkcode AcceptorOptions}.
   * @throws {TypeError} When `origins` is not `'*'`, a list of origins or a function, or a
   * callback is not a function.
   * @throws {RangeError} When `idleTimeoutMs` is not a finite number of at least 0 (or `false`),
   * or a limit is invalid.
   */
  constructor(options: AcceptorOptions = {}) {
    const what = 'Cannot create Acceptor';
    this.#codec = options.codec ?? jsonCodec;
    this.#protocol = subprotocol(this.#codec);
    this.#limits = sessionLimits(options.limits);
    this.#origin = originCheck(options.origins);
    const idle = options.idleTimeoutMs ?? 60_000;
    this.#idleTimeoutMs = idle === false ? 0 : checkMs(what, 'idleTimeoutMs', idle);
    for (const name of ['onStream', 'onPeer', 'onPeerClose', 'onError'] as const) {
      const value = options[name];
      if (value !== undefined && typeof value !== 'function') {
        throw new TypeError(
          `${what} as "${name}" must be a function: current value is ${describe(value)}`,
        );
      }
    }
    this.#onStream = options.onStream;
    this.#onPeer = options.onPeer;
    this.#onPeerClose = options.onPeerClose;
    this.#onError = options.onError;
    const backplane = options.backplane;
    if (
      backplane !== undefined &&
      (backplane === null || typeof backplane.publish !== 'function' ||
        typeof backplane.subscribe !== 'function')
    ) {
      throw new TypeError(
        `${what} as "backplane" must have publish() and subscribe(): current value is ${
          describe(backplane)
        }`,
      );
    }
    const nodeId = options.nodeId;
    if (nodeId !== undefined && (typeof nodeId !== 'string' || nodeId === '')) {
      throw new TypeError(
        `${what} as "nodeId" must be a non-empty string: current value is ${describe(nodeId)}`,
      );
    }
    this.#backplane = backplane;
    this.#nodeId = nodeId ?? (backplane ? crypto.randomUUID() : '');
    this.#unsubscribeBackplane = backplane?.subscribe((message) => this.#fromBackplane(message));
  }

  /** Counters: live peers, accepted, refused, idle-closed, delivered and dropped broadcasts. */
  get stats(): AcceptorStats {
    return {
      peers: this.#peers.size,
      accepted: this.#accepted,
      refused: this.#refused,
      idleClosed: this.#idleClosed,
      delivered: this.#delivered,
      dropped: this.#dropped,
    };
  }

  /** True once {@linkcode Acceptor.close} was called. */
  get isClosing(): boolean {
    return this.#closing !== undefined;
  }

  /**
   * The subprotocol to select for an offer (WSM-ACC-001, WSM-WIRE-001): exactly the muxws token
   * of this acceptor's codec when it is offered, never an extra token offered with it.
   *
   * @param offered The `Sec-WebSocket-Protocol` header value(s), comma-separated or as a list.
   * @returns The muxws token, or `undefined`: refuse the upgrade, open no socket.
   */
  protocol(offered: string | readonly string[] | null | undefined): string | undefined {
    return offers(offered, this.#protocol) ? this.#protocol : undefined;
  }

  /**
   * Decides an upgrade request before any socket exists (WSM-ACC-003). In order: 426 when the
   * request is not a WebSocket upgrade (`GET` with `Upgrade: websocket`), 503 once
   * {@linkcode Acceptor.close} began, 403 when its `Origin` is not allowed, 400 when the muxws
   * subprotocol is not offered.
   *
   * @param request The incoming HTTP request.
   * @returns `{ protocol }` to select, or the refusal `Response` to send as it is.
   */
  checkUpgrade(request: Request): UpgradeAccepted | Response {
    const upgrade = request.headers.get('upgrade');
    if (request.method !== 'GET' || upgrade === null || upgrade.toLowerCase() !== 'websocket') {
      this.#refused++;
      return refusal(426, 'Expected a WebSocket upgrade request', { upgrade: 'websocket' });
    }
    if (this.#closing) {
      this.#refused++;
      return refusal(503, 'The acceptor is closing', { 'retry-after': '1' });
    }
    let allowed = false;
    try {
      allowed = this.#origin(request.headers.get('origin'), request) === true;
    } catch (error) {
      this.#report(error);
    }
    if (!allowed) {
      this.#refused++;
      return refusal(403, 'Origin not allowed');
    }
    const protocol = this.protocol(request.headers.get('sec-websocket-protocol'));
    if (protocol === undefined) {
      this.#refused++;
      return refusal(400, `Expected the subprotocol ${this.#protocol} to be offered`);
    }
    return { protocol };
  }

  /**
   * Takes a standard server-side WebSocket and returns its {@linkcode Peer} (WSM-ACC-002). The
   * socket may still be connecting (Deno's socket until its 101 response is sent): `onPeer`
   * fires on `open`, and anything sent before is queued. Messages may be strings,
   * `ArrayBuffer`s, any `ArrayBufferView` (the `ws` package's `Buffer`) or `Blob`s; their order
   * is kept. A Workers `WebSocketPair` end must be `accept()`ed by the caller first. A `ws`
   * socket is listened to on its EventEmitter side, and gets an `error` listener, so an error
   * (a dialer's malformed frame) ends the peer through the close that follows it instead of
   * being thrown out of the process.
   *
   * @param socket The server side of an upgraded connection.
   * @returns The new peer.
   */
  accept(socket: ServerWebSocket): Peer {
    try {
      if ('binaryType' in socket) socket.binaryType = 'arraybuffer';
    } catch {
      // a runtime that fixes binaryType still delivers something we read (Blob included)
    }
    const connecting = socket.readyState === 0;
    const link = this.#attach(socket, true, {}, socket.readyState === 1);
    if (isWs(socket)) {
      // Without an `error` listener, a `ws` socket throws its errors out of the process.
      socket.on('error', onWsError);
      if (socket.readyState === 1 && !wsLinks.has(socket)) {
        wsLinks.set(socket, link);
        socket.on('message', onWsMessage);
        socket.on('close', onWsClose);
        return link.peer;
      }
    }
    const onMessage: SocketListener = (event) => link.message(event.data);
    const onClose: SocketListener = (event) => {
      socket.removeEventListener('open', onOpen);
      socket.removeEventListener('message', onMessage);
      socket.removeEventListener('close', onClose);
      link.closed(event?.code, event?.reason);
    };
    const onOpen = () => {
      socket.removeEventListener('open', onOpen);
      link.opened();
    };
    socket.addEventListener('message', onMessage);
    socket.addEventListener('close', onClose);
    if (connecting) socket.addEventListener('open', onOpen);
    else if (socket.readyState !== 1) link.closed(1006, ''); // already closing or closed
    return link.peer;
  }

  /**
   * The push form of {@linkcode Acceptor.accept} for sockets that are not `WebSocket`s (Bun's
   * `ServerWebSocket`, Hono's `WSContext`, Durable Object hibernation handlers): call it when
   * the socket is open (`onPeer` fires before it returns), then feed the handle every message
   * and the close.
   *
   * @param sink How to send, close and read the send buffer.
   * @param options A restored peer's `id`, initial `tags` and `data`.
   * @returns The handle taking `message(data)`, `closed(code, reason)` and `drain()`.
   */
  attach(sink: PeerSink, options: AttachOptions = {}): AttachedPeer {
    const link = this.#attach(sink, false, options, true);
    // Plain functions, so the handle's methods may be called detached, as they always could.
    return {
      peer: link.peer,
      message: (data) => link.message(data),
      closed: (code, reason) => link.closed(code, reason),
      drain: () => link.drain(),
    };
  }

  /**
   * The live peers, optionally only those holding `tag` (WSM-ACC-004). A snapshot: peers that
   * join or leave while iterating do not affect it.
   *
   * @param tag Only peers holding this tag.
   */
  peers(tag?: string): IterableIterator<Peer> {
    if (tag === undefined) return [...this.#peers].values();
    return [...(this.#byTag.get(tag) ?? [])].values();
  }

  /**
   * Sends one PUBLISH frame, encoded once, to every live peer holding `tag`, except peers
   * holding a tag of `except` (WSM-ACC-005). A peer whose socket is over `highWaterMark` is
   * skipped and counted in `stats.dropped`, so a slow peer never stalls a broadcast. With a
   * `backplane`, the same encoded frame is then published to the other nodes, which send it to
   * their own tagged peers; a backplane failure goes to `onError` and never stops the local
   * delivery (WSM-BP-004).
   *
   * @param tag The tag to reach, 1 to 256 characters; the dialer receives it in `onPublish`.
   * @param payload The message; encoded once by the codec.
   * @param options `headers` of the frame and `except` tags.
   * @returns How many local peers it was handed to (other nodes count theirs in their stats).
   * @throws {TypeError} (as a rejection) When `tag` or an `except` tag is not a valid tag.
   */
  broadcast(tag: string, payload: unknown, options: BroadcastOptions = {}): Promise<number> {
    try {
      return Promise.resolve(this.#broadcast(tag, payload, options));
    } catch (error) {
      return Promise.reject(error);
    }
  }

  /**
   * Closes every peer gracefully (WSM-ACC-008): sends GOAWAY carrying `spreadMs`, refuses new
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
    const { code = 1012, drainMs = 5000, spreadMs = 1000 } = options;
    try {
      checkClose(what, code, '');
      checkMs(what, 'drainMs', drainMs);
      checkMs(what, 'spreadMs', spreadMs);
    } catch (error) {
      return Promise.reject(error);
    }
    this.#closeCode = code;
    this.#closeSpreadMs = Math.floor(spreadMs);
    // Peers still draining keep receiving other nodes' broadcasts; then the subscription ends.
    this.#closing = this.#drain(code, drainMs, Math.floor(spreadMs)).finally(() => {
      this.#unsubscribeBackplane?.();
      this.#unsubscribeBackplane = undefined;
    });
    return this.#closing;
  }

  /** `await using acceptor = new Acceptor(...)`: {@linkcode Acceptor.close} with the defaults. */
  [Symbol.asyncDispose](): Promise<void> {
    return this.close();
  }

  async #drain(code: number, drainMs: number, spreadMs: number): Promise<void> {
    const peers = [...this.#peers];
    if (peers.length === 0) return;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const deadline = new Promise<void>((resolve) => timer = setTimeout(resolve, drainMs));
    const goAwayCode = goAwayCodeFor(code);
    const drainPeer = async (peer: PeerImpl) => {
      if (peer.isClosed) return;
      try {
        peer.session.goAway(goAwayCode, 'The acceptor is closing', spreadMs);
      } catch (error) {
        this.#report(error, peer);
      }
      await Promise.race([peer.session.idle(), deadline, peer.closed]);
      if (!peer.isClosed) peer.session.close(code, 'service restart');
      await peer.closed;
    };
    try {
      // GOAWAY and the close of idle peers go out DRAIN_SLICE peers per turn of the event loop:
      // 1,000 at once held a Bun server's loop for 100-160 ms, so the first redials (to a new
      // acceptor in the same process) all landed when it ended (docs/performance.md, "Herd").
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

  #attach(
    transport: PeerSink | ServerWebSocket,
    isSocket: boolean,
    options: AttachOptions,
    open: boolean,
  ): PeerLink {
    const peer = new PeerImpl(options.id ?? newPeerId(), options.data);
    for (const tag of options.tags ?? []) peer.tags.add(tag);
    const link = new Acceptor.#Link(this, peer, transport, isSocket);
    peer.sink = link;
    // The link is the session's sink and its options (see #Link).
    link.firstStreamId = options.nextStreamId;
    peer.session = new Session(link, link);
    link.firstStreamId = undefined;
    this.#accepted++;
    this.#peers.add(peer);
    for (const tag of peer.tags) this.#index(peer, tag);
    peer.tags.bind(link);
    this.#armSweep();
    if (open) link.announce();
    return link;
  }

  /**
   * One peer's plumbing, one object per peer with its methods on one shared prototype (rather
   * than a dozen closures per peer: an idle peer's memory, docs/performance.md). It is the
   * session's sink (a `WebSocket` from {@linkcode Acceptor.accept}, whose sends wait in a queue
   * while it connects, or the caller's sink from {@linkcode Acceptor.attach}; a throwing close is
   * reported) and takes the socket's events, feeding messages in order: a Blob is read before
   * anything after it. Declared here so it reaches the acceptor's private members.
   */
  static readonly #Link: new (
    acceptor: Acceptor,
    peer: PeerImpl,
    transport: PeerSink | ServerWebSocket,
    isSocket: boolean,
  ) => PeerLink = class implements PeerLink {
    /** {@linkcode AttachOptions.nextStreamId}, read by the session's constructor only. */
    firstStreamId: number | undefined;
    readonly peer: PeerImpl;
    readonly #acceptor: Acceptor;
    /** accept()'s socket, or attach()'s sink. */
    readonly #transport: PeerSink | ServerWebSocket;
    readonly #isSocket: boolean;
    /** accept()'s sends while its socket connects. */
    #queued: Array<string | Uint8Array> | undefined;
    /** Events waiting for a Blob before them to be read; set only while that goes on. */
    #backlog: Array<IncomingData | { close: [number, string] }> | undefined;

    constructor(
      acceptor: Acceptor,
      peer: PeerImpl,
      transport: PeerSink | ServerWebSocket,
      isSocket: boolean,
    ) {
      this.#acceptor = acceptor;
      this.peer = peer;
      this.#transport = transport;
      this.#isSocket = isSocket;
    }

    send(data: string | Uint8Array): void {
      if (!this.#isSocket) {
        (this.#transport as PeerSink).send(data);
        return;
      }
      const socket = this.#transport as ServerWebSocket;
      if (socket.readyState === 0) {
        (this.#queued ??= []).push(data);
      } else if (socket.readyState === 1) {
        cork(socket);
        socket.send(data);
      }
    }

    close(code: number, reason: string): void {
      try {
        this.#transport.close(code, reason);
      } catch (error) {
        this.#acceptor.#report(error, this.peer);
      }
    }

    get bufferedAmount(): number | undefined {
      if (!this.#isSocket) return (this.#transport as PeerSink).bufferedAmount;
      let buffered = (this.#transport as ServerWebSocket).bufferedAmount ?? 0;
      // Only while the socket connects: what waits to go out counts as buffered.
      for (const data of this.#queued ?? []) {
        buffered += typeof data === 'string' ? data.length : data.byteLength;
      }
      return buffered;
    }

    /** accept()'s socket opened: what waited goes out, then the peer is announced. */
    opened(): void {
      const queued = this.#queued;
      this.#queued = undefined;
      if (queued !== undefined) {
        for (const data of queued) (this.#transport as ServerWebSocket).send(data);
      }
      this.announce();
    }

    announce(): void {
      const peer = this.peer;
      // Once turned away below, the peer is closed: it is announced at most once either way.
      if (peer.announced || peer.isClosed) return;
      const acceptor = this.#acceptor;
      if (acceptor.#closing) {
        // Too late to serve: tell the dialer to redial elsewhere and close at once.
        try {
          peer.session.goAway(
            goAwayCodeFor(acceptor.#closeCode),
            'The acceptor is closing',
            acceptor.#closeSpreadMs,
          );
        } catch (error) {
          acceptor.#report(error, peer);
        }
        peer.session.close(acceptor.#closeCode, 'service restart');
        return;
      }
      peer.announced = true;
      callContained((error) => acceptor.#report(error, peer), acceptor.#onPeer, peer);
    }

    message(data: IncomingData): void {
      if (this.#backlog !== undefined) {
        this.#backlog.push(data);
        return;
      }
      if (typeof Blob !== 'undefined' && data instanceof Blob) {
        this.#backlog = [data];
        void this.#pump(this.#backlog);
        return;
      }
      this.#deliver(data as string | ArrayBuffer | ArrayBufferView);
    }

    closed(code?: number, reason?: string): void {
      const info: [number, string] = [
        typeof code === 'number' && code > 0 ? code : 1006,
        typeof reason === 'string' ? reason : '',
      ];
      if (this.#backlog !== undefined) this.#backlog.push({ close: info });
      else this.peer.session.closed(...info);
    }

    drain(): void {
      if (!this.peer.isClosed) this.peer.session.drain();
    }

    get side(): 'acceptor' {
      return 'acceptor';
    }

    get codec(): Codec {
      return this.#acceptor.#codec;
    }

    get limits(): Readonly<Limits> {
      return this.#acceptor.#limits;
    }

    // The session reads each callback from its options when it calls it, so the link hands it
    // out bound to the peer then, rather than holding three closures for the peer's lifetime.
    get onStream(): ((stream: Stream) => unknown) | undefined {
      const onStream = this.#acceptor.#onStream;
      if (onStream === undefined) return undefined;
      const peer = this.peer;
      return (stream) => onStream(stream, peer);
    }

    get onError(): (error: unknown) => void {
      return (error) => this.#acceptor.#report(error, this.peer);
    }

    get onClose(): (info: PeerCloseInfo) => void {
      return ({ code, reason }) => this.#acceptor.#ended(this.peer, { code, reason });
    }

    tagAdded(tag: string): void {
      this.#acceptor.#index(this.peer, tag);
    }

    tagDeleted(tag: string): void {
      this.#acceptor.#unindex(this.peer, tag);
    }

    #deliver(data: string | ArrayBuffer | ArrayBufferView): void {
      if (!this.peer.isClosed) this.peer.session.receive(data);
    }

    async #pump(backlog: Array<IncomingData | { close: [number, string] }>): Promise<void> {
      while (backlog.length > 0) {
        const item = backlog.shift()!;
        if (typeof Blob !== 'undefined' && item instanceof Blob) {
          let bytes: ArrayBuffer;
          try {
            bytes = await item.arrayBuffer();
          } catch (error) {
            this.#acceptor.#report(error, this.peer);
            continue;
          }
          this.#deliver(bytes);
        } else if (typeof item === 'object' && item !== null && 'close' in item) {
          this.peer.session.closed(...item.close);
        } else {
          this.#deliver(item as string | ArrayBuffer | ArrayBufferView);
        }
      }
      this.#backlog = undefined;
    }
  };

  #broadcast(tag: string, payload: unknown, options: BroadcastOptions): number {
    const what = 'Cannot broadcast';
    checkTag(what, tag);
    const except: string[] = [];
    for (const t of options.except ?? []) except.push(checkTag(what, t));
    const targets = this.#byTag.get(tag);
    // Other nodes may hold the tag, so only a node without a backplane may skip encoding.
    if (!this.#backplane && (!targets || targets.size === 0)) return 0;
    const headers = options.headers ?? null;
    // An encode failure throws here: broadcast() rejects and nothing is sent anywhere.
    const encoded = encodePublish(this.#codec, tag, payload, headers);
    const count = this.#deliver(tag, encoded, except);
    if (this.#backplane) {
      this.#publish({
        tag,
        headers,
        payload: encoded,
        except,
        origin: this.#nodeId,
        codec: this.#codec.name,
      });
    }
    return count;
  }

  /** WSM-BP-004: a backplane failure is reported, never thrown into broadcast(). */
  #publish(message: BackplaneMessage): void {
    try {
      const result = this.#backplane!.publish(message);
      if (result !== undefined && typeof (result as Promise<void>).then === 'function') {
        (result as Promise<void>).then(undefined, (error) => this.#report(error));
      }
    } catch (error) {
      this.#report(error);
    }
  }

  /** A broadcast of another node: the same bytes to this node's tagged peers. */
  #fromBackplane(message: BackplaneMessage): void {
    if (message.origin === this.#nodeId) return;
    if (message.codec !== this.#codec.name) {
      this.#report(
        new BackplaneError(
          `Cannot deliver a broadcast of node "${message.origin}" to tag "${message.tag}" as it is encoded with codec "${message.codec}": this acceptor uses "${this.#codec.name}"`,
        ),
      );
      return;
    }
    this.#deliver(message.tag, message.payload, message.except ?? []);
  }

  /** Hands one encoded PUBLISH to every live peer holding `tag` and no `except` tag. */
  #deliver(tag: string, encoded: string | Uint8Array, except: readonly string[]): number {
    const targets = this.#byTag.get(tag);
    if (!targets || targets.size === 0) return 0;
    let count = 0;
    for (const peer of [...targets]) {
      if (peer.isClosed) continue;
      if (except.length > 0 && except.some((t) => peer.tags.has(t))) continue;
      let sent = false;
      try {
        sent = peer.session.sendEncoded(encoded);
      } catch (error) {
        this.#report(error, peer);
        continue;
      }
      if (sent) {
        count++;
        this.#delivered++;
      } else {
        this.#dropped++;
      }
    }
    return count;
  }

  #index(peer: PeerImpl, tag: string): void {
    let set = this.#byTag.get(tag);
    if (!set) this.#byTag.set(tag, set = new Set());
    set.add(peer);
  }

  #unindex(peer: PeerImpl, tag: string): void {
    const set = this.#byTag.get(tag);
    if (!set) return;
    set.delete(peer);
    if (set.size === 0) this.#byTag.delete(tag);
  }

  #ended(peer: PeerImpl, info: PeerCloseInfo): void {
    if (!peer.ended(info)) return;
    this.#peers.delete(peer);
    peer.tags.bind(undefined);
    for (const tag of peer.tags) this.#unindex(peer, tag);
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
      peer.session.close(1001, 'idle timeout');
    }
    this.#armSweep();
  }

  #report(error: unknown, peer?: Peer): void {
    reportTo(this.#onError, error, peer);
  }
}
