/**
 * The `ws` package's socket driver ({@linkcode wsDriver}; a dialer's, with its refusal:
 * {@linkcode wsDialerDriver}), and the one place that asks whether an accepted socket is a `ws`
 * one ({@linkcode socketDriver}). What the Node `ws` package's sockets need that
 * no web-standard socket does, in one Node-only file that still imports nothing from Node
 * (duck-typed, web-standard only):
 *
 * - write coalescing ({@linkcode cork}) for sockets that expose a corkable stream: the `ws`
 *   package's `WebSocket` (client and server) keeps its `net.Socket` as `_socket`. Every
 *   `ws.send()` is otherwise one `writev` system call. The first send of a tick on a socket goes
 *   out at once, as it would anyway; a second send in the same tick corks the stream, so the rest
 *   of a burst (a batch of answers, 64 requests issued at once) is written together when the
 *   microtask queue runs. Nothing is delayed past the current tick, a lone message per tick is
 *   not corked at all (corking it cost a single request on Node more than it saved), and a socket
 *   without such a stream is left alone;
 * - listeners on a `ws` socket's EventEmitter side, shared by every `ws` socket, and an `error`
 *   listener that keeps `ws` from throwing;
 * - a dialer's refusal of its upgrade, with its `Retry-After` ({@linkcode onWsRefusal}), for the
 *   dialers that name `ws` through `wsDialer()` (`adapters/node.ts`): the dialer itself never
 *   imports this file, so a browser's bundle carries none of it;
 * - a broadcast's text encoded once ({@linkcode textBytes}): `ws` encodes a
 *   string to UTF-8 on every `send()`, once per peer of a broadcast, but sends bytes it is given
 *   as they are, as text when told `binary: false`.
 *
 * Internal: imported from `lib/` only, never re-exported.
 *
 * @module
 */

import {
  type DriverSocket,
  type SocketData,
  type SocketDriver,
  type SocketReceiver,
  webSocketDriver,
} from './socket_driver.ts';

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

/**
 * How long a `Retry-After` header (RFC 9110 §10.2.3) asks the client to wait, in milliseconds:
 * `delay-seconds` (digits only) times 1000, or an HTTP date minus `now` (0 when it has passed).
 *
 * @param value The header's value; `undefined` when there was none.
 * @param now The current epoch ms, for an HTTP date.
 * @returns The wait, or `undefined` for a missing or unparsable value.
 */
export function retryAfterMs(value: string | undefined, now: number): number | undefined {
  if (typeof value !== 'string') return undefined;
  const text = value.trim();
  if (/^\d+$/.test(text)) return Number(text) * 1000;
  // An HTTP date has a day or month name; digits alone were handled above.
  if (!/[a-z]/i.test(text)) return undefined;
  const at = Date.parse(text);
  return Number.isNaN(at) ? undefined : Math.max(0, at - now);
}

/**
 * Calls `refused` with the status of an HTTP refusal of a dialer's upgrade and the wait its
 * `Retry-After` header asks for ({@linkcode retryAfterMs}; `now` dates an HTTP date). The `ws`
 * package (Node) reports one through an EventEmitter `unexpected-response` event carrying the
 * response, and abandons the handshake itself only when nobody listens, so `refused` must close
 * the socket; the `error` and `close` events that follow fail the attempt. A WHATWG `WebSocket`
 * (browsers, Deno, Bun) exposes nothing of a refusal: a socket without an `on` method is left
 * alone.
 */
export function onWsRefusal(
  socket: unknown,
  now: () => number,
  refused: (status: number, retryAfterMs: number | undefined) => void,
): void {
  const on = (socket as { on?: unknown }).on;
  if (typeof on !== 'function') return;
  on.call(socket, 'unexpected-response', (_request: unknown, response: unknown) => {
    const { statusCode, headers } = (response ?? {}) as {
      statusCode?: unknown;
      headers?: Record<string, unknown>;
    };
    const header = headers?.['retry-after'];
    refused(
      typeof statusCode === 'number' ? statusCode : 0,
      retryAfterMs(typeof header === 'string' ? header : undefined, now()),
    );
  });
}

/**
 * The UTF-8 bytes of a text message, encoded once for every `ws` peer of a broadcast: sent as a
 * text message, never binary, by {@linkcode sendWs}. Only a `ws` socket is ever handed one.
 */
export class TextBytes extends Uint8Array {}

const encoder = /* @__PURE__ */ new TextEncoder();

