// Must compile (`deno check`): the dialer's `WebSocket` option takes the `ws` package's class (as
// it is, through wsDialer(), and a subclass of it through wsDialer()) and the global `WebSocket`
// (Node 22 and later, Deno, Bun, browsers) with no cast (WSM-APP-008).
import WsWebSocket from 'ws';
import { connect, type Connection } from 'muxws';
import { wsDialer } from 'muxws/node';

export function withWs(url: string): Promise<Connection> {
  return connect(url, { WebSocket: WsWebSocket });
}

export function withGlobal(url: string): Promise<Connection> {
  return connect(url, { WebSocket: globalThis.WebSocket });
}

export function withWsDialer(url: string): Promise<Connection> {
  return connect(url, { WebSocket: wsDialer(WsWebSocket) });
}

/** A subclass that sends a header with every dial, as the guide's cookie recipe does. */
class WithHeader extends WsWebSocket {
  constructor(url: string, protocols?: string | string[]) {
    super(url, protocols, { headers: { cookie: 'session=s' } });
  }
}

export function withWsDialerSubclass(url: string): Promise<Connection> {
  return connect(url, { WebSocket: wsDialer(WithHeader) });
}
