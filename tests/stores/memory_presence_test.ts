// memoryPresence() runs the presence conformance suite on a clock the test moves by hand (its
// `now` option): the two nodes of each test share one store object, as acceptors of one process do.
import { memoryPresence } from '../../lib/broadcast/presence.ts';
import { presenceSuite } from '../_presence_suite.ts';

presenceSuite('memoryPresence()', () => {
  let time = 1_700_000_000_000;
  const store = memoryPresence({ now: () => time });
  return Promise.resolve({
    stores: [store, store] as const,
    now: () => time,
    advance: (ms: number) => {
      time += ms;
      return Promise.resolve();
    },
    close: () => Promise.resolve(),
  });
});
