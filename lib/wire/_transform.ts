/**
 * The payloads of a codec passed through a transformer with superjson's `serialize` and
 * `deserialize` shape, for `jsonCodec({ transformer })`. Only the payload of OPEN (element 4),
 * DATA (element 3) and PUBLISH (element 3) is transformed: the frame, its headers and every other
 * element stay as the base codec writes them, so the message is a muxws frame to any peer. A
 * payload that is `null` or `undefined` travels as `null`, as it does without a transformer; any
 * other travels as the transformer's result, the object `{ json, meta }` (`meta` only when the
 * transformer gave one). Private to `lib/wire/`; typed by shape, as `lib/wire/codec.ts` imports
 * this file.
 *
 * @module
 */
import { ProtocolError } from '../errors.ts';
import { describe } from '../util/describe.ts';
import { unencodable } from '../util/value_path.ts';
import { DATA, OPEN, PUBLISH } from './frame.ts';

/** What a transformer makes of a payload, and takes back. */
interface Serialized {
  json: unknown;
  meta?: unknown;
}

/** The transformer's shape (the public `Transformer` of `lib/wire/codec.ts`). */
interface TransformerShape {
  serialize(value: unknown): Serialized;
  deserialize(payload: Serialized): unknown;
}

/** The base codec's parts a transformed codec wraps. */
interface Base {
  encode(frame: readonly unknown[]): string | Uint8Array;
  decode(data: string | Uint8Array): unknown;
  identify?(data: string | Uint8Array): readonly [kind: number, id: number] | undefined;
  exceedsItems?(data: string | Uint8Array, maxItems: number): boolean;
}

/** The index of the payload in a frame of `kind`, or -1 for a kind without one. */
function payloadIndex(kind: unknown): number {
  return kind === OPEN ? 4 : kind === DATA || kind === PUBLISH ? 3 : -1;
}

/** True when `serialize` throws on `value`. */
function refuses(transformer: TransformerShape, value: unknown): boolean {
  try {
    transformer.serialize(value);
    return false;
  } catch {
    return true;
  }
}

/** The wire form of one payload: `null`, or the transformer's `{ json, meta }`. */
function serialize(transformer: TransformerShape, payload: unknown): unknown {
  if (payload == null) return null;
  let result: Serialized;
  try {
    result = transformer.serialize(payload);
  } catch (error) {
    const found = unencodable(payload, (value) => refuses(transformer, value));
    throw new TypeError(`the transformer cannot serialize ${found}`, { cause: error });
  }
  if (typeof result !== 'object' || result === null) {
    throw new TypeError(
      `the transformer's serialize must return an object { json, meta }: found ${describe(result)}`,
    );
  }
  return result.meta === undefined
    ? { json: result.json }
    : { json: result.json, meta: result.meta };
}

/** A payload from its wire form: `null`, or what `deserialize` makes of `{ json, meta }`. */
function deserialize(transformer: TransformerShape, wire: unknown): unknown {
  if (wire === null) return null;
  if (typeof wire !== 'object' || Array.isArray(wire)) {
    throw new ProtocolError(
      `Cannot decode a transformed payload: expected null or an object { json, meta }: found ${
        describe(wire)
      }`,
    );
  }
  const json = Object.hasOwn(wire, 'json') ? (wire as Serialized).json : undefined;
  const meta = Object.hasOwn(wire, 'meta') ? (wire as Serialized).meta : undefined;
  return transformer.deserialize(meta === undefined ? { json } : { json, meta });
}

/**
 * `base` with the payloads of its frames passed through `transformer`: `serialize` before
 * `base.encode`, `deserialize` after `base.decode`. `exceedsItems` counts the message as the
 * base codec does, before the transform; `transforms` tells the session to count the decoded
 * frame too, after it.
 */
export function transformed<C extends Base>(
  base: C,
  name: string,
  transformer: TransformerShape,
): C & { name: string; transforms: true } {
  const codec = {
    ...base,
    name,
    transforms: true as const,
    encode(frame: readonly unknown[]): string | Uint8Array {
      const at = payloadIndex(frame[0]);
      if (at < 0 || frame.length <= at) return base.encode(frame);
      const copy = frame.slice();
      copy[at] = serialize(transformer, frame[at]);
      return base.encode(copy);
    },
    decode(data: string | Uint8Array): unknown {
      const value = base.decode(data);
      if (!Array.isArray(value)) return value;
      const at = payloadIndex(value[0]);
      if (at >= 0 && value.length > at) value[at] = deserialize(transformer, value[at]);
      return value;
    },
  };
  return Object.freeze(codec);
}
