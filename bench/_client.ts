/**
 * The client process of the side-by-side scenarios on one runtime:
 * `<runtime> bench/_client.ts --ports muxws=P1,raw=P2,socketio=P3 --reps 5 [--quick 1]
 * [--budget 90000] [--scenarios req-resp-1,req-resp-64,one-way,connect,broadcast]`.
 *
 * Each scenario runs three warm-up rounds of full size (the first rounds after a start run slower
 * while the engines compile the paths), then up to `reps` rounds; every round runs each subject
 * once, in an order rotated per round, so drift in machine load hits every subject alike. Each
 * scenario gets an equal share of what is left of `--budget` ms and starts no round past it
 * (always at least one; the `rounds` row says how many ran). It prints
 * one `ROW` per subject and metric: the median over the rounds, its min and max, and its spread
 * (`<metric>-spread`, max ÷ min), and one `ROUNDS` line with the value of every round, which the
 * orchestrator pairs round by round into per-round ratios. Besides the
 * wall-clock figures, every repetition measures `cpu`: the CPU time the client and the server
 * process used, per operation (µs/op), which other load on the machine does not inflate; the
 * request/response and broadcast scenarios also report `server-cpu`, the server process's part
 * alone (the client's is `cpu` less it), so a round that costs more says on which side.
 *
 * @module
 */
import process from 'node:process';
import { type BenchClient, openClient, type Subject, SUBJECTS } from './_clients.ts';
import {
  BROADCAST_SIZES,
  broadcastScenario,
  cpuMicros,
  emitRounds,
  emitRow,
  numberOption,
  option,
  runtime,
  within,
} from './_common.ts';
import { reqResp } from './req_resp.ts';
import { oneWay } from './one_way.ts';
import { connectRate } from './connect.ts';
import { broadcastOnce } from './fanout.ts';
import { summaryRows } from './_score.ts';

const ports = Object.fromEntries(
  option('ports', '').split(',').filter(Boolean).map((pair) => {
    const [name, port] = pair.split('=');
    return [name, Number(port)];
  }),
) as Record<Subject, number>;
const reps = Math.max(1, numberOption('reps', 5));
const quick = numberOption('quick', 0) === 1;
const scenarios = option('scenarios', 'req-resp-1,req-resp-64,one-way,connect,broadcast')
  .split(',');
/** `broadcast` measures one scenario per frame size. */
const scenarioCount = scenarios.length +
  (scenarios.includes('broadcast') ? BROADCAST_SIZES.length - 1 : 0);
const compared = SUBJECTS.filter((subject) => ports[subject] > 0);
/** The request/response and one-way subjects: `raw-decoding` too, on the raw server. */
const withDecoding: readonly Subject[] = ports.raw > 0 ? [...compared, 'raw-decoding'] : compared;
/** The request/response subjects: `muxws-routed` too, on the muxws server. */
const withRoutes: readonly Subject[] = ports.muxws > 0
  ? [...withDecoding, 'muxws-routed']
  : withDecoding;

const budgetMs = numberOption('budget', quick ? 15_000 : 90_000);
const started = Date.now();

// A round lasts ~0.3 s or more per subject on a full run, so one collection or scheduler hiccup
// does not decide a round (a connect round of 600 connections, ~0.1 s, left every setup ratio
// unstable).
const REQ_1 = quick ? 300 : 8_000;
const REQ_64 = quick ? 2_000 : 30_000;
const ONE_WAY = quick ? 5_000 : 50_000;
const CONNECT = quick ? 50 : 1_500;
/** Warm-up rounds of every subject before a scenario's measured rounds. */
const WARM_UPS = quick ? 1 : 3;
const PEERS = quick ? 100 : 1_000;
/** Broadcasts of each size and subject before the broadcast scenarios measure anything. */
const BROADCAST_WARM_UPS = quick ? 1 : 5;

let done = 0;

type Measure = (subject: Subject, warmUp: boolean) => Promise<Record<string, number>>;

/** Runs `measure` for every subject, interleaved, and prints the rows. */
async function interleave(
  scenario: string,
  units: Record<string, string>,
  measure: Measure,
  subjects: readonly Subject[] = compared,
): Promise<void> {
  // This scenario's share of what is left of the budget; a round is started only while the
  // share lasts (at least one), so a loaded machine gets fewer rounds, never an unbounded run.
  const share = (budgetMs - (Date.now() - started)) / Math.max(1, scenarioCount - done);
  const deadline = Date.now() + share;
  done++;
  for (let warm = 0; warm < WARM_UPS; warm++) {
    for (const subject of subjects) await measure(subject, true);
  }
  const results = new Map<Subject, Record<string, number>[]>(subjects.map((s) => [s, []]));
  for (let round = 0; round < reps && (round === 0 || Date.now() < deadline); round++) {
    for (let k = 0; k < subjects.length; k++) {
      const subject = subjects[(k + round) % subjects.length];
      results.get(subject)!.push(await measure(subject, false));
    }
  }
  for (const [subject, list] of results) {
    emitRow({ scenario, runtime, subject, metric: 'rounds', value: list.length, unit: 'count' });
    for (const metric of Object.keys(units)) {
      const values = list.map((r) => r[metric]);
      emitRounds({ scenario, runtime, subject, metric, values });
      for (
        const row of summaryRows({ scenario, runtime, subject }, metric, units[metric], values)
      ) {
        emitRow(row);
      }
    }
  }
}

const clients = new Map<Subject, BenchClient>();

