/**
 * The dialer: {@linkcode connect} opens a WebSocket, establishes it (subprotocol, hello), and
 * keeps a {@linkcode Connection} over it, redialling on the jittered schedule of
 * {@linkcode Reconnect} whenever an established socket is lost (SPEC §4, §5, standing
 * subscriptions).
 *
 * @module
 */
import { type Codec, jsonCodec, subprotocol } from './codec.ts';
import {
  ClosedError,
  ConnectError,
  HelloRejectedError,
  NotConnectedError,
  ProtocolError,
  StreamResetError,
  TimeoutError,
} from './errors.ts';
import { Hello, type HelloOptions } from './hello.ts';
import type { Limits } from './limits.ts';
import {
  backoffDelay,
  type RandomDraw,
  Reconnect,
  type ReconnectOptions,
  shouldRetry,
  uniform,
} from './schedule.ts';
import type { OpenOptions, PublishMessage, RequestOptions, Stream } from './stream.ts';
import { type GoAway, Session } from './_session.ts';
import { utf8Length } from './_frame.ts';
import { cork } from './_node_ws.ts';
import { DEFAULT_SERVICE_RESTART, DEFAULT_TERMINAL } from './_codes.ts';
import { retryAfterMs } from './_retry_after.ts';

/** The states of a {@linkcode Connection} (WSM-DIAL-005). */
export type ConnectionState = 'connecting' | 'open' | 'reconnecting' | 'closed';

/** A dial target with extra subprotocols, offered after the muxws one (WSM-WIRE-001). */
export interface DialTarget {
  /** The `ws:` or `wss:` URL to dial. */
  url: string | URL;
  /** Extra subprotocol tokens offered after `muxws.v1.<codec>`, e.g. a short-lived credential. */
  protocols?: readonly string[];
}

