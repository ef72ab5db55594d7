/**
 * What every benchmark process shares: the runtime it runs on, its arguments, the ~100-byte
 * payloads, the statistics, and line-based messages to the orchestrator (`bench/run.ts`).
 *
 * Every process prints machine-readable lines on stdout (`READY 4312`, `ROW {...}`, …) and
 * anything else on stderr.
 *
 * @module
 */
import process from 'node:process';

/** The runtimes the benchmarks run on. */
export type Runtime = 'deno' | 'bun' | 'node';

/** The runtime this process runs on. */
export const runtime: Runtime = 'Deno' in globalThis
  ? 'deno'
  : 'Bun' in globalThis
  ? 'bun'
  : 'node';

/** The arguments after the script. */
export const args: string[] = runtime === 'deno'
  ? (globalThis as unknown as { Deno: { args: string[] } }).Deno.args
  : process.argv.slice(2);

/** `--name value` from {@linkcode args}, or the fallback. */
export function option(name: string, fallback: string): string {
  const i = args.indexOf(`--${name}`);
  return i === -1 || i + 1 >= args.length ? fallback : args[i + 1];
}

/** A numeric `--name value`. */
export function numberOption(name: string, fallback: number): number {
  const value = Number(option(name, String(fallback)));
  if (!Number.isFinite(value) || value < 0) {
    throw new RangeError(`--${name} must be a number of at least 0: current value is ${value}`);
  }
  return value;
}

/** A result row of `bench/results/latest.json`. */
export interface Row {
  scenario: string;
  runtime: string;
  subject: string;
  metric: string;
  value: number;
  unit: string;
}

/**
 * A row of a scale curve (`scale-*` scenarios): `n` is the N it was measured at (peers, or in
 * `scale-streams` the streams held open). Its `flatness` rows name whose curve it is in the
 * metric, `<metric> (<subject>)`, and carry the largest N.
 */
/** The value of the row `scenario|runtime|subject|metric` of `rows`; NaN when there is none. */
export function rowValue(
  rows: readonly Row[],
  scenario: string,
  runtime: string,
  subject: string,
  metric: string,
): number {
  return rows.find((r) =>
    r.scenario === scenario && r.runtime === runtime && r.subject === subject && r.metric === metric
  )?.value ?? Number.NaN;
}

export interface ScaleRow extends Row {
  /** The N of the curve the row was measured at. */
  n: number;
}

/** Whether `row` belongs to a scale curve (it has an `n`). */
export function hasN(row: Row): row is ScaleRow {
  return typeof (row as Partial<ScaleRow>).n === 'number';
}

/** The goal of a flatness row: the cost per unit at the largest N ÷ at the smallest. */
export const FLATNESS_GOAL = 1.2;

/**
 * A figure for a table: 0 to 2 decimals by size, grouped thousands, `–` when there is none;
 * followed by `unit` when given.
 */
export function fmt(v: number | undefined, unit = ''): string {
  if (v === undefined || !Number.isFinite(v)) return '–';
  const digits = Math.abs(v) >= 100 ? 0 : Math.abs(v) >= 10 ? 1 : 2;
  const text = v.toLocaleString('en-US', { maximumFractionDigits: digits });
  return unit ? `${text} ${unit}` : text;
}

/** Prints one result row for the orchestrator. */
export function emitRow(row: Row): void {
  console.log(`ROW ${JSON.stringify(row)}`);
}

/** What one subject measured in each round of a scenario, in the order the rounds ran. */
export interface Rounds {
  scenario: string;
  runtime: string;
  subject: string;
  metric: string;
  values: number[];
}

/**
 * Prints the per-round values of one subject and metric for the orchestrator, which pairs them
 * with another subject's of the same rounds into per-round ratios.
 */
export function emitRounds(rounds: Rounds): void {
  console.log(`ROUNDS ${JSON.stringify(rounds)}`);
}

/** ~100 bytes of JSON, different for every `i`. */
export function payload(i: number): Record<string, unknown> {
  return {
    id: 100_000 + i,
    user: `user-${i % 1000}`,
    action: i % 3 === 0 ? 'update' : 'create',
    fields: { name: 'Ada Lovelace', score: (i % 100) + 0.5, active: i % 2 === 0 },
    ts: 1764480000000 + i,
  };
}

