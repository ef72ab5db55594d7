/**
 * The frames of the muxws wire protocol and their validation. Internal: the session is the only
 * user.
 *
 * A frame is an array whose first element is its kind. {@linkcode parseFrame} checks the shape of
 * a decoded message and returns it typed, without copying; anything that is not a frame throws
 * {@linkcode FrameError}, and nothing else is ever thrown, whatever the input. Checks that need
 * the session's state (id parity, ids above the highest seen, the depth of payloads) are the
 * session's.
 *
 * @module
 */
import { describe } from '../util/describe.ts';
import { ProtocolError, RESET_CODE_PATTERN } from '../errors.ts';
import type { Issue } from '../util/issues.ts';
import { isHeaders, ISSUES } from './reserved.ts';

/** OPEN `[1, id, flags, headers, payload]`. Either side opens stream `id` (its own parity). */
export const OPEN = 1;
/**
 * DATA `[2, id, flags, payload, headers?]`. One message on a stream; costs credit. The trailing
 * headers element is optional (omitted when there are none).
 */
export const DATA = 2;
/** END `[3, id]`. The sender's direction of the stream ends. */
export const END = 3;
/**
 * RESET `[4, id, code, message, headers?]`. Aborts the stream in both directions. The trailing
 * headers element is optional (omitted when there are none).
 */
export const RESET = 4;
/** CREDIT `[5, id, units]`. The receiver lets the sender send `units` more on `id`. */
export const CREDIT = 5;
/** PING `[6]`. Liveness probe; the receiver answers PONG at once. */
export const PING = 6;
/** PONG `[7]`. The answer to PING; the receiver only notes that something arrived. */
export const PONG = 7;
/** GOAWAY `[8, lastId, code, message, spreadMs]`. The sender accepts no stream above `lastId`. */
export const GOAWAY = 8;
/** PUBLISH `[9, tag, headers, payload]`. Acceptor to dialer broadcast outside any stream. */
export const PUBLISH = 9;

/** `flags` bit 0 of OPEN and DATA: the sender's direction ends with this message. */
export const FLAG_END = 1;
/**
 * `flags` bit 1 of OPEN: the dialer's hello, on its OPEN of stream 1 only; on any other id, or on
 * DATA, the frame is malformed.
 */
export const FLAG_HELLO = 2;

/** Every stream's credit in each direction at the start, in message units. */
export const INITIAL_WINDOW = 65536;

/** One entry of {@linkcode FRAMES}. */
interface FrameKind {
  /** The kind, the frame's first element. */
  readonly code: number;
  /** Its name. */
  readonly name: string;
  /** The array layout. */
  readonly layout: string;
  /** Who sends it. */
  readonly sender: string;
  /** What the receiver does. */
  readonly receiver: string;
}

