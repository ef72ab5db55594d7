/**
 * `npm run bench` (`deno run -A bench/run.ts`): every scenario side by side, muxws
 * against the runtime's raw WebSocket and socket.io (and, for the reconnect herd, socket.io-client,
 * partysocket and reconnecting-websocket), client and server in separate processes on 127.0.0.1.
 *
 * Options: `--quick` (smaller counts, fewer rounds, at most 1 minute plus 30 s for `recovery`),
 * `--runtimes deno,bun,node`,
 * `--scenarios req-resp-1,req-resp-64,one-way,connect,broadcast,idle-memory,herd,bundle,recovery,presence`
 * (`broadcast` measures a ~100-byte and a ~4 KiB frame, rows `broadcast` and `broadcast-4k`;
 * `scale`: bench/scale.ts, the peer curves `scale-idle`, `scale-broadcast`, `scale-accept` at
 * 1,000, 10,000 and the most peers the machine allows, not in the default list, `npm run
 * bench:scale`, `--scale-ns 1000,5000` for other Ns; each writes `<scenario>.svg` beside the
 * results;
 * `recovery`: bench/recovery.ts, on the first of `--runtimes`, with a `redis-server` of its own;
 * `presence`: bench/presence.ts, the same way),
 * `--scenarios scale-streams` (not among the defaults: bench/scale_streams.ts, CPU per message on
 * one connection holding 1, 100 and 10,000 streams open, rows with `n`),
 * `--herd-runtime node,bun,deno` (the runtime of the herd's dialer process and server, each its
 * own rows; default `node,bun`, `node` with `--quick`), `--out DIR` (where the results go instead of `bench/results`),
 * `--rounds N` (interleaved rounds of each side-by-side scenario after its warm-up: 9 by default,
 * 2 with `--quick`; `idle-memory` runs 3 rounds of muxws, raw and raw-hello, 1 with `--quick`), `--no-pin`
 * (clients and servers are otherwise pinned to separate CPUs with `taskset` where it exists:
 * clients to CPU 0, servers to CPU 1).
 *
 * Every figure measured over rounds has its spread (`<metric>-spread`: max ÷ min over the rounds),
 * and every ratio the spread of its per-round ratios (`<ratio>-spread`); a scored ratio whose
 * rounds disagree by more than 1.5× is `unstable` and not scored (bench/_score.ts). The run
 * closes with the scored summary: each goal on each runtime, met, not met or unstable.
 *
 * Prints a table, writes `bench/results/latest.json` (rows `{ scenario, runtime, subject, metric,
 * value, unit }`, plus `subject: "ratio"` rows `vs-raw` / `vs-socket.io` = muxws ÷ subject on the
 * scenario's main metric, inverted for memory, size and lumpiness so higher is always better for
 * muxws, in the broadcast scenarios `vs-native` = muxws ÷ the runtime's own best broadcast
 * (Bun's `server.publish()` to a topic; goal ≥ 0.8), and in the request/response scenarios `routed-vs-muxws` / `cpu-routed-vs-muxws` = muxws
 * routed ÷ muxws on throughput and on CPU per operation, near 1 when a route costs nothing),
 * `bench/results/latest.md` (the same tables in Markdown, and the scored summary),
 * `bench/results/rounds.json` (every figure's value in each round) and `bench/results/herd.json`
 * (the arrival histograms). `bench/compare.ts a.json b.json` puts two runs' scored ratios side by
 * side. The whole run is bounded: 13 minutes (1 with `--quick`), plus 50 s (30 s) when `recovery`
 * is among the scenarios, 3 minutes (40 s) when `presence` is, and 15 minutes (90 s) when `scale` is (15 minutes alone for
 * `--scenarios scale`), after which
 * every child process is killed and what was measured so far is written.
 *
 * @module
 */
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { cpus } from 'node:os';
import process from 'node:process';
import { type Rounds, type Row, rowValue, sleep } from './_common.ts';
import { canPin, pinCommand, pinningNote, roundsOption } from './_method.ts';
import {
  type Figure,
  MIN_ROUNDS,
  RoundBook,
  scoreTable,
  summaryRows,
  UNSTABLE_SPREAD,
} from './_score.ts';
import { bundleSizes } from './bundle.ts';
import { herdRuntimes, herdStats } from './_herd_stats.ts';
import { recoveryScenario } from './recovery.ts';
import { presenceBudgetMs, presenceScenario } from './presence.ts';
import { scaleScenario } from './scale.ts';
import { scaleChart } from './_chart.ts';
import { type HerdRun, machine, mainMetric, tables } from './_tables.ts';
import { BIN, bundleEntries, Child, command, killAll, progress, ROOT } from './_child.ts';
import { SCALE_STREAMS, scaleStreamsBudgetMs, scaleStreamsScenario } from './scale_streams.ts';

