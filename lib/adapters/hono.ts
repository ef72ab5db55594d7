/**
 * The Hono adapter: {@linkcode muxws} is a Hono handler serving an
 * {@linkcode Acceptor} through the runtime's own `upgradeWebSocket` (`hono/deno`, `hono/bun`,
 * `@hono/node-ws`). It awaits {@linkcode Acceptor.checkUpgrade} first (with the acceptor's
 * `authorize`), so a refused request gets its 403/400/426/503 (or what `authorize`
 * decided) and no Peer, and feeds each socket to {@linkcode Acceptor.attach} with the `data` and
 * `tags` `authorize` returned, keyed by the raw socket (Hono's Bun helper makes a new context per
 * event).
 *
 * On Cloudflare Workers (where `WebSocketPair` exists) it answers with its own `WebSocketPair`
 * 101 response carrying `Sec-WebSocket-Protocol`, since Hono's Workers helper omits that header
 * and Chrome then fails the handshake; the `upgradeWebSocket` passed is not used there.
 *
 * This entry imports nothing from Hono: the types below are the structural parts it uses.
 *
 * @example Hono on Deno
 * ```ts ignore
 * import { Hono } from 'hono';
 * import { upgradeWebSocket } from 'hono/deno';
 * import { Acceptor } from '@muxws/core/acceptor';
 * import { muxws } from '@muxws/core/hono';
 *
 * const acceptor = new Acceptor({ onStream: (stream) => ({ echo: stream.payload }) });
 * const app = new Hono();
 * app.get('/ws', muxws(acceptor, { upgradeWebSocket }));
 * Deno.serve({ port: 8080 }, app.fetch);
 * ```
 *
 * @module
 */
import type {
  Acceptor,
  AttachedPeer,
  IncomingData,
  UpgradeAccepted,
} from '../acceptor/acceptor.ts';
import { attachSink } from '../acceptor/kit.ts';
import { describe } from '../util/describe.ts';
import { upgrade as workersUpgrade } from './cloudflare.ts';

/** The part of Hono's `Context` the handler reads. */
export interface HonoContext {
  /** The request; `raw` is the web-standard `Request`. */
  req: { raw: Request };
}

/** The part of Hono's `WSContext` the handler uses. */
export interface HonoWSContext {
  /** The runtime's socket: the key under which the peer is found again. */
  raw?: unknown;
  /** Sends one message. */
  send(data: string | Uint8Array<ArrayBuffer>): void;
  /** Closes the socket. */
  close(code?: number, reason?: string): void;
}

/** The events the handler gives Hono's `upgradeWebSocket`. */
export interface HonoWSEvents {
  /** The socket opened: attach it. */
  onOpen(event: unknown, ws: HonoWSContext): void;
  /** One message. */
  onMessage(event: { data: unknown }, ws: HonoWSContext): void;
  /** The socket closed. */
  onClose(event: { code?: number; reason?: string }, ws: HonoWSContext): void;
}

/**
 * The shape of a runtime's `upgradeWebSocket` (`hono/deno`, `hono/bun`, `@hono/node-ws`): given
 * the events and options it returns a middleware. `options.protocol` is passed for the helpers
 * that honour it (Deno); the others echo the first offered token, which a muxws dialer
 * always makes the muxws one.
 */
export type UpgradeWebSocket = (
  // deno-lint-ignore no-explicit-any
  createEvents: (c: any) => HonoWSEvents,
  // deno-lint-ignore no-explicit-any
  options?: any,
  // deno-lint-ignore no-explicit-any
) => (c: any, next: () => Promise<void>) => unknown;

/** The options of {@linkcode muxws}. */
export interface MuxwsHonoOptions {
  /** The runtime's `upgradeWebSocket` helper. */
  upgradeWebSocket: UpgradeWebSocket;
}

/** The Hono handler {@linkcode muxws} returns, for `app.get(path, handler)`. */
export type MuxwsHandler = (
  c: HonoContext,
  next: () => Promise<void>,
) => Promise<Response | void>;

