// The hostile-input tests on raw Deno: Deno.serve with the ./deno adapter, and a child acceptor
// run by this Deno.
import { hostileTests } from '../hostile/_all.ts';
import { spawnAcceptor } from '../hostile/_spawn.ts';
import { servedDeno } from './_serve.ts';

hostileTests({
  name: 'Deno',
  start: servedDeno,
  spawnAcceptor,
});
