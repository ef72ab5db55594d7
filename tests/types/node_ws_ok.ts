// Must compile (`deno check`): the dialer's `WebSocket` option takes the `ws` package's class and
// the global `WebSocket` (Node 22 and later, Deno, Bun, browsers) with no cast (WSM-APP-008).
import WsWebSocket from 'ws';
import { connect, type Connection } from 'muxws';

export function withWs(url: string): Promise<Connection> {
  return connect(url, { WebSocket: WsWebSocket });
}

export function withGlobal(url: string): Promise<Connection> {
  return connect(url, { WebSocket: globalThis.WebSocket });
}
