/**
 * What the Redis backplane, history and presence share: bytes as base64 text and back (a binary
 * codec's frame crosses a Redis channel or a stream entry as text), what Redis said, and the
 * script runner (`EVALSHA` once Redis holds a script, `EVAL` otherwise or after a `NOSCRIPT`).
 *
 * Private to `lib/stores/`, never re-exported.
 *
 * @module
 */

/** The client events the backplane and the presence store listen to. */
export type RedisClientEvent = 'ready' | 'error' | 'end' | 'reconnecting';

/** What the backplane needs of any Redis client: readiness and its connection events. */
export interface RedisEventSource {
  /**
   * Optional. True while the client is connected and can run commands (node-redis has it).
   * Absent: the backplane follows the `ready`, `end` and `reconnecting` events instead.
   */
  readonly isReady?: boolean;
  /** Adds an event listener (node-redis clients are `EventEmitter`s). */
  on(event: RedisClientEvent, listener: (error?: unknown) => void): unknown;
  /** Optional. Removes an event listener; `close()` uses it. */
  off?(event: RedisClientEvent, listener: (error?: unknown) => void): unknown;
}

/** The subscribing client: node-redis's `subscribe` and `unsubscribe` with a listener. */
export interface RedisSubscriber extends RedisEventSource {
  /** Subscribes `listener` to `channel`; resolves once Redis confirmed. */
  subscribe(
    channel: string,
    listener: (message: string, channel: string) => void,
  ): Promise<unknown>;
  /** Removes `listener` from `channel` (and unsubscribes when it was the last). */
  unsubscribe(
    channel: string,
    listener: (message: string, channel: string) => void,
  ): Promise<unknown>;
}

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

/** Each script's SHA1 in hex, as Redis names it, once computed. */
const digests = new Map<string, string>();
/** The scripts whose SHA1 is being computed, or could not be (no `crypto.subtle`). */
const digesting = new Set<string>();

/**
 * The SHA1 of `script` when it is known; otherwise starts computing it and returns `undefined`.
 * Never waits, so a call that has a digest is sent in the same turn as one that has none.
 */
export function digestOf(script: string): string | undefined {
  const known = digests.get(script);
  if (known !== undefined || digesting.has(script)) return known;
  digesting.add(script);
  try {
    crypto.subtle.digest('SHA-1', new TextEncoder().encode(script)).then((buffer) => {
      digests.set(
        script,
        Array.from(new Uint8Array(buffer), (byte) => byte.toString(16).padStart(2, '0')).join(''),
      );
    }, () => {});
  } catch {
    // No Web Crypto here: the script always goes as EVAL.
  }
  return undefined;
}

/** Whether Redis refused an `EVALSHA` because it does not hold the script. */
export function isNoScript(error: unknown): boolean {
  return error instanceof Error && error.message.startsWith('NOSCRIPT');
}

/** What the script runner needs of a client: node-redis's `eval` and, optionally, `evalSha`. */
export interface ScriptRunner {
  eval(script: string, options: { keys: string[]; arguments: string[] }): Promise<unknown>;
  evalSha?(sha1: string, options: { keys: string[]; arguments: string[] }): Promise<unknown>;
}

/**
 * Runs `script` on `client`: as `EVALSHA` when `loaded` says this client ran it and its digest is
 * known, else as `EVAL` (which loads it). When Redis lost the script (restarted, flushed, failed
 * over) the `EVALSHA` is refused with `NOSCRIPT` and ran nothing: the body is sent then.
 * Calls that must keep their order across a `NOSCRIPT` serialise themselves.
 */
export async function evalScript(
  client: ScriptRunner,
  loaded: Set<string>,
  script: string,
  options: { keys: string[]; arguments: string[] },
): Promise<unknown> {
  const sha1 = loaded.has(script) ? digestOf(script) : undefined;
  if (sha1 !== undefined && typeof client.evalSha === 'function') {
    try {
      return await client.evalSha(sha1, options);
    } catch (error) {
      if (!isNoScript(error)) throw error;
      loaded.delete(script);
    }
  }
  const reply = await client.eval(script, options);
  loaded.add(script);
  digestOf(script);
  return reply;
}
