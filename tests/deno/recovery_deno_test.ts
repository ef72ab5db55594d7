// Recovery over real sockets on Deno: Deno.serve with the ./deno adapter.
import { recoveryRealSuite } from '../_recovery_real.ts';
import { servedDeno } from './_serve.ts';

recoveryRealSuite('Deno', servedDeno);