/** `text` encoded as {@linkcode TextBytes}. */
export function textBytes(text: string): TextBytes {
  const bytes = encoder.encode(text);
  return new TextBytes(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}

/** `ws`'s send options of a text message given as bytes (`ws` copies them, never keeps them). */
const AS_TEXT = { binary: false };

/** Sends `data` on a `ws` socket: {@linkcode TextBytes} as text, anything else as usual. */
function sendWs(socket: WsSocket, data: string | Uint8Array): void {
  if (data instanceof TextBytes) socket.send(data, AS_TEXT);
  else socket.send(data);
}

/**
 * The `ws` package's socket (Node), seen through its EventEmitter side: `message` with the data
 * (a `Buffer` for text, an `ArrayBuffer` for binary once `binaryType` is `'arraybuffer'`) and
 * `isBinary`, `close` with the code and the reason's bytes.
 */
interface WsSocket extends DriverSocket {
  /** Sends a message; bytes go out as text with `{ binary: false }`. */
  send(data: string | Uint8Array, options?: { binary: boolean }): void;
  /** Adds a listener. */
  // deno-lint-ignore no-explicit-any
  on(type: 'message' | 'close' | 'error', listener: (...args: any[]) => void): unknown;
  /** Removes a listener. */
  // deno-lint-ignore no-explicit-any
  removeListener(type: 'message' | 'close' | 'error', listener: (...args: any[]) => void): unknown;
}

/**
 * Whether `socket` is a `ws` socket (an EventEmitter with `terminate()`). Its `addEventListener`
 * wraps every listener in a function of its own and every message in an event object; its
 * EventEmitter side takes the three listeners every `ws` socket shares below instead, which
 * saves about half a kilobyte per idle peer and an allocation per message.
 */
function isWs(socket: DriverSocket): socket is WsSocket {
  const s = socket as Partial<WsSocket> & { terminate?: unknown };
  return typeof s.on === 'function' && typeof s.removeListener === 'function' &&
    typeof s.terminate === 'function';
}

/** The receivers of accept()'s `ws` sockets, for the listeners they share. */
const receivers = new WeakMap<object, SocketReceiver>();

function onWsMessage(this: WsSocket, data: unknown, isBinary?: boolean): void {
  // ws 8 hands text over as a Buffer (ws 7 as a string): decoded as UTF-8, as its events do.
  receivers.get(this)?.message((isBinary === false ? String(data) : data) as SocketData);
}

function onWsClose(this: WsSocket, code?: number, reason?: unknown): void {
  const receiver = receivers.get(this);
  if (receiver === undefined) return;
  receivers.delete(this);
  this.removeListener('message', onWsMessage);
  this.removeListener('close', onWsClose);
  receiver.closed(code, reason === undefined ? '' : String(reason));
}

/**
 * A `ws` socket's error (a malformed frame from the dialer, a reset connection) is followed by
 * its close, which ends the peer; the listener only keeps `ws` from throwing it.
 */
function onWsError(): void {}

/** Keeps a `ws` socket from throwing its errors out of the process: they end in its close. */
function guardWsErrors(socket: WsSocket): void {
  socket.on('error', onWsError);
}

/**
 * Feeds an open `ws` socket's messages and close to `receiver` through the listeners every `ws`
 * socket shares, until it closes.
 *
 * @returns False, listening to nothing, when the socket already has a receiver.
 */
function listenWs(socket: WsSocket, receiver: SocketReceiver): boolean {
  if (receivers.has(socket)) return false;
  receivers.set(socket, receiver);
  socket.on('message', onWsMessage);
  socket.on('close', onWsClose);
  return true;
}

/** Sends on a `ws` socket: corked ({@linkcode cork}), {@linkcode TextBytes} as text. */
function sendCorked(socket: DriverSocket, data: string | Uint8Array): void {
  cork(socket);
  sendWs(socket as WsSocket, data);
}

/**
 * Listens to a `ws` socket on its EventEmitter side while it is open (the WHATWG side while it
 * connects), with an `error` listener so an error ends in the close that follows instead of
 * being thrown out of the process.
 */
function listenGuarded(socket: DriverSocket, receiver: SocketReceiver): void {
  guardWsErrors(socket as WsSocket);
  if (socket.readyState !== 1 || !listenWs(socket as WsSocket, receiver)) {
    webSocketDriver.listen(socket, receiver);
  }
}

/** The `ws` package's driver: {@linkcode sendCorked}, {@linkcode listenGuarded}. */
export const wsDriver: SocketDriver = {
  takesTextBytes: true,
  send: sendCorked,
  listen: listenGuarded,
};

/**
 * The driver of a dialer's `ws` sockets, which `wsDialer()` (`adapters/node.ts`) hands the
 * dialer: {@linkcode wsDriver}'s, and a refusal of the upgrade with its `Retry-After`
 * ({@linkcode onWsRefusal}). The acceptor's sockets never see a refusal, so its driver has none.
 */
export const wsDialerDriver: SocketDriver = {
  takesTextBytes: true,
  send: sendCorked,
  listen: listenGuarded,
  onRefusal: onWsRefusal,
};

/** The driver of `socket`: {@linkcode wsDriver} for a `ws` socket, else the WHATWG one. */
export function socketDriver(socket: DriverSocket): SocketDriver {
  return isWs(socket) ? wsDriver : webSocketDriver;
}
