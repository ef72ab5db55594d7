/**
 * The per-connection limits of a muxws session, enforced on both sides.
 *
 * Every limit is a positive integer. {@linkcode resolveLimits} fills the defaults in and checks
 * the values, so a mistake throws at construction instead of surfacing as a strange close code.
 *
 * @module
 */
import { mustBe } from '../util/describe.ts';

/**
 * The limits one session enforces on the messages and streams the other side sends.
 *
 * Exceeding `maxMessageBytes` or `maxMessageItems`, or `maxHelloBytes` while a required hello is
 * pending, closes the connection (acceptor 1009, dialer 4009); more than
 * `maxProtocolErrors` malformed messages close it (acceptor 1002, dialer 4002); more than
 * `maxResetRate` resets the other side caused within one second close it (acceptor 1008, dialer
 * 4002); an OPEN above `maxStreams` is refused with RESET `refused`; a
 * payload or headers value nested deeper than `maxDepth` resets its stream with `decode`. A
 * write waits while the socket's `bufferedAmount` is above `highWaterMark`; a RESET or another
 * reply that does not wait is not queued above `maxBufferedBytes`: the connection closes instead
 * (acceptor 1008, dialer 4002).
 *
 * @example Tighter limits for an endpoint that only answers small requests
 * ```ts
 * import { type Limits, resolveLimits } from '@muxws/core';
 * import assert from 'node:assert/strict';
 *
 * const limits: Limits = resolveLimits({ maxStreams: 10, maxMessageBytes: 16 * 1024 });
 * assert.equal(limits.maxProtocolErrors, 16); // the rest keep their defaults
 * ```
 *
 * @example Room for messages carrying long arrays of small values
 * ```ts
 * import { jsonCodec, resolveLimits } from '@muxws/core';
 * import assert from 'node:assert/strict';
 *
 * // 200,000 readings of one number each: 200,000 items, over the default of 65,536.
 * const message = jsonCodec.encode([2, 1, 0, new Array(200_000).fill(7)]);
 * assert.equal(jsonCodec.exceedsItems?.(message, 65_536), true);
 * const limits = resolveLimits({ maxMessageItems: 250_000 });
 * assert.equal(jsonCodec.exceedsItems?.(message, limits.maxMessageItems), false);
 * // new Acceptor({ limits }) and connect(url, { limits }) then accept it
 * ```
 */
export interface Limits {
  /**
   * Streams the other side opened that are not yet finished in both directions nor reset. An
   * OPEN above it is refused with RESET `refused`.
   *
   * @default {100}
   */
  maxStreams: number;
  /**
   * The largest message accepted, in bytes (UTF-8 bytes of a text message), checked before it
   * is decoded. A larger one closes the connection. Sending a larger one is refused locally
   * with `RangeError`, as the other side would close the connection for it.
   *
   * @default {1048576}
   */
  maxMessageBytes: number;
  /**
   * The most items (array elements and map entries, at any depth) one message may decode to,
   * counted before they are built. Every value inside a message is one item: a string, a number,
   * an object, an array, and a map key with its value. A message holding more closes the
   * connection, as a message over `maxMessageBytes` does. Every item takes at least one byte, so a
   * message of at most this many bytes always passes; the limit stops the messages whose bytes
   * decode to far more memory than they take (a kilobyte of one-byte MessagePack maps is a
   * thousand objects).
   *
   * @default {65536}
   */
  maxMessageItems: number;
  /**
   * The largest message accepted, in bytes, while a required hello is pending (acceptor side,
   * with `requireHello`). Every message before the hello is acknowledged, the hello included,
   * counts against it (and against `maxMessageBytes`, whichever is smaller); a larger one closes
   * the connection, as a message over `maxMessageBytes` does. Until then a message may also decode
   * to at most one item per 16 of these bytes (4,096 with the default), and to at most
   * `maxMessageItems`. A dialer ignores it: it is never sent a hello.
   *
   * @default {65536}
   */
  maxHelloBytes: number;
  /**
   * Malformed messages tolerated over the connection's whole life (never reset by good
   * traffic); the next one closes the connection.
   *
   * @default {16}
   */
  maxProtocolErrors: number;
  /**
   * The deepest nesting accepted inside a payload or headers value (`{}` and `[]` are depth 1;
   * a string or number is depth 0). Deeper resets the stream with `decode`.
   *
   * @default {64}
   */
  maxDepth: number;
  /**
   * Resets the other side may cause within any one second; one more closes the connection (the
   * rapid-reset defence). Counted: each stream it opened and then reset itself, each of its
   * streams this side reset with `decode` or `flow` because of what it sent, and each of its
   * OPENs this side refused with `decode` or `refused` (no stream handler, over `maxStreams`,
   * or after the other side sent GOAWAY). A refusal after this side sent GOAWAY does not count
   * (those OPENs were in flight); `maxBufferedBytes` bounds what they cost.
   *
   * @default {200}
   */
  maxResetRate: number;
  /**
   * Bytes of the socket's `bufferedAmount` above which writes wait (and a broadcast skips the
   * peer).
   *
   * @default {1048576}
   */
  highWaterMark: number;
  /**
   * Bytes of the socket's `bufferedAmount` above which a RESET or another reply closes the
   * connection instead of queueing behind a peer that does not read. The replies are what this
   * side sends without waiting for the socket: a RESET (a refusal included), an END with no
   * value, a CREDIT; the connection closes with 1008 (dialer 4002). Writes wait at
   * `highWaterMark`, well below it, so only a peer that keeps sending and never reads gets
   * there. Must be above `highWaterMark`.
   *
   * @default {8388608}
   */
  maxBufferedBytes: number;
}