const argv = Deno.args;
const quick = argv.includes('--quick');
function listOption(name: string, fallback: string): string[] {
  const i = argv.indexOf(`--${name}`);
  return (i === -1 ? fallback : argv[i + 1]).split(',').filter(Boolean);
}
const OUT = (() => {
  const i = argv.indexOf('--out');
  return i === -1 ? `${ROOT}/bench/results` : argv[i + 1];
})();
/** Node runs the entries bundled here, inside the repository so packages resolve; removed at the end. */
const NODE_BUILD = `${ROOT}/bench/results/node-${Deno.pid}`;
const runtimes = listOption('runtimes', 'deno,bun,node');
const scenarios = listOption(
  'scenarios',
  'req-resp-1,req-resp-64,one-way,connect,broadcast,idle-memory,herd,bundle,recovery,presence',
);
/** The scale curves' Ns (`--scale-ns`), checked before anything runs; their defaults when absent. */
const SCALE_NS = argv.includes('--scale-ns') ? listOption('scale-ns', '').map(Number) : undefined;
if (
  SCALE_NS !== undefined &&
  (SCALE_NS.length === 0 || !SCALE_NS.every((n) => Number.isInteger(n) && n > 0))
) {
  throw new RangeError(
    `--scale-ns must be a comma list of whole numbers of at least 1: current value is "${
      listOption('scale-ns', '').join(',')
    }"`,
  );
}
/** The recovery scenario's share of the budget (it runs last, two subjects on two nodes each). */
const RECOVERY_MS = scenarios.includes('recovery') ? (quick ? 30_000 : 50_000) : 0;
/** The presence scenario's share (it runs after recovery: two nodes, one dialers' process). */
const PRESENCE_MS = scenarios.includes('presence') ? presenceBudgetMs(quick) : 0;
/** The scale curves' share: 18 points of up to ~20,000 peers (`--quick`: 12 of 1,000). */
const SCALE_MS = scenarios.includes('scale') ? (quick ? 90_000 : 900_000) : 0;
/** The scale-streams scenario's share (every runtime, all N). */
const SCALE_STREAMS_MS = scenarios.includes(SCALE_STREAMS) ? scaleStreamsBudgetMs(quick) : 0;
/** Whether anything but the scale curves runs: the base budget is theirs. */
const OTHERS = scenarios.some((scenario) => scenario !== 'scale' && scenario !== SCALE_STREAMS);
const BUDGET_MS = (OTHERS ? (quick ? 60_000 : 1_000_000) : 0) + RECOVERY_MS + PRESENCE_MS +
  SCALE_MS + SCALE_STREAMS_MS;
/** The side-by-side client's budget per runtime: rounds stop being started past it. */
const CLIENT_BUDGET_MS = quick ? 7_000 : 220_000;
const REPS = roundsOption(argv, quick);
/** Rounds of the idle-memory scenario (`IDLE_SUBJECTS`). */
const IDLE_ROUNDS = quick ? 1 : 3;
const IDLE_CONNECTIONS = quick ? 200 : 5_000;
const HERD_RUNTIMES = herdRuntimes(argv, quick);
const HERD_DIALERS = quick ? 100 : 1_000;
const HERD_BOUND_MS = quick ? 4_000 : 15_000;
const HERD_SUBJECTS = quick
  ? ['muxws']
  : ['muxws', 'socket.io-client', 'partysocket', 'reconnecting-websocket'];
