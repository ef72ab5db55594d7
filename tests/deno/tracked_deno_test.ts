// Subscriptions that resume over real sockets on Deno: Deno.serve with the ./deno adapter.
import { trackedRealSuite } from '../_tracked_real.ts';
import { servedDeno } from './_serve.ts';

trackedRealSuite('Deno', servedDeno);
