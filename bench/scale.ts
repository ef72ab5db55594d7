/**
 * The `scale` scenario of `bench/run.ts` (`--scenarios scale`, `npm run bench:scale`): how the
 * cost per peer grows with the number of peers, muxws beside the runtime's raw WebSocket, on each
 * runtime, at N = 1,000, 10,000 and the most the machine allows (`--quick`: 200 and 1,000).
 *
 * For each N and subject: one `bench/_server.ts` and a few client processes
 * (`bench/_scale_clients.ts`, the peers split among them, each under its own open-file limit),
 * then, in this order:
 * - `scale-accept`: the clients open their N connections together (muxws with its hello, raw
 *   until `open`; 64 in progress at once over all the processes); the wall time from `go` until
 *   the last is established (`elapsed`, ms, and `time-per-connection`, µs) and the server's CPU
 *   over it (`server-cpu`, ms, and `server-cpu-per-connection`, µs);
 * - `scale-idle`: the server's RSS and JS heap after garbage collection, before the clients
 *   and 500 ms after the last is established, per peer (`rss-per-peer`, `heap-per-peer`, B), as
 *   the `idle-memory` scenario measures them;
 * - `scale-broadcast`: one ~100-byte broadcast to every peer, asked on the server's stdin (muxws
 *   `acceptor.broadcast('all', …)` to the tag every peer holds, raw the send loop), timed from
 *   its start on the server until the last client process received its last copy; after one
 *   warm-up, the median of a few: `deliveries-per-second` and `server-cpu-per-delivery` (µs).
 *
 * Every row carries `n`, the peers actually established (fewer than asked when the machine
 * refused some: the `connections` row of `scale-accept` says how many). Per scenario, runtime
 * and subject, a `flatness` row per metric (`subject: 'flatness'`, `metric: '<metric>
 * (<subject>)'`): the cost per unit at the largest N ÷ at the smallest (for
 * `deliveries-per-second`, the time per delivery), goal ≤ 1.2; and per N a `ratio` row
 * `vs-raw` on the main metric, higher better for muxws.
 *
 * @module
 */
import type { ScaleRow } from './_common.ts';
import { median, sleep } from './_common.ts';
import type { ScenarioChild } from './recovery.ts';

/** What the scenario needs of `bench/run.ts`. */
export interface ScaleScenarioOptions {
  /** The runtimes to measure, in turn. */
  runtimes: readonly string[];
  /** N = 200 and 1,000, fewer broadcasts. */
  quick: boolean;
  /** The Ns of the curve; by default 1,000, 10,000 and {@linkcode maxPeers}. */
  ns?: readonly number[];
  /** Starts `bench/<script>.ts` on `runtime`. */
  start(runtime: string, script: string, args: string[]): ScenarioChild;
  /** Progress, on stderr. */
  log(message: string): void;
  /** ms left of the run's budget. */
  left(): number;
}

/** The subjects of the curves, in the order each N measures them. */
const SUBJECTS = ['muxws', 'raw'] as const;
/** File descriptors a server keeps for itself beside its peers. */
const FD_MARGIN = 500;
/** Connections in progress at once, over all client processes, at every N. */
const IN_FLIGHT = 64;
/** The most peers one client process holds (its own open-file limit applies). */
const PER_CLIENT_PROCESS = 15_000;

/**
 * The most peers one server process can hold here: its open-file limit (soft, as the bench
 * cannot raise it) less a margin for its own files, and at most 50,000.
 */
export function maxPeers(limits = readLimits()): number {
  return Math.max(1_000, Math.min(50_000, limits - FD_MARGIN));
}

/** The soft open-file limit of this process (Linux `/proc/self/limits`), else 20,000. */
function readLimits(): number {
  try {
    const text = Deno.readTextFileSync('/proc/self/limits');
    const line = text.split('\n').find((l) => l.startsWith('Max open files'));
    const soft = Number(line?.split(/\s+/)[3]);
    return Number.isFinite(soft) && soft > 0 ? soft : 20_000;
  } catch {
    return 20_000;
  }
}

/** The Ns of the curve. */
export function scaleNs(quick: boolean, max = maxPeers()): number[] {
  if (quick) return [200, 1_000];
  return [...new Set([1_000, 10_000, max])].filter((n) => n <= max).sort((a, b) => a - b);
}

