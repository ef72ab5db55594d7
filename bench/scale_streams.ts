/**
 * The `scale-streams` scenario of `bench/run.ts` (`--scenarios scale-streams`): the cost per
 * message on one connection as the streams it holds open grow, on each of `--runtimes`.
 *
 * Per runtime: a muxws `bench/_server.ts` with `--max-streams` above the largest N (the default
 * `limits.maxStreams` is 100), a raw one, and the client `bench/_scale_streams_client.ts`. The
 * client holds N = 1, 100 and 10,000 streams open on one muxws connection (N = 1 and 100 with
 * `--quick`), and at each N measures ~100-byte request/responses, one in flight, each on one
 * more stream, beside the same messages on a raw WebSocket (which has no streams: its figure
 * does not depend on N, and measuring it at each N shows how much the machine drifted). Rows
 * (`n`: the streams held open when the row was measured):
 * - `cpu`: client + server CPU per message (µs/msg), `server-cpu` the server's part, `wall` the
 *   wall-clock time per message, each with `-min` and `-max` over the rounds;
 * - `{ subject: 'ratio', metric: 'cpu-vs-raw', n }`: raw ÷ muxws CPU per message at that N
 *   (higher is better for muxws, as the other `cpu-vs-*` ratios);
 * - `{ subject: 'flatness', metric: '<metric> (<subject>)', n }`: the cost per message at the
 *   largest N (`n`) ÷ at the smallest (goal ≤ `FLATNESS_GOAL`), for `cpu` and `wall` of muxws and
 *   of raw, as the other scale curves' flatness rows.
 *
 * @module
 */
import type { ScaleRow } from './_common.ts';
import type { ScenarioChild } from './recovery.ts';

/** What the scenario needs of `bench/run.ts`. */
export interface ScaleStreamsOptions {
  /** The runtimes to measure, each with its own processes. */
  runtimes: readonly string[];
  /** N = 1 and 100 only, a few hundred messages, one round. */
  quick: boolean;
  /** Starts `bench/<script>.ts` on `runtime`. */
  start(runtime: string, script: string, args: string[]): ScenarioChild & { lines: string[] };
  /** Progress, on stderr. */
  log(message: string): void;
  /** Milliseconds left of the whole run's budget. */
  left(): number;
}

/** The scenario's name. */
export const SCALE_STREAMS = 'scale-streams';

/** Its share of the run's budget: every runtime, all N. */
export function scaleStreamsBudgetMs(quick: boolean): number {
  return quick ? 20_000 : 150_000;
}

/** Measures every runtime in turn; returns the rows, with the ratio and flatness rows. */
export async function scaleStreamsScenario(options: ScaleStreamsOptions): Promise<ScaleRow[]> {
  const { runtimes, quick, start, log, left } = options;
  const counts = quick ? [1, 100] : [1, 100, 10_000];
  const rows: ScaleRow[] = [];
  for (const [i, runtime] of runtimes.entries()) {
    // This runtime's share of what is left, less a margin for starting and stopping processes.
    const budget = Math.max(2_000, (left() - 5_000) / (runtimes.length - i) - 3_000);
    if (left() < (quick ? 5_000 : 20_000)) {
      log(`${SCALE_STREAMS} on ${runtime} skipped: out of time`);
      continue;
    }
    log(`${SCALE_STREAMS} on ${runtime}: ${counts.join(', ')} streams held open`);
    const children: ScenarioChild[] = [];
    try {
      const muxws = start(runtime, '_server', [
        '--subject',
        'muxws',
        '--port',
        '0',
        '--max-streams',
        String(counts[counts.length - 1] + 100),
      ]);
      children.push(muxws);
      const raw = start(runtime, '_server', ['--subject', 'raw', '--port', '0']);
      children.push(raw);
      const [muxwsPort, rawPort] = await Promise.all([
        muxws.waitFor('READY', 30_000),
        raw.waitFor('READY', 30_000),
      ]);
      const client = start(runtime, '_scale_streams_client', [
        '--ports',
        `muxws=${Number(muxwsPort)},raw=${Number(rawPort)}`,
        '--streams',
        counts.join(','),
        '--messages',
        String(quick ? 300 : 3_000),
        '--reps',
        String(quick ? 1 : 5),
        '--budget',
        String(Math.round(budget)),
      ]);
      children.push(client);
      try {
        await client.done(Math.max(1_000, budget + 15_000));
      } finally {
        client.kill();
        const measured = client.lines.filter((line) => line.startsWith('ROW '))
          .map((line) => JSON.parse(line.slice(4)) as ScaleRow);
        rows.push(...measured, ...derivedRows(measured));
      }
    } catch (error) {
      log(`${SCALE_STREAMS} on ${runtime} failed: ${(error as Error).message}`);
    } finally {
      for (const child of children) child.kill();
    }
  }
  return rows;
}

/** The ratio rows (raw ÷ muxws CPU at each N) and the flatness rows of one runtime's rows. */
export function derivedRows(rows: readonly ScaleRow[]): ScaleRow[] {
  const out: ScaleRow[] = [];
  const find = (subject: string, metric: string, n: number) =>
    rows.find((r) => r.subject === subject && r.metric === metric && r.n === n)?.value;
  const runtime = rows[0]?.runtime ?? '';
  const counts = [...new Set(rows.map((r) => r.n))]
    .sort((a, b) => a - b);
  for (const n of counts) {
    const ours = find('muxws', 'cpu', n);
    const theirs = find('raw', 'cpu', n);
    if (ours === undefined || theirs === undefined) continue;
    out.push({
      scenario: SCALE_STREAMS,
      runtime,
      subject: 'ratio',
      metric: 'cpu-vs-raw',
      value: theirs / ours,
      unit: '×',
      n,
    });
  }
  if (counts.length < 2) return out;
  const [first, last] = [counts[0], counts[counts.length - 1]];
  for (const subject of ['muxws', 'raw']) {
    for (const metric of ['cpu', 'wall']) {
      const low = find(subject, metric, first);
      const high = find(subject, metric, last);
      if (low === undefined || high === undefined) continue;
      out.push({
        scenario: SCALE_STREAMS,
        runtime,
        subject: 'flatness',
        metric: `${metric} (${subject})`,
        value: high / low,
        unit: '×',
        n: last,
      });
    }
  }
  return out;
}