/** What a target or hello function is told about the attempt it prepares (WSM-DIAL-001). */
export interface DialContext {
  /** How many consecutive attempts have failed so far (0 for the first dial after a loss). */
  readonly attempt: number;
  /** `initial` for the first connection of `connect()`, `reconnect` for every redial. */
  readonly reason: 'initial' | 'reconnect';
  /** True when this redial follows a service-restart close code or a GOAWAY (WSM-RCN-020). */
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
 * called before every attempt that returns one of them (WSM-DIAL-001).
 */
export type DialTargetInput =
  | string
  | URL
  | DialTarget
  | ((ctx: DialContext) => string | URL | DialTarget | Promise<string | URL | DialTarget>);

/** The hello of {@linkcode ConnectOptions.hello}: fixed, or computed per attempt (WSM-DIAL-004). */
export type HelloInput =
  | Hello
  | HelloOptions
  | ((ctx: DialContext) => Hello | HelloOptions | Promise<Hello | HelloOptions>);

/** The close-code policy of the redial loop (WSM-RCN-020). */
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

/**
 * The default close-code policy (WSM-RCN-020): 1012 redials fast; protocol, policy and size
 * violations and the application's 4401/4403 stop; every other code backs off.
 *
 * @example Extend the terminal codes with an application code
 * ```ts
 * import { type CloseCodes, DEFAULT_CLOSE_CODES } from 'muxws';
 * import assert from 'node:assert/strict';
 *
 * const closeCodes: CloseCodes = { terminal: [...DEFAULT_CLOSE_CODES.terminal, 4409] };
 * assert(closeCodes.terminal?.includes(4401));
 * assert.deepEqual(DEFAULT_CLOSE_CODES.serviceRestart, [1012]);
 * ```
 */
export const DEFAULT_CLOSE_CODES: Readonly<Required<CloseCodes>> = Object.freeze({
  serviceRestart: Object.freeze([...DEFAULT_SERVICE_RESTART]),
  terminal: Object.freeze([...DEFAULT_TERMINAL]),
});

/** Heartbeat settings (WSM-DIAL-009). */
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

/** What {@linkcode ConnectOptions.onOpen} receives on every establishment. */
export interface OpenInfo {
  /** False for the first connection of `connect()`, true after a redial. */
  reconnected: boolean;
  /** How many attempts had failed before this establishment. */
  attempts: number;
  /** The value the acceptor's hello handler returned (undefined without one). */
  welcome: unknown;
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
  /** What ended the connection, when it was an error (heartbeat, protocol, failed redial). */
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

/** The minimal `WebSocket` surface the dialer uses (WHATWG `WebSocket`, `ws`, test fakes). */
export interface DialerSocket {
  /** `WebSocket.readyState`: 0 connecting, 1 open, 2 closing, 3 closed. */
  readonly readyState: number;
  /** The subprotocol the acceptor selected. */
  readonly protocol: string;
  /** Bytes queued but not yet sent. */
  readonly bufferedAmount: number;
  /** Set to `arraybuffer` by the dialer. */
  binaryType: string;
  /** Sends one message. */
  send(data: string | Uint8Array): void;
  /** Closes the socket. */
  close(code?: number, reason?: string): void;
  /** Adds an event listener (`open`, `message`, `error`, `close`). */
  addEventListener(type: string, listener: (event: Event) => void): void;
  /** Removes an event listener. */
  removeEventListener(type: string, listener: (event: Event) => void): void;
  /**
   * Set by the dialer to a no-op for the socket's whole life: an EventEmitter-based socket
   * (`ws` on Node) throws an `error` event that has no listener, and it emits one after an
   * abandoned handshake or a transport failure, when the dialer's own listeners are gone. The
   * close event that follows is what the dialer acts on.
   */
  onerror?: ((event: Event) => void) | null;
}

/** A constructor with the `WebSocket` signature, e.g. `globalThis.WebSocket` or `ws`. */
export type DialerSocketConstructor = new (
  url: string,
  protocols?: string | string[],
) => DialerSocket;

/** Options of {@linkcode SubscribeOptions.dedupe} (WSM-SUB-003). */
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

/** What {@linkcode SubscribeOptions.onReopen} receives after each re-open (WSM-SUB-002). */
export interface ReopenInfo {
  /** Always true: the subscription was re-opened on a new connection and may have gaps. */
  resubscribed: true;
}

/** Options of {@linkcode Connection.subscribe}. */
export interface SubscribeOptions {
  /** Headers of the subscription's OPEN, captured by value. */
  headers?: Record<string, unknown> | null;
  /** Called with each message the acceptor sends on the subscription. */
  onMessage: (message: unknown) => unknown;
  /** Called after each re-open on a new connection, before `onOpen`. */
  onReopen?: (info: ReopenInfo) => unknown;
  /** Aborting it cancels the subscription, as `unsubscribe()` does. */
  signal?: AbortSignal;
  /** Drops messages whose key was seen recently. */
  dedupe?: DedupeOptions;
}

/** A standing interest registered by {@linkcode Connection.subscribe}. */
export interface Subscription {
  /** False once cancelled. */
  readonly active: boolean;
  /** Resets the live stream with `cancel`, removes the interest, clears the dedupe window. */
  unsubscribe(): void;
}

/** Options of {@linkcode Connection.opened}. */
export interface OpenedOptions {
  /** Stops waiting; the promise rejects with the signal's reason. */
  signal?: AbortSignal;
}

/**
 * Options of {@linkcode connect} (WSM-DIAL-012). Every field is optional.
 *
 * @example A fresh credential per attempt, a hello, and a patient schedule
 * ```ts
 * import { type ConnectOptions, type DialContext, Reconnect } from 'muxws';
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
export interface ConnectOptions {
  /**
   * The codec; its name selects the subprotocol `muxws.v1.<name>`.
   *
   * @default {jsonCodec}
   */
  codec?: Codec;
  /** The hello sent on id 1 of every connection; none: established when the socket opens. */
  hello?: HelloInput;
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
  /** Per-connection limits (WSM-ACC-006). */
  limits?: Partial<Limits>;
  /**
   * The WebSocket constructor.
   *
   * @default {globalThis.WebSocket}
   */
  WebSocket?: DialerSocketConstructor;
  /** Aborting it closes the connection for good (before the first connection: `connect()` rejects). */
  signal?: AbortSignal;
  /** Acceptor-opened streams; none set: they are refused with `refused`. */
  onStream?: (stream: Stream, connection: Connection) => unknown;
  /** PUBLISH frames. */
  onPublish?: (message: PublishMessage) => unknown;
  /** Every establishment. */
  onOpen?: (info: OpenInfo) => unknown;
  /** The loss of an established connection, giving up, and `close()`. */
  onClose?: (info: CloseInfo) => unknown;
  /** Before each scheduled redial. */
  onReconnecting?: (info: ReconnectingInfo) => unknown;
  /** Contained errors: bad frames, throwing callbacks. Default: `console.error`. */
  onError?: (error: unknown) => unknown;
}

/**
 * A dialled connection that redials lost sockets (WSM-DIAL-005..008).
 *
 * Callback order on a loss: every stream of the lost socket fails with `connection_lost`, then
 * `onClose`, then (when a redial is scheduled) `onReconnecting`. On establishment: standing
 * subscriptions are re-opened in registration order (each `onReopen`), then `onOpen`. The state
 * is always updated before a callback runs.
 *
 * @example Requests, a stream, and a standing subscription
 * ```ts ignore
 * import { connect } from 'muxws';
 *
 * await using connection = await connect('wss://example.com/ws');
 * const answer = await connection.request({ op: 'sum', args: [1, 2] }, { timeoutMs: 5000 });
 * const stream = connection.open({ op: 'upload' });
 * await stream.write('chunk');
 * await stream.end();
 * const subscription = await connection.subscribe({ room: 'lobby' }, {
 *   onMessage: (message) => console.log(message),
 *   onReopen: () => console.log('resubscribed: messages may have been missed'),
 *   dedupe: { key: (message) => (message as { id: string }).id },
 * });
 * subscription.unsubscribe();
 * console.log(answer, connection.state);
 * ```
 */
export interface Connection extends AsyncDisposable {
  /** `connecting`, `open`, `reconnecting` or `closed`. */
  readonly state: ConnectionState;
  /** The acceptor's hello acknowledgement value on the current (or last) connection. */
  readonly welcome: unknown;
  /** Resolves once the connection is closed for good, with the final close information. */
  readonly closed: Promise<CloseInfo>;
  /**
   * Resolves at the next establishment (at once when open); rejects with `ClosedError` when the
   * connection closes for good, or with the signal's reason.
   */
  opened(options?: OpenedOptions): Promise<void>;
  /** Opens a stream (WSM-STR-001); throws `NotConnectedError` while not open or after GOAWAY. */
  open(payload: unknown, options?: OpenOptions): Stream;
  /** Sends a request (WSM-STR-005); rejects with `NotConnectedError` at once while not open. */
  request(payload: unknown, options?: RequestOptions): Promise<unknown>;
  /** Registers a standing subscription (WSM-SUB-001..003). */
  subscribe(payload: unknown, options: SubscribeOptions): Promise<Subscription>;
  /**
   * Closes for good (WSM-DIAL-007); idempotent.
   *
   * @throws {RangeError} When `code` is not 1000 or 3000–4999, or `reason` is over 123 UTF-8 bytes.
   */
  close(code?: number, reason?: string): Promise<CloseInfo>;
}

const HELLO_AUTH_CODES: ReadonlySet<string> = new Set(['unauthorized', 'forbidden']);
const MAX_TIMER_MS = 2_147_483_647;
const MAX_LOOKBACK_MS = 4_294_967_295;

/**
 * Dials `target` and resolves with the established {@linkcode Connection} (WSM-DIAL-001..012).
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
 * upgrade whose `Retry-After` the runtime exposes (the Node `ws` package does; browsers, Deno and
 * Bun do not) holds the next redial at least that long, capped at the schedule's `maxDelayMs`.
 *
 * @param target A URL (`string` or `URL`), a {@linkcode DialTarget} (`{ url, protocols }`), or a
 * function returning one of them, called before every attempt.
 * @param options See {@linkcode ConnectOptions}.
 * @returns The connection, once established.
 * @throws {TypeError} (rejection) When an option has the wrong type.
 * @throws {RangeError} (rejection) When a duration or code is out of range.
 * @throws {ConnectError} (rejection) When the first connection fails; `cause` says why.
 *
 * @example Connect, make a request, close
 * ```ts ignore
 * import { connect } from 'muxws';
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
 * import { connect } from 'muxws';
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
 * import { ConnectError, connect } from 'muxws';
 * import assert from 'node:assert/strict';
 *
 * const error = await connect(() => {
 *   throw new Error('no credentials');
 * }, { reconnect: false }).catch((e) => e);
 * assert(error instanceof ConnectError);
 * assert.equal((error.cause as Error).message, 'no credentials');
 * ```
 */
export async function connect(
  target: DialTargetInput,
  options: ConnectOptions = {},
): Promise<Connection> {
  const connection = new DialerConnection(target, options);
  return await connection.start();
}

/** One socket and its session, from construction to close. */
interface Link {
  readonly socket: DialerSocket;
  readonly session: Session;
  /** `hello` until established, `open` after, `done` once the session ended. */
  phase: 'hello' | 'open' | 'done';
  establishedAt: number;
  /** Wall-clock time of the outstanding PING, if one is. */
  pingSentAt?: number;
  heartbeatTimer?: ReturnType<typeof setTimeout>;
  /** Streams that keep the connection open after a GOAWAY (not the subscriptions). */
  inflight: number;
  goAway?: { at: number; spreadMs: number };
  /** Set before this side closes the session with an error of its own. */
  lossError?: unknown;
  /** The socket's close event, once seen. */
  closeEvent?: { code: number; reason: string; wasClean: boolean };
  /** How the session ended, once it did. */
  endedWith?: { code: number; reason: string; local: boolean };
  /** Blob messages are decoded in order through this chain. */
  chain?: Promise<void>;
  detach(): void;
}

/** A target checked and copied: the URL as a string, the extra subprotocols. */
interface FixedTarget {
  url: string;
  protocols: string[];
}

interface Resolved {
  /** The fixed target, or the function to call before every attempt. */
  target: FixedTarget | ((ctx: DialContext) => unknown);
  codec: Codec;
  hello: Hello | ((ctx: DialContext) => Hello | HelloOptions | Promise<Hello | HelloOptions>);
  reconnect: Reconnect | false;
  draw: RandomDraw;
  serviceRestart: readonly number[];
  terminal: readonly number[];
  serviceRestartDelayMs: number;
  stableAfterMs: number;
  firstDialDelayMs: number;
  handshakeTimeoutMs: number;
  heartbeat: { intervalMs: number; timeoutMs: number } | false;
  limits: Partial<Limits> | undefined;
  WebSocket: DialerSocketConstructor;
  signal: AbortSignal | undefined;
}

/** How an attempt in progress is abandoned (the deadline, `close()`, the `signal` option). */
interface Attempt {
  /** Rejects with the reason once the attempt is abandoned. */
  readonly aborted: Promise<never>;
  /** Set once abandoned, with the reason. */
  reason?: { value: unknown };
  /** Abandons the attempt: aborts the context's signal (when one was made), rejects `aborted`. */
  abort(reason: unknown): void;
}

interface Wait {
  timer: ReturnType<typeof setTimeout>;
  dueAt: number;
  run: () => void;
  cancel: ((reason: unknown) => void) | undefined;
  fast: boolean;
}

function show(value: unknown): string {
  if (typeof value === 'string') return JSON.stringify(value);
  if (typeof value === 'function') return 'a function';
  if (value instanceof URL) return String(value);
  try {
    return JSON.stringify(value) ?? String(value);
  } catch {
    return String(value);
  }
}

function optionError(field: string, expected: string, value: unknown): TypeError {
  return new TypeError(
    `Cannot connect as "${field}" must be ${expected}: current value is ${show(value)}`,
  );
}

function duration(
  field: string,
  value: unknown,
  fallback: number,
  { positive = false } = {},
): number {
  if (value === undefined) return fallback;
  if (typeof value !== 'number') throw optionError(field, 'a number of milliseconds', value);
  if (Number.isNaN(value) || value < 0 || (positive && value === 0) || value === Infinity) {
    throw new RangeError(
      `Cannot connect as "${field}" must be a finite number ${
        positive ? 'greater than 0' : 'at least 0'
      }: current value is ${value}`,
    );
  }
  return value;
}

function codeList(field: string, value: unknown, fallback: readonly number[]): readonly number[] {
  if (value === undefined) return fallback;
  if (!Array.isArray(value) || !value.every((c) => Number.isInteger(c))) {
    throw optionError(field, 'an array of integer close codes', value);
  }
  return Object.freeze([...value]);
}

/**
 * Checks a string, URL or {@linkcode DialTarget} and copies it; `undefined` for anything else.
 * `what` names the value in the error for bad `protocols`.
 */
function fixedTarget(value: unknown, what: string): FixedTarget | undefined {
  if (typeof value === 'string' || value instanceof URL) {
    return { url: String(value), protocols: [] };
  }
  if (value === null || typeof value !== 'object') return undefined;
  const { url, protocols = [] } = value as Partial<DialTarget>;
  if (typeof url !== 'string' && !(url instanceof URL)) return undefined;
  if (!Array.isArray(protocols) || !protocols.every((p) => typeof p === 'string')) {
    throw new TypeError(
      `Cannot ${what} as "protocols" must be an array of strings: current value is ${
        show(protocols)
      }`,
    );
  }
  return { url: String(url), protocols: [...protocols] };
}

function resolveOptions(target: unknown, options: ConnectOptions): Resolved {
  const fixed = typeof target === 'function'
    ? target as (ctx: DialContext) => unknown
    : fixedTarget(target, 'connect');
  if (fixed === undefined) {
    throw new TypeError(
      `Cannot connect as "target" must be a string, a URL, a DialTarget or a function: current value is ${
        show(target)
      }`,
    );
  }
  if (options === null || typeof options !== 'object') {
    throw optionError('options', 'an object', options);
  }
  const codec = options.codec ?? jsonCodec;
  if (
    codec === null || typeof codec !== 'object' || typeof codec.name !== 'string' ||
    typeof codec.encode !== 'function' || typeof codec.decode !== 'function'
  ) {
    throw optionError('codec', 'a Codec with name, encode and decode', codec);
  }
  let hello: Resolved['hello'];
  const helloOption = options.hello;
  if (helloOption === undefined) hello = new Hello();
  else if (helloOption instanceof Hello || typeof helloOption === 'function') hello = helloOption;
  else if (helloOption !== null && typeof helloOption === 'object') hello = new Hello(helloOption);
  else throw optionError('hello', 'a Hello, HelloOptions or a function', helloOption);
  let reconnect: Reconnect | false;
  const reconnectOption = options.reconnect;
  if (reconnectOption === undefined) reconnect = new Reconnect();
  else if (reconnectOption === false || reconnectOption instanceof Reconnect) {
    reconnect = reconnectOption;
  } else if (reconnectOption !== null && typeof reconnectOption === 'object') {
    reconnect = new Reconnect(reconnectOption);
  } else {
    throw optionError('reconnect', 'a Reconnect, ReconnectOptions or false', reconnectOption);
  }
  const draw = options.draw ?? uniform;
  if (typeof draw !== 'function') throw optionError('draw', 'a function', draw);
  const closeCodes = options.closeCodes ?? {};
  if (closeCodes === null || typeof closeCodes !== 'object') {
    throw optionError('closeCodes', 'an object', closeCodes);
  }
  let heartbeat: Resolved['heartbeat'];
  if (options.heartbeat === false) heartbeat = false;
  else if (options.heartbeat === undefined || typeof options.heartbeat === 'object') {
    const h = options.heartbeat ?? {};
    heartbeat = {
      intervalMs: duration('heartbeat.intervalMs', h.intervalMs, 20_000, { positive: true }),
      timeoutMs: duration('heartbeat.timeoutMs', h.timeoutMs, 10_000, { positive: true }),
    };
  } else throw optionError('heartbeat', 'an object or false', options.heartbeat);
  const WebSocketCtor = options.WebSocket ??
    (globalThis as { WebSocket?: DialerSocketConstructor }).WebSocket;
  if (typeof WebSocketCtor !== 'function') {
    throw optionError('WebSocket', 'a WebSocket constructor (none is global here)', WebSocketCtor);
  }
  if (options.signal !== undefined && !(options.signal instanceof AbortSignal)) {
    throw optionError('signal', 'an AbortSignal', options.signal);
  }
  for (
    const name of [
      'onStream',
      'onPublish',
      'onOpen',
      'onClose',
      'onReconnecting',
      'onError',
    ] as const
  ) {
    const fn = options[name];
    if (fn !== undefined && typeof fn !== 'function') throw optionError(name, 'a function', fn);
  }
  return {
    target: fixed,
    codec,
    hello,
    reconnect,
    draw,
    serviceRestart: codeList(
      'closeCodes.serviceRestart',
      closeCodes.serviceRestart,
      DEFAULT_CLOSE_CODES.serviceRestart,
    ),
    terminal: codeList('closeCodes.terminal', closeCodes.terminal, DEFAULT_CLOSE_CODES.terminal),
    serviceRestartDelayMs: duration('serviceRestartDelayMs', options.serviceRestartDelayMs, 250),
    stableAfterMs: duration('stableAfterMs', options.stableAfterMs, 0),
    firstDialDelayMs: duration('firstDialDelayMs', options.firstDialDelayMs, 0),
    handshakeTimeoutMs: duration('handshakeTimeoutMs', options.handshakeTimeoutMs, 15_000, {
      positive: true,
    }),
    heartbeat,
    limits: options.limits,
    WebSocket: WebSocketCtor,
    signal: options.signal,
  };
}

/** Races promises, marking the losers handled so a late rejection is never unhandled. */
function race<T>(promises: Promise<T>[]): Promise<T> {
  for (const p of promises) p.catch(() => {});
  return Promise.race(promises);
}

/** See {@linkcode DialerSocket.onerror}. */
function ignoreSocketError(): void {}

/** An HTTP refusal of the upgrade: its status and the wait its `Retry-After` asked for. */
interface Refusal {
  status: number;
  retryAfterMs: number | undefined;
}

/**
 * The `ws` package (Node) reports an HTTP refusal of the upgrade through an EventEmitter
 * `unexpected-response` event carrying the response; a WHATWG `WebSocket` (browsers, Deno, Bun)
 * exposes nothing of it. When the socket has an `on` method, this listens for that event, hands
 * `record` the status and `Retry-After`, and abandons the handshake, which `ws` does only when
 * nobody listens; the `error` and `close` events that follow fail the attempt as before.
 */
function watchRefusal(socket: DialerSocket, record: (refusal: Refusal) => void): void {
  const on = (socket as { on?: unknown }).on;
  if (typeof on !== 'function') return;
  on.call(socket, 'unexpected-response', (_request: unknown, response: unknown) => {
    const { statusCode, headers } = (response ?? {}) as {
      statusCode?: unknown;
      headers?: Record<string, unknown>;
    };
    const header = headers?.['retry-after'];
    record({
      status: typeof statusCode === 'number' ? statusCode : 0,
      retryAfterMs: retryAfterMs(typeof header === 'string' ? header : undefined, Date.now()),
    });
    closeQuietly(socket);
  });
}

function closedByClose(): ClosedError {
  return new ClosedError('The connection was closed by close()');
}

function closedForGood(): ClosedError {
  return new ClosedError('The connection was closed for good');
}

function closeQuietly(socket: DialerSocket, code?: number, reason?: string): void {
  try {
    if (socket.readyState === 0 || code === undefined) socket.close();
    else socket.close(code, reason);
  } catch {
    try {
      socket.close();
    } catch {
      // nothing more can be done with this socket
    }
  }
}

function delayFrom(ms: number): number {
  return Math.min(Math.max(0, Math.ceil(ms)), MAX_TIMER_MS);
}

class DialerConnection implements Connection {
  readonly #options: ConnectOptions;
  readonly #o: Resolved;
  #state: ConnectionState = 'connecting';
  #welcome: unknown = undefined;
  #link: Link | undefined;
  /** The attempt in progress, if one is. */
  #pending: Attempt | undefined;
  #limits: Partial<Limits> | undefined;
  /** The code and reason `close()` asked for, used to close a socket mid-attempt. */
  #closeRequest: { code: number; reason: string } | undefined;
  #wait: Wait | undefined;
  #stableTimer: ReturnType<typeof setTimeout> | undefined;
  #attempts = 0;
  #lastFailureWasAuth = false;
  #disconnectedAt: number | undefined;
  #lastError: unknown = undefined;
  #lastAttemptClose: { code: number; reason: string; wasClean: boolean } | undefined;
  /** The HTTP refusal of the last attempt's upgrade, where the runtime exposes it. */
  #lastRefusal: Refusal | undefined;
  /** Settles one `opened()` promise: resolves it without an error, rejects it with one. */
  readonly #openedWaiters = new Set<(error?: unknown) => void>();
  readonly #subscriptions = new Set<LiveSubscription>();
  readonly #closed: Promise<CloseInfo>;
  #resolveClosed!: (info: CloseInfo) => void;
  #removeHints: (() => void) | undefined;
  #removeSignal: (() => void) | undefined;

