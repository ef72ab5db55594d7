/**
 * What the Redis backplane and the Redis history share: bytes as base64 text and back (a binary
 * codec's frame crosses a Redis channel or a stream entry as text), and what Redis said.
 *
 * Private to `lib/stores/`, never re-exported.
 *
 * @module
 */

/** Bytes per `String.fromCharCode` call, well below every engine's argument limit. */
const BASE64_CHUNK = 0x8000;

/** `bytes` as standard base64 (with padding). */
export function toBase64(bytes: Uint8Array): string {
  let binary = '';
  for (let i = 0; i < bytes.length; i += BASE64_CHUNK) {
    binary += String.fromCharCode(...bytes.subarray(i, i + BASE64_CHUNK));
  }
  return btoa(binary);
}

/** The bytes of standard base64 `text`; throws a `DOMException` when it is not base64. */
export function fromBase64(text: string): Uint8Array {
  const binary = atob(text);
  const bytes = new Uint8Array(binary.length);
  for (let i = 0; i < binary.length; i++) bytes[i] = binary.charCodeAt(i);
  return bytes;
}

/** What an error from a Redis client says, for a message of ours. */
export function messageOf(error: unknown): string {
  // node-redis's TimeoutError has an empty message: its name says what happened.
  return error instanceof Error ? error.message || error.name : String(error);
}
