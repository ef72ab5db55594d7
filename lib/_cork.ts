/**
 * Write coalescing for sockets that expose a corkable stream: the `ws` package's `WebSocket` on
 * Node (client and server) keeps its `net.Socket` as `_socket`. Every `ws.send()` is otherwise one
 * `writev` system call; sends made in one tick (a burst of answers, 64 requests issued at once) are
 * written together when the stream is corked until the microtask queue runs. Nothing is delayed
 * past the current tick, and a socket without such a stream is left alone. Internal.
 *
 * @module
 */

/** What `cork()` needs of a socket: the stream `ws` writes to. */
interface Corkable {
  _socket?: { cork?: unknown; uncork?: unknown } | null;
}

interface Stream {
  cork(): void;
  uncork(): void;
}

/** The streams corked in this tick, uncorked together by one microtask. */
const corked = new Set<Stream>();

function uncorkAll(): void {
  const streams = [...corked];
  corked.clear();
  for (const stream of streams) {
    try {
      stream.uncork();
    } catch {
      // A destroyed stream has nothing left to write.
    }
  }
}

/**
 * Corks `socket`'s stream, if it has one, until the current tick's microtasks run. Call it before
 * each send; repeated calls in one tick cork once.
 */
export function cork(socket: unknown): void {
  const stream = (socket as Corkable | null | undefined)?._socket;
  if (
    stream === undefined || stream === null || typeof stream.cork !== 'function' ||
    typeof stream.uncork !== 'function' || corked.has(stream as Stream)
  ) return;
  if (corked.size === 0) queueMicrotask(uncorkAll);
  (stream as Stream).cork();
  corked.add(stream as Stream);
}
