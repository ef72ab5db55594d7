/**
 * `npm run soak` (`deno run -A bench/soak.ts`): the soak run. On each runtime, an acceptor in a
 * child process of that runtime (`bench/_soak_server.ts`) serves 2,000 dialers spread over child
 * processes of the same runtime (`bench/_soak_dialers.ts`, 500 to a process) for 30 minutes: the
 * dialers make calls at a steady rate, hold a standing subscription each and receive the
 * broadcasts the acceptor sends to their tags on a timer. Every 5 minutes the acceptor restarts
 * with GOAWAY, in its process: a fresh acceptor takes the redials on the same port while the old
 * one's `close()` sends GOAWAY, drains and closes, so the dialers see GOAWAY and redial, as in
 * production, and a heap that grows from one acceptor to the next shows in the one process.
 *
 * After each restart, once every dialer is back and the old acceptor closed, the acceptor
 * process's heap is read after a garbage collection every 5 s until the next restart (or the end);
 * the heap after that restart is the median of those readings, so one reading that a conservative
 * collector (Bun's) or a burst of calls in flight left high or low decides nothing. Every
 * minute it prints the acceptor's heap and RSS (after a garbage collection), the dialers'
 * processes' (summed), the calls made, answered, and refused or crossing the GOAWAY during a
 * restart (both made again), the unexpected
 * errors (`bench/_soak_dialers.ts` says which are expected) and the unsettled calls (those that
 * neither resolved nor rejected 30 s after they were made; each call's own timeout is 10 s).
 *
 * A runtime passes when the heap after its last restart is within 10 % of the heap after its
 * first, no call went unsettled, and no unexpected error was seen, on either side. The exit code
 * is 0 only when every runtime passed. It writes `soak.json` (the minute rows, the restarts, the
 * verdicts) to `--out`.
 *
 * Options: `--runtimes deno,bun,node` (one after another; `--concurrent` runs them at once),
 * `--dialers 2000` (per runtime), `--per-process 500`, `--minutes 30`,
 * `--restart-every-ms 300000`, `--row-every-ms 60000`, `--heap-every-ms 5000`,
 * `--call-every-ms 1000` (per dialer), `--tick-ms 1000` (broadcasts and subscription messages),
 * `--out bench/results`, and
 * `--self-test-leak`: the acceptor keeps every call's input, a leak the run must catch (it then
 * fails, and writes `soak-self-test-leak.json`).
 *
 * `npm run soak:ci` is the CI version: 3 minutes, a restart every minute, 300 dialers per
 * runtime, the three runtimes at once.
 *
 * @module
 */
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import process from 'node:process';
import { sleep } from './_common.ts';
import {
  HEAP_TOLERANCE,
  heapReading,
  judge,
  mb,
  type MinuteRow,
  type RuntimeResult,
  type ServerMem,
} from './_soak_verdict.ts';
import { bundleEntries, Child, command, killAll, ROOT } from './_child.ts';
import type { Stats } from './_soak_dialers.ts';

const argv = Deno.args;
function flag(name: string, fallback: string): string {
  const i = argv.indexOf(`--${name}`);
  return i === -1 || i + 1 >= argv.length ? fallback : argv[i + 1];
}
function numberFlag(name: string, fallback: number, least: number): number {
  const value = Number(flag(name, String(fallback)));
  if (!Number.isFinite(value) || value < least) {
    throw new RangeError(
      `Cannot run the soak as "--${name}" must be a number of at least ${least}: current value is ${
        flag(name, String(fallback))
      }`,
    );
  }
  return value;
}