const HERD_EVENTS = quick ? ['herd-1012'] : ['herd-goaway', 'herd-1012', 'herd-kill'];
const SIDE_BY_SIDE = ['req-resp-1', 'req-resp-64', 'one-way', 'connect', 'broadcast'];

/** Whether child processes are pinned to separate CPUs (bench/_method.ts); `--no-pin` to not. */
const PIN = !argv.includes('--no-pin') && canPin(cpus().length);
const started = Date.now();
const rows: Row[] = [];
/** Every figure's value in each round, keyed `scenario|runtime|subject|metric`. */
const rounds = new RoundBook();
const herdRuns: HerdRun[] = [];
function start(runtime: string, script: string, args: string[]): Child {
  const [cmd, list] = pinCommand(PIN, script, command(runtime, script, args, NODE_BUILD));
  return new Child(`${runtime} ${script} ${args.join(' ')}`, cmd, list);
}

async function startServer(runtime: string, subject: string, port = 0): Promise<[Child, number]> {
  const child = start(runtime, '_server', ['--subject', subject, '--port', String(port)]);
  return [child, Number(await child.waitFor('READY', 30_000))];
}

function left(): number {
  return BUDGET_MS - (Date.now() - started);
}

const log = progress('bench', started);

/** Bundles the process entries for Node (which runs no TypeScript), packages left external. */
function buildForNode(): void {
  const entries = [
    '_server',
    '_client',
    'idle_memory',
    'herd',
    '_recovery_server',
    '_recovery_dialers',
    '_presence_server',
    '_presence_dialers',
    '_scale_clients',
    '_scale_streams_client',
  ]
    .map((name) => `bench/${name}.ts`);
  bundleEntries(entries, NODE_BUILD);
}

// ---------------------------------------------------------------------------------------------

async function sideBySide(runtime: string, wanted: string[]): Promise<void> {
  const servers: Child[] = [];
  try {
    const started = ['muxws', 'raw', 'socketio'].map((subject) => {
      const child = start(runtime, '_server', ['--subject', subject, '--port', '0']);
      servers.push(child);
      return child.waitFor('READY', 30_000).then((port) => `${subject}=${Number(port)}`);
    });
    const ports = await Promise.all(started);
    const client = start(runtime, '_client', [
      '--ports',
      ports.join(','),
      '--reps',
      String(REPS),
      '--quick',
      quick ? '1' : '0',
      '--scenarios',
      wanted.join(','),
      '--budget',
      String(CLIENT_BUDGET_MS),
    ]);
    try {
      await client.done(Math.max(1_000, left() - 5_000));
    } finally {
      client.kill();
      for (const line of client.lines) {
        if (line.startsWith('ROUNDS ')) {
          const measured = JSON.parse(line.slice(7)) as Rounds;
          measured.subject = subjectName(measured.subject);
          rounds.add(measured);
        }
        if (!line.startsWith('ROW ')) continue;
        const row = JSON.parse(line.slice(4)) as Row;
        row.subject = subjectName(row.subject);
        rows.push(row);
      }
    }
  } finally {
    for (const server of servers) server.kill();
  }
}

/** The name a subject of the client process has in the rows. */
function subjectName(subject: string): string {
  const names: Record<string, string> = {
    socketio: 'socket.io',
    'muxws-nohello': 'muxws without hello',
    'raw-decoding': 'raw decoding',
    'muxws-routed': 'muxws routed',
  };
  return names[subject] ?? subject;
}

interface Mem {
  rss: number;
  heap: number;
  connections: number;
}

/**
 * The idle-memory subjects of every round: muxws, raw, and raw-hello (raw sockets that made the
 * same hello round trip as muxws's, the server keeping the hello: the fair baseline of a peer that
 * said hello); socket.io joins the first round only (no goal compares it).
 */
