/**
 * The reconnect schedule: {@linkcode Reconnect} holds the backoff settings, and three pure
 * functions compute from it — {@linkcode unjitteredDelay}, {@linkcode backoffDelay} and
 * {@linkcode shouldRetry}. The jitter source is injectable as a {@linkcode RandomDraw}:
 * {@linkcode uniform} (the default, `Math.random`) or {@linkcode seededDraw} (deterministic per
 * client).
 *
 * With the defaults the unjittered delays are 250, 500, 1000, 2000, 4000, 8000, 16000 ms, then
 * 30000 ms for every later retry (the cap), and each one is multiplied by a factor drawn from
 * 0.7 to 1.3, capped ones included.
 *
 * @module
 */
import { describe, mustBe } from '../util/describe.ts';

/**
 * A jitter source: returns a number from -1 (inclusive) to 1 (exclusive), a fresh value per call.
 * A test may pin exactly 1 to see the highest jitter; {@linkcode backoffDelay} does not check the
 * value and clamps only its result, at 0.
 */
export type RandomDraw = () => number;

/** The options of {@linkcode Reconnect}. Every field is optional and has a default. */
export interface ReconnectOptions {
  /**
   * The unjittered delay before the first retry, in milliseconds. Must be greater than 0.
   *
   * @default {250}
   */
  initialDelayMs?: number;
  /**
   * The multiplier per failed attempt. `1` gives a fixed interval; must be at least 1.
   *
   * @default {2}
   */
  factor?: number;
  /**
   * The ceiling on the unjittered delay, in milliseconds. Jitter is applied after the cap. Only a
   * NaN is rejected; a value below `initialDelayMs` caps every delay.
   *
   * @default {30000}
   */
  maxDelayMs?: number;
  /**
   * The dispersion, a fraction from 0 to 1: each delay is multiplied by `1 + draw() * jitter`.
   * `0` disables jitter.
   *
   * @default {0.3}
   */
  jitter?: number;
  /**
   * Consecutive failed attempts before giving up. `Infinity` is unlimited; `0` gives up without
   * dialling. Not validated: a negative or NaN value behaves as 0.
   *
   * @default {Infinity}
   */
  maxAttempts?: number;
}

function isNumber(value: unknown): value is number {
  return typeof value === 'number';
}

/**
 * The backoff settings of the dialer's reconnect helper: the only reconnect settings an
 * application configures. An instance is frozen, so a running helper's schedule cannot change;
 * construct a new one instead.
 *
 * The delay before retry `n` (`n` failed attempts so far, 0 for the first retry after a loss) is
 * `min(initialDelayMs * factor ** n, maxDelayMs) * (1 + draw() * jitter)`, clamped at 0. With the
 * defaults that is 250, 500, 1000, … ms, capped at 30000 ms, each within ±30 %.
 *
 * These configurations are rejected with a plain `Error` (a configuration mistake, not a muxws
 * error class): `initialDelayMs` not greater than 0, `factor` below 1, `maxDelayMs` NaN, and
 * `jitter` outside 0 to 1. A NaN `initialDelayMs`, `factor` or `jitter` is rejected too, as is a
 * value of any of the four that is not a number. `maxAttempts` is not validated.
 *
 * @example The default schedule and a rejected factor
 * ```ts
 * import { Reconnect, unjitteredDelay } from '@muxws/core';
 * import assert from 'node:assert/strict';
 *
 * const schedule = new Reconnect();
 * assert.deepEqual(
 *   [0, 1, 2, 3, 4, 5, 6, 7, 8].map((n) => unjitteredDelay(n, schedule)),
 *   [250, 500, 1000, 2000, 4000, 8000, 16000, 30000, 30000],
 * );
 * assert.equal(schedule.maxAttempts, Infinity);
 * assert.throws(() => new Reconnect({ factor: 0.5 }), /"factor" must be at least 1/);
 * ```
 */
export class Reconnect {
  /** The unjittered delay before the first retry, in milliseconds. */
  declare readonly initialDelayMs: number;
  /** The multiplier per failed attempt. */
  declare readonly factor: number;
  /** The ceiling on the unjittered delay, in milliseconds. */
  declare readonly maxDelayMs: number;
  /** The dispersion, a fraction from 0 to 1. */
  declare readonly jitter: number;
  /** Consecutive failed attempts before giving up; `Infinity` is unlimited. */
  declare readonly maxAttempts: number;

