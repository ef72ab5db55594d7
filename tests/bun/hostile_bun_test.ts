// The hostile-input tests on raw Bun: Bun.serve with the ./bun adapter, and a child acceptor run
// by this Bun.
import { hostileTests } from '../hostile/_all.ts';
import { spawnAcceptor } from '../hostile/_spawn.ts';
import { serveAcceptorOnBun } from './_serve.ts';

hostileTests({ name: 'Bun', start: serveAcceptorOnBun, spawnAcceptor });
