/**
 * The dialer's options, checked and resolved once by `connect()`: every default filled in, every
 * bad value refused with a `TypeError` or `RangeError` that names the field and the value found,
 * before anything is dialled; and the arguments of `close()`, checked before anything is sent.
 * Internal.
 *
 * @module
 */
import type { Codec } from '../wire/codec.ts';
import { JSON_CODEC } from '../wire/json.ts';
import type {
  ConnectOptions,
  DialContext,
  DialerSocketConstructor,
  DialTarget,
} from './dialer_types.ts';
import { encodeError } from '../util/value_path.ts';
import { Hello, type HelloOptions } from './hello.ts';
import type { Limits } from '../session/limits.ts';
import { type RandomDraw, Reconnect, uniform } from './schedule.ts';
import {
  DEFAULT_SERVICE_RESTART,
  DEFAULT_TERMINAL,
  DIALER_CODES_TEXT,
  dialerMaySend,
  MAX_CLOSE_REASON_BYTES,
} from '../wire/codes.ts';
import { FLAG_END, OPEN, utf8Length } from '../wire/frame.ts';
import { mustBe } from '../util/describe.ts';
import {
  factoryOf,
  type HintsFactory,
  movedOption,
  type RecoveryFactory,
  type WaitingFactory,
} from './_features.ts';

/** A target checked and copied: the URL as a string, the extra subprotocols. */
export interface FixedTarget {
  url: string;
  protocols: string[];
}

/** A hello function, as {@linkcode ConnectOptions.hello} may be. */
export type HelloFunction = (
  ctx: DialContext,
) => Hello | HelloOptions | Promise<Hello | HelloOptions>;

/** The redial policy's part of the options: what `lib/dialer/_redial.ts` decides with. */
export interface RedialPolicy {
  reconnect: Reconnect | false;
  draw: RandomDraw;
  serviceRestart: readonly number[];
  terminal: readonly number[];
  serviceRestartDelayMs: number;
}

/** {@linkcode ConnectOptions} with every default filled in and every value checked. */
export interface DialOptions extends RedialPolicy {
  /** The fixed target, or the function to call before every attempt. */
  target: FixedTarget | ((ctx: DialContext) => unknown);
  codec: Codec;
  hello: Hello | HelloFunction;
  stableAfterMs: number;
  firstDialDelayMs: number;
  handshakeTimeoutMs: number;
  heartbeat: { intervalMs: number; timeoutMs: number } | false;
  /** The timeout of a request that sets none; undefined for none (the option's 0). */
  requestTimeoutMs: number | undefined;
  /** The features given as option values (`lib/dialer/_features.ts`); undefined without. */
  recovery: RecoveryFactory | undefined;
  waiting: WaitingFactory | undefined;
  hints: HintsFactory | undefined;
  limits: Partial<Limits> | undefined;
  /** The WebSocket constructor; undefined when the caller brings its own transport. */
  WebSocket: DialerSocketConstructor | undefined;
  signal: AbortSignal | undefined;
}

function optionError(
  field: string,
  expected: string,
  value: unknown,
  Kind: typeof TypeError = TypeError,
): TypeError {
  return new Kind(mustBe('connect', field, expected, value));
}

/**
 * The value of an option that takes an instance of `Class` or the options to make one: a new one
 * for `undefined` or an options object, the instance itself, or the error naming `expected`.
 */
function instanceOf<T>(
  field: string,
  value: unknown,
  Class: new (options?: object) => T,
  expected: string,
): T {
  if (value === undefined) return new Class();
  if (value instanceof Class) return value;
  if (value !== null && typeof value === 'object') return new Class(value);
  throw optionError(field, expected, value);
}