/** The frame kinds, as one table: code, layout, sender, and what the receiver does. */
export const FRAMES: readonly FrameKind[] = /* @__PURE__ */ Object.freeze([
  {
    code: OPEN,
    name: 'OPEN',
    layout: '[1, id, flags, headers, payload]',
    sender: 'either side, with an id of its own parity (dialer odd, acceptor even) above its last',
    receiver:
      "runs its stream handler once (or resets: refused when no handler, over maxStreams or after GOAWAY; decode when the payload cannot be decoded; hello_required before the hello an acceptor requires); FLAG_END ends the opener's direction at once; FLAG_HELLO marks the dialer's hello, on stream 1 only",
  },
  {
    code: DATA,
    name: 'DATA',
    layout: '[2, id, flags, payload, headers?]',
    sender: 'either side, while its credit on the stream is positive',
    receiver:
      "queues the payload for the stream's reader, charging its length to the window (beyond window and one overshooting message: RESET flow); FLAG_END ends the sender's direction",
  },
  {
    code: END,
    name: 'END',
    layout: '[3, id]',
    sender: 'either side, once, after its last message on the stream',
    receiver: "ends the stream's readable side after the queued messages",
  },
  {
    code: RESET,
    name: 'RESET',
    layout: '[4, id, code, message, headers?]',
    sender: 'either side; code matches ^[a-z][a-z0-9_.-]{0,63}$',
    receiver:
      'fails every pending read, write and request of the stream with StreamResetError { code, remote: true, issues } (issues from the reserved :issues header)',
  },
  {
    code: CREDIT,
    name: 'CREDIT',
    layout: '[5, id, units]',
    sender:
      'the receiver of DATA, as its application consumes messages (at the latest at half the window)',
    receiver: 'adds units to its credit on the stream and sends the writes that waited for it',
  },
  {
    code: PING,
    name: 'PING',
    layout: '[6]',
    sender: "the dialer's heartbeat (either side may)",
    receiver: 'answers PONG at once',
  },
  {
    code: PONG,
    name: 'PONG',
    layout: '[7]',
    sender: 'the receiver of a PING',
    receiver: 'nothing beyond noting that a message arrived',
  },
  {
    code: GOAWAY,
    name: 'GOAWAY',
    layout: '[8, lastId, code, message, spreadMs]',
    sender: 'a side that will accept no stream above lastId (the acceptor when shutting down)',
    receiver:
      "opens no new stream (open() throws NotConnectedError); an acceptor also refuses the dialer's streams above lastId",
  },
  {
    code: PUBLISH,
    name: 'PUBLISH',
    layout: '[9, tag, headers, payload]',
    sender: 'the acceptor only; tag is 1 to 256 characters',
    receiver:
      'the dialer calls onPublish({ tag, headers, payload }); an acceptor counts it malformed',
  },
]);

/** OPEN as decoded. */
type OpenFrame = [
  kind: 1,
  id: number,
  flags: number,
  headers: Record<string, unknown> | null,
  payload: unknown,
];
/** DATA as decoded. */
type DataFrame = [
  kind: 2,
  id: number,
  flags: number,
  payload: unknown,
  headers?: Record<string, unknown> | null,
];
/** END as decoded. */
type EndFrame = [kind: 3, id: number];
/** RESET as decoded. */
type ResetFrame = [
  kind: 4,
  id: number,
  code: string,
  message: string,
  headers?: Record<string, unknown> | null,
];
/** CREDIT as decoded. */
type CreditFrame = [kind: 5, id: number, units: number];
/** PING as decoded. */
type PingFrame = [kind: 6];
/** PONG as decoded. */
type PongFrame = [kind: 7];
/** GOAWAY as decoded. */
type GoAwayFrame = [
  kind: 8,
  lastId: number,
  code: string,
  message: string,
  spreadMs: number,
];
/** PUBLISH as decoded. */
type PublishFrame = [
  kind: 9,
  tag: string,
  headers: Record<string, unknown> | null,
  payload: unknown,
];
/** Any frame. */
type Frame =
  | OpenFrame
  | DataFrame
  | EndFrame
  | ResetFrame
  | CreditFrame
  | PingFrame
  | PongFrame
  | GoAwayFrame
  | PublishFrame;

/** A message that is not a valid frame. */
export class FrameError extends ProtocolError {}

/**
 * The elements every frame of each kind must have: a receiver ignores the elements after the last
 * one it knows, so a later version can add one without a new subprotocol. DATA and RESET know one
 * more, their optional trailing headers (index 4).
 */
const LENGTHS = [0, 5, 4, 2, 4, 3, 1, 1, 5, 4];

/**
 * True for a stream id: a positive safe integer. The one check of an id's form, for frames, a
 * session's `firstStreamId` and a restored peer's next id; parity (the dialer odd, the acceptor
 * even) is checked by whoever knows the side.
 */
export function isStreamId(value: unknown): value is number {
  return typeof value === 'number' && Number.isSafeInteger(value) && value > 0;
}

/** True for a reset code. */
export function isResetCode(value: unknown): value is string {
  return typeof value === 'string' && RESET_CODE_PATTERN.test(value);
}

/** The longest tag, in UTF-16 code units. */
export const MAX_TAG_LENGTH = 256;

/**
 * Whether `value` is a tag: a string of 1 to {@linkcode MAX_TAG_LENGTH} characters. The one tag
 * check of the library: the session, the acceptor, the adapters and the stores all use it.
 */
export function isTag(value: unknown): value is string {
  return typeof value === 'string' && value.length >= 1 && value.length <= MAX_TAG_LENGTH;
}