/**
 * The default limits: 100 streams, 1 MiB messages of at most 65,536 items, 64 KiB messages
 * before a required hello, 16 protocol errors, depth 64, 200 resets a second, a 1 MiB
 * high-water mark and an 8 MiB cap on what is buffered for a peer.
 *
 * @example
 * ```ts
 * import { DEFAULT_LIMITS } from '@muxws/core';
 * import assert from 'node:assert/strict';
 *
 * assert.equal(DEFAULT_LIMITS.maxStreams, 100);
 * assert.equal(DEFAULT_LIMITS.maxMessageBytes, 1024 * 1024);
 * assert.equal(DEFAULT_LIMITS.maxMessageItems, 65536);
 * assert.equal(DEFAULT_LIMITS.maxHelloBytes, 64 * 1024);
 * assert(Object.isFrozen(DEFAULT_LIMITS));
 * ```
 */
export const DEFAULT_LIMITS: Readonly<Limits> = Object.freeze({
  maxStreams: 100,
  maxMessageBytes: 1024 * 1024,
  maxMessageItems: 65536,
  maxHelloBytes: 65536,
  maxProtocolErrors: 16,
  maxDepth: 64,
  maxResetRate: 200,
  highWaterMark: 1024 * 1024,
  maxBufferedBytes: 8 * 1024 * 1024,
});

/** The limit names, in the order messages list them: the keys of {@linkcode DEFAULT_LIMITS}. */
const NAMES = Object.keys(DEFAULT_LIMITS) as readonly (keyof Limits)[];

/**
 * Returns a complete, checked set of limits: every field given in `limits` (an `undefined` field
 * counts as absent), the default for the rest.
 *
 * @param limits The limits to change; others keep their defaults.
 * @returns A new object with every field set.
 * @throws {TypeError} When `limits` is neither an object nor undefined, or names an unknown field.
 * @throws {RangeError} When a value is not a positive safe integer, or `maxBufferedBytes` is not
 * above `highWaterMark`.
 *
 * @example Override one limit
 * ```ts
 * import { resolveLimits } from '@muxws/core';
 * import assert from 'node:assert/strict';
 *
 * const limits = resolveLimits({ maxStreams: 10 });
 * assert.equal(limits.maxStreams, 10);
 * assert.equal(limits.maxDepth, 64);
 * assert.throws(() => resolveLimits({ maxDepth: 0 }), RangeError);
 * ```
 */
export function resolveLimits(limits?: Partial<Limits>): Limits {
  if (limits !== undefined && (typeof limits !== 'object' || limits === null)) {
    throw new TypeError(
      mustBe('create Limits', 'limits', 'an object', limits),
    );
  }
  const out: Limits = { ...DEFAULT_LIMITS };
  if (limits === undefined) return out;
  for (const key of Object.keys(limits)) {
    if (!NAMES.includes(key as keyof Limits)) {
      throw new TypeError(
        `Cannot create Limits as "${key}" is not a limit: expected one of ${NAMES.join(', ')}`,
      );
    }
  }
  for (const name of NAMES) {
    const value = limits[name];
    if (value === undefined) continue;
    if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 1) {
      throw new RangeError(
        mustBe('create Limits', name, 'a positive integer', value),
      );
    }
    out[name] = value;
  }
  if (out.maxBufferedBytes <= out.highWaterMark) {
    throw new RangeError(
      mustBe('create Limits', 'maxBufferedBytes', 'above highWaterMark', out.maxBufferedBytes),
    );
  }
  return out;
}
