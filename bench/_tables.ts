/**
 * The Markdown of `bench/run.ts`'s `latest.md` (before its scored goals): {@linkcode machine},
 * what ran where and how, and {@linkcode tables}, every scenario's figures and ratios from the
 * run's rows.
 *
 * @module
 */
import { cpus, totalmem } from 'node:os';
import { fmt, type Row, rowValue } from './_common.ts';
import { pinningNote } from './_method.ts';
import { type Score, score, status, UNSTABLE_SPREAD } from './_score.ts';
import { type HerdStats, sparkline } from './_herd_stats.ts';
import { scaleTable } from './scale_table.ts';

/** One herd event's arrivals, as `bench/run.ts` measured them. */
export type HerdRun =
  & { scenario: string; runtime: string; subject: string; measured: string }
  & HerdStats;

/** What {@linkcode machine} says of the run. */
export interface MachineRun {
  /** The repository's `node_modules/.bin`, for Bun's version. */
  bin: string;
  quick: boolean;
  /** When the run started (ms since the epoch). */
  started: number;
  /** The rounds asked for. */
  reps: number;
  /** The idle-memory scenario's rounds. */
  idleRounds: number;
  /** Whether child processes were pinned. */
  pin: boolean;
  /** The run's arguments (`--no-pin`). */
  argv: readonly string[];
}

/** The scenarios of the side-by-side tables: `broadcast` measures a 100-byte and a 4 KiB frame. */
const TABLED = ['req-resp-1', 'req-resp-64', 'one-way', 'connect', 'broadcast', 'broadcast-4k'];
/** The goal of muxws ÷ native (the runtime's own best broadcast) in the broadcast scenarios. */
const NATIVE_GOAL = 0.8;

/** The metric each scenario's ratio is taken on, and whether lower is better. */
export function mainMetric(scenario: string): [string, boolean] {
  if (scenario === 'idle-memory') return ['rss-per-connection', true];
  if (scenario === 'bundle') return ['min+gzip', true];
  if (scenario.startsWith('herd')) return ['lumpiness', true];
  if (scenario === 'recovery') return ['complete', false];
  if (scenario === 'presence') return ['presence-join-p99', true];
  return ['throughput', false];
}

/**
 * The median, then in parentheses the min–max over the rounds and their spread (max ÷ min); the
 * value alone after one round.
 */
function cell(
  rows: readonly Row[],
  scenario: string,
  runtime: string,
  subject: string,
  metric: string,
): string {
  const v = rowValue(rows, scenario, runtime, subject, metric);
  const lo = rowValue(rows, scenario, runtime, subject, `${metric}-min`);
  const hi = rowValue(rows, scenario, runtime, subject, `${metric}-max`);
  const sp = rowValue(rows, scenario, runtime, subject, `${metric}-spread`);
  if (!Number.isFinite(lo) || rowValue(rows, scenario, runtime, subject, 'rounds') === 1) {
    return fmt(v);
  }
  return `${fmt(v)} (${fmt(lo)}–${fmt(hi)}${Number.isFinite(sp) ? `; ${fmt(sp)}×` : ''})`;
}

/**
 * A ratio, its goal's mark (✓ met, ✗ not met, `unstable` when its rounds disagree: not scored)
 * and in parentheses the spread of its per-round ratios. The scored goals' marks come from
 * {@linkcode score}; `min` marks a goal outside them the same way.
 */
function ratioCell(
  rows: readonly Row[],
  scores: readonly Score[],
  scenario: string,
  runtime: string,
  metric: string,
  min?: number,
): string {
  const r = rowValue(rows, scenario, runtime, 'ratio', metric);
  if (!Number.isFinite(r)) return '–';
  const sp = rowValue(rows, scenario, runtime, 'ratio', `${metric}-spread`);
  const entry = scores.find((e) =>
    e.goal.scenario === scenario && e.runtime === runtime && e.goal.ratio === metric
  );
  const judged = entry?.status ??
    (min === undefined
      ? undefined
      : status(r, sp, rowValue(rows, scenario, runtime, 'muxws', 'rounds'), min));
  const mark = judged === 'met'
    ? ' ✓'
    : judged === 'not met'
    ? ' ✗'
    : judged === 'unstable'
    ? ' unstable'
    : '';
  return `${fmt(r)}×${mark}${Number.isFinite(sp) ? ` (${fmt(sp)}×)` : ''}`;
}

