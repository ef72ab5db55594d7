/**
 * Codecs turn one frame (an array) into one WebSocket message and back.
 *
 * {@linkcode jsonCodec} is the default: text messages, subprotocol `muxws.v1.json`. A binary
 * codec (MessagePack) lives in its own entry point. Both sides of a connection use the same
 * codec; the dialer names it in the subprotocol it offers ({@linkcode subprotocol}).
 *
 * @module
 */
import { mustBe } from '../util/describe.ts';
import { failsWith, unencodable } from '../util/value_path.ts';
import { decode, encode, exceedsItems, identify } from './json.ts';
import { transformed } from './_transform.ts';

/** A codec's name: what follows `muxws.v1.` in its subprotocol. */
const CODEC_NAME = /^[a-z0-9-]{1,32}$/;
/** {@linkcode CODEC_NAME} in words, for errors. */
const CODEC_NAME_RULE = '1 to 32 of a-z, 0-9 and -';

/**
 * How frames become WebSocket messages. The session decodes every message with `decode`, then
 * checks the frame's shape itself, so a codec only has to map bytes to values faithfully and
 * safely: decoding must never build an object with a polluted prototype (keys such as
 * `__proto__` stay plain data) and must not merge decoded objects into others.
 *
 * @example A codec that sends JSON in binary messages
 * ```ts
 * import { type Codec, subprotocol } from '@muxws/core';
 * import assert from 'node:assert/strict';
 *
 * const jsonBytes: Codec = {
 *   name: 'jsonbytes',
 *   binary: true,
 *   encode: (frame) => new TextEncoder().encode(JSON.stringify(frame)),
 *   decode: (data) =>
 *     JSON.parse(typeof data === 'string' ? data : new TextDecoder().decode(data)),
 * };
 * assert.equal(subprotocol(jsonBytes), 'muxws.v1.jsonbytes');
 * assert.deepEqual(jsonBytes.decode(jsonBytes.encode([6])), [6]);
 * ```
 */
export interface Codec {
  /** The subprotocol suffix: `json` gives `muxws.v1.json`. Lower-case letters and digits. */
  readonly name: string;
  /** True: frames travel as binary messages. False: as text messages. */
  readonly binary: boolean;
  /** Encodes one frame into one message. Throws (e.g. `TypeError`) on values it cannot encode. */
  encode(frame: readonly unknown[]): string | Uint8Array;
  /** Decodes one message into a value (the session checks it is a frame). Throws on bad input. */
  decode(data: string | Uint8Array): unknown;
  /**
   * Optional. When `decode` threw, names the frame kind and stream id still readable at the
   * start of the damaged message (e.g. `[2, 5, 0,` then garbage gives `[2, 5]`), so the session
   * resets only that stream with `decode` instead of counting a malformed message. Returns `undefined` when the prefix names no OPEN (1) or DATA (2) frame.
   */
  identify?(data: string | Uint8Array): readonly [kind: number, id: number] | undefined;
  /**
   * Optional. True when `data` would decode to more than `maxItems` items (array elements and
   * map entries, at any depth), counted without building them; false when it would not, or when
   * `data` is malformed (`decode` then reports that). The session asks before it decodes a
   * message and closes the connection when the answer is true, as for a message over
   * `limits.maxMessageBytes`. Without it, the session counts the items of the decoded value
   * instead, after it was built.
   */
  exceedsItems?(data: string | Uint8Array, maxItems: number): boolean;
  /**
   * Optional. True when `decode` may build more than the message shows, as a codec whose
   * payloads pass through a {@linkcode Transformer} does: the session then counts the items of
   * every decoded frame (`Map` and `Set` entries included) after `decode` too, whatever
   * `exceedsItems` answered before it, and checks the depth of every payload.
   */
  readonly transforms?: boolean;
}