function duration(
  field: string,
  value: unknown,
  fallback: number,
  positive?: boolean,
): number {
  if (value === undefined) return fallback;
  if (typeof value !== 'number') throw optionError(field, 'a number of milliseconds', value);
  if (Number.isNaN(value) || value < 0 || (positive && value === 0) || value === Infinity) {
    throw optionError(
      field,
      `a finite number ${positive ? 'greater than 0' : 'at least 0'}`,
      value,
      RangeError,
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
 * `what` names the action in the error for bad `protocols` (`connect`, `dial`).
 */
export function fixedTarget(value: unknown, what: string): FixedTarget | undefined {
  if (typeof value === 'string' || value instanceof URL) {
    return { url: String(value), protocols: [] };
  }
  if (value === null || typeof value !== 'object') return undefined;
  const { url, protocols = [] } = value as Partial<DialTarget>;
  if (typeof url !== 'string' && !(url instanceof URL)) return undefined;
  if (!Array.isArray(protocols) || !protocols.every((p) => typeof p === 'string')) {
    throw new TypeError(mustBe(what, 'protocols', 'an array of strings', protocols));
  }
  return { url: String(url), protocols: [...protocols] };
}

/**
 * Checks `target` and `options` and fills in the defaults.
 *
 * @param target What `connect()` was given as its target.
 * @param options What `connect()` was given as its options.
 * @param needsWebSocket Whether the WebSocket constructor is required (false with a transport of
 * the caller's own).
 * @throws {TypeError} When a value has the wrong type.
 * @throws {RangeError} When a duration is out of range.
 */
export function resolveOptions(
  target: unknown,
  options: ConnectOptions,
  needsWebSocket: boolean,
): DialOptions {
  const fixed = typeof target === 'function'
    ? target as (ctx: DialContext) => unknown
    : fixedTarget(target, 'connect');
  if (fixed === undefined) {
    throw optionError('target', 'a string, a URL, a DialTarget or a function', target);
  }
  if (options === null || typeof options !== 'object') {
    throw optionError('options', 'an object', options);
  }
  const codec = options.codec ?? JSON_CODEC;
  if (
    // An object or a function (`jsonCodec` is both) with these properties.
    typeof codec?.name !== 'string' || typeof codec.encode !== 'function' ||
    typeof codec.decode !== 'function'
  ) {
    throw optionError('codec', 'a Codec with name, encode and decode', codec);
  }
  const hello = typeof options.hello === 'function'
    ? options.hello
    : instanceOf('hello', options.hello, Hello, 'a Hello, HelloOptions or a function');
  if (hello instanceof Hello) checkHello(hello, codec);
  const reconnect = options.reconnect === false ? false : instanceOf(
    'reconnect',
    options.reconnect,
    Reconnect,
    'a Reconnect, ReconnectOptions or false',
  );
  const closeCodes = options.closeCodes ?? {};
  if (closeCodes === null || typeof closeCodes !== 'object') {
    throw optionError('closeCodes', 'an object', closeCodes);
  }
  const h = options.heartbeat;
  if (h !== false && h !== undefined && typeof h !== 'object') {
    throw optionError('heartbeat', 'an object or false', h);
  }
  const heartbeat = h !== false && {
    intervalMs: duration('heartbeat.intervalMs', h?.intervalMs, 20_000, true),
    timeoutMs: duration('heartbeat.timeoutMs', h?.timeoutMs, 10_000, true),
  };
  // The options that moved into the features' functions say where they went.
  const old = options as { onRecovered?: unknown; maxWaiting?: unknown };
  if (old.onRecovered !== undefined) {
    throw new TypeError(movedOption('onRecovered', 'recovery({ onRecovered })', 'recovery'));
  }
  if (old.maxWaiting !== undefined) {
    throw new TypeError(
      movedOption('maxWaiting', 'waitWhileReconnecting({ maxWaiting })', 'whileReconnecting'),
    );
  }
  const WebSocketCtor = options.WebSocket ??
    (globalThis as { WebSocket?: DialerSocketConstructor }).WebSocket;
  if (needsWebSocket && typeof WebSocketCtor !== 'function') {
    throw optionError(
      'WebSocket',
      'a WebSocket constructor (none is global: on Node 20, pass wsDialer(WebSocket) from "@muxws/core/node")',
      WebSocketCtor,
    );
  }
  if (options.signal !== undefined && !(options.signal instanceof AbortSignal)) {
    throw optionError('signal', 'an AbortSignal', options.signal);
  }
  for (
    const name of [
      'draw',
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
    draw: options.draw ?? uniform,
    serviceRestart: codeList(
      'closeCodes.serviceRestart',
      closeCodes.serviceRestart,
      DEFAULT_SERVICE_RESTART,
    ),
    terminal: codeList('closeCodes.terminal', closeCodes.terminal, DEFAULT_TERMINAL),
    serviceRestartDelayMs: duration('serviceRestartDelayMs', options.serviceRestartDelayMs, 250),
    stableAfterMs: duration('stableAfterMs', options.stableAfterMs, 0),
    firstDialDelayMs: duration('firstDialDelayMs', options.firstDialDelayMs, 0),
    handshakeTimeoutMs: duration('handshakeTimeoutMs', options.handshakeTimeoutMs, 15_000, true),
    heartbeat,
    requestTimeoutMs: duration('requestTimeoutMs', options.requestTimeoutMs, 30_000) || undefined,
    recovery: factoryOf(options.recovery, 'recovery', 'recovery({ onRecovered })'),
    waiting: factoryOf(
      options.whileReconnecting,
      'whileReconnecting',
      'waitWhileReconnecting({ maxWaiting })',
    ),
    hints: factoryOf(options.onlineHints, 'onlineHints', 'onlineHints()'),
    limits: options.limits,
    WebSocket: WebSocketCtor,
    signal: options.signal,
  };
}

/**
 * Checks that `codec` can encode the hello's OPEN, so a payload it cannot carry (a `BigInt` in
 * JSON) fails before any dial rather than on an open socket: by `connect()` for a fixed hello, by
 * each attempt for a hello function's result. The message is the same for both.
 *
 * @throws {TypeError} Naming the part of the hello (`payload` or `headers`) and the codec's error.
 */
export function checkHello(hello: Hello, codec: Codec): void {
  if (!hello.configured) return;
  const headers = hello.headersForWire() ?? null;
  const payload = hello.payloadForWire();
  try {
    codec.encode([OPEN, 1, FLAG_END, headers, payload]);
  } catch (error) {
    // Named by the path of the part the codec refuses (`BigInt at .big`), as a stream's are.
    throw encodeError((frame) => codec.encode(frame), `of the hello with codec "${codec.name}"`, [
      ['headers', headers],
      ['payload', payload],
    ], error);
  }
}

/**
 * Checks the arguments of `Connection.close()`, before anything is sent.
 *
 * @throws {RangeError} When `code` is not 1000 or 3000–4999, or `reason` is over 123 UTF-8 bytes.
 * @throws {TypeError} When `reason` is not a string.
 */
export function checkClose(code: number, reason: string): void {
  const action = 'close the connection';
  if (!dialerMaySend(code)) throw new RangeError(mustBe(action, 'code', DIALER_CODES_TEXT, code));
  if (typeof reason !== 'string') {
    throw new TypeError(mustBe(action, 'reason', 'a string', reason));
  }
  const bytes = utf8Length(reason);
  if (bytes > MAX_CLOSE_REASON_BYTES) {
    throw new RangeError(
      mustBe(action, 'reason', `at most ${MAX_CLOSE_REASON_BYTES} UTF-8 bytes`, bytes) + ' bytes',
    );
  }
}
