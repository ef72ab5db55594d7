/**
 * The codecs every session suite runs over. Another codec joins by being added here.
 */
import { type Codec, jsonCodec } from 'muxws';
import { msgpackCodec } from 'muxws/msgpack';

/** Every codec the session suites are parametrized over. */
export const codecs: Codec[] = [jsonCodec, msgpackCodec];

/**
 * The items of a decoded value as `limits.maxMessageItems` counts them: every array element and
 * every map entry, at any depth (recursive: for test values only).
 */
export function itemCount(value: unknown): number {
  if (typeof value !== 'object' || value === null || ArrayBuffer.isView(value)) return 0;
  const children = Array.isArray(value) ? value : Object.values(value);
  return children.reduce((sum: number, child) => sum + 1 + itemCount(child), 0);
}