const runtimes = flag('runtimes', 'deno,bun,node').split(',').filter(Boolean);
for (const runtime of runtimes) {
  if (!['deno', 'bun', 'node'].includes(runtime)) {
    throw new RangeError(
      `Cannot run the soak as "--runtimes" must name deno, bun or node: current value is ${runtime}`,
    );
  }
}
const concurrent = argv.includes('--concurrent');
const leak = argv.includes('--self-test-leak');
const DIALERS = numberFlag('dialers', 2000, 1);
const PER_PROCESS = numberFlag('per-process', 500, 1);
const DURATION_MS = numberFlag('minutes', 30, 0.1) * 60_000;
const RESTART_EVERY_MS = numberFlag('restart-every-ms', 300_000, 1000);
const ROW_EVERY_MS = numberFlag('row-every-ms', 60_000, 1000);
const HEAP_EVERY_MS = numberFlag('heap-every-ms', 5_000, 1000);
const CALL_EVERY_MS = numberFlag('call-every-ms', 1000, 10);
const TICK_MS = numberFlag('tick-ms', 1000, 10);
const OUT = flag('out', `${ROOT}/bench/results`);
/** Each call's own timeout, and the deadline past which a call that never settled is counted. */
const CALL_TIMEOUT_MS = 10_000;
const CALL_DEADLINE_MS = 30_000;
/** Bounds on the steps around the soak itself, per runtime. */
const OPEN_MS = 60_000 + DIALERS * 30;
const RESTART_SETTLE_MS = 60_000;
const FINISH_MS = CALL_DEADLINE_MS + 20_000;
const SLACK_MS = 30_000 + OPEN_MS + FINISH_MS +
  RESTART_SETTLE_MS * Math.ceil(DURATION_MS / RESTART_EVERY_MS);
const BUDGET_MS = concurrent ? DURATION_MS + SLACK_MS : runtimes.length * (DURATION_MS + SLACK_MS);
const NODE_BUILD = `${ROOT}/bench/results/soak-node-${Deno.pid}`;

const started = Date.now();
const results: RuntimeResult[] = [];

function log(message: string): void {
  console.error(`[soak ${((Date.now() - started) / 1000).toFixed(0)} s] ${message}`);
}

function start(runtime: string, script: string, args: string[]): Child {
  const [cmd, list] = command(runtime, script, args, NODE_BUILD);
  return new Child(`${runtime} ${script} ${args.join(' ')}`, cmd, list);
}

async function serverMem(server: Child): Promise<ServerMem> {
  server.send('mem');
  return JSON.parse(await server.waitFor('MEM', 20_000)) as ServerMem;
}

/** Sums the `STATS` (or `FINAL`) of every dialer process. */
async function dialerStats(processes: Child[], line: 'stats' | 'finish'): Promise<Stats> {
  const prefix = line === 'stats' ? 'STATS' : 'FINAL';
  const all = await Promise.all(processes.map(async (child) => {
    child.send(line);
    return JSON.parse(await child.waitFor(prefix, line === 'stats' ? 20_000 : FINISH_MS)) as Stats;
  }));
  const sum: Stats = { ...all[0], kinds: {}, closes: {}, states: {}, samples: [] };
  for (const key of Object.keys(sum) as (keyof Stats)[]) {
    if (typeof sum[key] === 'number') {
      (sum as unknown as Record<string, number>)[key] = all.reduce(
        (total, s) => total + (s[key] as number),
        0,
      );
    }
  }
  for (const s of all) {
    for (const [kind, n] of Object.entries(s.kinds)) sum.kinds[kind] = (sum.kinds[kind] ?? 0) + n;
    for (const [key, n] of Object.entries(s.closes)) sum.closes[key] = (sum.closes[key] ?? 0) + n;
    for (const [key, n] of Object.entries(s.states)) sum.states[key] = (sum.states[key] ?? 0) + n;
    sum.samples.push(...s.samples.slice(0, 5 - sum.samples.length));
  }
  return sum;
}

