// memoryPresence() runs the presence conformance suite on a clock the test moves by hand (its
// `now` option): the two nodes of each test share one store object, as acceptors of one process do.
import { memoryPresence } from '../../lib/broadcast/presence.ts';
import { handClockFixture, presenceSuite } from '../_presence_suite.ts';

presenceSuite('memoryPresence()', handClockFixture((now) => memoryPresence({ now })));
