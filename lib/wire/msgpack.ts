/**
 * The MessagePack codec of muxws: binary WebSocket messages, negotiated as the subprotocol
 * `muxws.v1.msgpack`, built on `@msgpack/msgpack`.
 *
 * Pass {@linkcode msgpackCodec} as the `codec` option of both sides. Payloads and headers travel
 * as MessagePack values, so a `Uint8Array` (any `ArrayBufferView`) is sent as MessagePack `bin`
 * and arrives as a `Uint8Array` of the same bytes, with no base64 detour; a `Date` travels as the
 * MessagePack timestamp extension and arrives as a `Date`. Everything else maps as it does in
 * JSON: `undefined` object members are dropped, `undefined` array items arrive as `null`, an
 * `ArrayBuffer` or a `Map` is an object without own keys. It takes no transformer: for `Map`,
 * `Set` and `BigInt`, use `jsonCodec({ transformer })` from `@muxws/core`.
 *
 * Decoding is safe against hostile peers:
 * - every message is checked structurally before it is decoded: truncated or trailing bytes,
 *   unknown type bytes, extension types other than the timestamp (-1), map keys that are not
 *   strings or numbers, and containers that declare more items than bytes remain are rejected,
 *   so a few bytes can never make the decoder allocate a large array;
 * - a `__proto__` map key becomes an own data property, as `JSON.parse` makes it; no decoded
 *   object ever has a prototype other than `Object.prototype` or `Array.prototype`;
 * - decoding is iterative, so nesting 10,000 deep decodes without exhausting the stack; the
 *   session then rejects anything deeper than `limits.maxDepth` with a `decode` reset.
 *
 * Anything the codec cannot decode throws a {@linkcode ProtocolError} naming what was wrong and
 * where.
 *
 * @example Round trip a frame carrying bytes
 * ```ts
 * import { msgpackCodec } from '@muxws/core/msgpack';
 * import assert from 'node:assert/strict';
 *
 * const data = msgpackCodec.encode([2, 1, 0, { png: new Uint8Array([137, 80, 78, 71]) }]);
 * assert(data instanceof Uint8Array);
 * assert.deepEqual(msgpackCodec.decode(data), [2, 1, 0, { png: new Uint8Array([137, 80, 78, 71]) }]);
 * ```
 *
 * @module
 */

import { Decoder, Encoder } from '@msgpack/msgpack';
import type { Codec } from './codec.ts';
import { ProtocolError } from '../errors.ts';

export type { Codec };

/** Stands in for a `__proto__` key between the key decoder and the repair walk. */
const PROTO_KEY: unique symbol = Symbol('muxws.msgpack.__proto__');

/** The UTF-8 bytes of `__proto__`. */
const PROTO_BYTES = [0x5f, 0x5f, 0x70, 0x72, 0x6f, 0x74, 0x6f, 0x5f, 0x5f];

/** Set by {@linkcode scan}: a `__proto__` map key was seen. */
const SAW_PROTO = 1;
/** Set by {@linkcode scan}: a `bin` value was seen. */
const SAW_BIN = 2;

/** Returned by {@linkcode scan} when the message holds more items than it was allowed. */
const OVER_ITEMS = -1;

/** The MessagePack extension type of timestamps, the only extension accepted. */
const EXT_TIMESTAMP = -1;

/** Nesting the encoder follows before it gives up (the library recurses once per level). */
const ENCODE_MAX_DEPTH = 1000;

const textDecoder = new TextDecoder();

function isProtoKey(bytes: Uint8Array, offset: number, length: number): boolean {
  if (length !== 9) return false;
  for (let i = 0; i < 9; i++) {
    if (bytes[offset + i] !== PROTO_BYTES[i]) return false;
  }
  return true;
}

/**
 * The key decoder of the prototype-safe decoder: returns {@linkcode PROTO_KEY} for `__proto__`,
 * which `@msgpack/msgpack` would otherwise refuse with an error (it never assigns through the
 * setter, but refusing would make a legitimate payload undecodable).
 */
