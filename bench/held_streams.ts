/**
 * The cost of one request inside the library as the streams held open grow, with no socket: the
 * in-process companion of the `scale-streams` scenario (`bench/scale_streams.ts`).
 *
 * `deno run -A bench/held_streams.ts --hold 10000` (or `bun bench/held_streams.ts …`; options:
 * `--requests 20000` per round, `--rounds 5`, `--ballast 1`). A dialer session and an `Acceptor`
 * are joined by microtasks (each message handed over in a microtask, as a socket would in a later
 * turn); the dialer opens `--hold` streams the acceptor's handler reads and never ends, then makes
 * `--requests` ~100-byte requests, one in flight, per round. Printed: the process's CPU time per
 * request (µs) of each round, and the median. With `--ballast 1` the process holds ~3.2 KB of
 * plain objects per `--hold` instead of the streams (about what a held stream takes, both ends
 * together), to tell the cost of a bigger heap from the cost of the streams themselves.
 *
 * @module
 */
import { Acceptor } from 'muxws/acceptor';
import { jsonCodec, type Stream } from 'muxws';
import { Session } from '../lib/session/session.ts';
import { cpuMicros, median, numberOption, PAYLOADS } from './_common.ts';

const hold = numberOption('hold', 10_000);
const requests = Math.max(1, numberOption('requests', 20_000));
const rounds = Math.max(1, numberOption('rounds', 5));
const ballast = numberOption('ballast', 0) === 1;

const acceptor = new Acceptor({
  limits: { maxStreams: hold + 100 },
  idleTimeoutMs: false,
  onStream: async (stream: Stream) => {
    if (stream.headers?.op !== 'hold') return stream.payload;
    try {
      for await (const _ of stream) { /* held open */ }
    } catch {
      // Lost with the connection.
    }
    return undefined;
  },
});
// Each closure reads the other end when a message goes, after both exist.
const dialer: Session = new Session({
  send: (data) => queueMicrotask(() => peer.message(data)),
  close() {},
}, {
  side: 'dialer',
  codec: jsonCodec,
  onError: (error) => console.error('dialer error:', error),
});
const peer = acceptor.attach({
  send: (data) => queueMicrotask(() => dialer.receive(data)),
  close() {},
});
/** Plain objects standing in for the streams: 40 of ~80 B each per held stream. */
const kept: unknown[] = [];
for (let i = 0; i < hold; i++) {
  if (ballast) kept.push(Array.from({ length: 40 }, (_, k) => ({ i, k, s: `x${i}` })));
  else dialer.open(null, { headers: { op: 'hold' } }).closed.catch(() => {});
}

async function round(count: number): Promise<number> {
  const c0 = cpuMicros();
  for (let i = 0; i < count; i++) {
    const sent = PAYLOADS[i & 1023] as { id: number };
    const answer = await dialer.request(sent) as { id?: number };
    if (answer?.id !== sent.id) throw new Error(`request ${i} was answered with ${answer}`);
  }
  return (cpuMicros() - c0) / count;
}

await round(requests);
const results: number[] = [];
for (let r = 0; r < rounds; r++) results.push(await round(requests));
console.log(
  `${ballast ? 'ballast for' : 'held'} ${hold} streams: ${
    median(results).toFixed(2)
  } µs/request (rounds: ${results.map((v) => v.toFixed(1)).join(' ')})`,
);
dialer.close(1000, 'done');
await acceptor.close();