const IDLE_SUBJECTS = ['muxws', 'raw', 'raw-hello'];
/** Runs of the idle-memory scenario on one runtime. */
const IDLE_RUNS = IDLE_SUBJECTS.length + 1 + IDLE_SUBJECTS.length * (IDLE_ROUNDS - 1);

/**
 * One idle-memory measurement: a fresh server of `subject`, its memory after GC before and after
 * up to `IDLE_CONNECTIONS` idle clients opened in `maxMs`, per connection.
 */
async function idleOnce(runtime: string, subject: string, maxMs: number): Promise<Mem> {
  const [server, port] = await startServer(runtime, subject === 'raw-hello' ? 'raw' : subject);
  let client: Child | undefined;
  try {
    server.send('mem');
    const before = JSON.parse(await server.waitFor('MEM', 20_000)) as Mem;
    client = start(runtime, 'idle_memory', [
      '--subject',
      subject,
      '--port',
      String(port),
      '--count',
      String(IDLE_CONNECTIONS),
      '--max-ms',
      String(Math.round(maxMs)),
    ]);
    const opened = Number(await client.waitFor('OPEN', maxMs + 30_000));
    await sleep(500);
    server.send('mem');
    const after = JSON.parse(await server.waitFor('MEM', 20_000)) as Mem;
    return {
      rss: (after.rss - before.rss) / opened,
      heap: (after.heap - before.heap) / opened,
      connections: opened,
    };
  } finally {
    client?.kill();
    server.kill();
  }
}

/**
 * `IDLE_ROUNDS` rounds of `IDLE_SUBJECTS` (and socket.io in the first), in an order rotated per
 * round, each run on a fresh server; rows of the median, spread and rounds as the side-by-side
 * scenarios have, written even when a later run fails.
 */
async function idleMemory(runtime: string, runsLeft: number): Promise<void> {
  const measured = new Map<string, Mem[]>();
  try {
    for (let round = 0; round < IDLE_ROUNDS; round++) {
      const subjects = round === 0 ? [...IDLE_SUBJECTS, 'socketio'] : IDLE_SUBJECTS;
      for (let k = 0; k < subjects.length; k++) {
        const subject = subjects[(k + round) % subjects.length];
        // Each run may take its share of what is left, so a loaded machine opens fewer
        // connections (the `connections` row says how many) instead of overrunning the budget.
        const maxMs = Math.max(2_000, Math.min(30_000, (left() - 5_000) / runsLeft-- - 4_000));
        if (left() < (quick ? 5_000 : 15_000)) {
          return log(`idle-memory ${runtime} ${subject} round ${round + 1} skipped: out of time`);
        }
        const result = await idleOnce(runtime, subject, maxMs);
        measured.set(subject, [...measured.get(subject) ?? [], result]);
      }
    }
  } finally {
    for (const [subject, list] of measured) {
      const base = { scenario: 'idle-memory', runtime, subject: subjectName(subject) };
      rows.push({ ...base, metric: 'rounds', value: list.length, unit: 'count' });
      const figures = [
        ['rss-per-connection', 'B', list.map((m) => m.rss)],
        ['heap-per-connection', 'B', list.map((m) => m.heap)],
        ['connections', 'count', list.map((m) => m.connections)],
      ] as const;
      for (const [metric, unit, values] of figures) {
        rounds.add({ ...base, metric, values: [...values] });
        rows.push(...summaryRows(base, metric, unit, values));
      }
    }
  }
}

const HERD_SERVER: Record<string, string> = {
  muxws: 'muxws',
  'socket.io-client': 'socketio',
  partysocket: 'raw',
  'reconnecting-websocket': 'raw',
};

/** Waits until the server holds every dialer again, then lets backoff state settle. */
async function settle(server: Child, ms: number): Promise<void> {
  const deadline = Date.now() + Math.min(HERD_BOUND_MS, Math.max(0, left() - 20_000));
  while (true) {
    server.send('live');
    if (Number(await server.waitFor('LIVE', 5_000)) >= HERD_DIALERS) break;
    if (Date.now() > deadline) throw new Error(`not every dialer came back in ${HERD_BOUND_MS} ms`);
    await sleep(250);
  }
  await sleep(ms);
}