async function minuteRow(
  result: RuntimeResult,
  server: Child,
  processes: Child[],
  minute: number,
): Promise<void> {
  const [acceptor, dialers] = await Promise.all([
    serverMem(server),
    dialerStats(processes, 'stats'),
  ]);
  heapReading(result, acceptor);
  const row: MinuteRow = {
    runtime: result.runtime,
    minute,
    acceptor: { rss: acceptor.rss, heap: acceptor.heap, peers: acceptor.peers },
    dialers: { rss: dialers.rss, heap: dialers.heap },
    calls: dialers.calls,
    answered: dialers.answered,
    refused: dialers.refused,
    crossed: dialers.crossed,
    inFlight: dialers.inFlight,
    unsettled: dialers.unsettled,
    unexpected: dialers.errors + acceptor.errors,
    reopened: dialers.reopened,
    reconnected: dialers.reconnected,
    failedRedials: dialers.failedRedials,
    closes: dialers.closes,
    states: dialers.states,
    ticks: dialers.ticks,
    broadcasts: dialers.broadcasts,
  };
  result.rows.push(row);
  console.log(
    `${result.runtime} ${minute.toFixed(1).padStart(5)} min | acceptor heap ${
      mb(row.acceptor.heap)
    }, rss ${mb(row.acceptor.rss)}, ${row.acceptor.peers} peers | dialers heap ${
      mb(row.dialers.heap)
    }, rss ${
      mb(row.dialers.rss)
    } | calls ${row.calls}, answered ${row.answered}, refused ${row.refused}, crossed a GOAWAY ${row.crossed}, in flight ${row.inFlight}, unsettled ${row.unsettled} | unexpected errors ${row.unexpected} | re-opened ${row.reopened}, reconnected ${row.reconnected} (failed redials ${row.failedRedials}), closes ${
      JSON.stringify(row.closes)
    }, states ${JSON.stringify(row.states)}, ticks ${row.ticks}, broadcasts ${row.broadcasts}`,
  );
}

/** Restarts the acceptor, waits for every dialer to be back, and measures the heap. */
async function restart(
  result: RuntimeResult,
  server: Child,
  processes: Child[],
  atMs: number,
): Promise<void> {
  const begun = Date.now();
  server.send('restart');
  const closeMs = Number(await server.waitFor('RESTARTED', RESTART_SETTLE_MS));
  let mem = await serverMem(server);
  while (mem.peers < result.dialers && Date.now() - begun < RESTART_SETTLE_MS) {
    await sleep(500);
    mem = await serverMem(server);
  }
  if (mem.peers < result.dialers) {
    // What the dialers saw (their states, closes and failed redials) says why they are not back.
    await minuteRow(result, server, processes, (Date.now() - begun + atMs) / 60_000);
    throw new Error(
      `${
        result.dialers - mem.peers
      } of ${result.dialers} dialers were not back ${RESTART_SETTLE_MS} ms after a restart`,
    );
  }
  const allBackMs = Date.now() - begun;
  result.restarts.push({ atMs, closeMs, allBackMs, heap: 0, rss: 0, heaps: [], rsses: [] });
  heapReading(result, mem);
  log(
    `${result.runtime}: restart ${result.restarts.length} at ${(atMs / 1000).toFixed(0)} s: ` +
      `close took ${closeMs} ms, all back after ${allBackMs} ms, heap ${mb(mem.heap)}`,
  );
}

