/**
 * The client process of the `scale-streams` scenario (`bench/scale_streams.ts`):
 * `<runtime> bench/_scale_streams_client.ts --ports muxws=<port>,raw=<port> --streams 1,100,10000
 * --messages 3000 --reps 5 --budget <ms>`, against two `bench/_server.ts` processes (the muxws one
 * started with `--max-streams` above the largest N).
 *
 * One muxws connection (with a hello) and one raw WebSocket. For each N, smallest first, the
 * muxws connection opens streams until N are held open (`op: 'hold'`: opened, idle, not ended,
 * the acceptor's handler reading each), then one request confirms the acceptor took every one.
 * Then, interleaved over `--reps` rounds (a warm-up of each first, two full runs before the first N
 * and a quarter of one before each, a round started only while
 * this N's share of the budget lasts), each subject makes `--messages` request/responses of
 * ~100 bytes, one in flight: muxws `request()`, each on one more stream, beside the N held; raw
 * the echo of the same messages, which has no streams and so is the baseline at every N. It
 * prints a `ROW` (with `n`) per subject, N and metric, the median over the rounds, and its min
 * and max:
 * - `cpu`: the CPU time the client and the server process used, per message (µs/msg), and
 *   `server-cpu`, the server's part alone;
 * - `wall`: the wall-clock time per message (µs/msg);
 * - `rounds`, and `streams` (muxws: the streams the acceptor held).
 *
 * A held stream that fails before the end (a refusal over `maxStreams`) fails the run.
 *
 * @module
 */
import process from 'node:process';
import { connect, type Connection, type Stream } from 'muxws';
import { type BenchApi, type BenchClient, DialerWebSocket, openClient } from './_clients.ts';
import {
  cpuMicros,
  emitRow,
  median,
  numberOption,
  option,
  PAYLOADS,
  runtime,
  within,
} from './_common.ts';

const SCENARIO = 'scale-streams';
const ports = Object.fromEntries(
  option('ports', '').split(',').filter(Boolean).map((pair) => {
    const [name, port] = pair.split('=');
    return [name, Number(port)];
  }),
) as Record<string, number>;
const counts = option('streams', '1,100,10000').split(',').map(Number);
const messages = Math.max(1, numberOption('messages', 3_000));
const reps = Math.max(1, numberOption('reps', 5));
const budgetMs = numberOption('budget', 60_000);
const started = Date.now();

/** One subject under measure: its requests and the server's CPU clock. */
interface Subject {
  name: 'muxws' | 'raw';
  request(value: unknown): Promise<unknown>;
  serverCpu(): Promise<number>;
}

/** What one run of a subject measured, per message in µs. */
interface Measured {
  cpu: number;
  'server-cpu': number;
  wall: number;
}

/** `count` request/responses, one in flight: CPU (client + server) and wall time per message. */
async function measure(subject: Subject, count: number): Promise<Measured> {
  const server0 = await subject.serverCpu();
  const client0 = cpuMicros();
  const t0 = performance.now();
  for (let i = 0; i < count; i++) {
    const sent = PAYLOADS[i & 1023] as { id: number };
    const answer = await subject.request(sent) as { id?: unknown } | undefined;
    if (answer?.id !== sent.id) {
      throw new Error(`${subject.name}: message ${i} was answered with ${JSON.stringify(answer)}`);
    }
  }
  const wall = (performance.now() - t0) * 1000 / count;
  const client1 = cpuMicros();
  const server1 = await subject.serverCpu();
  return {
    cpu: (client1 - client0 + server1 - server0) / count,
    'server-cpu': (server1 - server0) / count,
    wall,
  };
}

function emitSeries(subject: string, n: number, metric: string, values: number[]): void {
  const base = { scenario: SCENARIO, runtime, subject, unit: 'µs/msg', n };
  emitRow({ ...base, metric, value: median(values) });
  emitRow({ ...base, metric: `${metric}-min`, value: Math.min(...values) });
  emitRow({ ...base, metric: `${metric}-max`, value: Math.max(...values) });
}

async function main(): Promise<void> {
  const connection: Connection<BenchApi> = await connect<BenchApi>(
    `ws://127.0.0.1:${ports.muxws}/muxws?c=0`,
    {
      hello: { payload: { client: 'bench', id: 0 } },
      reconnect: false,
      WebSocket: DialerWebSocket,
      onError: (error) => console.error('muxws client error:', error),
    },
  );
  const raw: BenchClient = await openClient('raw', ports.raw);
  const subjects: Subject[] = [
    {
      name: 'muxws',
      request: (value) => connection.request(value),
      serverCpu: async () => await connection.request(null, { headers: { op: 'cpu' } }) as number,
    },
    { name: 'raw', request: (value) => raw.request(value), serverCpu: () => raw.serverCpu() },
  ];
  // The first N would otherwise pay for compiling the request path (and so make the curve look
  // flatter than it is): two full runs of each first.
  for (let i = 0; i < 2; i++) for (const subject of subjects) await measure(subject, messages);
  const held: Stream[] = [];
  let failed: unknown;
  try {
    for (const [k, n] of counts.entries()) {
      while (held.length < n) {
        const stream = connection.open(null, { headers: { op: 'hold' } });
        stream.closed.catch((error) => failed ??= error);
        held.push(stream);
      }
      // Answered after the acceptor took every OPEN before it: a refusal has arrived by now.
      await within(connection.request(0), 60_000, `opening ${n} streams`);
      if (failed !== undefined) throw new Error(`a held stream failed: ${String(failed)}`);
      const share = (budgetMs - (Date.now() - started)) / (counts.length - k);
      const deadline = Date.now() + share;
      for (const subject of subjects) await measure(subject, Math.max(1, messages >> 2));
      const results = new Map(subjects.map((s) => [s.name, [] as Measured[]]));
      for (let round = 0; round < reps && (round === 0 || Date.now() < deadline); round++) {
        for (let j = 0; j < subjects.length; j++) {
          const subject = subjects[(j + round) % subjects.length];
          const result = await within(
            measure(subject, messages),
            60_000,
            `${subject.name} at ${n}`,
          );
          results.get(subject.name)!.push(result);
        }
      }
      if (failed !== undefined) throw new Error(`a held stream failed: ${String(failed)}`);
      for (const [name, list] of results) {
        const base = { scenario: SCENARIO, runtime, subject: name, n };
        emitRow({ ...base, metric: 'rounds', value: list.length, unit: 'count' });
        if (name === 'muxws') emitRow({ ...base, metric: 'streams', value: n, unit: 'count' });
        for (const metric of ['cpu', 'server-cpu', 'wall'] as const) {
          emitSeries(name, n, metric, list.map((r) => r[metric]));
        }
      }
    }
  } finally {
    raw.close();
    await connection.close().catch(() => {});
  }
}

try {
  await main();
  process.exit(0);
} catch (error) {
  console.error('scale-streams client failed:', error);
  process.exit(1);
}
