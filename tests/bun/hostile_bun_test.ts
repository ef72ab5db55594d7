// The hostile rows of issue 7 on raw Bun: Bun.serve with the ./bun adapter.
import { hostileRows } from '../_hostile_rows.ts';
import { spawnAcceptor } from '../hostile/_spawn.ts';
import { serveAcceptorOnBun } from './_serve.ts';

hostileRows('Bun', serveAcceptorOnBun, { spawnAcceptor });