const protoSafeKeyDecoder = {
  canBeCached(byteLength: number): boolean {
    return byteLength === 9;
  },
  decode(bytes: Uint8Array, offset: number, byteLength: number): string {
    if (isProtoKey(bytes, offset, byteLength)) return PROTO_KEY as unknown as string;
    return textDecoder.decode(bytes.subarray(offset, offset + byteLength));
  },
};

function protoSafeMapKey(key: unknown): string | number {
  if (typeof key === 'string' || typeof key === 'number' || key === PROTO_KEY) {
    return key as string | number;
  }
  throw new ProtocolError(`Cannot decode msgpack: a map key must be a string or a number`);
}

const encoder = new Encoder({ ignoreUndefined: true, maxDepth: ENCODE_MAX_DEPTH });
const decoder = new Decoder();
const protoSafeDecoder = new Decoder({
  keyDecoder: protoSafeKeyDecoder,
  mapKeyConverter: protoSafeMapKey,
});

function fail(message: string, pos: number): never {
  throw new ProtocolError(`Cannot decode msgpack: ${message} at byte ${pos}`);
}

/**
 * Checks that `bytes` hold exactly one well-formed MessagePack value the decoder may safely build,
 * without building anything: every length fits in the bytes that remain, and all the items the
 * open containers still declare could fit too (each needs at least one byte), so the decoder's
 * preallocation is bounded by the message size. Iterative: nesting costs heap, not stack. Counts
 * the items the containers declare (array elements, map entries) as it meets their headers, and
 * stops as soon as they pass `maxItems`.
 *
 * @returns {@linkcode SAW_PROTO} and {@linkcode SAW_BIN} flags, or {@linkcode OVER_ITEMS}.
 * @throws {ProtocolError} On anything malformed (before the count passed `maxItems`).
 */
function scan(bytes: Uint8Array, maxItems: number): number {
  const end = bytes.length;
  // Items still expected by each open container, innermost at `top`; a map's count is negative
  // and counts keys and values, so an even count left means the next item is a key.
  const open = openItems;
  let top = 0;
  open[0] = 1;
  let owed = 1;
  let pos = 0;
  let flags = 0;
  let declared = 0;
  while (top >= 0) {
    if (pos >= end) fail('the message ends inside a value', pos);
    const left = open[top];
    const isKey = left < 0 && (-left & 1) === 0;
    open[top] = left < 0 ? left + 1 : left - 1;
    owed--;
    const start = pos;
    const head = bytes[pos++];
    let size = -1; // bytes of a str/bin/ext body to skip
    let items = 0; // items of a new container (keys and values for a map)
    let isMap = false;
    if (head < 0x80 || head >= 0xe0) {
      // positive or negative fixint
    } else if (head < 0xa0) {
      if (isKey) fail('a map key must be a string or a number, found a container', start);
      if (head < 0x90) {
        items = (head - 0x80) * 2;
        isMap = true;
      } else {
        items = head - 0x90;
      }
    } else if (head < 0xc0) {
      size = head - 0xa0;
      if (isKey && isProtoKey(bytes, pos, size)) flags |= SAW_PROTO;
    } else {
      if (isKey && !((head >= 0xca && head <= 0xd3) || (head >= 0xd9 && head <= 0xdb))) {
        fail(
          `a map key must be a string or a number, found type byte 0x${head.toString(16)}`,
          start,
        );
      }
      const need = HEAD_EXTRA[head - 0xc0];
      if (need < 0) fail(`unknown type byte 0x${head.toString(16)}`, start);
      if (pos + need > end) fail('the message ends inside a value', start);
      switch (head) {
        case 0xc4:
        case 0xc5:
        case 0xc6:
          flags |= SAW_BIN;
          size = head === 0xc4 ? bytes[pos] : head === 0xc5 ? u16(bytes, pos) : u32(bytes, pos);
          pos += need;
          break;
        case 0xc7:
        case 0xc8:
        case 0xc9: {
          const length = head === 0xc7
            ? bytes[pos]
            : head === 0xc8
            ? u16(bytes, pos)
            : u32(bytes, pos);
          pos += need;
          checkExtension(bytes, pos, length, end, start);
          size = 1 + length;
          break;
        }
        case 0xd4:
        case 0xd5:
        case 0xd6:
        case 0xd7:
        case 0xd8: {
          const length = 1 << (head - 0xd4);
          checkExtension(bytes, pos, length, end, start);
          size = 1 + length;
          break;
        }
        case 0xd9:
        case 0xda:
        case 0xdb:
          size = head === 0xd9 ? bytes[pos] : head === 0xda ? u16(bytes, pos) : u32(bytes, pos);
          pos += need;
          if (isKey && isProtoKey(bytes, pos, size)) flags |= SAW_PROTO;
          break;
        case 0xdc:
          items = u16(bytes, pos);
          pos += need;
          break;
        case 0xdd:
          items = u32(bytes, pos);
          pos += need;
          break;
        case 0xde:
          items = u16(bytes, pos) * 2;
          isMap = true;
          pos += need;
          break;
        case 0xdf:
          items = u32(bytes, pos) * 2;
          isMap = true;
          pos += need;
          break;
        default:
          // nil, booleans, numbers: fixed-size bodies
          pos += need;
      }
    }
    if (size >= 0) {
      if (size > end - pos) fail(`a value declares ${size} bytes but ${end - pos} remain`, start);
      pos += size;
    }
    if (items > 0) {
      declared += isMap ? items / 2 : items;
      if (declared > maxItems) return OVER_ITEMS;
      owed += items;
      if (owed > end - pos) {
        fail(`a container declares ${items} items but only ${end - pos} bytes remain`, start);
      }
      open[++top] = isMap ? -items : items;
    }
    while (top >= 0 && open[top] === 0) top--;
  }
  if (pos !== end) fail(`${end - pos} extra bytes follow the value`, pos);
  return flags;
}

