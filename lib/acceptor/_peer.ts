/**
 * One accepted socket inside the acceptor: the public {@linkcode Peer} ({@linkcode PeerImpl})
 * and its plumbing ({@linkcode PeerLink}): the session's sink and options, and the receiver of
 * the socket's events. Both are ordinary classes over a small {@linkcode PeerHost}, what a peer
 * needs of its acceptor, so this file never imports the acceptor.
 *
 * Private to `lib/acceptor/`, never re-exported.
 *
 * @module
 */
import type { Codec } from '../wire/codec.ts';
import type { Limits } from '../session/limits.ts';
import type { OpenOptions, RequestOptions, Stream } from '../session/stream.ts';
import type { SocketDriver } from '../sockets/socket_driver.ts';
import type {
  AttachOptions,
  EmitOptions,
  IncomingData,
  Peer,
  PeerCloseInfo,
  PeerHello,
  PeerSink,
  ServerWebSocket,
} from './acceptor_types.ts';
import { StreamError } from '../errors.ts';
import { control } from '../session/stream.ts';
import { Session, type SessionOptions } from '../session/session.ts';
import { goAway } from '../session/acceptor_api.ts';
import { acceptorPolicy } from './_policy.ts';
import {
  type Admission,
  type AdmissionHost,
  type AdmissionState,
  admit,
  helloRefused,
  holdForHello,
  isBarred,
  sendPublish,
  type Waiting,
} from './_admission.ts';
import {
  CloseCode,
  closeCodeOf,
  closingTerms,
  HELLO_REQUIRED_REASON,
  ResetCode,
} from '../wire/codes.ts';
import { callContained } from '../util/contain.ts';
import { checkClose } from './_acceptor_checks.ts';
import { encodeEvent } from './_events.ts';
import { type TagIndex, TagSet } from './_tags.ts';
import { type TopicSink, topicSinkOf } from './_topics.ts';
import { PRESENCE } from '../wire/reserved.ts';
import type { ServedRoutes } from '../routes/routes.ts';
import { defineRouteCalls, streamHandler } from '../routes/route_streams.ts';

/** What the hello of a peer tells recovery (`lib/acceptor/_recovery.ts`), when the acceptor has history. */
interface HelloRecovery {
  /** The hello arrived, before `onHello` runs. */
  arrived(peer: PeerImpl, headers: Readonly<Record<string, unknown>> | null): void;
  /** The hello was acknowledged: the peer's tags are restored. */
  acknowledged(peer: PeerImpl): void;
  /** The hello was refused. */
  refused(peer: PeerImpl): void;
  /** The peer's socket drained: its recovery, if it waits for the socket, goes on. */
  drain(peer: PeerImpl): void;
}

/** What a peer needs of its acceptor's presence: the follows its dialer opens. */
export interface PresenceFollows {
  /** A stream whose OPEN carries `:presence`: a follow, answered in place of `onStream`. */
  follow(peer: PeerImpl, stream: Stream): unknown;
}

/** What a peer needs of its acceptor; the acceptor holds one for all its peers. */
export interface PeerHost {
  /** The codec of every peer. */
  readonly codec: Codec;
  /** The resolved limits of every peer. */
  readonly limits: Readonly<Limits>;
  /** The acceptor's `onStream`, if set. */
  readonly onStream: ((stream: Stream, peer: Peer) => unknown) | undefined;
  /** The acceptor's `routes`, if set (checked). */
  readonly routes?: ServedRoutes | undefined;
  /** The acceptor's `onPeer`, if set. */
  readonly onPeer: ((peer: Peer) => void) | undefined;
  /** The acceptor's `onHello`, if set. */
  readonly onHello: ((hello: PeerHello, peer: Peer) => unknown) | undefined;
  /** Recovery, when the acceptor has a `history` store. */
  readonly recovery?: HelloRecovery | undefined;
  /** The acceptor's presence, which takes the `:presence` OPENs. */
  readonly presence?: PresenceFollows | undefined;
  /** Whether a hello is required (`requireHello`, which needs `onHello`). */
  readonly requireHello: boolean;
  /** How long a peer may take to send the required hello. */
  readonly helloTimeoutMs: number;
  /** The close code once the acceptor began to close; `undefined` before. */
  readonly closeCode: number | undefined;
  /** The GOAWAY's `spreadMs` once the acceptor began to close. */
  readonly closeSpreadMs: number;
  /** Contains an error: to `onError` with the peer, else `console.error`. */
  report(error: unknown, peer?: Peer): void;
  /** `peer` was accepted: broadcasts may take the native path to it from now on. */
  admitted(peer: PeerImpl): void;
  /**
   * `count` PUBLISH frames that waited for a peer's hello, counted as delivered, were not sent
   * after all: the hello was refused, or the socket was congested when they went out.
   */
  discarded(count: number): void;
  /** `tag` was added to `peer`: index it. */
  index(peer: PeerImpl, tag: string): void;
  /** `tag` was deleted from `peer`: unindex it. */
  unindex(peer: PeerImpl, tag: string): void;
  /** `peer`'s session ended. */
  ended(peer: PeerImpl, info: PeerCloseInfo): void;
}

