/**
 * The PUBLISH frame encoded once for every peer a broadcast reaches: checked and encoded here,
 * then sent as is by each peer's session. Stateless, so the broadcast path needs no session.
 *
 * @module
 */
import type { Codec } from './codec.ts';
import { isTag, PUBLISH } from './frame.ts';
import { checkOwnHeaders, EVENT } from './reserved.ts';
import { mustBe } from '../util/describe.ts';
import { encodeError } from '../util/value_path.ts';

/**
 * Encodes a PUBLISH frame once, for `sendEncoded()` to every peer.
 *
 * @param operation The operation an encode error names (`broadcast()`).
 * @param event The event it is, sent in the reserved header `:event` beside `headers`; already
 * checked.
 * @throws {TypeError} When `tag` is not 1 to 256 characters, `headers` not a plain object or
 * null or with a reserved key, or the codec cannot encode the payload or headers (naming
 * `operation`, the tag and the value's path).
 */
export function encodePublish(
  codec: Codec,
  tag: string,
  payload: unknown,
  headers?: Record<string, unknown> | null,
  operation: string = 'broadcast()',
  event?: string,
): string | Uint8Array {
  const action = event === undefined ? 'publish' : 'emit';
  if (!isTag(tag)) {
    throw new TypeError(
      mustBe(action, 'tag', 'a string of 1 to 256 characters', tag),
    );
  }
  const h = headers ?? null;
  checkOwnHeaders(h, action);
  const sent = event === undefined ? h : { ...h, [EVENT]: event };
  try {
    return codec.encode([PUBLISH, tag, sent, payload]);
  } catch (error) {
    throw encodeError(
      (frame) => codec.encode(frame),
      `of ${operation} to ${JSON.stringify(tag)}`,
      [['headers', sent], ['payload', payload]],
      error,
    );
  }
}