  /**
   * Creates a schedule, validating it.
   *
   * @param options The five settings, all optional; see {@linkcode ReconnectOptions}.
   * @throws {Error} When `initialDelayMs` is not greater than 0, `factor` is not at least 1,
   * `maxDelayMs` is NaN, or `jitter` is outside 0 to 1 (NaN included).
   */
  constructor(options: ReconnectOptions = {}) {
    const {
      initialDelayMs = 250,
      factor = 2,
      maxDelayMs = 30_000,
      jitter = 0.3,
      maxAttempts = Infinity,
    } = options;
    if (!isNumber(initialDelayMs) || !(initialDelayMs > 0)) {
      throw new Error(
        mustBe('create Reconnect', 'initialDelayMs', 'greater than 0', initialDelayMs),
      );
    }
    if (!isNumber(factor) || !(factor >= 1)) {
      throw new Error(
        mustBe('create Reconnect', 'factor', 'at least 1', factor),
      );
    }
    if (!isNumber(maxDelayMs) || Number.isNaN(maxDelayMs)) {
      throw new Error(
        mustBe('create Reconnect', 'maxDelayMs', 'a number, not NaN', maxDelayMs),
      );
    }
    if (!isNumber(jitter) || !(jitter >= 0 && jitter <= 1)) {
      throw new Error(
        mustBe('create Reconnect', 'jitter', 'from 0 to 1', jitter),
      );
    }
    this.initialDelayMs = initialDelayMs;
    this.factor = factor;
    this.maxDelayMs = maxDelayMs;
    this.jitter = jitter;
    this.maxAttempts = maxAttempts;
    if (new.target === Reconnect) Object.freeze(this);
  }
}

/**
 * The delay before retry number `attempts`, before jitter and after the cap:
 * `min(initialDelayMs * factor ** attempts, maxDelayMs)`, in milliseconds. Deterministic.
 *
 * When `factor ** attempts` overflows to `Infinity` (say attempt 5000 with factor 2) the result is
 * `maxDelayMs`. It never throws and does not check `attempts`: a negative value gives a delay
 * smaller than `initialDelayMs` (and a NaN gives NaN). With `factor` 1 the delay is
 * `min(initialDelayMs, maxDelayMs)` for every `attempts`, `Infinity` included.
 *
 * @param attempts How many consecutive attempts have already failed.
 * @param options The schedule to compute from.
 * @returns The unjittered delay in milliseconds.
 *
 * @example The default doubling, then the cap
 * ```ts
 * import { Reconnect, unjitteredDelay } from '@muxws/core';
 * import assert from 'node:assert/strict';
 *
 * const schedule = new Reconnect({ initialDelayMs: 250, factor: 2, maxDelayMs: 30_000 });
 * assert.equal(unjitteredDelay(0, schedule), 250);
 * assert.equal(unjitteredDelay(6, schedule), 16_000);
 * assert.equal(unjitteredDelay(7, schedule), 30_000);
 * assert.equal(unjitteredDelay(5000, schedule), 30_000);
 * ```
 */
export function unjitteredDelay(attempts: number, options: Reconnect): number {
  const { initialDelayMs, factor, maxDelayMs } = options;
  // 1 ** ±Infinity is NaN in JavaScript; a fixed interval stays fixed at any attempt count.
  const growth = factor === 1 ? 1 : factor ** attempts;
  return Math.min(initialDelayMs * growth, maxDelayMs);
}