/** The reset message of an OPEN with no handler to take it (as the session's own refusal). */
const NO_STREAM_HANDLER = 'No stream handler';
/** Why the GOAWAY of a closing acceptor is sent, for the dialer's logs. */
const CLOSING_MESSAGE = 'The acceptor is closing';
/** The reset message of a hello whose handler failed with anything but a `StreamError`. */
const HELLO_FAILED_MESSAGE = 'The hello handler failed';

/**
 * Freezes a decoded value in place, all the way down, and returns it: plain objects and arrays
 * are frozen (a decoded value nests at most `limits.maxDepth` deep); anything else (a `Uint8Array`
 * or `Date` of a binary codec) is left as it is. The hello is kept as it was decoded, with no
 * second copy.
 */
function frozen<T>(value: T): T {
  if (typeof value !== 'object' || value === null || Object.isFrozen(value)) return value;
  if (!Array.isArray(value)) {
    const proto = Object.getPrototypeOf(value);
    if (proto !== Object.prototype && proto !== null) return value;
  }
  Object.freeze(value);
  for (const item of Object.values(value)) frozen(item);
  return value;
}

/** The frozen {@linkcode PeerHello} of a hello stream: a view of its decoded payload and headers. */
function helloOf(stream: Stream): PeerHello {
  return Object.freeze({
    payload: frozen(stream.payload),
    headers: frozen(stream.headers) as PeerHello['headers'],
  });
}

/**
 * A fresh peer id. Node builds `crypto.randomUUID()` as a rope of some twenty pieces, held for
 * the life of the peer; reading a character makes V8 flatten it to one 36-character string, a
 * fraction of the rope's size. Elsewhere the id is flat already and this costs nothing.
 */
function newPeerId(): string {
  const id = crypto.randomUUID();
  id.charCodeAt(0);
  return id;
}

/**
 * Sends GOAWAY (the terms of `code`, carrying `spreadMs`) to a peer of a closing acceptor; a
 * throwing send is reported. The peer's close follows, once it has drained or at once.
 */
export function sayGoAway(host: PeerHost, peer: PeerImpl, code: number, spreadMs: number): void {
  try {
    goAway(peer.session, closingTerms(code).goAway, CLOSING_MESSAGE, spreadMs);
  } catch (error) {
    host.report(error, peer);
  }
}

/** The reset message of a second hello to a peer whose hello was accepted (a restored peer). */
const HELLO_AGAIN_MESSAGE = 'The hello was already accepted';
/** The reason of the close that follows the RESET of a refused hello. */
const HELLO_REFUSED_REASON = 'hello rejected';

/**
 * A {@linkcode Peer}. Its `id` (unless restored), `closed` promise and `data` object are created
 * when first read, and its idle clock is its session's (which starts when the peer is accepted):
 * an idle peer holds as little as it can, since idle memory per peer is budgeted.
 */