  constructor(target: DialTargetInput, options: ConnectOptions) {
    this.#o = resolveOptions(target, options);
    this.#limits = this.#o.limits;
    this.#options = options;
    this.#closed = new Promise((resolve) => this.#resolveClosed = resolve);
  }

  get state(): ConnectionState {
    return this.#state;
  }

  get welcome(): unknown {
    return this.#welcome;
  }

  get closed(): Promise<CloseInfo> {
    return this.#closed;
  }

  /** Runs the first connection; resolves with this connection or rejects with ConnectError. */
  async start(): Promise<Connection> {
    const signal = this.#o.signal;
    if (signal?.aborted) {
      this.#state = 'closed';
      throw new ConnectError('Cannot connect: the signal was already aborted', {
        cause: signal.reason,
      });
    }
    if (signal) {
      const onAbort = () => this.#shutdown(1000, '', () => signal.reason);
      signal.addEventListener('abort', onAbort, { once: true });
      this.#removeSignal = () => signal.removeEventListener('abort', onAbort);
    }
    this.#installHints();
    let link: Link;
    try {
      if (this.#o.firstDialDelayMs > 0) {
        const spread = (this.#o.draw() + 1) / 2 * this.#o.firstDialDelayMs;
        await new Promise<void>((resolve, reject) =>
          this.#schedule(spread, resolve, false, reject)
        );
      }
      link = await this.#runAttempt('initial', false);
    } catch (error) {
      if (this.#state !== 'closed') {
        this.#state = 'closed';
        this.#cleanup();
        this.#resolveClosed(this.#attemptCloseInfo(error, 0));
      }
      const cause = this.#o.signal?.aborted && !(error instanceof TimeoutError)
        ? this.#o.signal.reason
        : error;
      throw new ConnectError(`Cannot connect to ${this.#describeTarget()}: ${message(cause)}`, {
        cause,
      });
    }
    this.#established(link, false);
    return this;
  }

  opened(options: OpenedOptions = {}): Promise<void> {
    if (this.#state === 'open') return Promise.resolve();
    if (this.#state === 'closed') {
      return Promise.reject(new ClosedError('Cannot wait for the connection: it is closed'));
    }
    const signal = options.signal;
    if (signal?.aborted) return Promise.reject(signal.reason);
    return new Promise<void>((resolve, reject) => {
      const settle = (error?: unknown) => {
        this.#openedWaiters.delete(settle);
        signal?.removeEventListener('abort', onAbort);
        if (error === undefined) resolve();
        else reject(error);
      };
      // An aborted signal's reason is never undefined (abort() defaults it to an AbortError).
      const onAbort = () => settle(signal!.reason);
      this.#openedWaiters.add(settle);
      signal?.addEventListener('abort', onAbort, { once: true });
    });
  }

  open(payload: unknown, options?: OpenOptions): Stream {
    const link = this.#requireOpen('open a stream');
    const stream = link.session.open(payload, options);
    this.#track(link, stream.closed);
    return stream;
  }

  request(payload: unknown, options?: RequestOptions): Promise<unknown> {
    let link: Link;
    let pending: Promise<unknown>;
    try {
      link = this.#requireOpen('send a request');
      pending = link.session.request(payload, options);
    } catch (error) {
      return Promise.reject(error);
    }
    this.#track(link, pending);
    return pending;
  }

  subscribe(payload: unknown, options: SubscribeOptions): Promise<Subscription> {
    try {
      if (options === null || typeof options !== 'object') {
        throw new TypeError(
          `Cannot subscribe as "options" must be an object: current value is ${show(options)}`,
        );
      }
      if (typeof options.onMessage !== 'function') {
        throw new TypeError(
          `Cannot subscribe as "onMessage" must be a function: current value is ${
            show(options.onMessage)
          }`,
        );
      }
      if (options.onReopen !== undefined && typeof options.onReopen !== 'function') {
        throw new TypeError(
          `Cannot subscribe as "onReopen" must be a function: current value is ${
            show(options.onReopen)
          }`,
        );
      }
      const dedupe = options.dedupe;
      if (dedupe !== undefined) {
        if (dedupe === null || typeof dedupe !== 'object' || typeof dedupe.key !== 'function') {
          throw new TypeError(
            `Cannot subscribe as "dedupe.key" must be a function: current value is ${
              show(dedupe?.key)
            }`,
          );
        }
        const window = dedupe.window ?? 1024;
        if (!Number.isInteger(window) || window < 1) {
          throw new RangeError(
            `Cannot subscribe as "dedupe.window" must be an integer of at least 1: current value is ${window}`,
          );
        }
      }
      if (options.signal?.aborted) throw options.signal.reason;
      const link = this.#requireOpen('subscribe');
      const sub = new LiveSubscription(this, payload, options);
      this.#subscriptions.add(sub);
      this.#openSubscription(sub, link, false);
      return Promise.resolve(sub);
    } catch (error) {
      return Promise.reject(error);
    }
  }

  close(code: number = 1000, reason: string = ''): Promise<CloseInfo> {
    if (!Number.isInteger(code) || (code !== 1000 && (code < 3000 || code > 4999))) {
      throw new RangeError(
        `Cannot close the connection as "code" must be 1000 or from 3000 to 4999: current value is ${code}`,
      );
    }
    if (typeof reason !== 'string') {
      throw new TypeError(
        `Cannot close the connection as "reason" must be a string: current value is ${
          show(reason)
        }`,
      );
    }
    const bytes = utf8Length(reason);
    if (bytes > 123) {
      throw new RangeError(
        `Cannot close the connection as "reason" must be at most 123 UTF-8 bytes: current value is ${bytes} bytes`,
      );
    }
    this.#shutdown(code, reason, closedByClose);
    return this.#closed;
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.close();
  }

  // ---- internals used by LiveSubscription ----

  /** @internal */
  _unsubscribe(sub: LiveSubscription): void {
    this.#subscriptions.delete(sub);
  }

  /** @internal */
  _emit<T>(fn: ((arg: T) => unknown) | undefined, arg: T): void {
    this.#emit(fn, arg);
  }

  /** @internal */
  _report(error: unknown): void {
    this.#report(error);
  }

  // ---- the state machine ----

  #requireOpen(what: string): Link {
    const link = this.#link;
    if (this.#state !== 'open' || link === undefined) {
      throw new NotConnectedError(`Cannot ${what}: the connection is ${this.#state}`);
    }
    if (link.goAway !== undefined) {
      throw new NotConnectedError(
        `Cannot ${what}: the acceptor sent GOAWAY and the connection is draining`,
      );
    }
    return link;
  }

  #track(link: Link, pending: Promise<unknown>): void {
    link.inflight++;
    const done = () => {
      link.inflight--;
      this.#finishGoAway(link);
    };
    pending.then(done, done);
  }