/** Measures every herd event for one dialer library on one runtime, on one set of dialers. */
async function herdSubject(runtime: string, subject: string): Promise<void> {
  let [server, port] = await startServer(runtime, HERD_SERVER[subject]);
  const dialers = start(runtime, 'herd', [
    '--subject',
    subject,
    '--port',
    String(port),
    '--count',
    String(HERD_DIALERS),
  ]);
  try {
    await dialers.waitFor('OPEN', Math.min(90_000, left()));
    const events = HERD_EVENTS.filter((event) => event !== 'herd-goaway' || subject === 'muxws');
    for (const scenario of events) {
      if (left() < HERD_BOUND_MS + (quick ? 2_000 : 10_000)) {
        return log(`${scenario} ${subject} on ${runtime} skipped: out of time`);
      }
      log(`${scenario} ${subject} on ${runtime}`);
      // Every library is back in its steady state: partysocket and reconnecting-websocket reset
      // their retry count after 5 s up (minUptime), socket.io and muxws at once.
      await settle(server, quick ? 500 : 5_500);
      if (scenario === 'herd-kill') {
        server.kill();
        await server.done(5_000);
        await sleep(2_000);
        [server, port] = await startServer(runtime, HERD_SERVER[subject], port);
      } else {
        server.send(scenario === 'herd-goaway' ? 'goaway' : 'close1012');
        await server.waitFor('EVENT', 5_000);
      }
      const deadline = Date.now() + HERD_BOUND_MS;
      let arrivals = { t0: 0, times: [] as number[] };
      while (Date.now() < deadline) {
        await sleep(250);
        server.send('arrivals');
        arrivals = JSON.parse(await server.waitFor('ARRIVALS', 5_000));
        if (arrivals.times.length >= HERD_DIALERS) break;
      }
      dialers.send(`attempts ${arrivals.t0}`);
      const attemptTimes = JSON.parse(await dialers.waitFor('ATTEMPTS', 5_000)) as number[];
      dialers.send(`scheduled ${arrivals.t0}`);
      const scheduledTimes = JSON.parse(await dialers.waitFor('SCHEDULED', 5_000)) as number[];
      const name = subject === 'socket.io-client' ? 'socket.io' : subject;
      const base = { scenario, runtime, subject: name };
      const measured = [
        ['', 'server', arrivals.times],
        ['attempt-', 'dialer attempts', attemptTimes],
        ['schedule-', 'dialer schedule', scheduledTimes],
      ] as const;
      for (const [prefix, where, times] of measured) {
        const stats = herdStats(times, HERD_DIALERS);
        herdRuns.push({
          scenario,
          runtime,
          subject: name,
          measured: where,
          ...stats,
        });
        rows.push(
          { ...base, metric: `${prefix}lumpiness`, value: stats.lumpiness, unit: 'L' },
          { ...base, metric: `${prefix}T50`, value: stats.t50, unit: 'ms' },
          { ...base, metric: `${prefix}T95`, value: stats.t95, unit: 'ms' },
          { ...base, metric: `${prefix}T100`, value: stats.t100, unit: 'ms' },
          { ...base, metric: `${prefix}busiest-100ms-share`, value: stats.share, unit: 'share' },
          { ...base, metric: `${prefix}arrived`, value: stats.arrived, unit: 'count' },
        );
      }
    }
  } finally {
    dialers.kill();
    server.kill();
  }
}

async function herd(): Promise<void> {
  // Library by library, each on every herd runtime in turn, so a run short of time still has
  // muxws beside its first comparators on every runtime.
  for (const subject of HERD_SUBJECTS) {
    for (const runtime of HERD_RUNTIMES) {
      if (left() < HERD_BOUND_MS + (quick ? 4_000 : 20_000)) {
        return log(`herd ${subject} on ${runtime} skipped: out of time`);
      }
      try {
        await herdSubject(runtime, subject);
      } catch (error) {
        log(`herd ${subject} on ${runtime} failed: ${(error as Error).message}`);
      }
    }
  }
}

