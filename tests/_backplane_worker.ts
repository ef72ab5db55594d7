/**
 * A worker for the BroadcastChannel backplane tests on Deno and Bun (tests/deno, tests/bun): it
 * joins the channel named in its first message and echoes every message it receives back under
 * the tag `echo` with origin `worker` (a `warmup` message comes back as it is, uncounted). On tag `stop` it publishes one `final` message (so the main
 * side can count echoes lost at the end), closes its backplane, and reports what it saw: how many
 * it echoed, how many the backplane reported missed, and whether the numbers came in order.
 */
import { BackplaneGapError, broadcastChannelBackplane } from 'muxws/backplane';

interface WorkerScope {
  onmessage: ((event: MessageEvent<{ name: string }>) => void) | null;
  postMessage(message: unknown): void;
}

const scope = globalThis as unknown as WorkerScope;
scope.onmessage = (event) => {
  let missed = 0;
  let otherErrors = 0;
  const backplane = broadcastChannelBackplane(event.data.name, {
    onError: (error) => {
      if (error instanceof BackplaneGapError) missed += error.missed ?? 0;
      else otherErrors++;
    },
  });
  let echoed = 0;
  let last = 0;
  let inOrder = true;
  backplane.subscribe((message) => {
    if (message.tag === 'stop') {
      void backplane.publish({ ...message, tag: 'final', origin: 'worker' }).finally(() => {
        backplane.close();
        scope.postMessage({ done: true, echoed, missed, otherErrors, inOrder });
      });
      return;
    }
    if (message.tag === 'warmup') {
      void backplane.publish({ ...message, origin: 'worker' });
      return;
    }
    if (typeof message.payload === 'string') {
      const n = JSON.parse(message.payload)[3];
      if (n <= last) inOrder = false;
      last = n;
    }
    echoed++;
    void backplane.publish({ ...message, tag: 'echo', origin: 'worker' });
  });
  scope.postMessage({ ready: true });
};