/** The metrics of each curve, and whether the figure is a cost (lower is better). */
export const SCALE_METRICS: Record<string, Array<[metric: string, cost: boolean]>> = {
  'scale-idle': [['rss-per-peer', true], ['heap-per-peer', true]],
  'scale-broadcast': [['deliveries-per-second', false], ['server-cpu-per-delivery', true]],
  'scale-accept': [['time-per-connection', true], ['server-cpu-per-connection', true]],
};

/** Measures every curve on every runtime; returns the rows, flatness and ratios included. */
export async function scaleScenario(options: ScaleScenarioOptions): Promise<ScaleRow[]> {
  const rows: ScaleRow[] = [];
  const ns = options.ns ?? scaleNs(options.quick);
  for (const runtime of options.runtimes) {
    for (const n of ns) {
      for (const subject of SUBJECTS) {
        // A point takes about 1 ms per peer on a loaded machine, plus the processes' start.
        if (options.left() < 15_000 + n) {
          options.log(`scale ${subject} on ${runtime} at ${n} skipped: out of time`);
          continue;
        }
        options.log(`scale ${subject} on ${runtime}, ${n} peers`);
        try {
          rows.push(...await point(options, runtime, subject, n));
        } catch (error) {
          options.log(`scale ${subject} on ${runtime} at ${n} failed: ${(error as Error).message}`);
        }
        // Let the kernel finish the closed connections before the next point.
        await sleep(500);
      }
    }
  }
  return [...rows, ...flatness(rows), ...ratios(rows)];
}

interface Mem {
  rss: number;
  heap: number;
}

/** One N of one subject on one runtime: accept, idle memory, broadcasts. */
async function point(
  options: ScaleScenarioOptions,
  runtime: string,
  subject: string,
  n: number,
): Promise<ScaleRow[]> {
  const { quick, start } = options;
  const children: ScenarioChild[] = [];
  const bound = (ms: number) => Math.max(1_000, Math.min(ms, options.left() - 5_000));
  try {
    const server = start(runtime, '_server', ['--subject', subject, '--port', '0']);
    children.push(server);
    const port = Number(await server.waitFor('READY', bound(30_000)));
    const processes = Math.max(quick ? 2 : 4, Math.ceil(n / PER_CLIENT_PROCESS));
    const clients: ScenarioChild[] = [];
    // Up to 8 ms per connection: a loaded machine opened muxws's at ~5 ms each, 64 at once.
    const openMs = bound(quick ? 20_000 : 20_000 + n * 8);
    for (let i = 0; i < processes; i++) {
      const count = Math.floor(n / processes) + (i < n % processes ? 1 : 0);
      const child = start(runtime, '_scale_clients', [
        '--subject',
        subject,
        '--port',
        String(port),
        '--count',
        String(count),
        '--parallel',
        String(Math.max(1, Math.round(IN_FLIGHT / processes))),
        '--max-ms',
        String(openMs),
        '--first-id',
        String(i * PER_CLIENT_PROCESS),
      ]);
      children.push(child);
      clients.push(child);
    }
    await Promise.all(clients.map((child) => child.waitFor('READY', bound(30_000))));
    server.send('mem');
    const before = JSON.parse(await server.waitFor('MEM', bound(20_000))) as Mem;
    server.send('cpu');
    const cpu0 = Number(await server.waitFor('CPU', bound(5_000)));
    const t0 = performance.timeOrigin + performance.now();
    for (const child of clients) child.send('go');
    let opened = 0;
    let failed = 0;
    let last = t0;
    for (const child of clients) {
      const [o, f, at] = (await child.waitFor('OPEN', bound(openMs + 15_000))).split(' ')
        .map(Number);
      opened += o;
      failed += f;
      last = Math.max(last, at);
    }
    server.send('cpu');
    const cpu1 = Number(await server.waitFor('CPU', bound(5_000)));
    if (opened === 0) throw new Error(`no connection of ${n} opened (${failed} failed)`);
    if (failed > 0) options.log(`scale ${subject} on ${runtime}: ${failed} of ${n} failed`);
    await sleep(500);
    server.send('mem');
    const after = JSON.parse(await server.waitFor('MEM', bound(20_000))) as Mem;
    const row = (scenario: string, metric: string, value: number, unit: string): ScaleRow => ({
      scenario,
      runtime,
      subject,
      metric,
      value,
      unit,
      n: opened,
    });
    const elapsed = last - t0;
    const out: ScaleRow[] = [
      row('scale-accept', 'time-per-connection', (elapsed * 1000) / opened, 'µs'),
      row('scale-accept', 'server-cpu-per-connection', (cpu1 - cpu0) / opened, 'µs'),
      row('scale-accept', 'elapsed', elapsed, 'ms'),
      row('scale-accept', 'server-cpu', (cpu1 - cpu0) / 1000, 'ms'),
      row('scale-accept', 'connections', opened, 'count'),
      row('scale-idle', 'rss-per-peer', (after.rss - before.rss) / opened, 'B'),
      row('scale-idle', 'heap-per-peer', (after.heap - before.heap) / opened, 'B'),
    ];
    const rates: number[] = [];
    const cpus: number[] = [];
    const reps = quick ? 2 : 5;
    for (let k = 1; k <= reps + 1; k++) {
      server.send('cpu');
      const c0 = Number(await server.waitFor('CPU', bound(5_000)));
      server.send('bcast');
      const [at, count] = (await server.waitFor('BCAST', bound(30_000))).split(' ').map(Number);
      let end = at;
      let got = 0;
      for (const child of clients) {
        const [seq, when, peers] = (await child.waitFor('GOT', bound(30_000))).split(' ')
          .map(Number);
        if (seq !== k) throw new Error(`a client process reported broadcast ${seq}, not ${k}`);
        end = Math.max(end, when);
        got += peers;
      }
      if (got < count) {
        options.log(`scale ${subject} on ${runtime}: broadcast ${k} reached ${got} of ${count}`);
      }
      server.send('cpu');
      const c1 = Number(await server.waitFor('CPU', bound(5_000)));
      // The first is the warm-up.
      if (k === 1) continue;
      rates.push(count / ((end - at) / 1000));
      cpus.push((c1 - c0) / count);
    }
    out.push(
      row('scale-broadcast', 'deliveries-per-second', median(rates), '/s'),
      row('scale-broadcast', 'server-cpu-per-delivery', median(cpus), 'µs'),
    );
    return out;
  } finally {
    for (const child of children) child.kill();
  }
}