/**
 * What turns a payload into JSON and back, in superjson's shape: `serialize(value)` returns
 * `{ json, meta }`, where `json` is plain JSON and `meta` (optional) says how to restore what
 * JSON cannot hold, and `deserialize({ json, meta })` restores the value. superjson's default
 * export has this shape as it is; another library (devalue, say) fits through a small adapter
 * object. muxws depends on none of them.
 *
 * The transformer decodes what the other side sends, so it must be safe on hostile input: it
 * must not assign through `__proto__` or build values far larger than its input.
 *
 * @example An adapter for a library that turns a value into one string
 * ```ts
 * import { jsonCodec, type Transformer } from '@muxws/core';
 * import assert from 'node:assert/strict';
 *
 * // Dates as tagged strings: enough to show the shape.
 * const dates: Transformer = {
 *   serialize: (value) => ({
 *     json: JSON.stringify(value, function (this: Record<string, unknown>, key, part) {
 *       const original = this[key];
 *       return original instanceof Date ? { $date: original.toISOString() } : part;
 *     }),
 *   }),
 *   deserialize: ({ json }) =>
 *     JSON.parse(json as string, (_key, part) => part?.$date ? new Date(part.$date) : part),
 * };
 * const codec = jsonCodec({ transformer: dates });
 * const when = new Date(0);
 * assert.deepEqual(codec.decode(codec.encode([9, 'room', null, { when }])), [9, 'room', null, { when }]);
 * ```
 */
export interface Transformer {
  /** Turns a payload into `{ json, meta }`; `json` must be plain JSON. Throws on what it refuses. */
  serialize(value: unknown): { json: unknown; meta?: unknown };
  /** Restores a payload from what `serialize` gave. Throws on input it cannot restore. */
  deserialize(payload: { json: unknown; meta?: unknown }): unknown;
}

/** The options of {@linkcode jsonCodec} called as a function. */
export interface JsonCodecOptions {
  /**
   * `true`: `encode` refuses every value JSON would silently change, so what the other side
   * decodes equals what was sent.
   *
   * @default {false}
   */
  strict?: boolean;
  /**
   * Passes every payload (of requests, responses, streams, hellos and broadcasts; not headers)
   * through this transformer, e.g. superjson, so values such as `Date`, `Map`, `Set` and `BigInt`
   * arrive as they were sent. A payload travels as the transformer's `{ json, meta }` object
   * (`null` and `undefined` as `null`), inside an ordinary frame. Both sides need the same
   * transformer: the codec has a name of its own ({@linkcode JsonCodecOptions.name}), so a side
   * without it refuses the connection at the handshake. With `strict`, the transformer's output
   * is what is checked.
   */
  transformer?: Transformer;
  /**
   * The name of a codec with a `transformer`, hence its subprotocol `muxws.v1.<name>`: 1 to 32
   * lower-case letters, digits or `-`. Name the transformer (`json-superjson`) when sides with
   * different transformers could meet, so that they refuse each other at the handshake. Only with
   * `transformer`.
   *
   * @default {'json-transformer'}
   */
  name?: string;
}

/**
 * The JSON codec, which is also a function: {@linkcode jsonCodec} is the default codec as it is,
 * and `jsonCodec({ strict: true })` returns the strict one.
 */
export interface JsonCodec extends Codec {
  /**
   * The JSON codec with `options`: the strict one for `{ strict: true }`, one whose payloads
   * pass through a {@linkcode Transformer} for `{ transformer }`, else {@linkcode jsonCodec}
   * itself.
   *
   * @throws {TypeError} When `strict` is neither a boolean nor absent, `transformer` is not an
   * object with `serialize` and `deserialize` functions, or `name` is given without a
   * `transformer` or is not 1 to 32 of a-z, 0-9 and `-`.
   */
  (options?: JsonCodecOptions): Codec;
}

/**
 * True for a value JSON carries as it is: `null`, a boolean, a string, a finite number, an array,
 * or a plain object (prototype `Object.prototype` or `null`) without a `toJSON` method.
 */
function isJsonValue(value: unknown): boolean {
  if (typeof value === 'number') return Number.isFinite(value);
  if (typeof value !== 'object') return typeof value === 'string' || typeof value === 'boolean';
  if (value === null || Array.isArray(value)) return true;
  const proto = Object.getPrototypeOf(value);
  return (proto === Object.prototype || proto === null) &&
    typeof (value as { toJSON?: unknown }).toJSON !== 'function';
}

