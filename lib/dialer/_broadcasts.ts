/**
 * A broadcast as the dialer's application receives it: a sequenced PUBLISH (from an acceptor that
 * keeps a `history`) is handed on with its `seq` and without the reserved headers, and the
 * recovery markers (`:position`, `:recovered`) are never handed on. The dialer's side of recovery
 * (`lib/dialer/_resume.ts`) builds on it; without recovery a connection hands on each broadcast
 * as {@linkcode receiveAsIs} does. Internal.
 *
 * @module
 */
import type { PublishMessage } from '../session/stream.ts';
import { POSITION, RECOVERED, SEQ } from '../wire/reserved.ts';

/**
 * The sequence number of a PUBLISH: its `:seq` when that is a non-negative safe integer (a number
 * or not, anything else is none), else undefined.
 */
export function seqOf(message: PublishMessage): number | undefined {
  const seq = message.headers?.[SEQ] as number;
  return Number.isSafeInteger(seq) && seq >= 0 ? seq : undefined;
}

/** Whether the headers of a sequenced PUBLISH make it a recovery marker, not a broadcast. */
export function isMarker(headers: Record<string, unknown>): boolean {
  return headers[POSITION] === true || RECOVERED in headers;
}

/** A sequenced broadcast as the application receives it: its own headers (null for none), `seq`. */
export function sequenced(message: PublishMessage, seq: number): PublishMessage {
  let own: Record<string, unknown> | null = null;
  const headers = message.headers!;
  for (const key in headers) {
    if (key.charCodeAt(0) !== 58 /* ':' */) (own ??= {})[key] = headers[key];
  }
  return { tag: message.tag, headers: own, payload: message.payload, seq };
}

/**
 * Hands each broadcast to `deliver` as it arrives, without recovery: a sequenced one as
 * {@linkcode sequenced} makes it, a marker not at all, any other as it is.
 */
export function receiveAsIs(deliver: (message: PublishMessage) => void): (
  message: PublishMessage,
) => void {
  return (message) => {
    const seq = seqOf(message);
    if (seq === undefined) deliver(message);
    else if (!isMarker(message.headers!)) deliver(sequenced(message, seq));
  };
}
