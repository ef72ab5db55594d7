/**
 * Reserved header keys: keys starting with `:` are muxws's (`:route`, which is `ROUTE_HEADER` in
 * `lib/routes/routes.ts`; here `:seq`, `:position`, `:recovered`, `:resume`, `:dialer`, `:issues`,
 * `:except`, `:event`, `:id`, `:last-event-id`). An application cannot set them through `headers`
 * (`TypeError`); muxws itself sets them through the {@linkcode MUXWS} part of the options of
 * `open()` and `request()`, which no public type declares and only `lib/` can name.
 *
 * Internal: imported from `lib/` only.
 *
 * @module
 */
import { mustBe } from '../util/describe.ts';

/**
 * The key of what muxws itself adds to the options of `open()` and `request()`: the routes layer
 * writes `connection.request(input, { ...options, [MUXWS]: { headers: { ':route': name } } })`.
 * Options pass through the dialer and the peer unchanged, so this reaches the session.
 */
export const MUXWS: unique symbol = Symbol('muxws');

/** What muxws sets on a stream it opens for itself. */
export interface MuxwsOpen {
  /** Reserved headers (every key starting with `:`), sent with the application's. */
  readonly headers?: Readonly<Record<string, unknown>>;
  /** The operation an error names, instead of `open()` or `request()`: e.g. `call()`. */
  readonly operation?: string;
}

/** Options with muxws's own part: see {@linkcode MUXWS}. */
export type WithMuxws<T> = T & { readonly [MUXWS]?: MuxwsOpen };

/** True for `null` or a plain object (not an array, not a class instance). */
export function isHeaders(value: unknown): value is Record<string, unknown> | null {
  if (value === null) return true;
  if (typeof value !== 'object' || Array.isArray(value)) return false;
  const proto = Object.getPrototypeOf(value);
  return proto === Object.prototype || proto === null;
}

/**
 * The one check of an application's `headers`: `undefined`, `null`, or a plain object using no
 * reserved key.
 *
 * @param headers The headers the application gave.
 * @param action What was attempted, for the message (`open a stream`, `call "chat.say"`); a
 * function is called only when the check fails.
 * @throws {TypeError} For headers that are not a plain object or null, or naming the first
 * reserved key found.
 */
export function checkOwnHeaders(
  headers: unknown,
  action: string | (() => string),
): asserts headers is Record<string, unknown> | null | undefined {
  if (headers === undefined || headers === null) return;
  if (!isHeaders(headers)) {
    const what = typeof action === 'string' ? action : action();
    throw new TypeError(mustBe(what, 'headers', 'a plain object or null', headers));
  }
  for (const key in headers) {
    if (key.charCodeAt(0) !== 58 /* ':' */) continue;
    const what = typeof action === 'string' ? action : action();
    throw new TypeError(
      `Cannot ${what} as "headers" must not use the reserved key ${
        JSON.stringify(key)
      }: keys starting with ":" are muxws's`,
    );
  }
}

/** The reserved PUBLISH header carrying a broadcast's sequence number (recovery). */
export const SEQ = ':seq';
/** The reserved PUBLISH header marking a frame that only tells a tag's position. */
export const POSITION = ':position';
/** The reserved PUBLISH header marking the end of a tag's replay. */
export const RECOVERED = ':recovered';
/** The reserved hello header naming, per tag, the last sequence number the dialer delivered. */
export const RESUME = ':resume';
/**
 * The reserved header carrying a dialer's identity for recovery: in a position frame the acceptor
 * sends a peer it left out of a broadcast by name, and in the hello of the dialer's redials.
 */
export const DIALER = ':dialer';
/**
 * The reserved RESET header carrying what a schema found wrong: an array of `{ path, message }`,
 * `path` an array of string and number keys, bounded as `lib/util/issues.ts` says (16 issues,
 * messages of 256 characters, paths of 32 keys of 256 characters). A receiver reads it with
 * `readIssues()`, keeping what has the right shape and never throwing.
 */
export const ISSUES = ':issues';
/** The reserved header of a logged entry naming the tags and dialers its broadcast left out. */
export const EXCEPT = ':except';
/** The reserved PUBLISH header naming the event a broadcast is (the dialer's `on()` handlers). */
export const EVENT = ':event';

/**
 * Whether `value` may name a route or an event: a string of 1 to 256 characters, not starting
 * with `:`.
 */
export function isName(value: unknown): value is string {
  return typeof value === 'string' && value.length > 0 && value.length <= 256 &&
    value.charCodeAt(0) !== 58 /* ':' */;
}

/** What an event name must be, for the `TypeError` of one that is not ({@linkcode isName}). */
export const EVENT_NAME = 'a string of 1 to 256 characters not starting with ":"';

/**
 * The most tags one `:resume` names: the dialer keeps at most as many positions (past it, the tag
 * first seen longest ago is forgotten, and a later broadcast of it is delivered as new), and the
 * acceptor reads at most as many, so a hello naming more cannot make it answer each.
 */
export const MAX_RESUMED_TAGS = 1024;

/**
 * The reserved DATA header carrying a tracked message's id: a string of 1 to
 * {@linkcode MAX_EVENT_ID_LENGTH} characters. A receiver that is not tracking ignores it; one that
 * is ignores an id of any other form (the message then moves no position).
 */
export const EVENT_ID = ':id';
/**
 * The reserved OPEN header of a re-opened subscription naming the id of the last tracked message
 * its dialer received, of the same form as {@linkcode EVENT_ID}'s; a route reads it as
 * `ctx.lastEventId`, and refuses any other form with `invalid`.
 */
export const LAST_EVENT_ID = ':last-event-id';
/** The longest event id, in UTF-16 code units. */
export const MAX_EVENT_ID_LENGTH = 256;

/** True for an event id: a string of 1 to {@linkcode MAX_EVENT_ID_LENGTH} UTF-16 code units. */
export function isEventId(value: unknown): value is string {
  return typeof value === 'string' && value !== '' && value.length <= MAX_EVENT_ID_LENGTH;
}

/**
 * The reserved header of presence. In an OPEN it names the tag whose presence the dialer follows
 * (payload `true`; `false` stops); in a PUBLISH it gives the kind of the presence frame: `"sync"`
 * (a snapshot), `"diff"` (leaves, then joins) or `"end"` (no longer followed).
 */
export const PRESENCE = ':presence';
