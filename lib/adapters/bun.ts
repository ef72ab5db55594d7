/**
 * The Bun adapter: {@linkcode bunHandlers} returns the `fetch` and `websocket`
 * handlers for `Bun.serve`. `fetch` awaits {@linkcode Acceptor.checkUpgrade} first (with the
 * acceptor's `authorize`) and upgrades selecting exactly the muxws subprotocol,
 * carrying what `authorize` returned in the socket's `data`; `websocket` feeds each
 * `ServerWebSocket` to {@linkcode Acceptor.attach} with that `data` and `tags`, and its `drain`
 * wakes writes waiting on backpressure.
 *
 * The `websocket` object sets Bun's `maxPayloadLength` to the acceptor's `limits.maxMessageBytes`:
 * keep it when building your own `websocket` object around these handlers, so a larger message is
 * refused before Bun buffers it.
 *
 * Broadcasts use Bun's topics: each peer's socket is subscribed to one topic per tag it holds
 * once that tag is broadcast to, kept in step with `peer.tags`, and `acceptor.broadcast(tag, …)` is one `server.publish()` of
 * the encoded frame. The topics are named `"\0muxws <key>\0<tag>"`, the key random per
 * acceptor, so application topics starting with a NUL character are reserved. A broadcast with
 * `except`, `broadcastAll`, or one that finds a peer over `highWaterMark` (which it must skip)
 * is a send per peer instead.
 *
 * @example Serve an acceptor on Bun
 * ```ts ignore
 * import { Acceptor } from '@muxws/core/acceptor';
 * import { bunHandlers } from '@muxws/core/bun';
 *
 * const acceptor = new Acceptor({ onStream: (stream) => ({ echo: stream.payload }) });
 * Bun.serve({ port: 8080, ...bunHandlers(acceptor) });
 * ```
 *
 * @module
 */
import type { Acceptor, AttachedPeer, UpgradeAccepted } from '../acceptor/acceptor.ts';
import {
  attachSink,
  malformedUpgrade,
  messageLimitOf,
  TOPIC_SINK,
  type TopicPublisher,
  type TopicSink,
} from '../acceptor/kit.ts';

/**
 * What `fetch` puts in the socket's `data`: the accepted upgrade, for `open`, which replaces it
 * with the socket's sink (so the socket's data holds the sink, rather than a map from socket to
 * sink holding an entry per peer).
 */
interface BunSocketData {
  muxws?: UpgradeAccepted<unknown> | BunSink;
  /** The server that upgraded the socket, when it can publish to topics. */
  muxwsServer?: TopicPublisher;
}

/** The part of Bun's `ServerWebSocket` the handlers use. */
export interface BunServerWebSocket {
  /** Sends one message; returns -1 when queued behind backpressure, 0 when dropped. */
  send(data: string | Uint8Array): number;
  /** Closes the socket. */
  close(code?: number, reason?: string): void;
  /** Bytes queued but not yet sent (Bun 1.1.25 and later). */
  getBufferedAmount?(): number;
  /** What `server.upgrade()` was given as `data`. */
  readonly data?: unknown;
  /** Subscribes the socket to a topic of its server. */
  subscribe?(topic: string): void;
  /** Unsubscribes the socket from a topic. */
  unsubscribe?(topic: string): void;
}

/** The part of Bun's `Server` that `fetch` uses. */
export interface BunServer {
  /**
   * Upgrades the request; false when it is not a valid WebSocket upgrade. `data` is always given
   * (Bun's own `Server` requires it).
   */
  upgrade(
    request: Request,
    options: { headers?: Record<string, string>; data: unknown },
  ): boolean;
  /** Sends a message to every socket subscribed to a topic; broadcasts use it when present. */
  publish?(topic: string, data: string | Uint8Array): number;
}

/** The `websocket` handlers of {@linkcode bunHandlers}, for `Bun.serve({ websocket })`. */
export interface BunWebSocketHandlers {
  /**
   * The largest message Bun takes, in bytes: the acceptor's `limits.maxMessageBytes`, so a larger
   * message closes the socket with 1009 as soon as the frame that passes the limit arrives,
   * before Bun buffers the rest (Bun's own default is 16 MiB).
   */
  maxPayloadLength: number;
  /** Attaches the socket to the acceptor. */
  open(ws: BunServerWebSocket): void;
  /** Feeds one message to the socket's peer. */
  message(ws: BunServerWebSocket, message: string | Uint8Array): void;
  /** Ends the socket's peer. */
  close(ws: BunServerWebSocket, code: number, reason: string): void;
  /** Wakes the peer's writes waiting on backpressure. */
  drain(ws: BunServerWebSocket): void;
}

/** What {@linkcode bunHandlers} returns: spread it into `Bun.serve`. */
export interface BunHandlers {
  /** Upgrades a request the acceptor allows; resolves with the refusal otherwise. */
  fetch(request: Request, server: BunServer): Promise<Response | undefined>;
  /** The socket handlers. */
  websocket: BunWebSocketHandlers;
}

