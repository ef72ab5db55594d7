// The behavioural suite on raw Bun: Bun.serve with the ./bun adapter's fetch and websocket.
import { acceptorSuite } from '../_acceptor_suite.ts';
import { serveAcceptorOnBun } from './_serve.ts';

acceptorSuite('Bun', serveAcceptorOnBun);