/** `JSON.stringify` that throws on the first value {@linkcode isJsonValue} refuses. */
function strictStringify(value: unknown): string {
  return JSON.stringify(value, function (this: Record<string, unknown>, key, part) {
    // `this[key]` is the value before `toJSON` changed it.
    if (!isJsonValue(this[key])) throw new TypeError('Not strict JSON');
    return part;
  });
}

/**
 * The strict codec's `encode`: what it refuses is named with its path in the frame
 * (`Map at [3].members`) by the same walk as every encode error ({@linkcode unencodable}), run
 * only once the frame failed.
 */
function strictEncode(frame: readonly unknown[]): string {
  try {
    return strictStringify(frame);
  } catch {
    const found = unencodable(frame, failsWith(strictStringify), (value) => !isJsonValue(value));
    throw new TypeError(`Cannot encode the frame as strict JSON: ${found}`);
  }
}

/**
 * The JSON codec: each frame is one text message holding `JSON.stringify(frame)`.
 *
 * `JSON.parse` defines every key as an own data property, so `__proto__`, `constructor` and
 * `prototype` keys stay data and no prototype changes. A binary message is
 * accepted too, as UTF-8 text (some server libraries hand text messages over as bytes). Values
 * JSON cannot carry change on the way as `JSON.stringify` changes them: `undefined` in an array
 * becomes `null`, a `Date` becomes a string, a `Uint8Array` an object of numbered keys (use a
 * binary codec for bytes). `BigInt` and cyclic values throw `TypeError` when encoded; a session
 * then names the operation, the stream and the value's path.
 *
 * `jsonCodec` is also a function: `jsonCodec({ strict: true })` is the same wire (subprotocol
 * `muxws.v1.json`, so the other side needs nothing), but its `encode` refuses every value JSON
 * would silently change, so what the other side decodes equals what was sent. Accepted: `null`,
 * booleans, strings, finite numbers, arrays and plain objects (prototype `Object.prototype` or
 * `null`). Refused with `TypeError` naming the value's path (`Map at .members`): functions,
 * symbols, `undefined` (in objects, where JSON drops the key, and in arrays, where it becomes
 * `null`), `NaN`, `Infinity` and `-Infinity` (they become `null`), `BigInt`, `Map` and `Set`
 * (they become `{}`), typed arrays, `ArrayBuffer` and `DataView`, `Date` (it becomes a string:
 * send `date.toISOString()` or a number), and every other class instance or object with a
 * `toJSON` method (its class and methods do not travel: send a plain object).
 * `jsonCodec({})` and `jsonCodec({ strict: false })` return `jsonCodec` itself.
 *
 * `jsonCodec({ transformer })` passes every payload through a {@linkcode Transformer} (superjson,
 * or an adapter of that shape), so `Date`, `Map`, `Set` and `BigInt` arrive as they were sent:
 * a payload travels as the transformer's `{ json, meta }` inside an ordinary JSON frame (`null`
 * and `undefined` as `null`), headers untransformed. Its subprotocol is
 * `muxws.v1.json-transformer` (or `muxws.v1.<name>`), so both sides must be given it. It counts a
 * message's items before the transform and the session counts them again after it.
 *
 * `exceedsItems` counts the items of a text without parsing it: one per `,` outside a string and
 * one per `[` or `{` that does not close at once, which is exact for valid JSON.
 *
 * @example
 * ```ts
 * import { jsonCodec } from '@muxws/core';
 * import assert from 'node:assert/strict';
 *
 * const message = jsonCodec.encode([2, 1, 0, { hello: 'world' }]);
 * assert.equal(message, '[2,1,0,{"hello":"world"}]');
 * const decoded = jsonCodec.decode('{"__proto__":{"polluted":true}}') as object;
 * assert.equal(Object.getPrototypeOf(decoded), Object.prototype);
 * assert.equal(({} as Record<string, unknown>).polluted, undefined);
 * // Items are counted in the text, without parsing it: a string hides its commas.
 * assert.equal(jsonCodec.exceedsItems?.('[{},{},{}]', 2), true);
 * assert.equal(jsonCodec.exceedsItems?.('["a,b,c,d"]', 1), false);
 * ```
 *
 * @example The strict codec
 * ```ts
 * import { jsonCodec, subprotocol } from '@muxws/core';
 * import assert from 'node:assert/strict';
 *
 * const strict = jsonCodec({ strict: true });
 * assert.equal(strict.encode([2, 1, 0, { n: 1 }]), '[2,1,0,{"n":1}]');
 * assert.throws(
 *   () => strict.encode([2, 1, 0, { members: new Map() }]),
 *   { name: 'TypeError', message: 'Cannot encode the frame as strict JSON: Map at [3].members' },
 * );
 * assert.equal(subprotocol(strict), 'muxws.v1.json');
 * assert.equal(jsonCodec({ strict: false }), jsonCodec);
 * // connect(url, { codec: jsonCodec({ strict: true }) }); the acceptor may use either
 * ```
 */
