/**
 * The Node adapter: {@linkcode attach} puts an {@linkcode Acceptor}
 * on a `node:http` or `node:https` server's upgrades, through the `ws` package's
 * `WebSocketServer` (a peer dependency: install `ws` beside muxws). Each upgrade on the
 * attachment's `path` is asked of {@linkcode Acceptor.checkUpgrade} first (with the acceptor's
 * `authorize`): a refusal is written as the HTTP response it is, status, headers
 * (such as `Retry-After` on a 503) and body, and no Peer exists for it; an accepted upgrade
 * selects exactly the muxws subprotocol and its peer starts with the `data` and `tags`
 * `authorize` returned. Plain HTTP requests are never seen: the server's `request` handler keeps
 * them.
 *
 * A Node dialer names `ws` through {@linkcode wsDialer}, so that its dials read the `Retry-After`
 * of a refused upgrade and its sends are coalesced:
 * `connect(url, { WebSocket: wsDialer(WebSocket) })`.
 *
 * This is the one file of the library that imports a Node package; the rest is web-standard.
 *
 * @example Serve an acceptor on Node
 * ```ts ignore
 * import { createServer } from 'node:http';
 * import { Acceptor } from '@muxws/core/acceptor';
 * import { attach } from '@muxws/core/node';
 *
 * const acceptor = new Acceptor({ onStream: (stream) => ({ echo: stream.payload }) });
 * const server = createServer((_request, response) => response.writeHead(404).end());
 * attach(server, acceptor, { path: '/ws' });
 * server.listen(8080);
 * ```
 *
 * @module
 */
import { type IncomingMessage, type Server as HttpServer, STATUS_CODES } from 'node:http';
import type { Server as HttpsServer } from 'node:https';
import type { Duplex } from 'node:stream';
import { WebSocketServer } from 'ws';
import type { Acceptor } from '../acceptor/acceptor.ts';
import { CloseCode } from '../wire/codes.ts';
import { messageLimitOf, requestOf, upgradeCheckOf, type UpgradeHead } from '../acceptor/kit.ts';
import { SOCKET_DRIVER } from '../sockets/socket_driver.ts';
import { wsDialerDriver } from '../sockets/node_ws.ts';
import { mustBe } from '../util/describe.ts';

/**
 * The options of the `ws` package's `WebSocketServer` that {@linkcode attach} passes on; the
 * ones that decide where it listens and which subprotocol it selects are the adapter's.
 */
export interface NodeWsOptions {
  /**
   * The largest message taken, in bytes; a larger one closes the socket with 1009 as soon as
   * the frame that passes the limit arrives, before `ws` buffers the rest. The acceptor's own
   * limit applies as well, so a value above the acceptor's only makes `ws` buffer what the
   * acceptor then refuses.
   *
   * @default {the acceptor's `limits.maxMessageBytes`}
   */
  maxPayload?: number;
  /**
   * Whether to negotiate permessage-deflate (`true`, or `ws`'s options object for it).
   *
   * @default {false}
   */
  perMessageDeflate?: boolean | Record<string, unknown>;
  /**
   * Whether the server's `clients` holds its open sockets.
   *
   * @default {true}
   */
  clientTracking?: boolean;
  /**
   * Whether to skip checking that text messages are valid UTF-8.
   *
   * @default {false}
   */
  skipUTF8Validation?: boolean;
}

/** A socket of {@linkcode NodeWsServer.clients}: the `ws` package's server-side `WebSocket`. */
export interface NodeWsSocket {
  /** `WebSocket.readyState`: 0 connecting, 1 open, 2 closing, 3 closed. */
  readonly readyState: number;
  /** The subprotocol selected: the muxws token of the acceptor's codec. */
  readonly protocol: string;
  /** Closes the socket with a close handshake. */
  close(code?: number, reason?: string): void;
  /** Drops the connection at once, without a close handshake. */
  terminate(): void;
}