/**
 * One socket's sink: an object per peer with its methods on a shared prototype, rather than
 * closures per peer (an idle peer's memory, docs/performance.md).
 */
class HonoSink {
  readonly #ws: HonoWSContext;

  constructor(ws: HonoWSContext) {
    this.#ws = ws;
  }

  send(data: string | Uint8Array): void {
    this.#ws.send(data as string | Uint8Array<ArrayBuffer>);
  }

  close(code: number, reason: string): void {
    this.#ws.close(code, reason);
  }

  get bufferedAmount(): number | undefined {
    const raw = this.#ws.raw as
      | { bufferedAmount?: unknown; getBufferedAmount?: unknown }
      | undefined;
    if (typeof raw?.bufferedAmount === 'number') return raw.bufferedAmount;
    if (typeof raw?.getBufferedAmount === 'function') {
      return (raw.getBufferedAmount as () => number)();
    }
    return undefined;
  }
}

/**
 * A Hono handler serving `acceptor` with the runtime's `upgradeWebSocket`.
 *
 * @param acceptor The acceptor that takes the sockets.
 * @param options `upgradeWebSocket`: the runtime's helper.
 * @returns The handler, for `app.get('/ws', handler)`.
 * @throws {TypeError} When `upgradeWebSocket` is not a function.
 *
 * @example A request without an upgrade is answered with 426
 * ```ts
 * import { Acceptor } from '@muxws/core/acceptor';
 * import { muxws } from '@muxws/core/hono';
 * import assert from 'node:assert/strict';
 *
 * const handler = muxws(new Acceptor({ idleTimeoutMs: 0 }), {
 *   upgradeWebSocket: () => () => assert.fail('a refused request must not be upgraded'),
 * });
 * const c = { req: { raw: new Request('http://localhost/ws') } };
 * const response = await handler(c, () => Promise.resolve());
 * assert.equal(response?.status, 426);
 * ```
 */
// deno-lint-ignore no-explicit-any
export function muxws(acceptor: Acceptor<any, any>, options: MuxwsHonoOptions): MuxwsHandler {
  const upgradeWebSocket = options?.upgradeWebSocket;
  if (typeof upgradeWebSocket !== 'function') {
    throw new TypeError(
      `Cannot create the muxws Hono handler as "upgradeWebSocket" must be a function: current value is ${
        describe(upgradeWebSocket)
      }`,
    );
  }
  const peers = new WeakMap<object, AttachedPeer>();
  const keyOf = (ws: HonoWSContext): object =>
    typeof ws.raw === 'object' && ws.raw !== null ? ws.raw : ws;
  const events: Omit<HonoWSEvents, 'onOpen'> = {
    onMessage(event, ws) {
      peers.get(keyOf(ws))?.message(event.data as IncomingData);
    },
    onClose(event, ws) {
      const key = keyOf(ws);
      const handle = peers.get(key);
      peers.delete(key);
      handle?.closed(event?.code, event?.reason);
    },
  };
  // One set of events per upgrade: its onOpen seeds the peer with what authorize returned.
  const eventsFor = (check: UpgradeAccepted<unknown>): HonoWSEvents => ({
    onOpen(_event, ws) {
      const options = { data: check.data, tags: check.tags };
      peers.set(keyOf(ws), attachSink(acceptor, new HonoSink(ws), options));
    },
    onMessage: events.onMessage,
    onClose: events.onClose,
  });
  return async (c, next) => {
    // On Workers, the ./cloudflare upgrade: its own 101 with Sec-WebSocket-Protocol, and a reply
    // to the dialer's close frame (which a bare WebSocketPair never sends).
    if (typeof (globalThis as { WebSocketPair?: unknown }).WebSocketPair === 'function') {
      return workersUpgrade(c.req.raw, acceptor);
    }
    const check = await acceptor.checkUpgrade(c.req.raw);
    if (check instanceof Response) return check;
    const middleware = upgradeWebSocket(() => eventsFor(check), { protocol: check.protocol });
    const result = await middleware(c, next);
    return result instanceof Response ? result : undefined;
  };
}
