// Typed events over real sockets on Deno: Deno.serve with the ./deno adapter.
import { eventsRealSuite } from '../_events_real.ts';
import { servedDeno } from './_serve.ts';

eventsRealSuite('Deno', servedDeno);