/**
 * The tables of `latest.md` after the machine: the side-by-side scenarios, idle memory and
 * recovery and presence per runtime of `runtimes`, the herd runs, the scale curves and the bundle
 * sizes.
 */
export function tables(
  rows: readonly Row[],
  runtimes: readonly string[],
  herdRuns: readonly HerdRun[],
): string {
  const scores = score(rows);
  const out: string[] = [];
  out.push(
    '| scenario | runtime | metric | muxws | raw | socket.io | muxws ÷ raw | muxws ÷ socket.io |',
    '| --- | --- | --- | --- | --- | --- | --- | --- |',
  );
  for (const scenario of [...TABLED, 'idle-memory', 'recovery', 'presence']) {
    for (const runtime of runtimes) {
      if (!rows.some((r) => r.scenario === scenario && r.runtime === runtime)) continue;
      const [metric] = mainMetric(scenario);
      const metrics = scenario.startsWith('req-resp')
        ? [metric, 'cpu', 'server-cpu', 'p50', 'p99']
        : scenario.startsWith('broadcast')
        ? [metric, 'cpu', 'server-cpu', 'elapsed']
        : scenario === 'one-way' || scenario === 'connect'
        ? [metric, 'cpu']
        : scenario === 'idle-memory'
        ? [metric, 'heap-per-connection']
        : scenario === 'recovery'
        ? [
          metric,
          'complete-node-died',
          'complete-node-survived',
          'recovered-node-died',
          'recovered-node-survived',
          'time-to-full-recovery',
          'time-to-all-back',
          'replayed-per-second',
          'duplicates',
          'missing',
          'rss-growth',
          'dialers',
        ]
        : scenario === 'presence'
        ? [
          'presence-join-p50',
          metric,
          'presence-join-max',
          'presence-leave-p50',
          'presence-leave-p99',
          'presence-leave-max',
          'presence-sync-p50',
          'presence-sync-p99',
          'presence-sync-bytes',
          'publish-per-batch',
          'rss-node-a',
          'rss-node-b',
          'peers',
          'followers',
          'missed',
        ]
        : [metric];
      for (const m of metrics) {
        const unit = rows.find((r) => r.scenario === scenario && r.metric === m)?.unit;
        if (unit === undefined) continue;
        const ratio = (other: string, min?: number) => {
          if (m === 'cpu' || m === 'server-cpu') {
            return ratioCell(rows, scores, scenario, runtime, `${m}-vs-${other}`);
          }
          if (m !== metric) return '';
          return ratioCell(rows, scores, scenario, runtime, `vs-${other}`, min);
        };
        out.push(
          `| ${scenario} | ${runtime} | ${m} (${unit}) | ${
            cell(rows, scenario, runtime, 'muxws', m)
          } | ${cell(rows, scenario, runtime, 'raw', m)} | ${
            cell(rows, scenario, runtime, 'socket.io', m)
          } | ${ratio('raw')} | ${ratio('socket.io')} |`,
        );
        // The fair baselines: raw's server decoding each message (and re-encoding its echo)
        // instead of sending the bytes back untouched, what reading the messages costs; raw
        // established only once the same hello round trip as muxws's is done. muxws ÷ each.
        const baselines = [
          ['raw decoding', 'raw decoding each message'],
          ['raw-hello', 'raw-hello (raw with the same hello round trip)'],
        ] as const;
        for (const [baseline, label] of baselines) {
          if (
            Number.isFinite(rowValue(rows, scenario, runtime, baseline, m)) &&
            (m === metric || m === 'cpu')
          ) {
            out.push(
              `| ${scenario} | ${runtime} | ${m} (${unit}), ${label} | | ${
                cell(rows, scenario, runtime, baseline, m)
              } | | ${ratio(baseline)} | |`,
            );
          }
        }
        if (
          Number.isFinite(rowValue(rows, scenario, runtime, 'native', m)) &&
          (m === metric || m === 'cpu' || m === 'server-cpu')
        ) {
          // How near muxws comes to the runtime's own best broadcast (Bun: server.publish() to a
          // topic; elsewhere the plain or pre-encoded send loop); muxws ÷ that.
          out.push(
            `| ${scenario} | ${runtime} | ${m} (${unit}), native | | ${
              cell(rows, scenario, runtime, 'native', m)
            } | | ${ratio('native', NATIVE_GOAL)} | |`,
          );
        }
        const routed = 'muxws routed';
        if (
          Number.isFinite(rowValue(rows, scenario, runtime, routed, m)) &&
          (m === metric || m === 'cpu')
        ) {
          // What a route costs: muxws calling the route `echo` instead of an unrouted request;
          // this ratio is muxws routed ÷ muxws (near 1 when routing costs nothing).
          const r = ratioCell(
            rows,
            scores,
            scenario,
            runtime,
            m === 'cpu' ? 'cpu-routed-vs-muxws' : 'routed-vs-muxws',
          );
          out.push(
            `| ${scenario} | ${runtime} | ${m} (${unit}), ${routed} (ratio: routed ÷ muxws) | ${
              cell(rows, scenario, runtime, routed, m)
            } | | | ${r} | |`,
          );
        }
        const bare = 'muxws without hello';
        if (scenario === 'connect' && Number.isFinite(rowValue(rows, scenario, runtime, bare, m))) {
          // What the hello costs: muxws established when its socket opens, against raw.
          const raw = rowValue(rows, scenario, runtime, 'raw', m);
          const r = m === 'cpu'
            ? raw / rowValue(rows, scenario, runtime, bare, m)
            : rowValue(rows, scenario, runtime, bare, m) / raw;
          out.push(
            `| ${scenario} | ${runtime} | ${m} (${unit}), ${bare} | ${
              cell(rows, scenario, runtime, bare, m)
            } | | | ${fmt(r)}× | |`,
          );
        }
      }
    }
  }
  if (herdRuns.length) {
    out.push(
      '',
      '| event | runtime | dialer | measured at | back | T50 ms | T95 ms | T100 ms | busiest 100 ms | L | arrivals, 100 ms per mark |',
      '| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |',
    );
    for (const run of herdRuns) {
      out.push(
        `| ${run.scenario} | ${run.runtime} | ${run.subject} | ${run.measured} | ${run.arrived}/${run.total} | ${
          fmt(run.t50)
        } | ${fmt(run.t95)} | ${fmt(run.t100)} | ${fmt(run.share * 100)} % | ${
          fmt(run.lumpiness)
        } | \`${sparkline(run.histogram)}\` |`,
      );
    }
  }
  const scale = scaleTable(rows);
  if (scale) out.push('', scale);
  const sizes = rows.filter((r) => r.scenario === 'bundle' && r.metric === 'min+gzip');
  if (sizes.length) {
    out.push('', '| bundle | min | min+gzip | socket.io ÷ this |', '| --- | --- | --- | --- |');
    const socket = rowValue(rows, 'bundle', 'esbuild', 'socket.io', 'min+gzip');
    for (const size of sizes) {
      out.push(
        `| ${size.subject} | ${fmt(rowValue(rows, 'bundle', 'esbuild', size.subject, 'min'))} B | ${
          fmt(size.value)
        } B | ${fmt(socket / size.value)}× |`,
      );
    }
  }
  return out.join('\n');
}