async function soakOne(runtime: string): Promise<void> {
  const result: RuntimeResult = {
    runtime,
    dialers: DIALERS,
    rows: [],
    restarts: [],
    verdict: { pass: false, reasons: [], unsettled: 0, unexpected: 0 },
  };
  results.push(result);
  const mine: Child[] = [];
  let failure: unknown;
  try {
    const serverArgs = ['--tick-ms', String(TICK_MS), ...(leak ? ['--self-test-leak'] : [])];
    const server = start(runtime, '_soak_server', serverArgs);
    mine.push(server);
    const port = await server.waitFor('READY', 30_000);
    const processes: Child[] = [];
    for (let first = 0; first < DIALERS; first += PER_PROCESS) {
      const child = start(runtime, '_soak_dialers', [
        ...['--port', port, '--count', String(Math.min(PER_PROCESS, DIALERS - first))],
        ...['--first', String(first), '--call-every-ms', String(CALL_EVERY_MS)],
        ...['--timeout-ms', String(CALL_TIMEOUT_MS), '--deadline-ms', String(CALL_DEADLINE_MS)],
      ]);
      mine.push(child);
      processes.push(child);
    }
    await Promise.all(processes.map((child) => child.waitFor('OPEN', OPEN_MS)));
    log(`${runtime}: ${DIALERS} dialers open in ${processes.length} processes`);
    const t0 = Date.now();
    let nextRestart = RESTART_EVERY_MS;
    let nextRow = ROW_EVERY_MS;
    let nextHeap = Infinity;
    while (true) {
      const due = Math.min(nextRestart, nextRow, nextHeap, DURATION_MS);
      await sleep(Math.max(0, t0 + due - Date.now()));
      if (due === DURATION_MS) break;
      if (due === nextHeap) {
        heapReading(result, await serverMem(server));
        nextHeap = Date.now() - t0 + HEAP_EVERY_MS;
      } else if (due === nextRestart) {
        nextRestart += RESTART_EVERY_MS;
        // A restart too close to the end leaves no time to settle and be measured.
        if (DURATION_MS - due >= Math.min(RESTART_EVERY_MS, 30_000)) {
          await restart(result, server, processes, Date.now() - t0);
          nextHeap = Date.now() - t0 + HEAP_EVERY_MS;
        }
      } else {
        nextRow += ROW_EVERY_MS;
        await minuteRow(result, server, processes, (Date.now() - t0) / 60_000);
      }
    }
    await minuteRow(result, server, processes, (Date.now() - t0) / 60_000);
    const dialers = await dialerStats(processes, 'finish');
    result.final = { dialers, acceptor: await serverMem(server) };
    for (const child of mine) child.send('quit');
    await Promise.all(mine.map((child) => child.done(10_000).catch(() => child.kill())));
  } catch (error) {
    failure = error;
    log(`${runtime}: ${(error as Error).message}`);
  } finally {
    for (const child of mine) child.kill();
  }
  judge(result, failure);
  log(`${runtime}: ${result.verdict.pass ? 'PASS' : `FAIL: ${result.verdict.reasons.join('; ')}`}`);
}

function write(): boolean {
  const pass = results.length === runtimes.length && results.every((r) => r.verdict.pass);
  mkdirSync(OUT, { recursive: true });
  const file = `${OUT}/${leak ? 'soak-self-test-leak' : 'soak'}.json`;
  const config = {
    runtimes,
    concurrent,
    dialers: DIALERS,
    perProcess: PER_PROCESS,
    minutes: DURATION_MS / 60_000,
    restartEveryMs: RESTART_EVERY_MS,
    callEveryMs: CALL_EVERY_MS,
    tickMs: TICK_MS,
    callTimeoutMs: CALL_TIMEOUT_MS,
    callDeadlineMs: CALL_DEADLINE_MS,
    heapTolerance: HEAP_TOLERANCE,
    selfTestLeak: leak,
  };
  const report = {
    command: `npm run soak -- ${argv.join(' ')}`.trim(),
    startedAt: new Date(started).toISOString(),
    seconds: Math.round((Date.now() - started) / 1000),
    config,
    runtimes: results,
    pass,
  };
  writeFileSync(file, JSON.stringify(report, null, 1) + '\n');
  log(`wrote ${file}`);
  return pass;
}

function abort(why: string): never {
  log(why);
  killAll();
  rmSync(NODE_BUILD, { recursive: true, force: true });
  write();
  process.exit(1);
}

async function main(): Promise<void> {
  const watchdog = setTimeout(
    () => abort(`over the ${BUDGET_MS / 1000} s budget: killing every process`),
    BUDGET_MS,
  );
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    Deno.addSignalListener(signal, () => abort(`${signal}: killing every process`));
  }
  log(
    `${runtimes.join(', ')}${concurrent ? ' at once' : ''}: ${DIALERS} dialers each for ${
      DURATION_MS / 60_000
    } min, a restart every ${RESTART_EVERY_MS / 1000} s${leak ? ', leaking on purpose' : ''}`,
  );
  try {
    if (runtimes.includes('node')) {
      bundleEntries(['bench/_soak_server.ts', 'bench/_soak_dialers.ts'], NODE_BUILD);
    }
    if (concurrent) await Promise.all(runtimes.map(soakOne));
    else for (const runtime of runtimes) await soakOne(runtime);
  } finally {
    clearTimeout(watchdog);
    killAll();
    rmSync(NODE_BUILD, { recursive: true, force: true });
  }
  const pass = write();
  log(pass ? 'soak: PASS' : 'soak: FAIL');
  process.exit(pass ? 0 : 1);
}

await main();
