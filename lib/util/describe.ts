/**
 * The one way muxws renders a value found in an error message ("… current value is X"), so the
 * same mistake reads the same from every part of the library.
 *
 * @module
 */

/** Longest rendering kept whole; a longer one is cut there and ends with `…`. */
const MAX_SHOWN = 60;

/** `text`, or its first `max` characters and `…` when it is longer. */
export function cut(text: string, max: number = MAX_SHOWN): string {
  return text.length > max ? text.slice(0, max) + '…' : text;
}

/**
 * Renders `value` for an error message: strings quoted, `5n` for a bigint, `a function`, plain
 * data as its JSON (`{"a":1}`, `[1,2]`), cut at 60 characters; what JSON cannot show reads `an
 * object` or `an array of N`. Never throws.
 */
export function describe(value: unknown): string {
  if (typeof value === 'string') return JSON.stringify(cut(value));
  if (typeof value === 'bigint') return `${value}n`;
  if (typeof value === 'function') return 'a function';
  if (typeof value !== 'object' || value === null) return String(value);
  try {
    const json = JSON.stringify(value);
    if (json !== undefined) return cut(json);
  } catch {
    // a cycle, a bigint inside, a throwing toJSON: fall through to the shape
  }
  return Array.isArray(value) ? `an array of ${value.length}` : 'an object';
}

/**
 * ` (N characters)` for a string longer than `max`, to follow its `describe()` rendering (cut at
 * 60 characters) in a message that says the limit; `''` for any other value.
 */
export function lengthNote(value: unknown, max: number): string {
  return typeof value === 'string' && value.length > max ? ` (${value.length} characters)` : '';
}

/**
 * The message for a bad argument, the same from every part of the library: `Cannot <action> as
 * "<field>" must be <expected>: current value is <value>`, the value rendered by `describe()`.
 */
export function mustBe(action: string, field: string, expected: string, value: unknown): string {
  return `Cannot ${action} as "${field}" must be ${expected}: current value is ${describe(value)}`;
}
