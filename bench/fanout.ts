/**
 * Scenarios `broadcast` and `broadcast-4k`: one ~100-byte or ~4 KiB message to `peers`
 * connected clients, all tagged. muxws `acceptor.broadcast('all', payload)` (encoded once, handed
 * to every peer), raw: one string sent to every socket in a loop, native: the runtime's own best
 * broadcast of that string (Bun: `server.publish()` to a topic), socket.io:
 * `io.to('all').emit()`. A separate connection asks for the broadcast; the clients share one
 * process.
 *
 * One repetition reports the time from asking until the last of the `peers` clients received
 * the message (ms), and the deliveries per second that makes.
 *
 * @module
 */
import type { BenchClient } from './_clients.ts';
import { within } from './_common.ts';

/** Asks `trigger` for a broadcast and waits until every client of `peers` received it. */
export async function broadcastOnce(
  trigger: BenchClient,
  peers: readonly BenchClient[],
  size?: number,
): Promise<number> {
  let left = peers.length;
  let done!: () => void;
  const all = new Promise<void>((resolve) => (done = resolve));
  for (const peer of peers) {
    peer.onBroadcast = () => {
      peer.onBroadcast = undefined;
      if (--left === 0) done();
    };
  }
  const started = performance.now();
  await trigger.broadcast(size);
  await within(all, 30_000, `a broadcast to ${peers.length} peers`);
  return performance.now() - started;
}
