// Typed events over real sockets on Node: a `ws` server with the ./node adapter.
import WebSocket from 'ws';
import type { ConnectOptions } from 'muxws';
import { eventsRealSuite } from '../_events_real.ts';
import { servedWs } from './_serve.ts';

eventsRealSuite('Node', (acceptor) => servedWs(acceptor), {
  WebSocket: WebSocket as unknown as ConnectOptions['WebSocket'],
});
