/**
 * Codecs turn one frame (an array, WSM-WIRE-002) into one WebSocket message and back.
 *
 * {@linkcode jsonCodec} is the default: text messages, subprotocol `muxws.v1.json`. A binary
 * codec (MessagePack) lives in its own entry point. Both sides of a connection use the same
 * codec; the dialer names it in the subprotocol it offers ({@linkcode subprotocol}).
 *
 * @module
 */
import { mustBe } from './_describe.ts';
import { kindOf } from './_value_path.ts';

/**
 * How frames become WebSocket messages. The session decodes every message with `decode`, then
 * checks the frame's shape itself, so a codec only has to map bytes to values faithfully and
 * safely: decoding must never build an object with a polluted prototype (keys such as
 * `__proto__` stay plain data) and must not merge decoded objects into others.
 *
 * @example A codec that sends JSON in binary messages
 * ```ts
 * import { type Codec, subprotocol } from 'muxws';
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
   * resets only that stream with `decode` instead of counting a malformed message
   * (WSM-WIRE-007). Returns `undefined` when the prefix names no OPEN (1) or DATA (2) frame.
   */
  identify?(data: string | Uint8Array): readonly [kind: number, id: number] | undefined;
}

/**
 * The beginning of an OPEN or DATA frame in JSON: `[`, the kind 1 or 2, `,`, the id in plain
 * decimal (no sign, leading zero, fraction or exponent), `,`, with JSON whitespace (space, tab,
 * line feed, carriage return) allowed around each token, within the first {@linkcode PREFIX_UNITS}
 * characters (docs/protocol.md, "Undecodable messages").
 */