export class PeerImpl implements Peer {
  /** The restored id, or the fresh one once read. */
  #id: string | undefined;
  readonly tags: TagSet = new TagSet();
  readonly session: Session;
  // The routed half of `Caller`, defined on the prototype below (one copy for both sides).
  declare call: Peer['call'];
  declare stream: Peer['stream'];
  /** The peer's link, its session's sink. */
  readonly sink: PeerLink;
  /** onPeer has fired, so onPeerClose will. */
  announced = false;
  /** The accepted hello; undefined before (and always without onHello). */
  hello: PeerHello | undefined;
  #data: Record<string, unknown> | undefined;
  /**
   * The end, in one field: `undefined` while open and `closed` unread; the waiter while open
   * and read; once ended, the close info, or the `closed` promise once read (resolved with it).
   */
  #end: PeerCloseInfo | ClosedWaiter | Promise<PeerCloseInfo> | undefined;

  /** Creates the peer of `link` and its session (tags are added before the session exists). */
  constructor(link: PeerLink, options: AttachOptions) {
    this.#id = options.id;
    this.#data = options.data;
    this.hello = options.hello;
    for (const tag of options.tags ?? []) this.tags.add(tag);
    this.sink = link;
    this.session = new Session(link, link, acceptorPolicy);
  }

  /** What the acceptor sends it waits for its hello: its link ({@linkcode Admission}). */
  get admission(): Admission {
    return this.sink;
  }

  get id(): string {
    return this.#id ??= newPeerId();
  }

  get data(): Record<string, unknown> {
    return this.#data ??= {};
  }

  set data(value: Record<string, unknown>) {
    this.#data = value;
  }

  get closed(): Promise<PeerCloseInfo> {
    const end = this.#end;
    if (end instanceof Promise) return end;
    if (end instanceof ClosedWaiter) return end.promise;
    if (end === undefined) {
      const waiter = new ClosedWaiter();
      this.#end = waiter;
      return waiter.promise;
    }
    return this.#end = Promise.resolve(end);
  }

  get isClosed(): boolean {
    const end = this.#end;
    return end !== undefined && !(end instanceof ClosedWaiter);
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

  emit(name: string, payload: unknown, options?: EmitOptions): boolean {
    return this.admission.sendPublish(encodeEvent(this.sink.codec, name, payload, options));
  }

  close(code: number = 1000, reason: string = ''): void {
    checkClose('Cannot close a Peer', code, reason);
    this.session.close(code, reason);
  }

  /** Records the end; returns false when it was already recorded. */
  ended(info: PeerCloseInfo): boolean {
    if (this.isClosed) return false;
    const end = this.#end;
    if (end instanceof ClosedWaiter) {
      this.#end = end.promise;
      end.resolve(info);
    } else {
      this.#end = info;
    }
    return true;
  }

  static {
    defineRouteCalls(this);
  }
}

/** A peer's `closed` promise read before the peer ended, with its resolver. */
class ClosedWaiter {
  readonly promise: Promise<PeerCloseInfo>;
  resolve!: (info: PeerCloseInfo) => void;

  constructor() {
    this.promise = new Promise((resolve) => this.resolve = resolve);
  }
}

/** A close that waits in a peer's backlog behind a Blob. */
interface BackloggedClose {
  close: [number, string];
}

/**
 * One peer's plumbing. One object per peer: it is also its session's options, its admission
 * ({@linkcode Admission}) and the index its tag set tells, with its methods on one shared prototype rather than a dozen closures per peer,
 * since idle memory per peer is budgeted (docs/performance.md). It is the session's sink (a
 * `WebSocket` from `Acceptor.accept()`, whose sends wait in a queue while it connects, or the
 * caller's sink from `Acceptor.attach()`; a throwing close is reported) and takes the socket's
 * events, feeding messages in order: a Blob is read before anything after it.
 */
export class PeerLink implements PeerSink, TagIndex, SessionOptions, Admission, AdmissionHost {
  /** Where the peer stands with what is sent to it ({@linkcode Admission}). */
  admissionState: AdmissionState;
  /** The PUBLISH frames that wait for its hello's acknowledgement, once one waits. */
  waiting: Waiting | undefined;
  /** {@linkcode AttachOptions.nextStreamId}, which the session reads when it is created. */
  readonly firstStreamId: number | undefined;
  readonly peer: PeerImpl;
  readonly #host: PeerHost;
  /** accept()'s socket, or attach()'s sink. */
  readonly #transport: PeerSink | ServerWebSocket;
  /** The driver of accept()'s socket; undefined for attach()'s sink. */
  readonly #driver: SocketDriver | undefined;
  /** accept()'s sends while its socket connects. */
  #queued: Array<string | Uint8Array> | undefined;
  /** Closes the peer when the required hello does not come in time; armed at the announce. */
  #helloTimer: ReturnType<typeof setTimeout> | undefined;
  /** Events waiting for a Blob before them to be read; set only while that goes on. */
  #backlog: Array<IncomingData | BackloggedClose> | undefined;

