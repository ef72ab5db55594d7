// Subscriptions that resume over real sockets on Bun: Bun.serve with the ./bun adapter.
import type { Acceptor } from 'muxws/acceptor';
import { trackedRealSuite } from '../_tracked_real.ts';
import { serveAcceptorOnBun } from './_serve.ts';

trackedRealSuite('Bun', (acceptor) => serveAcceptorOnBun(acceptor as unknown as Acceptor));
