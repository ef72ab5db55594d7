/**
 * Turns the reconnect arrivals of a herd (ms after the server could accept again) into the
 * figures: a histogram in 10 ms bins, T50/T95/T100, the share of all dialers arriving
 * in the busiest 100 ms window, and lumpiness L = share × T95 ÷ 100 ms (1.0 is uniform over the
 * time it takes to get everyone back; everyone inside one 100 ms window at 4 s scores 40).
 *
 * @module
 */

/** The figures of one herd event. */
export interface HerdStats {
  /** Dialers that came back within the bound. */
  arrived: number;
  /** Dialers in the herd. */
  total: number;
  /** Times until 50/95/100 % of `total` were back, in ms (NaN when not reached). */
  t50: number;
  t95: number;
  t100: number;
  /** The share of `total` arriving in the busiest 100 ms window. */
  share: number;
  /** share × T95 ÷ 100 ms. */
  lumpiness: number;
  /** Arrivals per 10 ms bin from 0 to T100 (or the last arrival). */
  histogram: number[];
}

/** Computes {@linkcode HerdStats} from arrival times in ms (negative times count as 0). */
export function herdStats(times: readonly number[], total: number): HerdStats {
  const sorted = times.map((t) => Math.max(0, t)).sort((a, b) => a - b);
  const at = (q: number) => {
    const need = Math.ceil(q * total);
    return need <= sorted.length ? sorted[need - 1] : Number.NaN;
  };
  let busiest = 0;
  for (let i = 0, j = 0; i < sorted.length; i++) {
    while (sorted[i] - sorted[j] >= 100) j++;
    busiest = Math.max(busiest, i - j + 1);
  }
  const share = total > 0 ? busiest / total : 0;
  const t95 = at(0.95);
  const last = sorted.length ? sorted[sorted.length - 1] : 0;
  const histogram = new Array<number>(Math.floor(last / 10) + 1).fill(0);
  for (const t of sorted) histogram[Math.floor(t / 10)]++;
  return {
    arrived: sorted.length,
    total,
    t50: at(0.5),
    t95,
    t100: at(1),
    share,
    lumpiness: share * t95 / 100,
    histogram,
  };
}

/**
 * A one-line picture of a histogram: 100 ms per character, height by arrivals, `·` for none
 * (not a space, which Markdown formatters trim).
 */
export function sparkline(histogram: readonly number[]): string {
  const marks = '·▁▂▃▄▅▆▇█';
  const per100: number[] = [];
  for (let i = 0; i < histogram.length; i += 10) {
    per100.push(histogram.slice(i, i + 10).reduce((a, b) => a + b, 0));
  }
  const max = Math.max(1, ...per100);
  return per100.map((n) => marks[n === 0 ? 0 : Math.max(1, Math.round((n / max) * 8))]).join('');
}

/** The runtimes a herd's dialers and server can run on. */
export const HERD_RUNTIMES: readonly string[] = ['node', 'bun', 'deno'];

/**
 * The runtimes the herd runs on, from `--herd-runtime node|bun|deno` (a comma list, in that
 * order, duplicates dropped) in `args`; without it `node` and `bun`, or only `node` with `quick`.
 * Throws a `RangeError` naming an unknown runtime or an empty list.
 */
export function herdRuntimes(args: readonly string[], quick: boolean): string[] {
  const i = args.indexOf('--herd-runtime');
  if (i === -1) return quick ? ['node'] : ['node', 'bun'];
  const wanted = [...new Set((args[i + 1] ?? '').split(',').map((s) => s.trim()).filter(Boolean))];
  const unknown = wanted.find((name) => !HERD_RUNTIMES.includes(name));
  if (unknown !== undefined || wanted.length === 0) {
    throw new RangeError(
      `--herd-runtime must be a comma list of ${HERD_RUNTIMES.join(', ')}: current value is "${
        args[i + 1] ?? ''
      }"`,
    );
  }
  return wanted;
}

/** The stalls of this process's event loop, recorded by {@linkcode watchStalls}. */
export interface StallWatch {
  /** Every stall that ended at or after epoch ms `t0`, as `[from, to]` in ms after `t0`. */
  since(t0: number): Array<[number, number]>;
}

/**
 * Watches this process's event loop with a 5 ms interval and records, as epoch ms `[from, to]`,
 * every gap between two ticks longer than `minMs`: when the loop ran nothing else, timers and
 * socket events included. For diagnosing where a herd's lumps come from (`--watch-stalls 1` of
 * `bench/herd.ts` and `bench/_server.ts`), not for the figures: the interval costs a little CPU.
 */
export function watchStalls(minMs = 15): StallWatch {
  const stalls: Array<[number, number]> = [];
  let last = Date.now();
  setInterval(() => {
    const now = Date.now();
    if (now - last > minMs) stalls.push([last, now]);
    last = now;
  }, 5);
  return {
    since: (t0) => stalls.filter(([, to]) => to >= t0).map(([from, to]) => [from - t0, to - t0]),
  };
}
