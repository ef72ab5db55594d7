/**
 * Scenario `connect`: `count` connections, `parallel` in progress at once, each until it is
 * established: muxws until `connect()` resolves (socket open, subprotocol checked, hello
 * answered), raw until `open`, raw-hello once its own hello round trip is done (after `open` a
 * small hello message, decoded by the server and answered, the answer decoded: the same round trip
 * muxws's hello makes, so the fair baseline of a setup with a hello), socket.io (websocket
 * transport) until `connect`, and muxws without a hello when its socket opens. The connections
 * stay open until the repetition ends, then all are closed and the repetition waits until they are
 * (not timed), so one subject's closes never fall into the next subject's time.
 *
 * One repetition reports connections established per second.
 *
 * @module
 */
import { type BenchClient, openClient, type Subject } from './_clients.ts';
import { sleep, within } from './_common.ts';

/** Opens `count` clients of `subject`, `parallel` at once; returns connections per second. */
export async function connectRate(
  subject: Subject,
  port: number,
  count: number,
  parallel: number,
): Promise<number> {
  const clients: BenchClient[] = [];
  let next = 0;
  async function worker(): Promise<void> {
    while (next < count) {
      next++;
      clients.push(await openClient(subject, port, next));
    }
  }
  try {
    const started = performance.now();
    await Promise.all(Array.from({ length: parallel }, worker));
    return count / ((performance.now() - started) / 1000);
  } finally {
    // The closes are not timed, but they must not fall into the next subject's time either: wait
    // until every connection is closed (bounded), then a moment for the server to let them go.
    await within(Promise.all(clients.map((client) => client.close())), 20_000, 'connect closes');
    await sleep(50);
  }
}
