// The behavioural suite with `acceptor.accept()` on the `ws` package's server-side WebSocket
// (Node's http server, checkUpgrade() before handleUpgrade), against dist/. `ws` hands binary
// messages over as Buffers, which accept() takes as any ArrayBufferView.
import WebSocket from 'ws';
import { acceptorSuite } from '../_acceptor_suite.ts';
import { servedWs } from './_serve.ts';
import type { DialerSocketConstructor } from 'muxws';

acceptorSuite('ws on Node', (acceptor) => servedWs(acceptor), {
  WebSocket: WebSocket as unknown as DialerSocketConstructor,
});
