/**
 * {@linkcode Hello}: the opening payload a dialer sends on every connection it makes, captured by value once and handed out as a fresh copy for each send.
 *
 * @module
 */
import { mustBe } from '../util/describe.ts';

/**
 * How long a hello may go unacknowledged before the attempt fails, in milliseconds, when
 * {@linkcode HelloOptions.timeoutMs} is not given.
 */
export const DEFAULT_HELLO_TIMEOUT_MS: number = 10_000;

/** The longest delay a `setTimeout` honours; a larger one fires after about 1 ms in most runtimes. */
const MAX_TIMER_MS = 2_147_483_647;

/** The options of {@linkcode Hello}. Every field is optional. */
export interface HelloOptions {
  /**
   * The hello payload, deep-copied (`structuredClone`) at construction. `undefined` and `null`
   * both mean "no payload" (the payload sent is then `null`).
   *
   * @default {null}
   */
  payload?: unknown;
  /**
   * Headers for the hello's OPEN frame, deep-copied at construction. `undefined` and `null` both
   * mean "no headers".
   *
   * @default {null}
   */
  headers?: Record<string, unknown> | null;
  /**
   * How long the hello may go unacknowledged before the attempt fails, in milliseconds. On the
   * first connection `connect()` rejects with that failure; on a later one it counts as a failed
   * attempt. A positive number up to 2147483647 (the timer limit).
   *
   * @default {DEFAULT_HELLO_TIMEOUT_MS}
   */
  timeoutMs?: number;
}

/**
 * The opening payload sent on every connection a dialer makes: an ordinary OPEN
 * with END on stream 1, acknowledged by the acceptor's handler returning. `connect()` builds one
 * from a plain {@linkcode HelloOptions}; the class is exported so an application can build and
 * inspect one.
 *
 * The payload and headers are captured by value: `structuredClone`d at construction, so a later
 * change to the application's object does not change what is sent, and cloned again by every
 * {@linkcode Hello.payloadForWire} and {@linkcode Hello.headersForWire} call, so the object one
 * connection hands its codec is never the object the next connection sends. A value
 * `structuredClone` cannot copy (a function, a `Symbol`, or an object holding one) throws a
 * `DataCloneError` here, at construction, not during a later reconnect. A class instance does
 * not throw: it is copied as a plain object, without its prototype.
 *
 * A peer whose hello is not {@linkcode Hello.configured} sends none and is established when its
 * socket opens. Do not put a credential in the hello: authentication belongs to the handshake.
 *
 * @example Captured by value, a fresh copy per send
 * ```ts
 * import { Hello } from '@muxws/core';
 * import assert from 'node:assert/strict';
 *
 * const identity = { client: 'docs', rooms: ['general'] };
 * const hello = new Hello({ payload: identity, headers: { v: 1 } });
 * identity.rooms.push('secret');
 *
 * assert.deepEqual(hello.payloadForWire(), { client: 'docs', rooms: ['general'] });
 * assert.notEqual(hello.payloadForWire(), hello.payloadForWire());
 * assert.deepEqual(hello.headersForWire(), { v: 1 });
 * assert.equal(hello.timeoutMs, 10_000);
 * assert.equal(new Hello().configured, false);
 * assert.throws(() => new Hello({ payload: () => undefined }), { name: 'DataCloneError' });
 * ```
 */
export class Hello {
  /** How long the hello may go unacknowledged before the attempt fails, in milliseconds. */
  declare readonly timeoutMs: number;
  readonly #payload: unknown;
  readonly #headers: Record<string, unknown> | undefined;
  readonly #configured: boolean;

  /**
   * Captures the payload and headers by value.
   *
   * @param options `payload`, `headers` and `timeoutMs`; see {@linkcode HelloOptions}.
   * @throws {DOMException} A `DataCloneError` when `structuredClone` cannot copy the payload or
   * the headers.
   * @throws {TypeError} When `headers` is not an object (or null), or `timeoutMs` is not a number.
   * @throws {RangeError} When `timeoutMs` is not greater than 0 and at most 2147483647.
   */
  constructor(options: HelloOptions = {}) {
    const { payload, headers, timeoutMs = DEFAULT_HELLO_TIMEOUT_MS } = options;
    if (typeof timeoutMs !== 'number') {
      throw new TypeError(
        mustBe('create Hello', 'timeoutMs', 'a number', timeoutMs),
      );
    }
    if (!(timeoutMs > 0 && timeoutMs <= MAX_TIMER_MS)) {
      throw new RangeError(
        mustBe(
          'create Hello',
          'timeoutMs',
          `greater than 0 and at most ${MAX_TIMER_MS}`,
          timeoutMs,
        ),
      );
    }
    const hasHeaders = headers !== undefined && headers !== null;
    if (hasHeaders && (typeof headers !== 'object' || Array.isArray(headers))) {
      throw new TypeError(
        mustBe('create Hello', 'headers', 'an object or null', headers),
      );
    }
    const hasPayload = payload !== undefined && payload !== null;
    this.#payload = hasPayload ? structuredClone(payload) : null;
    this.#headers = hasHeaders ? structuredClone(headers) : undefined;
    this.#configured = hasPayload || hasHeaders;
    this.timeoutMs = timeoutMs;
    if (new.target === Hello) Object.freeze(this);
  }

  /**
   * True when a payload or headers were given (neither `undefined` nor `null`). A dialer whose
   * hello is not configured sends none.
   */
  get configured(): boolean {
    return this.#configured;
  }

  /**
   * A fresh deep copy of the captured payload, `null` when none was given.
   *
   * @returns A new copy on every call.
   */
  payloadForWire(): unknown {
    return structuredClone(this.#payload);
  }

  /**
   * A fresh deep copy of the captured headers, `undefined` when none were given.
   *
   * @returns A new copy on every call, or `undefined`.
   */
  headersForWire(): Record<string, unknown> | undefined {
    return this.#headers === undefined ? undefined : structuredClone(this.#headers);
  }
}