/**
 * The `fetch` and `websocket` handlers serving `acceptor` with `Bun.serve`. A request the
 * acceptor refuses gets its refusal (403, 400, 426 or 503, or what `authorize` decided) and no
 * Peer exists for it.
 *
 * @param acceptor The acceptor that takes the sockets.
 * @returns `{ fetch, websocket }`.
 *
 * @example A refused request: a foreign origin
 * ```ts
 * import { Acceptor } from '@muxws/core/acceptor';
 * import { bunHandlers } from '@muxws/core/bun';
 * import assert from 'node:assert/strict';
 *
 * const { fetch } = bunHandlers(new Acceptor({ idleTimeoutMs: 0 }));
 * const request = new Request('http://api.example/ws', {
 *   headers: {
 *     upgrade: 'websocket',
 *     origin: 'https://evil.example',
 *     'sec-websocket-protocol': 'muxws.v1.json',
 *   },
 * });
 * const server = { upgrade: () => assert.fail('a refused request must not be upgraded') };
 * assert.equal((await fetch(request, server))?.status, 403);
 * ```
 */
// deno-lint-ignore no-explicit-any
export function bunHandlers(acceptor: Acceptor<any, any>): BunHandlers {
  /** The sinks of sockets whose `data` cannot hold theirs (not an object, or frozen). */
  let others: WeakMap<BunServerWebSocket, BunSink> | undefined;
  const sinkOf = (ws: BunServerWebSocket): BunSink | undefined => {
    const held = (ws.data as BunSocketData | undefined)?.muxws;
    return held instanceof BunSink ? held : others?.get(ws);
  };
  return {
    async fetch(request, server) {
      const check = await acceptor.checkUpgrade(request);
      if (check instanceof Response) return check;
      // Bun echoes the first offered token unless the response names one.
      const headers = { 'Sec-WebSocket-Protocol': check.protocol };
      // Both keys at once: one shape, with no property added later.
      const data: BunSocketData = {
        muxws: check,
        muxwsServer: typeof server.publish === 'function' ? server as TopicPublisher : undefined,
      };
      if (server.upgrade(request, { headers, data })) return undefined;
      return malformedUpgrade(request);
    },
    websocket: {
      maxPayloadLength: messageLimitOf(acceptor),
      open(ws) {
        const socketData = ws.data as BunSocketData | undefined;
        const sink = new BunSink(ws, socketData?.muxwsServer);
        const held = socketData?.muxws;
        const accepted = held instanceof BunSink ? undefined : held;
        sink.handle = attachSink(acceptor, sink, { data: accepted?.data, tags: accepted?.tags });
        if (!holdSink(socketData, sink)) (others ??= new WeakMap()).set(ws, sink);
      },
      message(ws, message) {
        sinkOf(ws)?.handle?.message(message);
      },
      close(ws, code, reason) {
        const sink = sinkOf(ws);
        if (sink === undefined) return;
        const handle = sink.handle;
        sink.handle = undefined;
        others?.delete(ws);
        handle?.closed(code, reason);
      },
      drain(ws) {
        const sink = sinkOf(ws);
        if (sink === undefined) return;
        sink.backpressured = false;
        sink.handle?.drain();
      },
    },
  };
}

/** Keeps `sink` in the socket's `data` in place of the accepted upgrade; false when it cannot. */
function holdSink(data: BunSocketData | undefined, sink: BunSink): boolean {
  if (typeof data !== 'object' || data === null) return false;
  try {
    data.muxws = sink;
  } catch {
    // A frozen or sealed object without the key, in strict mode.
  }
  return data.muxws === sink;
}

/**
 * One socket's sink and handle: one object per peer with its methods on a shared prototype,
 * rather than closures per peer (an idle peer's memory, docs/performance.md). Without
 * `getBufferedAmount`, a send Bun queued behind backpressure counts as a full buffer until
 * `drain`. With the server that upgraded it, it is also the socket's {@linkcode TopicSink}.
 */
class BunSink implements TopicSink {
  readonly #ws: BunServerWebSocket;
  readonly publisher: TopicPublisher | undefined;
  backpressured = false;
  handle: AttachedPeer | undefined;

  constructor(ws: BunServerWebSocket, server: TopicPublisher | undefined) {
    this.#ws = ws;
    this.publisher = typeof ws.subscribe === 'function' ? server : undefined;
  }

  get [TOPIC_SINK](): TopicSink | undefined {
    return this.publisher === undefined ? undefined : this;
  }

  subscribe(topic: string): void {
    this.#ws.subscribe!(topic);
  }

  unsubscribe(topic: string): void {
    this.#ws.unsubscribe!(topic);
  }

  send(data: string | Uint8Array): void {
    if (this.#ws.send(data) === -1) this.backpressured = true;
  }

  close(code: number, reason: string): void {
    this.#ws.close(code, reason);
  }

  get bufferedAmount(): number {
    const ws = this.#ws;
    if (typeof ws.getBufferedAmount === 'function') return ws.getBufferedAmount();
    return this.backpressured ? Number.MAX_SAFE_INTEGER : 0;
  }
}