  /**
   * Creates the link, its peer and the peer's session.
   *
   * @param host The acceptor.
   * @param transport accept()'s socket (with its `driver`) or attach()'s sink.
   * @param options A restored peer's id, tags, data and next stream id.
   * @throws {TypeError} For an invalid tag. @throws {RangeError} For an invalid stream id.
   */
  constructor(
    host: PeerHost,
    transport: PeerSink | ServerWebSocket,
    driver: SocketDriver | undefined,
    options: AttachOptions,
  ) {
    // Shut while the acceptor requires a hello this peer has not had accepted.
    this.admissionState = host.requireHello && options.hello === undefined ? 'shut' : 'open';
    this.#host = host;
    this.#transport = transport;
    this.#driver = driver;
    this.firstStreamId = options.nextStreamId;
    this.peer = new PeerImpl(this, options);
  }

  get session(): Session {
    return this.peer.session;
  }

  // The peer's Admission, over the functions of `_admission.ts`.
  get state(): AdmissionState {
    return this.admissionState;
  }

  get barred(): boolean {
    return isBarred(this);
  }

  holdForHello(): void {
    holdForHello(this);
  }

  admit(): number {
    return admit(this);
  }

  helloRefused(): number {
    return helloRefused(this);
  }

  sendPublish(data: string | Uint8Array, counted?: boolean): boolean {
    return sendPublish(this, data, counted);
  }

  send(data: string | Uint8Array): void {
    const driver = this.#driver;
    if (driver === undefined) {
      (this.#transport as PeerSink).send(data);
      return;
    }
    const socket = this.#transport as ServerWebSocket;
    if (socket.readyState === 0) {
      (this.#queued ??= []).push(data);
    } else if (socket.readyState === 1) {
      driver.send(socket, data);
    }
  }

  /** Whether the socket's driver takes a broadcast's text as bytes (the `ws` package's). */
  get isWs(): boolean {
    return this.#driver?.takesTextBytes === true;
  }

  close(code: number, reason: string): void {
    try {
      this.#transport.close(code, reason);
    } catch (error) {
      this.#host.report(error, this.peer);
    }
  }

  /** The publish/subscribe topics of attach()'s sink, when it offers them (Bun). */
  get topics(): TopicSink | undefined {
    return this.#driver !== undefined ? undefined : topicSinkOf(this.#transport);
  }

  get bufferedAmount(): number | undefined {
    if (this.#driver === undefined) return (this.#transport as PeerSink).bufferedAmount;
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
      const socket = this.#transport as ServerWebSocket;
      for (const data of queued) this.#driver!.send(socket, data);
    }
    this.announce();
  }

  /** Fires `onPeer` once, or turns the peer away (GOAWAY, then close) while the acceptor closes. */
  announce(): void {
    const peer = this.peer;
    // Once turned away below, the peer is closed: it is announced at most once either way.
    if (peer.announced || peer.isClosed) return;
    const host = this.#host;
    const code = host.closeCode;
    if (code !== undefined) {
      // Too late to serve: tell the dialer to redial elsewhere and close at once.
      sayGoAway(host, peer, code, host.closeSpreadMs);
      peer.session.close(code, closingTerms(code).reason);
      return;
    }
    peer.announced = true;
    if (this.helloPending) {
      this.#helloTimer = setTimeout(() => {
        this.#helloTimer = undefined;
        if (!peer.isClosed) peer.session.close(CloseCode.Policy, HELLO_REQUIRED_REASON);
      }, host.helloTimeoutMs);
    }
    callContained((error) => host.report(error, peer), host.onPeer, peer);
  }