/** The head of `latest.md`: the machine, the runtimes' versions, the command and the method. */
export function machine(run: MachineRun): string {
  const { bin: BIN, quick, started, reps: REPS, idleRounds: IDLE_ROUNDS, pin: PIN, argv } = run;
  const cpu = cpus();
  const proc = new Deno.Command(`${BIN}/bun`, { args: ['--version'] }).outputSync();
  return [
    `- Machine: ${cpu.length} × ${cpu[0]?.model ?? 'unknown CPU'}, ${
      Math.round(totalmem() / 2 ** 30)
    } GiB, ${Deno.build.os} ${Deno.build.arch}`,
    `- Deno ${Deno.version.deno} (V8 ${Deno.version.v8}), Bun ${
      new TextDecoder().decode(proc.stdout).trim()
    }, Node ${
      new TextDecoder().decode(new Deno.Command('node', { args: ['-v'] }).outputSync().stdout)
        .trim()
    }`,
    `- Command: \`npm run bench${quick ? ' -- --quick' : ''}\`, ${new Date().toISOString()}, ${
      ((Date.now() - started) / 1000).toFixed(0)
    } s, up to ${REPS} interleaved rounds after three warm-ups (the \`rounds\` rows say how many ran), idle memory ${IDLE_ROUNDS} round${
      IDLE_ROUNDS === 1 ? '' : 's'
    }`,
    `- ${
      pinningNote(PIN, argv.includes('--no-pin')).replace(/^./, (c) => c.toUpperCase())
    }. Spread: max ÷ min over the rounds, after each figure and ratio; a scored ratio whose per-round ratios spread over ${UNSTABLE_SPREAD}× is unstable and not scored.`,
  ].join('\n');
}
