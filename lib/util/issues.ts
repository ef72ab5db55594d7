/**
 * Issues: what a schema found wrong in a value, in the bounded form muxws sends with an `invalid`
 * reset (the reserved RESET header `:issues`, docs/protocol.md) and exposes as `issues` on its
 * errors. One reader serves both ends: a schema's issues a handler throws and the issues a RESET
 * brings are read alike, bounded in count, path and length, and never throw.
 *
 * @module
 */
/** One problem a schema found in a value: where (`path`) and what (`message`). */
export interface Issue {
  /** The keys from the value's root to the part refused; empty for the root itself. */
  readonly path: readonly (string | number)[];
  /** What is wrong, in the schema's words. */
  readonly message: string;
}

/** The most issues kept: later ones are dropped. */
const MAX_ISSUES = 16;
/** The longest issue message kept, in UTF-16 code units; a longer one is cut. */
const MAX_ISSUE_MESSAGE_LENGTH = 256;
/** The most keys of an issue's path kept; a deeper path is cut. */
const MAX_ISSUE_PATH_KEYS = 32;
/** The longest path key kept, in UTF-16 code units; a longer one is cut. */
const MAX_ISSUE_KEY_LENGTH = 256;

/** The issues of a value that has none: one frozen empty array. */
export const NO_ISSUES: readonly Issue[] = /* @__PURE__ */ Object.freeze([]);

/** One path key as kept: a string or a finite number; undefined for anything else. */
function keyOf(segment: unknown): string | number | undefined {
  const key = segment !== null && typeof segment === 'object'
    ? (segment as { key?: unknown }).key
    : segment;
  if (typeof key === 'symbol') return (key.description ?? '').slice(0, MAX_ISSUE_KEY_LENGTH);
  if (typeof key === 'string') return key.slice(0, MAX_ISSUE_KEY_LENGTH);
  return Number.isFinite(key) ? key as number : undefined;
}

/**
 * The issues `value` holds, bounded: the first {@linkcode MAX_ISSUES} entries are looked at, and
 * an entry of the wrong shape (no string `message`, a `path` that is neither absent nor an array of
 * keys) is dropped; messages, paths and keys are cut to their bounds. Anything that is not an
 * array gives none. Never throws.
 *
 * @param value A schema's issues, or the value of a RESET's `:issues` header.
 * @returns The issues kept, as plain `{ path, message }` objects; {@linkcode NO_ISSUES} when none.
 */
export function readIssues(value: unknown): readonly Issue[] {
  const issues: Issue[] = [];
  try {
    if (Array.isArray(value)) {
      for (const entry of value.slice(0, MAX_ISSUES)) {
        const message: unknown = entry?.message;
        const path: unknown = entry?.path ?? [];
        if (typeof message !== 'string' || !Array.isArray(path)) continue;
        const keys = path.slice(0, MAX_ISSUE_PATH_KEYS).map(keyOf);
        if (keys.includes(undefined)) continue;
        issues.push({
          path: keys as (string | number)[],
          message: message.slice(0, MAX_ISSUE_MESSAGE_LENGTH),
        });
      }
    }
  } catch {
    // a value that cannot be read gives what was read before it
  }
  return issues.length > 0 ? issues : NO_ISSUES;
}
