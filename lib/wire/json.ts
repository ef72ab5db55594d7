/**
 * The JSON wire's parts, without the callable `jsonCodec` of `lib/wire/codec.ts`: `decode`,
 * `identify`, `exceedsItems`, and {@linkcode JSON_CODEC}, the plain codec the dialer uses when the
 * application names none. A bundle that never imports `jsonCodec` thereby leaves out the strict
 * codec that `jsonCodec({ strict: true })` reaches. Internal: imported from `lib/` only.
 *
 * @module
 */
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

/** The JSON codec's `encode`: one frame, one text message. */
export function encode(frame: readonly unknown[]): string {
  return JSON.stringify(frame);
}

/** The JSON codec's `decode`: text as it is, bytes as UTF-8 (refusing invalid UTF-8). */
export function decode(data: string | Uint8Array): unknown {
  return JSON.parse(typeof data === 'string' ? data : decoder.decode(data));
}

/** The JSON codec's `identify`: the kind and id at the start of a damaged message. */
export function identify(data: string | Uint8Array): readonly [number, number] | undefined {
  const head = typeof data === 'string'
    ? data.slice(0, PREFIX_UNITS)
    : prefixDecoder.decode(data.subarray(0, PREFIX_UNITS));
  const match = PREFIX.exec(head);
  if (match === null) return undefined;
  const id = Number(match[2]);
  return Number.isSafeInteger(id) ? [Number(match[1]), id] : undefined;
}

/**
 * The JSON codec's `exceedsItems`: counts the items of the text without parsing it, as one per
 * `,` outside a string and one per `[` or `{` whose next character (past whitespace) does not
 * close it, which is exact for valid JSON; stops once the count passes `maxItems`. Text of at
 * most `maxItems` units is never counted: every item takes at least one character. In bytes, no
 * byte of a multi-byte UTF-8 character is below 0x80, so none is taken for a structural one.
 */
export function exceedsItems(data: string | Uint8Array, maxItems: number): boolean {
  const length = data.length;
  if (length <= maxItems) return false;
  const text = typeof data === 'string';
  let items = 0;
  let opened = false;
  for (let i = 0; i < length; i++) {
    const c = text ? data.charCodeAt(i) : data[i];
    if (c <= 0x20) continue; // JSON whitespace: space, tab, line feed, carriage return
    if (opened && c !== 0x5d && c !== 0x7d) items++;
    opened = c === 0x5b || c === 0x7b;
    if (c === 0x2c) items++;
    else if (c === 0x22) i = closingQuote(data, i);
    if (items > maxItems) return true;
  }
  return false;
}

/**
 * The index of the `"` that closes the string opened at `start`: the next one not escaped by an
 * odd run of backslashes (the data's length when none is).
 */
function closingQuote(data: string | Uint8Array, start: number): number {
  const text = typeof data === 'string';
  for (let end = start;;) {
    end = text ? data.indexOf('"', end + 1) : data.indexOf(0x22, end + 1);
    if (end < 0) return data.length;
    let before = end - 1;
    while ((text ? data.charCodeAt(before) : data[before]) === 0x5c) before--;
    if ((end - before) % 2 === 1) return end;
  }
}

/**
 * The JSON codec as a plain object: the same wire and functions as `jsonCodec`, which is this
 * made callable, but for `exceedsItems`, which a `connect` bundle thereby leaves out (a dialer
 * counts the items of the decoded value instead; the acceptor's `Session` counts with
 * {@linkcode exceedsItems} for a codec that decodes with {@linkcode decode}). The default codec
 * of `connect()` and of the acceptor. (Typed by its shape: `lib/wire/codec.ts` imports
 * this file, so this one does not import the `Codec` type back.)
 */
export const JSON_CODEC: Readonly<{
  name: string;
  binary: boolean;
  encode: typeof encode;
  decode: typeof decode;
  identify: typeof identify;
}> = /* @__PURE__ */ Object.freeze({
  name: 'json',
  binary: false,
  encode,
  decode,
  identify,
});