/**
 * The stack of {@linkcode scan}, reused across messages (scanning is synchronous). A deep message
 * grows it; {@linkcode msgpackCodec}'s `decode` shrinks it back afterwards.
 */
const openItems: number[] = [1];

/** A big-endian `uint 16` at `pos` (the caller checked the bytes exist). */
function u16(bytes: Uint8Array, pos: number): number {
  return (bytes[pos] << 8) | bytes[pos + 1];
}

/** A big-endian `uint 32` at `pos` (the caller checked the bytes exist). */
function u32(bytes: Uint8Array, pos: number): number {
  return bytes[pos] * 0x1000000 + ((bytes[pos + 1] << 16) | (bytes[pos + 2] << 8) | bytes[pos + 3]);
}

function checkExtension(
  bytes: Uint8Array,
  pos: number,
  length: number,
  end: number,
  start: number,
): void {
  if (pos >= end) fail('the message ends inside a value', start);
  const type = (bytes[pos] << 24) >> 24;
  if (type !== EXT_TIMESTAMP) fail(`extension type ${type} is not supported`, start);
  if (length !== 4 && length !== 8 && length !== 12) {
    fail(`a timestamp must be 4, 8 or 12 bytes long, found ${length}`, start);
  }
}

/**
 * Bytes that follow each type byte from 0xc0 to 0xdf before its body (-1: not a type byte).
 * For fixed-size values (nil, booleans, numbers) it is the whole value; for str, bin, ext,
 * array and map it is the length field; for fixext the body is skipped separately.
 */
const HEAD_EXTRA: readonly number[] = [
  0, // c0 nil
  -1, // c1 never used
  0, // c2 false
  0, // c3 true
  1, // c4 bin 8
  2, // c5 bin 16
  4, // c6 bin 32
  1, // c7 ext 8
  2, // c8 ext 16
  4, // c9 ext 32
  4, // ca float 32
  8, // cb float 64
  1, // cc uint 8
  2, // cd uint 16
  4, // ce uint 32
  8, // cf uint 64
  1, // d0 int 8
  2, // d1 int 16
  4, // d2 int 32
  8, // d3 int 64
  0, // d4 fixext 1
  0, // d5 fixext 2
  0, // d6 fixext 4
  0, // d7 fixext 8
  0, // d8 fixext 16
  1, // d9 str 8
  2, // da str 16
  4, // db str 32
  2, // dc array 16
  4, // dd array 32
  2, // de map 16
  4, // df map 32
];

