// The broadcast suite on raw Deno: Deno.serve + the ./deno adapter, a send per peer.
import { broadcastSuite } from '../_broadcast_suite.ts';
import { servedDeno } from './_serve.ts';

broadcastSuite('Deno', servedDeno);