/**
 * The jittered delay before retry number `attempts`, in milliseconds:
 * `unjitteredDelay(attempts, options) * (1 + draw() * options.jitter)`, clamped at 0. Jitter is
 * applied after the cap, so capped retries stay dispersed. The dialer calls it; it is exported so
 * an application can compute when the next retry happens, and `draw` is injectable so the
 * schedule can be tested as a pure function.
 *
 * `draw` is called exactly once per call, also when `jitter` is 0. Its value is not checked:
 * the formula applies as written and only the result is clamped, so with `jitter` 0.5 a draw of
 * 2 doubles the delay, a draw of -2 or below gives 0, and a draw that is NaN or not a number
 * gives 0. With `jitter` 0 the draw does not matter.
 *
 * @param attempts How many consecutive attempts have already failed; `0` is the first retry after
 * a loss.
 * @param options The schedule to compute from.
 * @param draw The jitter source, returning a number from -1 to 1. The default, {@linkcode uniform},
 * uses `Math.random`: jitter spreads reconnects over time and has no security function.
 * @returns The delay in milliseconds, clamped at 0: never negative, never NaN.
 * @throws {Error} When `attempts` is negative or NaN.
 *
 * @example Pin the draw to see the jitter's bounds
 * ```ts
 * import { backoffDelay, Reconnect } from '@muxws/core';
 * import assert from 'node:assert/strict';
 *
 * const schedule = new Reconnect({ initialDelayMs: 1000, factor: 2, maxDelayMs: 30_000, jitter: 0.5 });
 * assert.equal(backoffDelay(0, schedule, () => 0), 1000);
 * assert.equal(backoffDelay(0, schedule, () => -1), 500);
 * assert.equal(backoffDelay(0, schedule, () => 1), 1500);
 * assert.equal(backoffDelay(20, schedule, () => -1), 15_000); // the cap is jittered too
 * assert.throws(() => backoffDelay(-1, schedule), /"attempts" must not be negative/);
 * ```
 */
export function backoffDelay(
  attempts: number,
  options: Reconnect,
  draw: RandomDraw = uniform,
): number {
  if (!isNumber(attempts) || !(attempts >= 0)) {
    throw new Error(
      `Cannot compute a backoff delay as "attempts" must not be negative: current value is ${
        describe(attempts)
      }`,
    );
  }
  const drawn = draw();
  const { jitter } = options;
  // Jitter 0 disables jitter: the draw, whatever it returned, does not move the delay.
  const scale = jitter === 0 ? 1 : 1 + (isNumber(drawn) ? drawn : NaN) * jitter;
  const delay = unjitteredDelay(attempts, options) * scale;
  // The clamp: anything not above 0 is 0, so a negative product, NaN (an infinite cap times a
  // zero scale, a NaN draw) and -Infinity all give 0.
  return delay > 0 ? delay : 0;
}

/**
 * Whether another attempt is allowed: `attempts < maxAttempts`, with a negative or NaN
 * `maxAttempts` behaving as 0. Always true for the default `Infinity`. The dialer calls it
 * before every redial; when it returns false the dialer fires `onClose` once with
 * `willRetry: false` and never dials again.
 *
 * @param attempts How many consecutive attempts have already failed.
 * @param options The schedule holding `maxAttempts`.
 * @returns True while another attempt is allowed.
 *
 * @example A limit of three attempts
 * ```ts
 * import { Reconnect, shouldRetry } from '@muxws/core';
 * import assert from 'node:assert/strict';
 *
 * const limited = new Reconnect({ maxAttempts: 3 });
 * assert.deepEqual([0, 1, 2, 3, 4].map((n) => shouldRetry(n, limited)), [true, true, true, false, false]);
 * assert.equal(shouldRetry(1_000_000, new Reconnect()), true);
 * assert.equal(shouldRetry(0, new Reconnect({ maxAttempts: 0 })), false);
 * ```
 */
export function shouldRetry(attempts: number, options: Reconnect): boolean {
  const { maxAttempts } = options;
  const limit = maxAttempts > 0 ? maxAttempts : 0;
  return attempts < limit;
}

/**
 * The default jitter source: `Math.random()` scaled to the range -1 (inclusive) to 1 (exclusive).
 * It is not a cryptographic source on purpose: jitter spreads reconnects over time and has no
 * security function.
 *
 * @returns A number from -1 (inclusive) to 1 (exclusive).
 *
 * @example
 * ```ts
 * import { uniform } from '@muxws/core';
 * import assert from 'node:assert/strict';
 *
 * const value = uniform();
 * assert(value >= -1 && value < 1);
 * ```
 */
export function uniform(): number {
  return Math.random() * 2 - 1;
}

