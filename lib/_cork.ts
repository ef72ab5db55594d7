/**
 * Write coalescing for sockets that expose a corkable stream: the `ws` package's `WebSocket` on
 * Node (client and server) keeps its `net.Socket` as `_socket`. Every `ws.send()` is otherwise one
 * `writev` system call. The first send of a tick on a socket goes out at once, as it would
 * anyway; a second send in the same tick corks the stream, so the rest of a burst (a batch of
 * answers, 64 requests issued at once) is written together when the microtask queue runs. Nothing
 * is delayed past the current tick, a lone message per tick is not corked at all (corking it cost
 * a single request on Node more than it saved), and a socket without such a stream is left
 * alone. Internal.
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

/** Streams that sent once in this tick. */
const sent = new Set<Stream>();
/** Streams corked in this tick, uncorked together by one microtask. */
const corked = new Set<Stream>();

function endTick(): void {
  sent.clear();
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
 * Call before each send on `socket`: the second send of a tick corks its stream (if it has one)
 * until the current tick's microtasks run.
 */
export function cork(socket: unknown): void {
  const stream = (socket as Corkable | null | undefined)?._socket;
  if (
    stream === undefined || stream === null || typeof stream.cork !== 'function' ||
    typeof stream.uncork !== 'function' || corked.has(stream as Stream)
  ) return;
  if (!sent.has(stream as Stream)) {
    if (sent.size === 0 && corked.size === 0) queueMicrotask(endTick);
    sent.add(stream as Stream);
    return;
  }
  (stream as Stream).cork();
  corked.add(stream as Stream);
}