  #context(reason: 'initial' | 'reconnect', fast: boolean, signal: AbortSignal): DialContext {
    const disconnectedAt = reason === 'initial' ? undefined : this.#disconnectedAt;
    const lookback = disconnectedAt === undefined
      ? 0
      : Math.min(Math.ceil(Date.now() - disconnectedAt + 5000), MAX_LOOKBACK_MS);
    return Object.freeze({
      attempt: this.#attempts,
      reason,
      resumedFromServiceRestart: fast,
      disconnectedAt,
      replayLookbackMs: lookback,
      lastError: this.#lastError,
      signal,
    });
  }

  /**
   * One attempt (WSM-DIAL-002). Only a target or hello function sees the {@linkcode DialContext}
   * and its signal, so without one neither the context nor an `AbortController` is made, and a
   * fixed target and hello are used at once, without a promise round.
   */
  async #runAttempt(reason: 'initial' | 'reconnect', fast: boolean): Promise<Link> {
    const o = this.#o;
    const fixedTarget = o.target;
    const fixedHello = o.hello;
    const controller = typeof fixedTarget === 'function' || !(fixedHello instanceof Hello)
      ? new AbortController()
      : undefined;
    this.#lastAttemptClose = undefined;
    this.#lastRefusal = undefined;
    const ctx = controller && this.#context(reason, fast, controller.signal);
    let reject!: (reason: unknown) => void;
    const attempt: Attempt = {
      aborted: new Promise<never>((_, r) => reject = r),
      abort: (value) => {
        if (attempt.reason !== undefined) return;
        attempt.reason = { value };
        controller?.abort(value);
        reject(value);
      },
    };
    attempt.aborted.catch(() => {});
    this.#pending = attempt;
    const aborted = attempt.aborted;
    const deadline = setTimeout(() => {
      attempt.abort(
        new TimeoutError(`The handshake did not finish within ${o.handshakeTimeoutMs} ms`),
      );
    }, delayFrom(o.handshakeTimeoutMs));
    let socket: DialerSocket | undefined;
    let link: Link | undefined;
    let detachOpen: (() => void) | undefined;
    let helloTimer: ReturnType<typeof setTimeout> | undefined;
    try {
      const target = typeof fixedTarget === 'function'
        ? await race([this.#resolveTarget(fixedTarget, ctx!), aborted])
        : fixedTarget;
      const hello = fixedHello instanceof Hello
        ? fixedHello
        : await race([this.#resolveHello(ctx!), aborted]);
      const expected = subprotocol(o.codec);
      socket = new o.WebSocket(target.url, [expected, ...target.protocols]);
      socket.onerror = ignoreSocketError;
      watchRefusal(socket, (refusal) => {
        if (this.#pending === attempt) this.#lastRefusal = refusal;
      });
      try {
        socket.binaryType = 'arraybuffer';
      } catch {
        // a runtime that rejects it delivers Blobs, which are handled too
      }
      const opening = socket;
      await race([
        new Promise<void>((resolve, reject) => {
          const listeners: [string, (event: Event) => void][] = [
            ['open', () => resolve()],
            ['error', () => {
              reject(new Error(`The WebSocket to ${target.url} failed before it opened`));
            }],
            ['close', (event) => {
              const info = closeFields(event);
              this.#lastAttemptClose = info;
              reject(
                new Error(
                  `The WebSocket to ${target.url} closed with code ${info.code} before it opened`,
                ),
              );
            }],
          ];
          for (const [type, listener] of listeners) opening.addEventListener(type, listener);
          detachOpen = () => {
            for (const [type, listener] of listeners) opening.removeEventListener(type, listener);
          };
        }),
        aborted,
      ]);
      detachOpen?.();
      detachOpen = undefined;
      clearTimeout(deadline);
      if (socket.protocol !== expected) {
        const found = socket.protocol;
        this.#lastAttemptClose = { code: 4002, reason: 'unexpected subprotocol', wasClean: true };
        closeQuietly(socket, 4002, 'unexpected subprotocol');
        throw new ProtocolError(
          `Expected the acceptor to select subprotocol "${expected}": found ${show(found)}`,
        );
      }
      link = this.#createLink(socket);
      if (hello.configured) {
        const timeoutMs = hello.timeoutMs;
        const helloTimeout = new Promise<never>((_, reject) => {
          helloTimer = setTimeout(() => {
            reject(new TimeoutError(`The hello was not acknowledged within ${timeoutMs} ms`));
          }, delayFrom(timeoutMs));
        });
        try {
          this.#welcome = undefined;
          const helloStream = link.session.open(hello.payloadForWire(), {
            headers: hello.headersForWire() ?? null,
            end: true,
          });
          const welcome = await race([
            lastMessage(helloStream),
            helloTimeout,
            aborted,
          ]);
          this.#welcome = welcome;
        } catch (error) {
          if (error instanceof TimeoutError && attempt.reason === undefined) {
            this.#lastAttemptClose = { code: 4008, reason: 'hello timeout', wasClean: true };
            link.session.close(4008, 'hello timeout');
          }
          if (error instanceof StreamResetError && error.remote) {
            throw new HelloRejectedError(
              `The hello was rejected with ${JSON.stringify(error.code)}: ${error.message}`,
              { code: error.code, cause: error },
            );
          }
          const endedWith = link.endedWith;
          if (error instanceof StreamResetError && endedWith !== undefined) {
            // the hello stream failed because the connection ended: say how it ended
            throw new Error(
              `The connection closed with code ${
                endedWith.code || 1006
              } before the hello was acknowledged`,
              { cause: error },
            );
          }
          throw error;
        }
      } else {
        this.#welcome = undefined;
      }
      if (attempt.reason !== undefined) throw attempt.reason.value;
      return link;
    } catch (error) {
      const request = this.#closeRequest;
      const endedWith = link?.endedWith;
      if (endedWith !== undefined && this.#lastAttemptClose === undefined) {
        // the socket closed during the hello: its code decides the policy (WSM-RCN-020)
        const code = endedWith.code === 0 ? 1006 : endedWith.code;
        this.#lastAttemptClose = {
          code,
          reason: endedWith.reason,
          wasClean: endedWith.local ? code === 1000 : link!.closeEvent?.wasClean ?? false,
        };
      }
      if (link !== undefined) {
        if (link.phase !== 'done') {
          link.session.close(request?.code ?? 1000, request?.reason ?? '');
        }
      } else if (socket !== undefined) {
        closeQuietly(socket, request?.code, request?.reason);
      }
      throw error;
    } finally {
      clearTimeout(deadline);
      clearTimeout(helloTimer);
      detachOpen?.();
      if (this.#pending === attempt) this.#pending = undefined;
    }
  }

  /** Calls the target function and checks what it returned. */
  async #resolveTarget(
    fn: (ctx: DialContext) => unknown,
    ctx: DialContext,
  ): Promise<FixedTarget> {
    const value = await fn(ctx);
    const target = fixedTarget(value, 'dial');
    if (target !== undefined) return target;
    throw new TypeError(
      `Cannot dial as the target function must return a string, a URL or a DialTarget: current value is ${
        show(value)
      }`,
    );
  }

  /** Calls the hello function and turns what it returned into a {@linkcode Hello}. */
  async #resolveHello(ctx: DialContext): Promise<Hello> {
    const value = await (this.#o.hello as Exclude<Resolved['hello'], Hello>)(ctx);
    if (value instanceof Hello) return value;
    if (value === undefined || value === null) return new Hello();
    if (typeof value !== 'object') {
      throw new TypeError(
        `Cannot dial as the hello function must return HelloOptions: current value is ${
          show(value)
        }`,
      );
    }
    return new Hello(value);
  }

  #createLink(socket: DialerSocket): Link {
    const onStreamOption = this.#options.onStream;
    // The optional fields start absent; session and detach are set below, before any use.
    const link = {
      socket,
      phase: 'hello',
      establishedAt: Date.now(),
      inflight: 0,
    } as Link;
    const sink = {
      send: (data: string | Uint8Array) => {
        cork(socket);
        socket.send(data);
        this.#afterSend(link);
      },
      close: (code: number, reason: string) => closeQuietly(socket, code, reason),
      get bufferedAmount(): number {
        return socket.bufferedAmount;
      },
    };
    const session = new Session(sink, {
      side: 'dialer',
      codec: this.#o.codec,
      limits: this.#limits,
      onStream: onStreamOption === undefined ? undefined : (stream: Stream) => {
        this.#track(link, stream.closed);
        return onStreamOption(stream, this);
      },
      onPublish: (message: PublishMessage) => this.#emit(this.#options.onPublish, message),
      onGoAway: (goAway: GoAway) => this.#onGoAway(link, goAway),
      onError: (error: unknown) => this.#report(error),
      onClose: (info: { code: number; reason: string; local: boolean }) => {
        link.phase = 'done';
        link.endedWith = info;
        link.detach();
        this.#lost(link, info);
      },
    });
    // The first session checked the limits; later ones take them resolved (sessionLimits).
    this.#limits = session.limits;
    (link as { session: Session }).session = session;
    const feed = (data: string | ArrayBuffer | ArrayBufferView) => {
      session.receive(data);
      // An answer to an outstanding PING: the next PING is due intervalMs of silence from now,
      // not when the answered PING's deadline would have passed (WSM-DIAL-009).
      if (link.pingSentAt !== undefined) this.#heartbeatCheck(link);
    };
    const onMessage = (event: Event) => {
      const data = (event as MessageEvent).data as unknown;
      if (typeof data === 'string' || data instanceof ArrayBuffer || ArrayBuffer.isView(data)) {
        if (link.chain === undefined) feed(data);
        else link.chain = link.chain.then(() => feed(data));
      } else if (typeof Blob !== 'undefined' && data instanceof Blob) {
        link.chain = (link.chain ?? Promise.resolve())
          .then(() => data.arrayBuffer())
          .then(feed, (error) => this.#report(error));
      } else {
        this.#report(
          new ProtocolError(`Expected a string or binary message: found ${typeof data}`),
        );
      }
    };
    const onClose = (event: Event) => {
      const info = closeFields(event);
      link.closeEvent = info;
      session.closed(info.code, info.reason);
    };
    socket.addEventListener('message', onMessage);
    socket.addEventListener('close', onClose);
    link.detach = () => {
      socket.removeEventListener('message', onMessage);
      socket.removeEventListener('close', onClose);
    };
    return link;
  }

  #established(link: Link, reconnected: boolean): void {
    if (this.#state === 'closed' || link.phase === 'done') {
      // close() won the race with the acknowledgement
      if (link.phase !== 'done') link.session.close(1000, '');
      return;
    }
    const attemptsBefore = this.#attempts;
    link.phase = 'open';
    link.establishedAt = Date.now();
    this.#link = link;
    this.#state = 'open';
    this.#lastFailureWasAuth = false;
    this.#disconnectedAt = undefined;
    if (this.#o.stableAfterMs === 0) this.#attempts = 0;
    else {
      this.#stableTimer = setTimeout(() => {
        this.#stableTimer = undefined;
        this.#attempts = 0;
      }, delayFrom(this.#o.stableAfterMs));
    }
    this.#heartbeatCheck(link);
    for (const sub of [...this.#subscriptions]) {
      if (this.#link !== link || link.goAway !== undefined) break;
      this.#openSubscription(sub, link, reconnected);
    }
    if (this.#link !== link) return;
    this.#finishGoAway(link); // a GOAWAY that arrived during the hello
    for (const settle of [...this.#openedWaiters]) settle();
    this.#emit(this.#options.onOpen, {
      reconnected,
      attempts: attemptsBefore,
      welcome: this.#welcome,
    });
  }

  #openSubscription(sub: LiveSubscription, link: Link, reopened: boolean): void {
    let stream: Stream;
    try {
      stream = link.session.open(sub.payloadForWire(), {
        headers: sub.headersForWire(),
        end: true,
      });
    } catch (error) {
      this.#report(error);
      return;
    }
    sub.attach(stream);
    if (reopened) this.#emit(sub.onReopen, { resubscribed: true } as const);
  }

  #lost(link: Link, info: { code: number; reason: string; local: boolean }): void {
    if (this.#link !== link || this.#state === 'closed') return;
    this.#link = undefined;
    this.#stopHeartbeat(link);
    const code = info.code === 0 || info.code === undefined ? 1006 : info.code;
    const wasClean = info.local ? code === 1000 : link.closeEvent?.wasClean ?? false;
    const error = link.lossError;
    const o = this.#o;
    this.#disconnectedAt = Date.now();
    if (this.#stableTimer !== undefined) {
      // established but not yet stable: the flap counts as a failed attempt (WSM-RCN-003)
      clearTimeout(this.#stableTimer);
      this.#stableTimer = undefined;
      this.#attempts++;
    }
    this.#lastError = error ?? new Error(
      `The connection closed with code ${code}${info.reason ? ` (${info.reason})` : ''}`,
    );
    const fast = link.goAway !== undefined || o.serviceRestart.includes(code);
    let willRetry = o.reconnect !== false && !o.terminal.includes(code) &&
      shouldRetry(this.#attempts, o.reconnect);
    let delayMs = 0;
    if (willRetry && o.reconnect !== false) {
      if (fast) {
        const spreadMs = link.goAway?.spreadMs ?? 0;
        if (spreadMs > 0) {
          const spread = Math.min((o.draw() + 1) / 2 * spreadMs, spreadMs);
          delayMs = Math.max(0, link.goAway!.at + spread - this.#disconnectedAt);
        } else {
          delayMs = Math.max(0, o.serviceRestartDelayMs * (1 + o.draw() * o.reconnect.jitter));
        }
      } else {
        delayMs = backoffDelay(this.#attempts, o.reconnect, o.draw);
      }
      if (!Number.isFinite(delayMs)) willRetry = false;
    }
    const closeInfo: CloseInfo = {
      code,
      reason: info.reason,
      wasClean,
      willRetry,
      attempts: this.#attempts,
    };
    if (error !== undefined) closeInfo.error = error;
    if (!willRetry) {
      this.#finish(closeInfo);
      return;
    }
    closeInfo.delayMs = delayMs;
    this.#state = 'reconnecting';
    this.#schedule(delayMs, () => this.#redialContained(fast), fast);
    this.#emit(this.#options.onClose, closeInfo);
    if (this.#state !== 'reconnecting') return;
    this.#emit(this.#options.onReconnecting, {
      attempt: this.#attempts,
      delayMs,
      error: this.#lastError,
    });
  }

  #redialContained(fast: boolean): void {
    this.#redial(fast).catch((error) => this.#report(error));
  }

  async #redial(fast: boolean): Promise<void> {
    if (this.#state !== 'reconnecting') return;
    let link: Link;
    try {
      link = await this.#runAttempt('reconnect', fast);
    } catch (error) {
      if (this.#state !== 'reconnecting') return;
      this.#failedRedial(error, fast);
      return;
    }
    this.#established(link, true);
  }

  #failedRedial(error: unknown, fast: boolean): void {
    const o = this.#o;
    if (!fast) this.#attempts++;
    this.#lastError = error;
    const auth = error instanceof HelloRejectedError && HELLO_AUTH_CODES.has(error.code);
    const closeCode = this.#lastAttemptClose?.code;
    const terminal = (auth && this.#lastFailureWasAuth) ||
      (closeCode !== undefined && o.terminal.includes(closeCode));
    this.#lastFailureWasAuth = auth;
    if (terminal || o.reconnect === false || !shouldRetry(this.#attempts, o.reconnect)) {
      this.#finish(this.#attemptCloseInfo(error, this.#attempts));
      return;
    }
    let delayMs = backoffDelay(this.#attempts, o.reconnect, o.draw);
    const retryAfter = this.#lastRefusal?.retryAfterMs;
    if (retryAfter !== undefined) {
      // the acceptor said when to come back: no sooner, and no later than the schedule's cap
      delayMs = Math.max(delayMs, Math.min(retryAfter, o.reconnect.maxDelayMs));
    }
    this.#schedule(delayMs, () => this.#redialContained(false), false);
    this.#emit(this.#options.onReconnecting, { attempt: this.#attempts, delayMs, error });
  }

  /** The final close information after a failed attempt: its socket's close, if it saw one. */
  #attemptCloseInfo(error: unknown, attempts: number): CloseInfo {
    const { code = 1006, reason = '', wasClean = false } = this.#lastAttemptClose ?? {};
    return { code, reason, wasClean, willRetry: false, error, attempts };
  }

  #schedule(
    ms: number,
    run: () => void,
    fast: boolean,
    cancel?: (reason: unknown) => void,
  ): void {
    const delay = delayFrom(ms);
    const wait: Wait = {
      timer: setTimeout(() => {
        if (this.#wait === wait) this.#wait = undefined;
        run();
      }, delay),
      dueAt: Date.now() + delay,
      run,
      cancel,
      fast,
    };
    this.#wait = wait;
  }

  #onGoAway(link: Link, goAway: GoAway): void {
    link.goAway = {
      at: Date.now(),
      spreadMs: Number.isFinite(goAway.spreadMs) ? Math.max(0, goAway.spreadMs) : 0,
    };
    if (link.phase === 'open') this.#finishGoAway(link);
  }

  /** After a GOAWAY, closes with 1000 once the streams that matter are done (WSM-WIRE-003). */
  #finishGoAway(link: Link): void {
    if (link.goAway === undefined || link.inflight > 0 || link.phase !== 'open') return;
    void Promise.resolve().then(() => {
      if (link.phase === 'open' && link.inflight === 0) link.session.close(1000, 'goaway');
    });
  }

  // ---- heartbeat (WSM-DIAL-009) ----

  #afterSend(link: Link): void {
    const heartbeat = this.#o.heartbeat;
    if (heartbeat === false || link.phase !== 'open' || link.heartbeatTimer === undefined) return;
    if (Date.now() >= dueAt(link, heartbeat)) {
      void Promise.resolve().then(() => this.#heartbeatCheck(link));
    }
  }

  #heartbeatCheck(link: Link): void {
    const heartbeat = this.#o.heartbeat;
    if (heartbeat === false || link.phase !== 'open' || this.#link !== link) return;
    clearTimeout(link.heartbeatTimer);
    link.heartbeatTimer = undefined;
    if (link.pingSentAt !== undefined && lastHeard(link) >= link.pingSentAt) {
      link.pingSentAt = undefined;
    }
    const wait = dueAt(link, heartbeat) - Date.now();
    if (wait > 0) this.#armHeartbeat(link, wait);
    else if (link.pingSentAt === undefined) this.#probe(link);
    else {
      link.lossError = new TimeoutError(
        `Nothing was received within ${heartbeat.timeoutMs} ms of a PING`,
      );
      link.session.close(4000, 'heartbeat timeout');
    }
  }

  #probe(link: Link): void {
    const heartbeat = this.#o.heartbeat;
    if (heartbeat === false) return;
    link.pingSentAt = Date.now();
    this.#armHeartbeat(link, heartbeat.timeoutMs);
    link.session.ping();
  }

  #armHeartbeat(link: Link, ms: number): void {
    clearTimeout(link.heartbeatTimer);
    link.heartbeatTimer = setTimeout(() => this.#heartbeatCheck(link), delayFrom(ms));
  }

  #stopHeartbeat(link: Link): void {
    clearTimeout(link.heartbeatTimer);
    link.heartbeatTimer = undefined;
    link.pingSentAt = undefined;
  }

  // ---- online/offline hints (WSM-DIAL-010) ----

  #installHints(): void {
    const scope = globalThis as {
      addEventListener?: (type: string, listener: () => void) => void;
      removeEventListener?: (type: string, listener: () => void) => void;
      navigator?: { onLine?: unknown };
    };
    if (
      typeof scope.addEventListener !== 'function' ||
      typeof scope.removeEventListener !== 'function' ||
      typeof scope.navigator?.onLine !== 'boolean'
    ) return;
    const onOnline = () => {
      const wait = this.#wait;
      if (this.#state !== 'reconnecting' || wait === undefined) return;
      const shortMs = (this.#o.draw() + 1) / 2 * this.#o.serviceRestartDelayMs;
      if (Date.now() + shortMs >= wait.dueAt) return;
      clearTimeout(wait.timer);
      this.#schedule(shortMs, wait.run, wait.fast, wait.cancel);
    };
    const onOffline = () => {
      const link = this.#link;
      if (this.#state !== 'open' || link === undefined || this.#o.heartbeat === false) return;
      if (link.pingSentAt === undefined) this.#probe(link);
    };
    const add = scope.addEventListener;
    const remove = scope.removeEventListener;
    add.call(scope, 'online', onOnline);
    add.call(scope, 'offline', onOffline);
    this.#removeHints = () => {
      remove.call(scope, 'online', onOnline);
      remove.call(scope, 'offline', onOffline);
    };
  }

  // ---- closing for good ----

  /** close(), the signal option: cancels everything, fires onClose once. */
  #shutdown(code: number, reason: string, abortReason: () => unknown): void {
    if (this.#state === 'closed') return;
    const info: CloseInfo = {
      code,
      reason,
      wasClean: true,
      willRetry: false,
      attempts: this.#attempts,
    };
    this.#closeRequest = { code, reason };
    this.#finish(info, abortReason);
  }

  /**
   * `abortReason` makes the reason a pending attempt or wait is cancelled with; it is called (and
   * the error built, with its stack) only when one of them is there to receive it.
   */
  #finish(info: CloseInfo, abortReason: () => unknown = closedForGood): void {
    this.#state = 'closed';
    const link = this.#link;
    this.#link = undefined;
    let reason: { value: unknown } | undefined;
    const why = (): unknown => (reason ??= { value: abortReason() ?? closedForGood() }).value;
    if (this.#pending !== undefined) this.#pending.abort(why());
    this.#pending = undefined;
    if (link !== undefined) {
      this.#stopHeartbeat(link);
      if (link.phase !== 'done') link.session.close(info.code, info.reason);
    }
    const wait = this.#wait;
    this.#wait = undefined;
    if (wait !== undefined) {
      clearTimeout(wait.timer);
      if (wait.cancel !== undefined) wait.cancel(why());
    }
    this.#cleanup();
    for (const sub of [...this.#subscriptions]) sub.detach();
    this.#subscriptions.clear();
    if (this.#openedWaiters.size > 0) {
      const closedError = new ClosedError('The connection closed for good', { cause: info.error });
      for (const settle of [...this.#openedWaiters]) settle(closedError);
    }
    this.#emit(this.#options.onClose, info);
    this.#resolveClosed(info);
  }

  #cleanup(): void {
    clearTimeout(this.#stableTimer);
    this.#stableTimer = undefined;
    this.#removeHints?.();
    this.#removeHints = undefined;
    this.#removeSignal?.();
    this.#removeSignal = undefined;
  }

  // ---- callbacks ----

  #emit<T>(fn: ((arg: T) => unknown) | undefined, arg: T): void {
    if (fn === undefined) return;
    try {
      const result = fn(arg);
      if (result !== null && typeof result === 'object' && 'then' in result) {
        Promise.resolve(result).catch((error) => this.#report(error));
      }
    } catch (error) {
      this.#report(error);
    }
  }

  #report(error: unknown): void {
    const onError = this.#options.onError;
    try {
      if (onError === undefined) console.error(error);
      else onError(error);
    } catch (thrown) {
      console.error(thrown);
    }
  }

  #describeTarget(): string {
    const target = this.#o.target;
    return typeof target === 'function' ? "the target function's URL" : target.url;
  }
}

/** A standing subscription (WSM-SUB-001..003). */
class LiveSubscription implements Subscription {
  readonly #connection: DialerConnection;
  readonly #payload: unknown;
  readonly #headers: Record<string, unknown> | null;
  readonly #onMessage: (message: unknown) => unknown;
  readonly onReopen: ((info: ReopenInfo) => unknown) | undefined;
  readonly #dedupe: { key: (message: unknown) => string; window: number } | undefined;
  readonly #keys = new Set<string>();
  #active = true;
  #stream: Stream | undefined;
  #removeSignal: (() => void) | undefined;

  constructor(connection: DialerConnection, payload: unknown, options: SubscribeOptions) {
    this.#connection = connection;
    this.#payload = structuredClone(payload);
    this.#headers = options.headers == null ? null : structuredClone(options.headers);
    this.#onMessage = options.onMessage;
    this.onReopen = options.onReopen;
    this.#dedupe = options.dedupe === undefined
      ? undefined
      : { key: options.dedupe.key, window: options.dedupe.window ?? 1024 };
    const signal = options.signal;
    if (signal) {
      const onAbort = () => this.unsubscribe();
      signal.addEventListener('abort', onAbort, { once: true });
      this.#removeSignal = () => signal.removeEventListener('abort', onAbort);
    }
  }

  get active(): boolean {
    return this.#active;
  }

  payloadForWire(): unknown {
    return structuredClone(this.#payload);
  }

  headersForWire(): Record<string, unknown> | null {
    return this.#headers === null ? null : structuredClone(this.#headers);
  }

  attach(stream: Stream): void {
    this.#stream = stream;
    void this.#pump(stream);
  }

  /** The connection closed for good: forget the stream, keep nothing. */
  detach(): void {
    this.#active = false;
    this.#stream = undefined;
    this.#keys.clear();
    this.#removeSignal?.();
    this.#removeSignal = undefined;
  }

  unsubscribe(): void {
    if (!this.#active) return;
    const stream = this.#stream;
    this.detach();
    this.#connection._unsubscribe(this);
    if (stream !== undefined) {
      try {
        stream.reset('cancel', 'unsubscribed');
      } catch {
        // the stream already ended
      }
    }
  }

  async #pump(stream: Stream): Promise<void> {
    try {
      for await (const message of stream) {
        if (this.#stream !== stream || !this.#active) return;
        if (this.#dedupe !== undefined && this.#seen(message)) continue;
        this.#connection._emit(this.#onMessage, message);
      }
    } catch (error) {
      if (this.#stream !== stream || !this.#active) return;
      if (error instanceof StreamResetError && !error.remote) return;
      this.#connection._report(error);
    }
  }

  #seen(message: unknown): boolean {
    const dedupe = this.#dedupe!;
    let key: string;
    try {
      key = dedupe.key(message);
    } catch (error) {
      this.#connection._report(error);
      return false;
    }
    if (this.#keys.has(key)) return true;
    this.#keys.add(key);
    if (this.#keys.size > dedupe.window) {
      const oldest = this.#keys.values().next().value as string;
      this.#keys.delete(oldest);
    }
    return false;
  }
}

function closeFields(event: Event): { code: number; reason: string; wasClean: boolean } {
  const e = event as Partial<CloseEvent>;
  const code = typeof e.code === 'number' && e.code !== 0 ? e.code : 1006;
  return {
    code,
    reason: typeof e.reason === 'string' ? e.reason : '',
    wasClean: e.wasClean === true,
  };
}

/** When the link last heard from the acceptor (its establishment counts). */
function lastHeard(link: Link): number {
  return Math.max(link.session.lastReceivedAt, link.establishedAt);
}

/**
 * When the heartbeat acts next: the outstanding PING's deadline, or `intervalMs` of silence after
 * the last thing heard (WSM-DIAL-009).
 */
function dueAt(link: Link, heartbeat: { intervalMs: number; timeoutMs: number }): number {
  return link.pingSentAt !== undefined
    ? link.pingSentAt + heartbeat.timeoutMs
    : lastHeard(link) + heartbeat.intervalMs;
}

/**
 * Reads a stream to its END and resolves with the last message before it (undefined when none
 * came): the hello is acknowledged at the acceptor's END, not its first DATA (WSM-DIAL-004).
 */
async function lastMessage(stream: Stream): Promise<unknown> {
  let last: unknown = undefined;
  for await (const value of stream) last = value;
  return last;
}

function message(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
