/**
 * What a `Hello` captured, for the dialer's own use: the payload and headers as they were
 * copied at construction, not a fresh copy. The dialer hands them to a codec that only reads what
 * it encodes (the built-in JSON codec) instead of copying them once more per connection.
 *
 * @module
 */
import type { Codec } from '../wire/codec.ts';
import { encode } from '../wire/json.ts';

/** What this module needs of a `Hello` (not imported: `hello.ts` imports this module). */
export interface CapturedHello {
  payloadForWire(): unknown;
  headersForWire(): Record<string, unknown> | undefined;
}

/** A hello's captured payload (`null` when none) and headers (`undefined` when none). */
export interface HelloParts {
  payload: unknown;
  headers: Record<string, unknown> | undefined;
}

let read: (hello: CapturedHello) => HelloParts;

/** Called once by the `Hello` class with the reader of its private fields. */
export function setHelloReader(reader: (hello: CapturedHello) => HelloParts): void {
  read = reader;
}

/**
 * The payload and headers of `hello` to encode with `codec`: the captured values themselves for
 * the built-in JSON codecs, whose `encode` only reads them (`JSON.stringify` of values
 * `structuredClone` made, so no getter or `toJSON` of the application's runs), so no connection
 * can change what the next one sends; a fresh copy of each for any other codec, which might keep
 * or change the object it was handed.
 */
export function helloForCodec(hello: CapturedHello, codec: Codec): HelloParts {
  if (codec.encode === encode) return read(hello);
  return { payload: hello.payloadForWire(), headers: hello.headersForWire() };
}