/**
 * The `ws` package's `WebSocketServer` of an {@linkcode Attachment}, seen through the part this
 * entry types (the object is that server: `import type { WebSocketServer } from 'ws'` to use
 * the rest).
 */
export interface NodeWsServer {
  /** The open sockets it upgraded, while `clientTracking` is on. */
  readonly clients: ReadonlySet<NodeWsSocket>;
}

/** Options of {@linkcode attach}. */
export interface AttachOptions {
  /**
   * Which upgrades the acceptor takes, by the request's pathname (the URL without its query):
   * a string matches that pathname exactly (`'/ws'` takes `/ws` and `/ws?room=1`, not `/ws/`),
   * a predicate takes the pathnames it returns true for. Upgrades on other paths are left to the
   * server's other `upgrade` listeners; when the server has none but attachments, and no
   * attachment takes the path, the upgrade is answered 404.
   *
   * @default {every path}
   */
  path?: string | ((pathname: string) => boolean);
  /** Options of the `ws` package's `WebSocketServer`, such as `maxPayload`. */
  ws?: NodeWsOptions;
}

/** What {@linkcode attach} returns. */
export interface Attachment {
  /**
   * The `ws` server, in `noServer` mode; its `clients` are the open sockets it upgraded (unless
   * `ws.clientTracking` is false).
   */
  readonly wss: NodeWsServer;
  /**
   * Stops taking upgrades and closes the `ws` server. The HTTP server keeps listening, and the
   * open sockets stay open: {@linkcode Acceptor.close} ends those (GOAWAY, drain, close). An
   * upgrade still waiting for `authorize` when this is called is refused with 503.
   */
  close(): void;
}

/** The request target's pathname: up to its query (an absolute-form target: its URL's path). */
function pathnameOf(url: string | undefined): string {
  if (url === undefined) return '/';
  if (!url.startsWith('/')) return URL.canParse(url) ? new URL(url).pathname : url;
  const query = url.indexOf('?');
  return query === -1 ? url : url.slice(0, query);
}

/** The path option as a predicate; undefined: every path. */
function pathMatcher(path: AttachOptions['path']): ((pathname: string) => boolean) | undefined {
  if (path === undefined) return undefined;
  if (typeof path === 'function') return path;
  if (typeof path === 'string') return (pathname) => pathname === path;
  throw new TypeError(
    `Cannot attach as "path" must be a string or a function: current value is ${typeof path}`,
  );
}

/**
 * The upgrade as a web `Request`: method, `http(s)://host` and the request target, and every
 * header as received. Built once per upgrade on the path, never for a plain request, and only
 * when something needs it (see {@linkcode UpgradeMessage}).
 */
function toRequest(message: IncomingMessage, url: string): Request {
  const headers = new Headers();
  const raw = message.rawHeaders;
  for (let i = 0; i + 1 < raw.length; i += 2) headers.append(raw[i], raw[i + 1]);
  return new Request(url, {
    method: message.method,
    headers,
  });
}

/** The URL of the upgrade's `Request`: `http(s)://host` and the target, or an absolute target. */
function urlOf(message: IncomingMessage): string {
  const secure = (message.socket as { encrypted?: boolean }).encrypted === true;
  const target = message.url ?? '/';
  return target.startsWith('/')
    ? `${secure ? 'https' : 'http'}://${message.headers.host ?? 'localhost'}${target}`
    : target;
}

/**
 * The upgrade as the acceptor's checks read it: the method and a few headers, straight from the
 * message, and the whole `Request` only when an origin predicate or `authorize` is handed it
 * (building it cost more than the rest of the checks together). Each header is read as the
 * `Request` would have it: every field of that name, joined with `, `.
 */
class UpgradeMessage implements UpgradeHead {
  readonly #message: IncomingMessage;
  readonly url: string;
  #request: Request | undefined;

  constructor(message: IncomingMessage, url: string) {
    this.#message = message;
    this.url = url;
  }

  get method(): string {
    return this.#message.method ?? 'GET';
  }

  get headers(): { get(name: string): string | null } {
    return this;
  }