/**
 * Turns the decoder's {@linkcode PROTO_KEY} placeholders into own `__proto__` data properties
 * and gives every `Uint8Array` its own buffer (the decoder returns views into the message).
 * Iterative, like the decoder.
 */
function repair(root: unknown, flags: number): unknown {
  if (flags & SAW_BIN && root instanceof Uint8Array) return root.slice();
  const pending: unknown[] = [root];
  while (pending.length > 0) {
    const value = pending.pop();
    if (Array.isArray(value)) {
      for (let i = 0; i < value.length; i++) {
        const item = value[i];
        if (item instanceof Uint8Array) value[i] = item.slice();
        else if (item !== null && typeof item === 'object') pending.push(item);
      }
    } else if (value !== null && typeof value === 'object' && !(value instanceof Date)) {
      const object = value as Record<string | symbol, unknown>;
      if (Object.hasOwn(object, PROTO_KEY)) {
        Object.defineProperty(object, '__proto__', {
          value: object[PROTO_KEY],
          writable: true,
          enumerable: true,
          configurable: true,
        });
        delete object[PROTO_KEY];
      }
      for (const key of Object.keys(object)) {
        const item = object[key];
        if (item instanceof Uint8Array) object[key] = item.slice();
        else if (item !== null && typeof item === 'object') pending.push(item);
      }
    }
  }
  return root;
}

/**
 * The kind and stream id at the start of a damaged message, when it starts as an OPEN (1) or DATA
 * (2) frame does: an array header (fixarray, array 16 or array 32) announcing at least 3 items,
 * the kind as a positive fixint, then the id as any MessagePack integer (positive fixint, uint or
 * int of 8 to 64 bits) with a positive safe value (docs/protocol.md, "Undecodable messages").
 */
function identify(bytes: Uint8Array): readonly [number, number] | undefined {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const head = bytes[0];
  let pos: number;
  let items: number;
  if (head >= 0x90 && head <= 0x9f) {
    items = head - 0x90;
    pos = 1;
  } else if (head === 0xdc && bytes.length >= 3) {
    items = view.getUint16(1);
    pos = 3;
  } else if (head === 0xdd && bytes.length >= 5) {
    items = view.getUint32(1);
    pos = 5;
  } else return undefined;
  if (items < 3) return undefined;
  const kind = bytes[pos++];
  if (kind !== 1 && kind !== 2) return undefined;
  if (pos >= bytes.length) return undefined;
  const type = bytes[pos++];
  if (type < 0x80) return type > 0 ? [kind, type] : undefined;
  const size = INT_SIZES[type];
  if (size === undefined || pos + size > bytes.length) return undefined;
  const id = size === 1
    ? (type === 0xcc ? view.getUint8(pos) : view.getInt8(pos))
    : size === 2
    ? (type === 0xcd ? view.getUint16(pos) : view.getInt16(pos))
    : size === 4
    ? (type === 0xce ? view.getUint32(pos) : view.getInt32(pos))
    : Number(type === 0xcf ? view.getBigUint64(pos) : view.getBigInt64(pos));
  return id > 0 && Number.isSafeInteger(id) ? [kind, id] : undefined;
}

/** The byte sizes of the MessagePack integer types `identify` reads, by type byte. */
const INT_SIZES: Readonly<Record<number, number>> = {
  0xcc: 1,
  0xcd: 2,
  0xce: 4,
  0xcf: 8,
  0xd0: 1,
  0xd1: 2,
  0xd2: 4,
  0xd3: 8,
};

function toBytes(data: unknown): Uint8Array {
  if (data instanceof Uint8Array) return data;
  if (data instanceof ArrayBuffer) return new Uint8Array(data);
  if (ArrayBuffer.isView(data)) {
    return new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
  }
  throw new ProtocolError(
    `Cannot decode msgpack: expected a binary message, found ${
      typeof data === 'string' ? 'a text message' : typeof data
    }`,
  );
}