  /** Stops the hello timer: the hello arrived, or the peer ended. */
  clearHelloTimer(): void {
    if (this.#helloTimer === undefined) return;
    clearTimeout(this.#helloTimer);
    this.#helloTimer = undefined;
  }

  /** True while the acceptor requires a hello this peer has not had acknowledged. */
  get helloPending(): boolean {
    return this.#host.requireHello && this.peer.hello === undefined;
  }

  /**
   * The session's handler of the dialer's hello: `onHello` bound to the peer, if set. With
   * recovery, a hello carrying only `:resume` (a null payload, no other header) is muxws's own:
   * acknowledged without reaching `onHello` (unless `requireHello`) or `onStream`.
   */
  get onHello(): ((stream: Stream) => unknown) | undefined {
    const host = this.#host;
    // Only a peer restored with its accepted hello (a Durable Object that woke) can be sent
    // another: its session is new, so stream 1 is not known as used.
    if (this.peer.hello !== undefined) {
      return (stream) => stream.reset(ResetCode.Refused, HELLO_AGAIN_MESSAGE);
    }
    if (host.recovery !== undefined && !host.requireHello) {
      return (stream) => this.#resumeHello(stream, host.recovery!);
    }
    return host.onHello === undefined ? undefined : (stream) => this.#hello(stream);
  }

  /**
   * A hello with recovery and no required hello: muxws's own when it carries only `:resume`,
   * else `onHello`'s or (without it) `onStream`'s as before; the replay starts once it is
   * answered.
   */
  #resumeHello(stream: Stream, recovery: HelloRecovery): unknown {
    const headers = stream.headers;
    const only = stream.payload === null || stream.payload === undefined
      ? headers === null || Object.keys(headers).every((key) => key.charCodeAt(0) === 58)
      : false;
    if (!only && this.#host.onHello !== undefined) return this.#hello(stream);
    recovery.arrived(this.peer, headers);
    const handler = only ? undefined : this.onStream;
    return this.#answer(stream, handler && (() => handler(stream)), undefined);
  }

  /** The peer's hello was refused: what waited for it is dropped. */
  #refused(): void {
    const waited = this.peer.admission.helloRefused();
    if (waited > 0) this.#host.discarded(waited);
  }

  /** The peer is accepted: what waited goes out, and broadcasts reach it as any other. */
  #open(): void {
    const unsent = this.peer.admission.admit();
    if (unsent > 0) this.#host.discarded(unsent);
    this.#host.admitted(this.peer);
  }

  /** Runs `onHello`, whose answer accepts or refuses the peer. */
  #hello(stream: Stream): unknown {
    this.clearHelloTimer();
    const peer = this.peer;
    const hello = helloOf(stream);
    this.#host.recovery?.arrived(peer, hello.headers);
    return this.#answer(stream, () => this.#host.onHello!(hello, peer), hello);
  }