  /** The value of the header `name` (lowercase), or null when the upgrade has none. */
  get(name: string): string | null {
    const raw = this.#message.rawHeaders;
    let value: string | null = null;
    for (let i = 0; i + 1 < raw.length; i += 2) {
      const field = raw[i];
      if (field.length !== name.length || field.toLowerCase() !== name) continue;
      value = value === null ? raw[i + 1] : `${value}, ${raw[i + 1]}`;
    }
    return value;
  }

  request(): Request {
    return this.#request ??= toRequest(this.#message, this.url);
  }
}

/** The last `Host` value a URL took as it is: a server's upgrades mostly name the same host. */
let plainHost: string | undefined;

/** Whether `http://host/` is a URL a `Request` takes (no credentials); the last such is cached. */
function hostParses(host: string | undefined): boolean {
  if (host === undefined || host === plainHost) return true;
  if (host.includes('@') || !URL.canParse(`http://${host}/`)) return false;
  plainHost = host;
  return true;
}

/**
 * What the checks are handed for `message`: its {@linkcode UpgradeMessage}, or the `Request`
 * built at once where the web `Request` might refuse to represent it (so such an upgrade is
 * answered 400 as before): a method other than `GET` (refused anyway), an absolute-form target,
 * or a `Host` a URL does not take.
 *
 * @throws {TypeError} When the `Request` cannot be built.
 */
function upgradeHead(message: IncomingMessage): UpgradeHead | Request {
  const url = urlOf(message);
  if (
    message.method !== 'GET' || message.url?.startsWith('/') !== true ||
    !hostParses(message.headers.host)
  ) {
    return toRequest(message, url);
  }
  return new UpgradeMessage(message, url);
}

/** The answer to an upgrade on a path no attachment takes. */
function notFound(): Response {
  return new Response('No WebSocket endpoint at this path', {
    status: 404,
    headers: { 'content-type': 'text/plain; charset=utf-8' },
  });
}

/** Headers the written refusal sets itself. */
const FRAMING = new Set(['connection', 'content-length', 'transfer-encoding', 'keep-alive']);

/** Writes `response` (status, headers, body) on the raw socket of a refused upgrade, and ends it. */
async function refuse(socket: Duplex, response: Response): Promise<void> {
  const body = new Uint8Array(await response.arrayBuffer());
  if (socket.destroyed) return;
  let head =
    `HTTP/1.1 ${response.status} ${response.statusText || STATUS_CODES[response.status] || ''}` +
    '\r\n';
  for (const [name, value] of response.headers) {
    if (!FRAMING.has(name)) head += `${name}: ${value}\r\n`;
  }
  head += `Connection: close\r\nContent-Length: ${body.byteLength}\r\n\r\n`;
  socket.write(head, 'latin1');
  socket.end(body);
}

/** Keeps a client's reset during the upgrade from being thrown out of the process. */
function ignoreSocketError(): void {}

/** The `upgrade` listeners of every attachment, to tell them from a server's other listeners. */
const attachmentListeners = new WeakSet<(...args: never[]) => unknown>();

/** The upgrades an attachment took, so the server's last attachment knows when none did. */
const taken = new WeakSet<IncomingMessage>();

/**
 * Whether `listener`, an attachment's, is the last `upgrade` listener of `server` and every one
 * before it is an attachment's too: then an upgrade none of them took is answered by nobody.
 */
function answersTheRest(server: HttpServer | HttpsServer, listener: unknown): boolean {
  const listeners = server.listeners('upgrade');
  if (listeners.at(-1) !== listener) return false;
  return listeners.every((other) => attachmentListeners.has(other as () => unknown));
}

