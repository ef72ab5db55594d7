// Subscriptions that resume over real sockets on Node: the `ws` package's server through the Node
// adapter, and the dialer on the `ws` client.
import WebSocket from 'ws';
import type { ConnectOptions } from 'muxws';
import { trackedRealSuite } from '../_tracked_real.ts';
import { servedWs } from './_serve.ts';

trackedRealSuite('ws on Node', (acceptor) => servedWs(acceptor), {
  WebSocket: WebSocket as unknown as ConnectOptions['WebSocket'],
});