/**
 * Runs `fn` and returns its result with the CPU time the client and the server process used
 * meanwhile, per operation, in µs: unlike wall-clock rates, this does not move when other
 * processes load the machine.
 */
async function withCpu<T>(
  subject: Subject,
  operations: number,
  fn: () => Promise<T>,
): Promise<[T, number, number]> {
  const client = clients.get(subject)!;
  const server0 = await client.serverCpu();
  const client0 = cpuMicros();
  const result = await fn();
  const client1 = cpuMicros();
  const server1 = await client.serverCpu();
  return [
    result,
    (client1 - client0 + server1 - server0) / operations,
    (server1 - server0) / operations,
  ];
}

async function main(): Promise<void> {
  for (const subject of compared) clients.set(subject, await openClient(subject, ports[subject]));
  if (ports.raw > 0) clients.set('raw-decoding', await openClient('raw-decoding', ports.raw));
  if (ports.muxws > 0) {
    clients.set('muxws-routed', await openClient('muxws-routed', ports.muxws));
  }
  const deadline = (what: string, ms: number) => <T>(p: Promise<T>) => within(p, ms, what);
  for (const inFlight of [1, 64]) {
    const scenario = `req-resp-${inFlight}`;
    if (!scenarios.includes(scenario)) continue;
    const count = inFlight === 1 ? REQ_1 : REQ_64;
    await interleave(
      scenario,
      { throughput: 'round trips/s', cpu: 'µs/op', 'server-cpu': 'µs/op', p50: 'µs', p99: 'µs' },
      async (subject) => {
        const n = count;
        const [result, cpu, serverCpu] = await withCpu(
          subject,
          n,
          () => deadline(scenario, 60_000)(reqResp(clients.get(subject)!, inFlight, n)),
        );
        return {
          throughput: result.rate,
          cpu,
          'server-cpu': serverCpu,
          p50: result.p50,
          p99: result.p99,
        };
      },
      withRoutes,
    );
  }
  if (scenarios.includes('one-way')) {
    await interleave(
      'one-way',
      { throughput: 'messages/s', cpu: 'µs/op' },
      async (subject) => {
        const n = ONE_WAY;
        const [throughput, cpu] = await withCpu(
          subject,
          n,
          () => deadline('one-way', 60_000)(oneWay(clients.get(subject)!, n)),
        );
        return { throughput, cpu };
      },
      withDecoding,
    );
  }
  if (scenarios.includes('connect')) {
    await interleave(
      'connect',
      { throughput: 'connections/s', cpu: 'µs/op' },
      async (subject) => {
        const n = CONNECT;
        // muxws without a hello dials the muxws server, raw-hello the raw one (and each reads its
        // CPU there).
        const server: Subject = subject === 'muxws-nohello'
          ? 'muxws'
          : subject === 'raw-hello'
          ? 'raw'
          : subject;
        const [throughput, cpu] = await withCpu(
          server,
          n,
          () => deadline('connect', 60_000)(connectRate(subject, ports[server], n, 50)),
        );
        return { throughput, cpu };
      },
      [
        ...compared,
        ...(ports.muxws > 0 ? ['muxws-nohello' as const] : []),
        ...(ports.raw > 0 ? ['raw-hello' as const] : []),
      ],
    );
  }
  if (scenarios.includes('broadcast')) {
    const peers = new Map<Subject, BenchClient[]>();
    // native broadcasts to the raw server's sockets, so it shares raw's peers.
    const broadcasting: readonly Subject[] = ports.raw > 0 ? [...compared, 'native'] : compared;
    if (ports.raw > 0) clients.set('native', await openClient('native', ports.raw));
    try {
      for (const subject of compared) {
        const list: BenchClient[] = [];
        peers.set(subject, list);
        for (let i = 0; i < PEERS; i += 50) {
          const batch = Array.from(
            { length: Math.min(50, PEERS - i) },
            (_, k) => openClient(subject, ports[subject], 10_000 + i + k),
          );
          list.push(...await deadline('broadcast peers', 60_000)(Promise.all(batch)));
        }
      }
      if (ports.raw > 0) peers.set('native', peers.get('raw')!);
      // Setting up the peers leaves work behind (garbage, code not yet optimized) that would fall
      // on whichever scenario runs first: a few broadcasts of each size absorb it first.
      for (let i = 0; i < BROADCAST_WARM_UPS; i++) {
        for (const subject of broadcasting) {
          for (const size of BROADCAST_SIZES) {
            await broadcastOnce(clients.get(subject)!, peers.get(subject)!, size);
          }
        }
      }
      for (const size of BROADCAST_SIZES) {
        await interleave(
          broadcastScenario(size),
          { elapsed: 'ms', throughput: 'deliveries/s', cpu: 'µs/op', 'server-cpu': 'µs/op' },
          async (subject) => {
            const [ms, cpu, serverCpu] = await withCpu(
              subject,
              PEERS,
              () => broadcastOnce(clients.get(subject)!, peers.get(subject)!, size),
            );
            return { elapsed: ms, throughput: PEERS / (ms / 1000), cpu, 'server-cpu': serverCpu };
          },
          broadcasting,
        );
      }
    } finally {
      for (const list of new Set(peers.values())) for (const client of list) client.close();
    }
  }
  for (const client of clients.values()) client.close();
}

try {
  await main();
  process.exit(0);
} catch (error) {
  console.error('bench client failed:', error);
  process.exit(1);
}