function fail(what: string, value: unknown): never {
  throw new FrameError(`Malformed frame: ${what}: found ${describe(value)}`);
}

/**
 * Checks that `value` has the shape of a frame (kind, at least its kind's elements, and the type
 * of every element it knows) and returns it typed; elements after the last one it knows are
 * ignored. Stream-state checks (parity, ids seen) are the session's.
 *
 * @throws {FrameError} When it is not a frame; never anything else.
 */
export function parseFrame(value: unknown): Frame {
  try {
    if (!Array.isArray(value)) fail('expected an array', value);
    const kind = value[0];
    if (typeof kind !== 'number' || !(kind >= 1 && kind <= 9) || !Number.isInteger(kind)) {
      fail('expected a kind from 1 to 9', kind);
    }
    // Elements after the last one this side knows are ignored (the growth rule).
    if (value.length < LENGTHS[kind]) {
      fail(`expected at least ${LENGTHS[kind]} elements for kind ${kind}`, value.length);
    }
    // the kinds up to CREDIT name a stream first; OPEN and DATA then carry flags
    if (kind <= CREDIT && !isStreamId(value[1])) {
      fail('expected a positive safe integer id', value[1]);
    }
    if (kind <= DATA && !isCount(value[2])) {
      fail('expected flags as a non-negative integer', value[2]);
    }
    // DATA's and RESET's trailing headers are optional: checked when present.
    if ((kind === DATA || kind === RESET) && value.length > 4 && !isHeaders(value[4])) {
      fail('expected headers as an object or null', value[4]);
    }
    switch (kind) {
      case OPEN:
        if (value[1] !== 1 && hasHello(value[2])) fail('expected HELLO on stream 1 only', value[1]);
        if (!isHeaders(value[3])) fail('expected headers as an object or null', value[3]);
        break;
      case DATA:
        if (hasHello(value[2])) fail('expected no HELLO flag on DATA', value[2]);
        break;
      case RESET:
        if (!isResetCode(value[2])) fail('expected a reset code', value[2]);
        if (typeof value[3] !== 'string') fail('expected a reset message string', value[3]);
        break;
      case CREDIT:
        if (!isCount(value[2]) || value[2] === 0) {
          fail('expected credit units as a positive safe integer', value[2]);
        }
        break;
      case GOAWAY:
        if (!isCount(value[1])) fail('expected lastId as a non-negative integer', value[1]);
        if (!isResetCode(value[2])) fail('expected a GOAWAY code', value[2]);
        if (typeof value[3] !== 'string') fail('expected a GOAWAY message string', value[3]);
        if (!isCount(value[4])) fail('expected spreadMs as a non-negative integer', value[4]);
        break;
      case PUBLISH:
        if (!isTag(value[1])) fail('expected a tag of 1 to 256 characters', value[1]);
        if (!isHeaders(value[2])) fail('expected headers as an object or null', value[2]);
        break;
    }
    return value as Frame;
  } catch (error) {
    if (error instanceof FrameError) throw error;
    throw new FrameError('Malformed frame: it could not be inspected', { cause: error });
  }
}

function isCount(value: unknown): value is number {
  return typeof value === 'number' && Number.isSafeInteger(value) && value >= 0;
}

/**
 * The RESET of stream `id`, with `issues` in its `:issues` header; without a headers element when
 * there are none, so the common RESET stays as short as ever.
 */
export function resetFrame(
  id: number,
  code: string,
  message: string,
  issues: readonly Issue[],
): unknown[] {
  const frame: unknown[] = [RESET, id, code, message];
  if (issues.length > 0) frame.push({ [ISSUES]: issues });
  return frame;
}

/** True when `flags` has the END bit. */
export function hasEnd(flags: number): boolean {
  return flags % 2 === 1;
}

/** True when `flags` has the HELLO bit (flags may exceed 32 bits, so no `&`). */
export function hasHello(flags: number): boolean {
  return Math.floor(flags / 2) % 2 === 1;
}

const stackValues: unknown[] = [];
const stackDepths: number[] = [];

