// memoryHistory() passes the conformance suite every History store passes; one node, so both
// "nodes" of the suite are the same store, and losing its state is building a new one.
import { memoryHistory } from 'muxws/acceptor';
import { historySuite } from '../_history_suite.ts';

historySuite('memoryHistory()', (options) => {
  const history = memoryHistory(options);
  return Promise.resolve({
    stores: [history, history],
    // A restarted node: a new store over nothing, on the same clock.
    lose: () => {
      const fresh = memoryHistory(options);
      return Promise.resolve([fresh, fresh] as const);
    },
    close: () => Promise.resolve(),
  });
});
