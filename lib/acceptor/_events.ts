/**
 * Events on the acceptor's side: the check of an event's name, and the PUBLISH of `peer.emit()`,
 * which reaches one peer and is no broadcast. `Acceptor.emit` and `Acceptor.emitAll` are broadcasts
 * that carry the name (`lib/acceptor/_broadcast.ts`).
 *
 * Private to `lib/acceptor/`, never re-exported.
 *
 * @module
 */
import type { Codec } from '../wire/codec.ts';
import type { EmitOptions } from './acceptor_types.ts';
import { EVENT_NAME, isName } from '../wire/reserved.ts';
import { encodePublish } from '../wire/publish.ts';
import { mustBe } from '../util/describe.ts';
import { checkTag } from './_tags.ts';

/**
 * Returns `name` when it may name an event.
 *
 * @throws {TypeError} When it is not a string of 1 to 256 characters not starting with `:`.
 */
export function checkEventName(name: unknown): string {
  if (!isName(name)) throw new TypeError(mustBe('emit', 'name', EVENT_NAME, name));
  return name;
}

/**
 * The PUBLISH of `peer.emit(name, payload, options)`, encoded.
 *
 * @throws {TypeError} For a bad name, tag or headers, or a payload the codec cannot encode.
 */
export function encodeEvent(
  codec: Codec,
  name: unknown,
  payload: unknown,
  options: EmitOptions | undefined,
): string | Uint8Array {
  const event = checkEventName(name);
  const tag = checkTag('Cannot emit', options?.tag ?? '*');
  return encodePublish(codec, tag, payload, options?.headers, 'emit()', event);
}