/**
 * The MessagePack codec: binary messages, subprotocol `muxws.v1.msgpack`.
 *
 * `encode` throws `TypeError` for a value MessagePack cannot carry (a `bigint`, a function, a
 * symbol, nesting deeper than 1000); `decode` throws {@linkcode ProtocolError} for bytes that are
 * not exactly one well-formed MessagePack value. `exceedsItems` adds up the items (array elements,
 * map entries) the containers declare, in the structural scan, before anything is decoded.
 *
 * @example Bytes stay bytes
 * ```ts
 * import { msgpackCodec } from '@muxws/core/msgpack';
 * import assert from 'node:assert/strict';
 *
 * assert.equal(msgpackCodec.name, 'msgpack');
 * assert.equal(msgpackCodec.binary, true);
 * const frame = msgpackCodec.decode(msgpackCodec.encode([2, 3, 1, new Uint8Array([1, 2, 3])]));
 * assert.deepEqual(frame, [2, 3, 1, new Uint8Array([1, 2, 3])]);
 * ```
 *
 * @example Items counted before anything is built
 * ```ts
 * import { msgpackCodec } from '@muxws/core/msgpack';
 * import assert from 'node:assert/strict';
 *
 * // 100,000 empty maps, one byte each: 100,000 objects once decoded.
 * const message = msgpackCodec.encode([2, 1, 0, new Array(100_000).fill({})]);
 * assert.equal(msgpackCodec.exceedsItems?.(message, 65_536), true);
 * assert.equal(msgpackCodec.exceedsItems?.(message, 100_004), false); // the frame's own 4 too
 * ```
 *
 * @example `__proto__` stays data
 * ```ts
 * import { msgpackCodec } from '@muxws/core/msgpack';
 * import assert from 'node:assert/strict';
 *
 * const payload = JSON.parse('{"__proto__":{"polluted":true}}');
 * const [, , , decoded] = msgpackCodec.decode(msgpackCodec.encode([2, 1, 0, payload])) as [
 *   number,
 *   number,
 *   number,
 *   Record<string, unknown>,
 * ];
 * assert.equal(Object.getPrototypeOf(decoded), Object.prototype);
 * assert.deepEqual(Object.keys(decoded), ['__proto__']);
 * assert.equal(({} as Record<string, unknown>).polluted, undefined);
 * ```
 */
export const msgpackCodec: Codec = Object.freeze({
  name: 'msgpack',
  binary: true,
  encode(frame: readonly unknown[]): Uint8Array {
    try {
      return encoder.encode(frame);
    } catch (error) {
      throw new TypeError(
        `Cannot encode the frame with msgpack: ${error instanceof Error ? error.message : error}`,
        { cause: error },
      );
    }
  },
  decode(data: string | Uint8Array): unknown {
    const bytes = toBytes(data);
    let flags: number;
    try {
      flags = scan(bytes, Infinity);
    } finally {
      if (openItems.length > 1024) openItems.length = 1024;
    }
    let value: unknown;
    try {
      value = (flags & SAW_PROTO ? protoSafeDecoder : decoder).decode(bytes);
    } catch (error) {
      if (error instanceof ProtocolError) throw error;
      throw new ProtocolError(
        `Cannot decode msgpack: ${error instanceof Error ? error.message : error}`,
        { cause: error },
      );
    }
    return flags === 0 ? value : repair(value, flags);
  },
  identify(data: string | Uint8Array): readonly [number, number] | undefined {
    return typeof data === 'string' ? undefined : identify(data);
  },
  exceedsItems(data: string | Uint8Array, maxItems: number): boolean {
    // Every item takes at least one byte; text is not MessagePack (decode refuses it).
    if (typeof data === 'string' || data.byteLength <= maxItems) return false;
    try {
      return scan(data, maxItems) === OVER_ITEMS;
    } catch {
      return false;
    } finally {
      if (openItems.length > 1024) openItems.length = 1024;
    }
  },
});