function bundle(): void {
  for (const size of bundleSizes(`${BIN}/esbuild`, ROOT)) {
    const base = { scenario: 'bundle', runtime: 'esbuild', subject: size.subject };
    rows.push(
      { ...base, metric: 'min+gzip', value: size.gzipped, unit: 'B' },
      { ...base, metric: 'min', value: size.minified, unit: 'B' },
    );
  }
}

// ---------------------------------------------------------------------------------------------
// ratios and tables

function value(scenario: string, runtime: string, subject: string, metric: string): number {
  return rowValue(rows, scenario, runtime, subject, metric);
}

/**
 * Pushes the ratio row `metric` (already oriented, higher better) and, when both sides ran two
 * rounds or more, `<metric>-spread`: max ÷ min of the per-round ratios, `ours` against `theirs`
 * round by round.
 */
function pushRatio(
  scenario: string,
  runtime: string,
  metric: string,
  ratio: number,
  ours: Figure,
  theirs: Figure,
  lowerBetter: boolean,
): void {
  rows.push({ scenario, runtime, subject: 'ratio', metric, value: ratio, unit: '×' });
  const spreadRow = rounds.ratioSpread(scenario, runtime, metric, ours, theirs, lowerBetter);
  if (spreadRow !== undefined) rows.push(spreadRow);
}

function addRatios(): void {
  // The scale curves carry their own ratios, one per N (bench/scale.ts).
  const pairs = new Set(
    rows.filter((r) => !r.scenario.startsWith('scale-')).map((r) => `${r.scenario}|${r.runtime}`),
  );
  for (const pair of pairs) {
    const [scenario, runtime] = pair.split('|');
    if (scenario === 'method') continue;
    const [metric, lowerBetter] = mainMetric(scenario);
    const ours = value(scenario, runtime, 'muxws', metric);
    for (const other of ['raw', 'socket.io', 'raw decoding', 'raw-hello', 'native']) {
      for (const cpuMetric of ['cpu', 'server-cpu']) {
        const oursCpu = value(scenario, runtime, 'muxws', cpuMetric);
        const theirsCpu = value(scenario, runtime, other, cpuMetric);
        if (!Number.isFinite(theirsCpu) || !Number.isFinite(oursCpu)) continue;
        pushRatio(
          scenario,
          runtime,
          `${cpuMetric}-vs-${other}`,
          theirsCpu / oursCpu,
          [scenario, 'muxws', cpuMetric],
          [scenario, other, cpuMetric],
          true,
        );
      }
      // socket.io has no GOAWAY: its restart close (herd-1012) stands beside muxws's GOAWAY.
      const theirScenario = scenario === 'herd-goaway' && other === 'socket.io'
        ? 'herd-1012'
        : scenario;
      const theirs = value(theirScenario, runtime, other, metric);
      if (!Number.isFinite(theirs) || !Number.isFinite(ours)) continue;
      pushRatio(
        scenario,
        runtime,
        `vs-${other}`,
        lowerBetter ? theirs / ours : ours / theirs,
        [scenario, 'muxws', metric],
        [theirScenario, other, metric],
        lowerBetter,
      );
    }
    // What a route costs: `connection.call()` to the route `echo` against `request()` to
    // `onStream`, on the same server; routed ÷ unrouted for throughput and for CPU alike.
    for (const [m, name] of [[metric, 'routed-vs-muxws'], ['cpu', 'cpu-routed-vs-muxws']]) {
      const routed = value(scenario, runtime, 'muxws routed', m);
      const unrouted = value(scenario, runtime, 'muxws', m);
      if (!Number.isFinite(routed) || !Number.isFinite(unrouted)) continue;
      pushRatio(
        scenario,
        runtime,
        name,
        routed / unrouted,
        [scenario, 'muxws routed', m],
        [scenario, 'muxws', m],
        false,
      );
    }
  }
}

