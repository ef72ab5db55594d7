// Recovery over real sockets on Bun: Bun.serve with the ./bun adapter.
import { recoveryRealSuite } from '../_recovery_real.ts';
import { serveAcceptorOnBun } from './_serve.ts';

recoveryRealSuite('Bun', serveAcceptorOnBun);