/**
 * True when `value` nests deeper than `maxDepth` (`{}` and `[]` are depth 1; a scalar is 0).
 * Iterative, so no input can overflow the call stack; stops at the first level too deep.
 * Typed arrays and other views are leaves (depth 0, like a string); a `Map` or `Set` is one
 * level, holding its keys and values. Never throws: a value that cannot be walked counts as
 * too deep.
 */
export function tooDeep(value: unknown, maxDepth: number): boolean {
  if (typeof value !== 'object' || value === null || ArrayBuffer.isView(value)) return false;
  // The stacks are empty here: every walk leaves them so (setting `length` is not free).
  stackValues.push(value);
  stackDepths.push(1);
  try {
    while (stackValues.length > 0) {
      const node = stackValues.pop() as object;
      const depth = stackDepths.pop()!;
      if (depth > maxDepth) return true;
      // A Map's keys and values and a Set's values: what a transformer restored.
      const children = Array.isArray(node) ? node : collected(node);
      if (children !== undefined) {
        for (let i = 0; i < children.length; i++) {
          const child = children[i];
          if (typeof child === 'object' && child !== null && !ArrayBuffer.isView(child)) {
            stackValues.push(child);
            stackDepths.push(depth + 1);
          }
        }
      } else {
        for (const key in node) {
          if (!Object.hasOwn(node, key)) continue;
          const child = (node as Record<string, unknown>)[key];
          if (typeof child === 'object' && child !== null && !ArrayBuffer.isView(child)) {
            stackValues.push(child);
            stackDepths.push(depth + 1);
          }
        }
      }
    }
    return false;
  } catch {
    return true;
  } finally {
    // A walk that ran to the end popped everything.
    if (stackValues.length !== 0) {
      stackValues.length = 0;
      stackDepths.length = 0;
    }
  }
}

/**
 * True when `value` holds more than `maxItems` items (array elements, own enumerable keys of
 * objects, the keys and values of a `Map` and the values of a `Set`, at any depth), for a codec that cannot count
 * before decoding or whose payloads pass through a transformer. Iterative; typed arrays
 * and other views are leaves. Never throws: a value that cannot be walked counts as over.
 */
export function itemsOver(value: unknown, maxItems: number): boolean {
  let items = 0;
  stackValues.push(value);
  try {
    while (stackValues.length > 0) {
      const node = stackValues.pop();
      if (typeof node !== 'object' || node === null || ArrayBuffer.isView(node)) continue;
      const children = Array.isArray(node) ? node : collected(node) ?? Object.values(node);
      items += children.length;
      if (items > maxItems) return true;
      for (let i = 0; i < children.length; i++) stackValues.push(children[i]);
    }
    return false;
  } catch {
    return true;
  } finally {
    if (stackValues.length !== 0) stackValues.length = 0;
  }
}

/**
 * The keys and values of a `Map` (`[k1, v1, k2, v2, …]`), the values of a `Set`, undefined for any
 * other object: what a transformer restored, walked by {@linkcode tooDeep} and
 * {@linkcode itemsOver}.
 */
function collected(node: object): unknown[] | undefined {
  return node instanceof Map ? [...node].flat() : node instanceof Set ? [...node] : undefined;
}

/** The UTF-8 byte length of a string, without allocating (lone surrogates count 3, as encoded). */
export function utf8Length(text: string): number {
  let bytes = text.length;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c < 0x80) continue;
    if (c < 0x800) bytes += 1;
    else if (c >= 0xd800 && c <= 0xdbff && i + 1 < text.length) {
      const next = text.charCodeAt(i + 1);
      if (next >= 0xdc00 && next <= 0xdfff) {
        bytes += 2; // 4 bytes for 2 UTF-16 units
        i++;
      } else bytes += 2;
    } else bytes += 2;
  }
  return bytes;
}

/** True when a message is larger than `max` bytes (UTF-8 bytes for text); cheap for short text. */
export function overLimit(data: string | Uint8Array, max: number): boolean {
  if (typeof data !== 'string') return data.byteLength > max;
  if (data.length > max) return true; // UTF-8 has at least one byte per UTF-16 unit
  if (data.length * 3 <= max) return false; // at most three bytes per UTF-16 unit
  return utf8Length(data) > max;
}