  /**
   * The one accept-or-refuse step of a hello on `stream`: frames wait while `run` (the handler;
   * none for muxws's own hello) runs. What it returns is the welcome, sent with END before
   * anything else may reach the peer; then the frames that waited go out and a replay starts. A
   * failure, or a welcome that cannot be encoded, refuses the peer: stream 1 is reset (a
   * `StreamError` is an outcome, never reported), what waited is dropped and the peer is closed.
   * The session's own settle of `stream` that follows does nothing.
   *
   * @param hello The hello to keep as the peer's once it is accepted (`onHello`'s).
   */
  #answer(stream: Stream, run: (() => unknown) | undefined, hello: PeerHello | undefined): unknown {
    const peer = this.peer;
    const session = peer.session;
    const recovery = this.#host.recovery;
    peer.admission.holdForHello();
    const close = () => {
      this.#refused();
      recovery?.refused(peer);
      // After the RESET that says why: a refused peer receives nothing and keeps nothing open.
      // Not a terminal code, so the dialer's retry (with fresh credentials) goes on.
      session.close(CloseCode.Normal, HELLO_REFUSED_REASON);
    };
    const refuse = (error: unknown) => {
      if (error instanceof StreamError) {
        control.failHandler(stream, error); // its code, message and issues; nothing reported
      } else {
        this.#host.report(error, peer);
        stream.reset(ResetCode.Internal, HELLO_FAILED_MESSAGE);
      }
      close();
    };
    const accept = (welcome: unknown) => {
      control.settle(stream, welcome);
      // A welcome that could not be encoded: the dialer was sent a RESET, as for a refusal.
      if (stream.signal.aborted) {
        close();
        return welcome;
      }
      if (hello !== undefined) peer.hello = hello;
      this.#open();
      recovery?.acknowledged(peer);
      return welcome;
    };
    if (run === undefined) return accept(undefined);
    let result: unknown;
    try {
      result = run();
    } catch (error) {
      return refuse(error);
    }
    if (
      result !== null && (typeof result === 'object' || typeof result === 'function') &&
      typeof (result as PromiseLike<unknown>).then === 'function'
    ) {
      return Promise.resolve(result as PromiseLike<unknown>).then(accept, refuse);
    }
    return accept(result);
  }

  /** One received message; while a Blob is read, it waits behind it. */
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

  /** The socket closed (a missing or 0 code counts as 1006); waits behind a Blob being read. */
  closed(code?: number, reason?: string): void {
    const info: [number, string] = [closeCodeOf(code), typeof reason === 'string' ? reason : ''];
    if (this.#backlog !== undefined) this.#backlog.push({ close: info });
    else this.peer.session.closed(...info);
  }

  /** The socket's send buffer drained: waiting writes re-check. */
  drain(): void {
    if (this.peer.isClosed) return;
    this.peer.session.drain();
    this.#host.recovery?.drain(this.peer);
  }

  get side(): 'acceptor' {
    return 'acceptor';
  }

  get codec(): Codec {
    return this.#host.codec;
  }

  get limits(): Readonly<Limits> {
    return this.#host.limits;
  }

  // The session reads each callback from its options when it calls it, so the link hands it
  // out bound to the peer then, rather than holding three closures for the peer's lifetime.
  get onStream(): ((stream: Stream) => unknown) | undefined {
    const handler = streamHandler(this.#host.routes, this.#host.onStream, this.peer as Peer);
    const presence = this.#host.presence;
    if (presence === undefined) return handler;
    // A follow of a tag's presence is muxws's own: it never reaches the routes or `onStream`.
    return (stream) => {
      const headers = stream.headers;
      if (headers !== null && headers[PRESENCE] !== undefined && !stream.isHello) {
        return presence.follow(this.peer, stream);
      }
      if (handler !== undefined) return handler(stream);
      control.fail(stream, ResetCode.Refused, NO_STREAM_HANDLER);
      return undefined;
    };
  }

  get onError(): (error: unknown) => void {
    return (error) => this.#host.report(error, this.peer);
  }

  get onClose(): (info: PeerCloseInfo) => void {
    return ({ code, reason }) => {
      this.clearHelloTimer();
      this.#host.ended(this.peer, { code, reason });
    };
  }

  tagAdded(tag: string): void {
    this.#host.index(this.peer, tag);
  }

  tagDeleted(tag: string): void {
    this.#host.unindex(this.peer, tag);
  }

  #deliver(data: string | ArrayBuffer | ArrayBufferView): void {
    if (!this.peer.isClosed) this.peer.session.receive(data);
  }

  async #pump(backlog: Array<IncomingData | BackloggedClose>): Promise<void> {
    while (backlog.length > 0) {
      const item = backlog.shift()!;
      if (typeof Blob !== 'undefined' && item instanceof Blob) {
        let bytes: ArrayBuffer;
        try {
          bytes = await item.arrayBuffer();
        } catch (error) {
          this.#host.report(error, this.peer);
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
}
