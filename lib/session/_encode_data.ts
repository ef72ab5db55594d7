/**
 * Encoding the DATA frames a stream sends: the frame, its optional trailing headers, the encode
 * error naming what sent it, and the `maxMessageBytes` check. Internal: the stream's.
 *
 * @module
 */
import type { Codec } from '../wire/codec.ts';
import { DATA, overLimit } from '../wire/frame.ts';
import { encodeError } from '../util/value_path.ts';

/** What encoding a DATA needs of the session (the stream's host has it). */
interface DataHost {
  /** The connection's codec. */
  readonly codec: Codec;
  /** The largest message this side sends. */
  readonly maxMessageBytes: number;
}

/** The `operation` of a handler's returned value, sent as the last message. */
export const RETURNED = "handler's returned value";

/**
 * Encodes one DATA frame of stream `id` carrying `value`, with `headers` as its trailing element
 * when given (a tracked message's `:id`). `operation` names what sent it in an encode error: `of
 * write()` gives `Cannot encode the payload of write() on stream 3: BigInt at .n`; a handler's
 * returned value gives `Cannot encode the handler's returned value on stream 2: …`.
 *
 * @throws {TypeError} When the codec cannot encode it, naming the value's path.
 * @throws {RangeError} When it is larger than `maxMessageBytes`.
 */
export function encodeData(
  host: DataHost,
  id: number,
  flags: number,
  value: unknown,
  operation: string,
  headers?: Record<string, unknown>,
): string | Uint8Array {
  const codec = host.codec;
  let data: string | Uint8Array;
  try {
    // The headers element is left out when there are none: the common DATA stays as it was.
    data = codec.encode(
      headers === undefined ? [DATA, id, flags, value] : [DATA, id, flags, value, headers],
    );
  } catch (error) {
    const returned = operation === RETURNED;
    throw encodeError(
      (frame) => codec.encode(frame),
      returned ? `on stream ${id}` : `${operation} on stream ${id}`,
      [[returned ? RETURNED : 'payload', value]],
      error,
    );
  }
  if (overLimit(data, host.maxMessageBytes)) {
    throw new RangeError(
      `Cannot send a message on stream ${id} as it is larger than limits.maxMessageBytes (${host.maxMessageBytes})`,
    );
  }
  return data;
}
