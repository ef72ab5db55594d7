/**
 * Where in a value a codec fails: the path of the part it cannot encode (`BigInt at .n`), found
 * by walking the value and trying its parts, for the errors of WSM-APP-007. Only the error path
 * walks: a value that encodes is never looked at twice.
 *
 * Internal: imported from `lib/` only.
 *
 * @module
 */

/** The longest path rendered in a message; a longer one is cut with `…`. */
const MAX_PATH_CHARS = 120;
const IDENTIFIER = /^[A-Za-z_$][A-Za-z0-9_$]*$/;

/**
 * What to call a value in an encode error: `BigInt`, `Symbol`, `Function`, `undefined`, `NaN`,
 * `Infinity`, `-Infinity`, `Array`, `Object`, or an object's class name (`Map`, `Date`,
 * `Uint8Array`, `Point`).
 */
export function kindOf(value: unknown): string {
  switch (typeof value) {
    case 'bigint':
      return 'BigInt';
    case 'symbol':
      return 'Symbol';
    case 'function':
      return 'Function';
    case 'undefined':
      return 'undefined';
    case 'number':
      return Number.isNaN(value)
        ? 'NaN'
        : value === Infinity
        ? 'Infinity'
        : value === -Infinity
        ? '-Infinity'
        : 'number';
    case 'object': {
      if (value === null) return 'null';
      if (Array.isArray(value)) return 'Array';
      const proto = Object.getPrototypeOf(value);
      const name = proto === null ? undefined : proto.constructor?.name;
      return typeof name === 'string' && name !== '' ? name : 'Object';
    }
    default:
      return typeof value;
  }
}

/** Appends one key to a rendered path: `.name`, `[2]`, or `["a key"]`. */
function step(path: string, key: string | number): string {
  if (typeof key === 'number') return `${path}[${key}]`;
  return IDENTIFIER.test(key) ? `${path}.${key}` : `${path}[${JSON.stringify(key)}]`;
}

/** Renders a found path for a message: `.a.b[2]`, `the root` for the value itself. */
function shown(path: string): string {
  if (path === '') return 'the root';
  return path.length > MAX_PATH_CHARS ? path.slice(0, MAX_PATH_CHARS) + '…' : path;
}

/**
 * Finds the part of `value` that `fails` refuses, given that it refuses `value` itself: descends
 * into the first own enumerable property (or array element) it refuses on its own, and stops at
 * the part none of whose children is refused alone. A part that contains itself is reported as a
 * circular reference.
 *
 * @param value A value `fails` refuses.
 * @param fails True when the codec cannot encode the value given to it.
 * @returns E.g. `BigInt at .n`, `Map at .members`, `a circular reference at .self`.
 */
export function unencodable(value: unknown, fails: (value: unknown) => boolean): string {
  const onPath = new Set<object>();
  let path = '';
  for (let current = value;;) {
    if (typeof current !== 'object' || current === null) {
      return `${kindOf(current)} at ${shown(path)}`;
    }
    if (onPath.has(current)) return `a circular reference at ${shown(path)}`;
    onPath.add(current);
    let next: { key: string | number; child: unknown } | undefined;
    if (Array.isArray(current)) {
      for (let i = 0; i < current.length && next === undefined; i++) {
        if (fails(current[i])) next = { key: i, child: current[i] };
      }
    } else {
      for (const key of Object.keys(current)) {
        const child = (current as Record<string, unknown>)[key];
        if (fails(child)) {
          next = { key, child };
          break;
        }
      }
    }
    if (next === undefined) return `${kindOf(current)} at ${shown(path)}`;
    path = step(path, next.key);
    current = next.child;
  }
}

/**
 * The error of a frame `encode` refused (WSM-APP-007): names the operation and the stream (in
 * `where`, e.g. `of write() on stream 3`), which part of the frame it refused, and the path in
 * it: `Cannot encode the payload of write() on stream 3: BigInt at .n`. The codec's own error is
 * the `cause`. Called only once `encode` threw, so a frame that encodes costs nothing.
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
  const fails = (value: unknown): boolean => {
    try {
      encode([value]);
      return false;
    } catch {
      return true;
    }
  };
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