/** Payloads prepared once, so no loop measures building them. */
export const PAYLOADS: Record<string, unknown>[] = Array.from(
  { length: 1024 },
  (_, i) => payload(i),
);

/** The frame sizes the broadcast scenario measures, in bytes of JSON payload (about). */
export const BROADCAST_SIZES: readonly number[] = [100, 4096];

/**
 * The payload of one broadcast of about `size` bytes of JSON: `PAYLOADS[7]` (~126 bytes) for
 * 100, else enough of `PAYLOADS` in a list to make `size` (32 of them, ~4 KiB, for 4096).
 */
export function broadcastPayload(size: number): unknown {
  if (size <= 100) return PAYLOADS[7];
  return { items: PAYLOADS.slice(0, Math.max(1, Math.round(size / 127))) };
}

/** The scenario name of a broadcast of `size` bytes: `broadcast`, or `broadcast-4k` for 4096. */
export function broadcastScenario(size: number): string {
  return size <= 100 ? 'broadcast' : `broadcast-${Math.round(size / 1024)}k`;
}

/** The median of `values` (not sorted in place). */
export function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
}

/** The `q` quantile (0..1) of `values`, nearest rank. */
export function quantile(values: readonly number[], q: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))];
}

/** Resolves after `ms` (real time: benchmarks only). */
export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** Rejects with a message naming `what` when `promise` takes over `ms`. */
export function within<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} took over ${ms} ms`)), ms);
  });
  return Promise.race([promise, deadline]).finally(() => clearTimeout(timer));
}

/** Calls `onLine` with each line written to this process's stdin. */
export function readLines(onLine: (line: string) => void): void {
  let buffer = '';
  process.stdin.setEncoding('utf8');
  process.stdin.on('data', (chunk: string) => {
    buffer += chunk;
    let i;
    while ((i = buffer.indexOf('\n')) !== -1) {
      const line = buffer.slice(0, i).trim();
      buffer = buffer.slice(i + 1);
      if (line) onLine(line);
    }
  });
}

/** Collects garbage as fully as the runtime allows (needs `--expose-gc` on Deno and Node). */
export async function collectGarbage(): Promise<void> {
  const bun = (globalThis as { Bun?: { gc(force: boolean): void } }).Bun;
  const gc = (globalThis as { gc?: () => void }).gc;
  for (let i = 0; i < 3; i++) {
    if (bun) bun.gc(true);
    else gc?.();
    await sleep(50);
  }
}

/** Now, in ms since the epoch, with the fraction `performance.now()` gives (across processes). */
export function epochMs(): number {
  return performance.timeOrigin + performance.now();
}

/** CPU time this process used so far (user + system, all threads), in µs. */
export function cpuMicros(): number {
  const usage = process.cpuUsage();
  return usage.user + usage.system;
}

/** Resident set size and JS heap in use, in bytes. */
export function memory(): { rss: number; heap: number } {
  const usage = process.memoryUsage();
  return { rss: usage.rss, heap: usage.heapUsed };
}

/** How often the timer and microtask globals were called since {@linkcode countTimerCalls}. */
export interface TimerCalls {
  setTimeout: number;
  clearTimeout: number;
  queueMicrotask: number;
}

/**
 * Counts this process's calls of `setTimeout`, `clearTimeout` (of a timer) and `queueMicrotask`
 * from now on, by wrapping the globals; returns the counts, which grow as calls are made.
 */
export function countTimerCalls(): TimerCalls {
  const counts: TimerCalls = { setTimeout: 0, clearTimeout: 0, queueMicrotask: 0 };
  const realSetTimeout = globalThis.setTimeout;
  const realClearTimeout = globalThis.clearTimeout;
  const realQueueMicrotask = globalThis.queueMicrotask;
  globalThis.setTimeout = ((...args: Parameters<typeof setTimeout>) => {
    counts.setTimeout++;
    return realSetTimeout(...args);
  }) as typeof setTimeout;
  globalThis.clearTimeout = ((id?: ReturnType<typeof setTimeout>) => {
    if (id !== undefined) counts.clearTimeout++;
    return realClearTimeout(id);
  }) as typeof clearTimeout;
  globalThis.queueMicrotask = (callback: () => void) => {
    counts.queueMicrotask++;
    realQueueMicrotask(callback);
  };
  return counts;
}
