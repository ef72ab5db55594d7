/**
 * A broadcast as the dialer's application receives it: a PUBLISH is handed on without the reserved
 * headers, with its `seq` (from an acceptor that keeps a `history`) and its event's name, and the
 * recovery markers (`:position`, `:recovered`) are never handed on. The dialer's side of recovery
 * (`lib/dialer/_resume.ts`) builds on it; without recovery a connection hands on each broadcast
 * as {@linkcode receiveAsIs} does. Internal.
 *
 * @module
 */
import type { PublishMessage } from '../session/stream.ts';
import { EVENT, POSITION, RECOVERED, SEQ } from '../wire/reserved.ts';

/**
 * The sequence number of a PUBLISH: its `:seq` when that is a non-negative safe integer (a number
 * or not, anything else is none), else undefined.
 */
export function seqOf(message: PublishMessage): number | undefined {
  const seq = message.headers?.[SEQ] as number;
  return Number.isSafeInteger(seq) && seq >= 0 ? seq : undefined;
}

/** Whether the headers of a sequenced PUBLISH make it a recovery marker, not a broadcast. */
function isMarker(headers: Record<string, unknown>): boolean {
  return headers[POSITION] === true || RECOVERED in headers;
}

/**
 * A broadcast as the application receives it: its own headers (without the reserved ones; null
 * when none is left), its `seq` when it has one, and the name of its event (`:event`) when it is
 * one.
 */
export function ownMessage(message: PublishMessage, seq?: number): PublishMessage {
  const headers = message.headers;
  if (headers === null) return message;
  let own: Record<string, unknown> | null = null;
  for (const key in headers) {
    if (key.charCodeAt(0) !== 58 /* ':' */) (own ??= {})[key] = headers[key];
  }
  const event = headers[EVENT];
  return {
    tag: message.tag,
    headers: own,
    payload: message.payload,
    ...(seq !== undefined && { seq }),
    ...(typeof event === 'string' && { event }),
  };
}

/**
 * Hands each broadcast to `deliver` as it arrives, without recovery, as {@linkcode ownMessage}
 * makes it; a recovery marker not at all.
 */
export function receiveAsIs(deliver: (message: PublishMessage) => void): (
  message: PublishMessage,
) => void {
  return (message) => {
    const seq = seqOf(message);
    if (seq === undefined) deliver(ownMessage(message));
    else if (!isMarker(message.headers!)) deliver(ownMessage(message, seq));
  };
}