function finish(): void {
  addRatios();
  const method = { scenario: 'method', runtime: 'all', subject: 'run' };
  rows.push(
    { ...method, metric: 'pinned', value: PIN ? 1 : 0, unit: 'bool' },
    { ...method, metric: 'rounds', value: REPS, unit: 'count' },
  );
  mkdirSync(OUT, { recursive: true });
  writeFileSync(`${OUT}/latest.json`, JSON.stringify(rows, null, 1) + '\n');
  writeFileSync(`${OUT}/rounds.json`, JSON.stringify(rounds.all()) + '\n');
  writeFileSync(`${OUT}/herd.json`, JSON.stringify(herdRuns) + '\n');
  const text = `${
    machine({ bin: BIN, quick, started, reps: REPS, idleRounds: IDLE_ROUNDS, pin: PIN, argv })
  }\n\n${
    tables(rows, runtimes, herdRuns)
  }\n\nScored goals (muxws ÷ subject, higher better; unstable: the per-round ratios spread over ${UNSTABLE_SPREAD}×, or fewer than ${MIN_ROUNDS} rounds ran):\n\n${
    scoreTable(rows)
  }\n`;
  writeFileSync(`${OUT}/latest.md`, text);
  for (const scenario of new Set(rows.map((r) => r.scenario))) {
    const svg = scenario.startsWith('scale-') ? scaleChart(rows, scenario) : undefined;
    if (svg !== undefined) writeFileSync(`${OUT}/${scenario}.svg`, svg);
  }
  console.log(text);
}

async function main(): Promise<void> {
  const watchdog = setTimeout(() => {
    log(`over the ${BUDGET_MS / 1000} s budget: killing every process`);
    killAll();
    rmSync(NODE_BUILD, { recursive: true, force: true });
    finish();
    process.exit(1);
  }, BUDGET_MS);
  log(`${pinningNote(PIN, argv.includes('--no-pin'))}; up to ${REPS} rounds`);
  try {
    buildForNode();
    const wanted = SIDE_BY_SIDE.filter((s) => scenarios.includes(s));
    if (wanted.length) {
      for (const runtime of runtimes) {
        log(`side by side on ${runtime}: ${wanted.join(', ')}`);
        try {
          await sideBySide(runtime, wanted);
        } catch (error) {
          log(`side by side on ${runtime} failed: ${(error as Error).message}`);
        }
      }
    }
    if (scenarios.includes('bundle')) bundle();
    if (scenarios.includes('herd')) await herd();
    if (scenarios.includes('idle-memory')) {
      for (const [i, runtime] of runtimes.entries()) {
        log(`idle-memory on ${runtime}, up to ${IDLE_CONNECTIONS} connections`);
        try {
          await idleMemory(runtime, (runtimes.length - i) * IDLE_RUNS);
        } catch (error) {
          log(`idle-memory on ${runtime} failed: ${(error as Error).message}`);
        }
      }
    }
    if (scenarios.includes('scale')) {
      // Before scale-streams and recovery, which keep their own shares of the budget.
      const scaleLeft = () => left() - RECOVERY_MS - PRESENCE_MS - SCALE_STREAMS_MS;
      rows.push(
        ...await scaleScenario({ runtimes, quick, ns: SCALE_NS, start, log, left: scaleLeft }),
      );
    }
    if (scenarios.includes(SCALE_STREAMS)) {
      rows.push(
        ...await scaleStreamsScenario({
          runtimes,
          quick,
          start,
          log,
          left: () => left() - RECOVERY_MS - PRESENCE_MS,
        }),
      );
    }
    if (scenarios.includes('recovery')) {
      if (left() < RECOVERY_MS) log('recovery skipped: out of time');
      else rows.push(...await recoveryScenario({ runtime: runtimes[0], quick, start, log }));
    }
    if (scenarios.includes('presence')) {
      if (left() < PRESENCE_MS) log('presence skipped: out of time');
      else rows.push(...await presenceScenario({ runtime: runtimes[0], quick, start, log }));
    }
  } finally {
    clearTimeout(watchdog);
    killAll();
    rmSync(NODE_BUILD, { recursive: true, force: true });
  }
  finish();
  log('done');
}

await main();