/**
 * Attaches `acceptor` to `server`'s upgrades: each one on `options.path` (default: every path)
 * goes through {@linkcode Acceptor.checkUpgrade} and, accepted, through the `ws` server's
 * handshake (selecting exactly the muxws subprotocol) into {@linkcode Acceptor.accept} with the
 * `data` and `tags` `authorize` returned. A refusal (426, 503 with `Retry-After` while the
 * acceptor closes, 403, 400, or what `authorize` decided) is written as that response, headers
 * and body included, and the connection closed. A malformed upgrade (no `Sec-WebSocket-Key`, a
 * wrong version) is answered 400 by `ws`.
 *
 * `ws`'s `maxPayload` defaults to the acceptor's `limits.maxMessageBytes`, so a larger message
 * closes the socket with 1009 as soon as the frame that passes the limit arrives, before `ws`
 * buffers the rest.
 *
 * An upgrade on another path is left for the server's other `upgrade` listeners. When all of
 * them are attachments (several `attach()` calls on different paths), one that no attachment
 * takes is answered 404 and its connection closed, so a client that got the path wrong fails at
 * once. When the server has an `upgrade` listener of its own (another WebSocket server), that
 * upgrade is left to it untouched: a listener that takes some paths should answer the rest, as
 * Node no longer manages a connection it handed to an `upgrade` listener.
 *
 * The server's plain requests are never seen; only an upgrade on the path is turned into a web
 * `Request`.
 *
 * @param server The `node:http` or `node:https` server, listening or not.
 * @param acceptor The acceptor that takes the sockets.
 * @param options The path to serve and the `ws` server's options.
 * @returns The attachment: its `ws` server, and `close()` to detach it.
 * @throws {TypeError} When `path` is neither a string nor a function.
 *
 * @example Serve an acceptor on a Node server and call it
 * ```ts
 * import { createServer } from 'node:http';
 * import type { AddressInfo } from 'node:net';
 * import WebSocket from 'ws';
 * import { connect } from '@muxws/core';
 * import { Acceptor } from '@muxws/core/acceptor';
 * import { attach } from '@muxws/core/node';
 * import assert from 'node:assert/strict';
 *
 * const acceptor = new Acceptor({ onStream: (stream) => ({ echo: stream.payload }) });
 * const server = createServer((_request, response) => response.writeHead(404).end());
 * const attachment = attach(server, acceptor, { path: '/ws' });
 * await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
 * const { port } = server.address() as AddressInfo;
 * const connection = await connect(`ws://127.0.0.1:${port}/ws`, { WebSocket, heartbeat: false });
 * try {
 *   assert.deepEqual(await connection.request('hi'), { echo: 'hi' });
 * } finally {
 *   await connection.close();
 *   await acceptor.close({ drainMs: 0 });
 *   attachment.close();
 *   await new Promise((resolve) => server.close(resolve));
 * }
 * ```
 */
export function attach(
  server: HttpServer | HttpsServer,
  // deno-lint-ignore no-explicit-any
  acceptor: Acceptor<any, any>,
  options: AttachOptions = {},
): Attachment {
  const matches = pathMatcher(options.path);
  const wss = new WebSocketServer({
    ...options.ws,
    // `ws` reads an explicit undefined as 0, which it takes for no limit at all.
    maxPayload: options.ws?.maxPayload ?? messageLimitOf(acceptor),
    noServer: true,
    handleProtocols: (offered) => acceptor.protocol([...offered]) ?? false,
  });
  const check = upgradeCheckOf(acceptor) ??
    ((request: UpgradeHead | Request) => acceptor.checkUpgrade(requestOf(request)));
  let closed = false;
  const onUpgrade = (message: IncomingMessage, socket: Duplex, head: Buffer): void => {
    if (matches !== undefined && !matches(pathnameOf(message.url))) {
      if (taken.has(message) || !answersTheRest(server, onUpgrade)) return;
      socket.on('error', ignoreSocketError);
      refuse(socket, notFound()).catch(() => socket.destroy());
      return;
    }
    taken.add(message);
    socket.on('error', ignoreSocketError);
    upgrade(message, socket, head).catch(() => socket.destroy());
  };
  attachmentListeners.add(onUpgrade);
  const upgrade = async (message: IncomingMessage, socket: Duplex, head: Buffer) => {
    let decision: Awaited<ReturnType<Acceptor['checkUpgrade']>>;
    try {
      decision = await check(upgradeHead(message));
    } catch {
      // a request the web `Request` cannot represent (a malformed target or header)
      decision = new Response('Bad upgrade request', { status: 400 });
    }
    if (closed && !(decision instanceof Response)) {
      decision = new Response('The server no longer takes upgrades here', {
        status: 503,
        headers: { 'retry-after': '1' },
      });
    }
    if (decision instanceof Response) return await refuse(socket, decision);
    const { data, tags } = decision;
    socket.removeListener('error', ignoreSocketError);
    wss.handleUpgrade(message, socket, head, (ws) => {
      try {
        acceptor.accept(ws, { data, tags });
      } catch {
        ws.close(CloseCode.Internal, 'accept failed');
      }
    });
  };
  server.on('upgrade', onUpgrade);
  return {
    wss,
    close() {
      if (closed) return;
      closed = true;
      server.removeListener('upgrade', onUpgrade);
      wss.close();
    },
  };
}