export const jsonCodec: JsonCodec = /* @__PURE__ */ Object.freeze(
  /* @__PURE__ */ Object.defineProperty(
    /* @__PURE__ */ Object.assign((options?: JsonCodecOptions): Codec => {
      const on = options?.strict;
      if (on !== undefined && typeof on !== 'boolean') {
        throw new TypeError(mustBe('create a JSON codec', 'strict', 'a boolean', on));
      }
      const base = on ? strict : jsonCodec;
      const transformer = options?.transformer;
      const name = options?.name;
      if (transformer === undefined) {
        if (name !== undefined) {
          throw new TypeError(
            mustBe('create a JSON codec', 'name', 'absent without a transformer', name),
          );
        }
        return base;
      }
      if (
        (typeof transformer !== 'object' && typeof transformer !== 'function') ||
        transformer === null ||
        typeof transformer.serialize !== 'function' || typeof transformer.deserialize !== 'function'
      ) {
        throw new TypeError(
          mustBe(
            'create a JSON codec',
            'transformer',
            'an object with serialize and deserialize functions',
            transformer,
          ),
        );
      }
      if (name !== undefined && (typeof name !== 'string' || !CODEC_NAME.test(name))) {
        throw new TypeError(mustBe('create a JSON codec', 'name', CODEC_NAME_RULE, name));
      }
      return transformed(
        { binary: false, encode: base.encode, decode, identify, exceedsItems },
        name ?? 'json-transformer',
        transformer,
      );
    }, {
      binary: false,
      encode,
      decode,
      identify,
      exceedsItems,
    }),
    // A function's own `name` is read-only, so defined rather than assigned; being the function's
    // first own property, it stays first among the codec's keys.
    'name',
    { value: 'json', enumerable: true },
  ) as JsonCodec,
);

/**
 * The strict JSON codec, `jsonCodec({ strict: true })`: the JSON codec with a strict `encode`.
 * Written out rather than spread from `jsonCodec` (the same keys, in the same order), and both
 * marked pure, so a bundle that never imports `jsonCodec` (a dialer on the default codec) leaves
 * both out.
 */
const strict: Codec = /* @__PURE__ */ Object.freeze({
  name: 'json',
  binary: false,
  encode: strictEncode,
  decode,
  identify,
  exceedsItems,
});

/**
 * The subprotocol a codec travels under: `muxws.v1.` followed by the codec's name.
 *
 * @param codec The codec.
 * @returns E.g. `muxws.v1.json`.
 * @throws {TypeError} When the codec's name is not 1 to 32 lower-case letters, digits or `-`.
 *
 * @example
 * ```ts
 * import { jsonCodec, subprotocol } from '@muxws/core';
 * import assert from 'node:assert/strict';
 *
 * assert.equal(subprotocol(jsonCodec), 'muxws.v1.json');
 * ```
 */
export function subprotocol(codec: Codec): string {
  const name = codec?.name;
  if (typeof name !== 'string' || !CODEC_NAME.test(name)) {
    throw new TypeError(mustBe('name a subprotocol', 'codec.name', CODEC_NAME_RULE, name));
  }
  return 'muxws.v1.' + name;
}
