// memoryHistory() passes the conformance suite every History store passes; one node, so both
// "nodes" of the suite are the same store.
import { memoryHistory } from '../lib/history.ts';
import { historySuite } from './_history_suite.ts';

historySuite('memoryHistory()', (options) => {
  const history = memoryHistory(options);
  return Promise.resolve({ stores: [history, history], close: () => Promise.resolve() });
});