/**
 * The `ws` package's `WebSocket` class (or a subclass of it) as the dialer's `WebSocket` option,
 * with what the class passed as it is leaves out:
 *
 * - a refusal of the upgrade is read: its `Retry-After` holds the next redial at least that long
 *   (capped at the schedule's `maxDelayMs`), as an acceptor that is closing asks with 503 and
 *   `Retry-After: 1`;
 * - sends made in one tick (a burst of requests) leave in one write of the TCP socket: it is
 *   corked from the second send of the tick until the microtask queue runs; a lone send per tick
 *   is not corked.
 *
 * The class passed as it is (`connect(url, { WebSocket })`) still dials, without either: a refused
 * upgrade is a failed dial like any other, redialled on the ordinary backoff, and every send is a
 * write of its own. This glue is reached only through this function, so an application that never
 * calls it (a browser's) carries none of it.
 *
 * @param WebSocket The `ws` package's default export, or a subclass of it (one that sends headers
 * with every dial, say).
 * @returns A subclass of `WebSocket`, for `connect()`'s `WebSocket` option.
 * @throws {TypeError} When `WebSocket` is not a constructor.
 *
 * @example Dial from Node with `ws`
 * ```ts
 * import { createServer } from 'node:http';
 * import type { AddressInfo } from 'node:net';
 * import WebSocket from 'ws';
 * import { connect } from '@muxws/core';
 * import { Acceptor } from '@muxws/core/acceptor';
 * import { attach, wsDialer } from '@muxws/core/node';
 * import assert from 'node:assert/strict';
 *
 * const acceptor = new Acceptor({ onStream: (stream) => ({ echo: stream.payload }) });
 * const server = createServer((_request, response) => response.writeHead(404).end());
 * attach(server, acceptor, { path: '/ws' });
 * await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
 * const { port } = server.address() as AddressInfo;
 * const connection = await connect(`ws://127.0.0.1:${port}/ws`, {
 *   WebSocket: wsDialer(WebSocket),
 *   heartbeat: false,
 * });
 * try {
 *   assert.deepEqual(await connection.request('hi'), { echo: 'hi' });
 * } finally {
 *   await connection.close();
 *   await acceptor.close({ drainMs: 0 });
 *   await new Promise((resolve) => server.close(resolve));
 * }
 * ```
 */
export function wsDialer<T extends new (url: string, protocols?: string | string[]) => object>(
  WebSocket: T,
): T {
  if (typeof WebSocket !== 'function') {
    throw new TypeError(
      mustBe('dial with ws', 'WebSocket', 'the "ws" package\'s WebSocket class', WebSocket),
    );
  }
  // deno-lint-ignore no-explicit-any
  const Base = WebSocket as unknown as new (...args: any[]) => object;
  /** `WebSocket`, carrying the `ws` driver the dialer sends through and reads refusals with. */
  class WsDialerSocket extends Base {
    static readonly [SOCKET_DRIVER] = wsDialerDriver;
  }
  return WsDialerSocket as unknown as T;
}
