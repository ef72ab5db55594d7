/**
 * One client process of the `scale` scenario (`bench/scale.ts`): `<runtime>
 * bench/_scale_clients.ts --subject raw|muxws --port P --count n [--parallel 16] [--max-ms 60000]`.
 * Several of them share the peers of one curve point, each under its own open-file limit.
 *
 * It prints `READY` once loaded and waits for `go` on stdin, so the time to accept is not the
 * time to start a process. Then it opens `count` clients (muxws with its hello), `parallel` in
 * progress at once (each given 10 s), until all are established or `max-ms` passed, and prints `OPEN <opened>
 * <failed> <epoch ms when the last one was established>`. The clients stay open and idle; each
 * counts the broadcasts it received, and once every one of them has received the k-th broadcast,
 * or 5 s after its first copy arrived (a client closed, a copy lost), it prints
 * `GOT <k> <epoch ms when its last copy arrived> <clients that received it>`. It exits when its
 * stdin closes.
 *
 * @module
 */
import process from 'node:process';
import { type BenchClient, openClient, type Subject } from './_clients.ts';
import { BroadcastTally } from './_broadcast_tally.ts';
import { epochMs, numberOption, option, readLines, within } from './_common.ts';

const subject = option('subject', 'raw') as Subject;
const port = numberOption('port', 0);
const count = numberOption('count', 1_000);
const parallel = Math.max(1, numberOption('parallel', 16));
const maxMs = numberOption('max-ms', 60_000);
/** The first dialer id of this process, so the ids of the processes of one point differ. */
const firstId = numberOption('first-id', 0);

const clients: BenchClient[] = [];
const tally = new BroadcastTally(
  () => clients.length,
  (k, last, got) => console.log(`GOT ${k} ${last} ${got}`),
);

async function open(): Promise<void> {
  let next = 0;
  let failed = 0;
  let last = epochMs();
  const stopAt = Date.now() + maxMs;
  const worker = async () => {
    while (next < count && Date.now() < stopAt) {
      const id = firstId + next++;
      try {
        // A server out of file descriptors leaves a handshake hanging: it counts as failed.
        const opening = openClient(subject, port, id);
        let client: BenchClient;
        try {
          client = await within(opening, 10_000, `client ${id}`);
        } catch (error) {
          // One that opens after all, too late to count, is closed rather than left behind.
          opening.then((late) => late.close(), () => {});
          throw error;
        }
        client.onBroadcast = tally.counter();
        clients.push(client);
        last = epochMs();
      } catch {
        failed++;
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(parallel, count) }, worker));
  console.log(`OPEN ${clients.length} ${failed} ${last}`);
}

let started = false;
readLines((line) => {
  if (line !== 'go' || started) return;
  started = true;
  open().catch((error) => {
    console.error('scale clients failed:', error);
    process.exit(1);
  });
});
process.stdin.on('end', () => process.exit(0));
console.log('READY');