const PREFIX = /^[ \t\n\r]*\[[ \t\n\r]*([12])[ \t\n\r]*,[ \t\n\r]*([1-9][0-9]{0,15})[ \t\n\r]*,/;
/** How much of a damaged message `identify` reads. */
const PREFIX_UNITS = 64;
const decoder = new TextDecoder('utf-8', { fatal: true });
const prefixDecoder = new TextDecoder('utf-8');

/**
 * The JSON codec: each frame is one text message holding `JSON.stringify(frame)`.
 *
 * `JSON.parse` defines every key as an own data property, so `__proto__`, `constructor` and
 * `prototype` keys stay data and no prototype changes (WSM-WIRE-008). A binary message is
 * accepted too, as UTF-8 text (some server libraries hand text messages over as bytes). Values
 * JSON cannot carry change on the way as `JSON.stringify` changes them: `undefined` in an array
 * becomes `null`, a `Date` becomes a string, a `Uint8Array` an object of numbered keys (use a
 * binary codec for bytes). `BigInt` and cyclic values throw `TypeError` when encoded; a session
 * then names the operation, the stream and the value's path. {@linkcode strictJsonCodec} refuses
 * every value JSON would change.
 *
 * @example
 * ```ts
 * import { jsonCodec } from 'muxws';
 * import assert from 'node:assert/strict';
 *
 * const message = jsonCodec.encode([2, 1, 0, { hello: 'world' }]);
 * assert.equal(message, '[2,1,0,{"hello":"world"}]');
 * const decoded = jsonCodec.decode('{"__proto__":{"polluted":true}}') as object;
 * assert.equal(Object.getPrototypeOf(decoded), Object.prototype);
 * assert.equal(({} as Record<string, unknown>).polluted, undefined);
 * ```
 */
export const jsonCodec: Codec = Object.freeze({
  name: 'json',
  binary: false,
  encode(frame: readonly unknown[]): string {
    return JSON.stringify(frame);
  },
  decode(data: string | Uint8Array): unknown {
    return JSON.parse(typeof data === 'string' ? data : decoder.decode(data));
  },
  identify(data: string | Uint8Array): readonly [number, number] | undefined {
    const head = typeof data === 'string'
      ? data.slice(0, PREFIX_UNITS)
      : prefixDecoder.decode(data.subarray(0, PREFIX_UNITS));
    const match = PREFIX.exec(head);
    if (match === null) return undefined;
    const id = Number(match[2]);
    return Number.isSafeInteger(id) ? [Number(match[1]), id] : undefined;
  },
});

const IDENTIFIER = /^[A-Za-z_$][A-Za-z0-9_$]*$/;

/** One object of the value being encoded, with where it sits: for the path in an error. */
interface Step {
  readonly holder: object;
  readonly path: string;
}

/**
 * True for a value JSON carries as it is: `null`, a boolean, a string, a finite number, an array,
 * or a plain object (prototype `Object.prototype` or `null`) without a `toJSON` method.
 */
function isJsonValue(value: unknown): boolean {
  switch (typeof value) {
    case 'string':
    case 'boolean':
      return true;
    case 'number':
      return Number.isFinite(value);
    case 'object': {
      if (value === null || Array.isArray(value)) return true;
      const proto = Object.getPrototypeOf(value);
      return (proto === Object.prototype || proto === null) &&
        typeof (value as { toJSON?: unknown }).toJSON !== 'function';
    }
    default:
      return false;
  }
}

/**
 * `JSON.stringify` that refuses what {@linkcode isJsonValue} refuses, naming its path in the
 * frame (`Map at [3].members`). The replacer sees each value before `toJSON` changed it (through
 * its holder), and keeps the objects it is inside on a stack, so the path costs one entry per
 * object and no second walk.
 */
function strictStringify(frame: readonly unknown[]): string {
  const stack: Step[] = [];
  return JSON.stringify(frame, function (this: unknown, key: string, value: unknown): unknown {
    const holder = this as Record<string, unknown>;
    while (stack.length > 0 && stack[stack.length - 1].holder !== holder) stack.pop();
    const parent = stack.length > 0 ? stack[stack.length - 1].path : undefined;
    const path = parent === undefined
      ? ''
      : Array.isArray(holder)
      ? `${parent}[${key}]`
      : IDENTIFIER.test(key)
      ? `${parent}.${key}`
      : `${parent}[${JSON.stringify(key)}]`;
    const raw = holder[key];
    if (!isJsonValue(raw)) {
      throw new TypeError(
        `Cannot encode the frame as strict JSON: ${kindOf(raw)} at ${
          path === '' ? 'the root' : path
        }`,
      );
    }
    if (typeof value === 'object' && value !== null) stack.push({ holder: value, path });
    return value;
  });
}

/**
 * The JSON codec in strict mode: the same wire as {@linkcode jsonCodec} (subprotocol
 * `muxws.v1.json`, so the other side needs nothing), but `encode` refuses every value JSON would
 * silently change, so what the other side decodes equals what was sent. Accepted: `null`,
 * booleans, strings, finite numbers, arrays and plain objects (prototype `Object.prototype` or
 * `null`). Refused with `TypeError` naming the value's path (`Map at .members`): functions,
 * symbols, `undefined` (in objects, where JSON drops the key, and in arrays, where it becomes
 * `null`), `NaN`, `Infinity` and `-Infinity` (they become `null`), `BigInt`, `Map` and `Set`
 * (they become `{}`), typed arrays, `ArrayBuffer` and `DataView`, `Date` (it becomes a string:
 * send `date.toISOString()` or a number), and every other class instance or object with a
 * `toJSON` method (its class and methods do not travel: send a plain object).
 *
 * It is a value of its own rather than `jsonCodec({ strict: true })`: a codec is an object with
 * `encode` and `decode`, and `jsonCodec` stays that object, so every place that takes a codec
 * (and checks that it is one) takes both unchanged.
 *
 * @example
 * ```ts
 * import { strictJsonCodec } from 'muxws';
 * import assert from 'node:assert/strict';
 *
 * assert.equal(strictJsonCodec.encode([2, 1, 0, { n: 1 }]), '[2,1,0,{"n":1}]');
 * assert.throws(
 *   () => strictJsonCodec.encode([2, 1, 0, { members: new Map() }]),
 *   { name: 'TypeError', message: 'Cannot encode the frame as strict JSON: Map at [3].members' },
 * );
 * // connect(url, { codec: strictJsonCodec }); the acceptor may use either JSON codec
 * ```
 */
export const strictJsonCodec: Codec = Object.freeze({
  name: 'json',
  binary: false,
  encode: strictStringify,
  decode: jsonCodec.decode,
  identify: jsonCodec.identify,
});

/**
 * The subprotocol a codec travels under: `muxws.v1.` followed by the codec's name
 * (WSM-WIRE-001).
 *
 * @param codec The codec.
 * @returns E.g. `muxws.v1.json`.
 * @throws {TypeError} When the codec's name is not 1 to 32 lower-case letters, digits or `-`.
 *
 * @example
 * ```ts
 * import { jsonCodec, subprotocol } from 'muxws';
 * import assert from 'node:assert/strict';
 *
 * assert.equal(subprotocol(jsonCodec), 'muxws.v1.json');
 * ```
 */
export function subprotocol(codec: Codec): string {
  const name = codec?.name;
  if (typeof name !== 'string' || !/^[a-z0-9-]{1,32}$/.test(name)) {
    throw new TypeError(
      mustBe('name a subprotocol', 'codec.name', '1 to 32 of a-z, 0-9 and -', name),
    );
  }
  return 'muxws.v1.' + name;
}