/** 2 ** 31, written as a literal so a bundle without seededDraw drops it. */
const TWO_TO_THE_31 = 0x8000_0000;

function rotateLeft(value: number, bits: number): number {
  return (value << bits) | (value >>> (32 - bits));
}

/** Spreads every input bit over every output bit of a 32-bit word (multiply-xorshift rounds). */
function avalanche(value: number): number {
  let h = value | 0;
  h = Math.imul(h ^ (h >>> 16), 0x7feb352d);
  h = Math.imul(h ^ (h >>> 15), 0x846ca68b);
  return h ^ (h >>> 16);
}

/**
 * Hashes a string into 128 bits: four 32-bit lanes, each absorbing every UTF-16 code unit with
 * its own odd multiplier and rotation and feeding the next lane, then cross-lane avalanche
 * rounds so every code unit affects every bit of the state.
 */
function hashSeed(seed: string): [number, number, number, number] {
  // Starting lanes: fractional digits of sqrt(2), sqrt(3), sqrt(5), sqrt(7).
  let a = 0x6a09e667 ^ seed.length;
  let b = 0xbb67ae85;
  let c = 0x3c6ef372;
  let d = 0xa54ff53a;
  for (let i = 0; i < seed.length; i++) {
    const unit = seed.charCodeAt(i);
    a = (Math.imul(rotateLeft(a ^ unit, 5), 0x9e3779b1) + d) | 0;
    b = (Math.imul(rotateLeft(b ^ unit, 11), 0x85ebca77) + a) | 0;
    c = (Math.imul(rotateLeft(c ^ unit, 17), 0xc2b2ae3d) + b) | 0;
    d = (Math.imul(rotateLeft(d ^ unit, 23), 0x27d4eb2f) + c) | 0;
  }
  for (let round = 0; round < 3; round++) {
    a = avalanche(a + d);
    b = avalanche(b ^ a);
    c = avalanche(c + b);
    d = avalanche(d ^ c);
  }
  return [a, b, c, d];
}

/**
 * A deterministic jitter source for one client: the same `seed` always yields the
 * same sequence, each call a fresh value from -1 (inclusive) to 1 (exclusive), and different
 * seeds yield uncorrelated sequences. Keyed on a client identity it gives reproducible
 * per-client spread with no shared random state.
 *
 * The seed is hashed into a 128-bit state that drives an sfc32 generator (a small, fast
 * counting generator with a 32-bit counter, so no seed falls into a short cycle). Each returned
 * function owns its state; nothing is drawn when the module loads or until the function is
 * called, so it is safe in Workers' global scope. Not a cryptographic generator.
 *
 * @param seed Any string, typically a stable client identity; the empty string is a valid seed.
 * @returns A {@linkcode RandomDraw} owning its own generator state.
 * @throws {TypeError} When `seed` is not a string.
 *
 * @example The same seed gives the same delays
 * ```ts
 * import { backoffDelay, Reconnect, seededDraw } from '@muxws/core';
 * import assert from 'node:assert/strict';
 *
 * const schedule = new Reconnect();
 * const first = seededDraw('client-42');
 * const again = seededDraw('client-42');
 * const delays = [0, 1, 2].map((n) => backoffDelay(n, schedule, first));
 * assert.deepEqual([0, 1, 2].map((n) => backoffDelay(n, schedule, again)), delays);
 * assert(delays[0] >= 175 && delays[0] < 325);
 * ```
 */
export function seededDraw(seed: string): RandomDraw {
  if (typeof seed !== 'string') {
    throw new TypeError(
      mustBe('create a seeded draw', 'seed', 'a string', seed),
    );
  }
  let [a, b, c, d] = hashSeed(seed);
  const next = (): number => {
    // sfc32: a chaotic 96-bit part plus the counter d.
    const t = (((a + b) | 0) + d) | 0;
    d = (d + 1) | 0;
    a = b ^ (b >>> 9);
    b = (c + (c << 3)) | 0;
    c = rotateLeft(c, 21);
    c = (c + t) | 0;
    return t >>> 0;
  };
  // The first outputs still echo the hash lanes: discard them.
  for (let i = 0; i < 12; i++) next();
  return () => next() / TWO_TO_THE_31 - 1;
}