/** Per scenario, runtime and subject: each metric's cost at the largest N ÷ at the smallest. */
export function flatness(rows: readonly ScaleRow[]): ScaleRow[] {
  const out: ScaleRow[] = [];
  const curves = new Map<string, ScaleRow[]>();
  for (const row of rows) {
    if (row.subject === 'flatness' || row.subject === 'ratio') continue;
    const key = `${row.scenario}|${row.runtime}|${row.subject}|${row.metric}`;
    curves.set(key, [...curves.get(key) ?? [], row]);
  }
  for (const [key, curve] of curves) {
    const [scenario, runtime, subject, metric] = key.split('|');
    const cost = SCALE_METRICS[scenario]?.find(([m]) => m === metric)?.[1];
    if (cost === undefined || curve.length < 2) continue;
    const sorted = [...curve].sort((a, b) => a.n - b.n);
    const first = sorted[0];
    const last = sorted[sorted.length - 1];
    // A figure of 0 or less (memory that shrank at a tiny N) has no ratio.
    if (!(first.value > 0 && last.value > 0)) continue;
    out.push({
      scenario,
      runtime,
      subject: 'flatness',
      // Whose curve it is rides in the metric, as the subject is `flatness`.
      metric: `${metric} (${subject})`,
      value: cost ? last.value / first.value : first.value / last.value,
      unit: '×',
      n: last.n,
    });
  }
  return out;
}

/** Per N: muxws ÷ raw on each curve's first metric, higher better for muxws. */
export function ratios(rows: readonly ScaleRow[]): ScaleRow[] {
  const out: ScaleRow[] = [];
  for (const [scenario, [[metric, cost]]] of Object.entries(SCALE_METRICS)) {
    for (const ours of rows) {
      if (ours.scenario !== scenario || ours.metric !== metric || ours.subject !== 'muxws') {
        continue;
      }
      // The raw point nearest in N (both aim at the same N; either may have fallen short).
      const theirs = rows.filter((r) =>
        r.scenario === scenario && r.metric === metric && r.subject === 'raw' &&
        r.runtime === ours.runtime
      ).sort((a, b) =>
        Math.abs(a.n - ours.n) - Math.abs(b.n - ours.n)
      )[0];
      if (theirs === undefined) continue;
      out.push({
        scenario,
        runtime: ours.runtime,
        subject: 'ratio',
        metric: 'vs-raw',
        value: cost ? theirs.value / ours.value : ours.value / theirs.value,
        unit: '×',
        n: ours.n,
      });
    }
  }
  return out;
}
