/**
 * Where in a value a codec fails: the path of the part it cannot encode (`BigInt at .n`), found by
 * walking the value and trying its parts, so the error can name it. Only the error path walks: a
 * value that encodes is never looked at twice.
 *
 * Internal: imported from `lib/` only.
 *
 * @module
 */

import { cut } from './describe.ts';

/** The longest path rendered in a message; a longer one is cut with `…`. */
const MAX_PATH_CHARS = 120;
const IDENTIFIER = /^[A-Za-z_$][\w$]*$/;

/**
 * What to call a value in an encode error: `undefined`, `null`, `NaN`, `Infinity`, `-Infinity`,
 * `number`, `string`, `boolean`, or the name of its class (`BigInt`, `Symbol`, `Function`,
 * `Array`, `Map`, `Date`, `Uint8Array`, `Point`), `Object` when it has none.
 */
function kindOf(value: unknown): string {
  const type = typeof value;
  if (value == null || type === 'number') return Number.isFinite(value) ? type : String(value);
  if (type === 'string' || type === 'boolean') return type;
  return Object.getPrototypeOf(Object(value))?.constructor?.name || 'Object';
}

/**
 * One key of a rendered path: `.name` for an identifier, `[2]` for a number, `["a key"]` for any
 * other string, `[Symbol(s)]` for anything else.
 */
export function pathStep(key: unknown): string {
  return typeof key === 'string'
    ? IDENTIFIER.test(key) ? `.${key}` : `[${JSON.stringify(key)}]`
    : `[${String(key)}]`;
}

/**
 * Finds the part of `value` that `fails` refuses, given that it refuses `value` itself: descends
 * into the first own enumerable property (or array element) it refuses on its own, and stops at
 * the part none of whose children is refused alone, or that `stop` refuses as a whole. A part
 * that contains itself is reported as a circular reference. Paths read `.a.b[2]`, `["a b"]`, `the
 * root` for the value itself, cut with `…` past 120 characters.
 *
 * @param value A value `fails` refuses.
 * @param fails True when the codec cannot encode the value given to it.
 * @param stop True for an object refused as it is, its children not looked at.
 * @returns E.g. `BigInt at .n`, `Map at .members`, `a circular reference at .self`.
 */
export function unencodable(
  value: unknown,
  fails: (value: unknown) => boolean,
  stop?: (value: object) => boolean,
): string {
  const onPath = new Set<unknown>();
  let path = '';
  for (let current = value;;) {
    const at = cut(path, MAX_PATH_CHARS) || 'the root';
    if (onPath.has(current)) return `a circular reference at ${at}`;
    onPath.add(current);
    const holder = current as Record<string, unknown>;
    const key = typeof current === 'object' && current !== null && !stop?.(current)
      ? Object.keys(current).find((key) => fails(holder[key]))
      : undefined;
    if (key === undefined) return `${kindOf(current)} at ${at}`;
    path += pathStep(Array.isArray(current) ? Number(key) : key);
    current = holder[key];
  }
}

/** True for a value `encode` throws on, given inside a frame of its own (`[value]`). */
export function failsWith(
  encode: (frame: readonly unknown[]) => unknown,
): (value: unknown) => boolean {
  return (value) => {
    try {
      encode([value]);
      return false;
    } catch {
      return true;
    }
  };
}

/**
 * The error of a frame `encode` refused: names the operation and the stream (in `where`, e.g.
 * `of write() on stream 3`), which part of the frame it refused, and the path in it:
 * `Cannot encode the payload of write() on stream 3: BigInt at .n`. The codec's own error is the
 * `cause`. Called only once `encode` threw, so a frame that encodes costs nothing.
 *
 * @param encode The codec's `encode`, tried on a frame holding one part at a time.
 * @param where The operation and the stream, after `the <part>`.
 * @param parts The frame's parts an application gave, in order (`headers`, then `payload`).
 * @param cause What `encode` threw on the whole frame.
 */
export function encodeError(
  encode: (frame: readonly unknown[]) => unknown,
  where: string,
  parts: ReadonlyArray<readonly [label: string, value: unknown]>,
  cause: unknown,
): TypeError {
  const fails = failsWith(encode);
  for (const [label, value] of parts) {
    if (fails(value)) {
      return new TypeError(`Cannot encode the ${label} ${where}: ${unencodable(value, fails)}`, {
        cause,
      });
    }
  }
  return new TypeError(
    `Cannot encode the frame ${where}: ${cause instanceof Error ? cause.message : String(cause)}`,
    { cause },
  );
}
