// The broadcast suite with `acceptor.accept()` on the `ws` package's server-side WebSocket
// (Node's http server through the Node adapter), a send per peer.
import WebSocket from 'ws';
import { broadcastSuite, type SocketConstructor } from '../_broadcast_suite.ts';
import { servedWs } from './_serve.ts';

broadcastSuite('ws on Node', (acceptor) => servedWs(acceptor), {
  WebSocket: WebSocket as unknown as SocketConstructor,
});
