/**
 * How far a benchmark figure can be trusted, and the goals it is scored against: the spread of a
 * figure over its rounds, the per-round ratios of two subjects measured in the same rounds, the
 * `unstable` mark, the scored summary of a run, and the comparison of two runs
 * (`bench/compare.ts`). Pure functions of the rows of `latest.json`; `bench/run.ts` prints them.
 *
 * A round runs every subject of a scenario once, back to back, so round `i` of muxws and round
 * `i` of raw saw the same machine. The ratio of a round is muxws's figure ÷ the other subject's
 * in that round (inverted where lower is better); a ratio whose per-round values disagree by more
 * than {@linkcode UNSTABLE_SPREAD} (max ÷ min), or that ran fewer than {@linkcode MIN_ROUNDS}
 * rounds, is `unstable` and not scored.
 *
 * @module
 */
import { median, type Rounds, type Row, rowValue } from './_common.ts';

/** Per-round ratios whose max ÷ min is above this are `unstable`. */
export const UNSTABLE_SPREAD = 1.5;

/** Fewer rounds than this cannot tell an odd round from the rule: the ratio is `unstable`. */
export const MIN_ROUNDS = 3;

/** Two runs agree on a scored ratio when they differ by at most this. */
export const AGREEMENT = 0.1;

/**
 * The spread of `values`: max ÷ min, 1 when all are equal; `NaN` when there are none, or any is
 * not a positive finite number (a spread of such figures says nothing).
 */
export function spread(values: readonly number[]): number {
  if (values.length === 0) return Number.NaN;
  let min = Infinity;
  let max = -Infinity;
  for (const value of values) {
    if (!Number.isFinite(value) || value <= 0) return Number.NaN;
    if (value < min) min = value;
    if (value > max) max = value;
  }
  return max / min;
}

/**
 * The ratio of each round: `ours[i] ÷ theirs[i]`, or `theirs[i] ÷ ours[i]` when lower is better,
 * so above 1 always favours ours. Rounds only one side ran are left out.
 */
export function roundRatios(
  ours: readonly number[],
  theirs: readonly number[],
  lowerBetter: boolean,
): number[] {
  const out: number[] = [];
  for (let i = 0; i < Math.min(ours.length, theirs.length); i++) {
    out.push(lowerBetter ? theirs[i] / ours[i] : ours[i] / theirs[i]);
  }
  return out;
}

/**
 * The rows of one figure measured over rounds: the median as `metric`, then `<metric>-min`,
 * `<metric>-max` and `<metric>-spread` (max ÷ min, unit `×`).
 */
export function summaryRows(
  base: { scenario: string; runtime: string; subject: string },
  metric: string,
  unit: string,
  values: readonly number[],
): Row[] {
  return [
    { ...base, metric, value: median(values), unit },
    { ...base, metric: `${metric}-min`, value: Math.min(...values), unit },
    { ...base, metric: `${metric}-max`, value: Math.max(...values), unit },
    { ...base, metric: `${metric}-spread`, value: spread(values), unit: '×' },
  ];
}

/** One figure of a run: a subject's metric in a scenario. */
export type Figure = [scenario: string, subject: string, metric: string];

/** Every figure's value in each round of a run, by scenario, runtime, subject and metric. */
export class RoundBook {
  readonly #book = new Map<string, Rounds>();

  /** Records the rounds of one figure (a later record of the same figure replaces it). */
  add(measured: Rounds): void {
    const { scenario, runtime, subject, metric } = measured;
    this.#book.set(`${scenario}|${runtime}|${subject}|${metric}`, measured);
  }

  /** The values of `figure` on `runtime`, round by round; none when not recorded. */
  values(runtime: string, [scenario, subject, metric]: Figure): number[] {
    return this.#book.get(`${scenario}|${runtime}|${subject}|${metric}`)?.values ?? [];
  }

  /** Every record, in the order first made. */
  all(): Rounds[] {
    return [...this.#book.values()];
  }

  /**
   * The row `<ratio>-spread` of the ratio row `{ scenario, runtime, subject: 'ratio', metric:
   * ratio }`: max ÷ min of the per-round ratios of `ours` against `theirs` (inverted where lower is
   * better); `undefined` when fewer than two rounds pair up.
   */
  ratioSpread(
    scenario: string,
    runtime: string,
    ratio: string,
    ours: Figure,
    theirs: Figure,
    lowerBetter: boolean,
  ): Row | undefined {
    const perRound = roundRatios(
      this.values(runtime, ours),
      this.values(runtime, theirs),
      lowerBetter,
    );
    if (perRound.length < 2) return undefined;
    return {
      scenario,
      runtime,
      subject: 'ratio',
      metric: `${ratio}-spread`,
      value: spread(perRound),
      unit: '×',
    };
  }
}

/** A goal a ratio row is scored against: `ratio` of `scenario` at least `min`. */
export interface Goal {
  /** What the goal says, for the summary. */
  name: string;
  /** The scenario whose ratio row is scored. */
  scenario: string;
  /** The ratio row's metric (`vs-<subject>`), higher better. */
  ratio: string;
  /** The least value that meets the goal. */
  min: number;
  /** The runtimes the goal applies to; every runtime when absent. */
  runtimes?: readonly string[];
  /**
   * What the ratio inverts, for a figure where lower is better (the ratio is then the subject's ÷
   * muxws's): the summary shows muxws's figure as a multiple of the subject's beside it.
   */
  inverted?: string;
}

/** The goals of a run, each scored on every runtime it applies to. */
export const GOALS: readonly Goal[] = [
  {
    name: 'req/resp 1 in flight ≥ 0.90× raw decoding',
    scenario: 'req-resp-1',
    ratio: 'vs-raw decoding',
    min: 0.9,
  },
  {
    name: 'req/resp 64 in flight ≥ 0.90× raw decoding',
    scenario: 'req-resp-64',
    ratio: 'vs-raw decoding',
    min: 0.9,
  },
  { name: 'setup ≥ 0.90× raw-hello', scenario: 'connect', ratio: 'vs-raw-hello', min: 0.9 },
  // The ratio is raw's RSS ÷ muxws's (higher better): RSS ≤ 1.25× raw is a ratio ≥ 1 / 1.25.
  {
    name: 'idle RSS ≤ 1.25× raw',
    scenario: 'idle-memory',
    ratio: 'vs-raw',
    min: 1 / 1.25,
    inverted: 'RSS',
  },
  {
    name: 'one-way on Bun ≥ socket.io',
    scenario: 'one-way',
    ratio: 'vs-socket.io',
    min: 1,
    runtimes: ['bun'],
  },
];

/** What a scored ratio came to: `missing` when the run has the scenario but not the ratio. */
export type Status = 'met' | 'not met' | 'unstable' | 'missing';

/** One goal on one runtime, in one run. */
export interface Score {
  goal: Goal;
  runtime: string;
  /** The ratio (muxws ÷ the subject, higher better). */
  value: number;
  /** Max ÷ min of the per-round ratios; `NaN` when unknown. */
  spread: number;
  /** The rounds both subjects ran. */
  rounds: number;
  status: Status;
}

/** The status of a ratio: `unstable` before `met` or `not met`, so it is never scored. */
export function status(value: number, ratioSpread: number, rounds: number, min: number): Status {
  if (!Number.isFinite(value)) return 'missing';
  if (rounds < MIN_ROUNDS || !(ratioSpread <= UNSTABLE_SPREAD)) return 'unstable';
  return value >= min ? 'met' : 'not met';
}

/** The subject a ratio metric compares muxws with: `vs-raw decoding` → `raw decoding`. */
export function ratioSubject(ratio: string): string {
  return ratio.replace(/^(cpu-|server-cpu-)?vs-/, '');
}

/**
 * Every goal of {@linkcode GOALS} on every runtime the run measured its scenario on (muxws rows),
 * in the order of the goals, then of the runtimes as they first appear in `rows`. The ratio is the
 * row `{ subject: 'ratio', metric: goal.ratio }`, its spread the row `<ratio>-spread`, and its
 * rounds the fewer of the two subjects' `rounds` rows.
 */
export function score(rows: readonly Row[]): Score[] {
  const out: Score[] = [];
  for (const goal of GOALS) {
    const runtimes = [
      ...new Set(
        rows.filter((r) => r.scenario === goal.scenario && r.subject === 'muxws')
          .map((r) => r.runtime),
      ),
    ].filter((runtime) => goal.runtimes === undefined || goal.runtimes.includes(runtime));
    for (const runtime of runtimes) {
      const value = rowValue(rows, goal.scenario, runtime, 'ratio', goal.ratio);
      const ratioSpread = rowValue(rows, goal.scenario, runtime, 'ratio', `${goal.ratio}-spread`);
      const rounds = Math.min(
        rowValue(rows, goal.scenario, runtime, 'muxws', 'rounds'),
        rowValue(rows, goal.scenario, runtime, ratioSubject(goal.ratio), 'rounds'),
      );
      const count = Number.isFinite(rounds) ? rounds : 0;
      out.push({
        goal,
        runtime,
        value,
        spread: ratioSpread,
        rounds: count,
        status: status(value, ratioSpread, count, goal.min),
      });
    }
  }
  return out;
}

/** Whether a score counts: measured, over enough rounds that agree. */
export function scored(entry: Score | undefined): entry is Score {
  return entry !== undefined && (entry.status === 'met' || entry.status === 'not met');
}

/** One goal on one runtime in two runs. */
export interface Agreement {
  goal: Goal;
  runtime: string;
  a: Score | undefined;
  b: Score | undefined;
  /** `b − a`; `NaN` unless scored in both. */
  difference: number;
  /** Scored in both runs, so compared. */
  compared: boolean;
  /** Compared, and within {@linkcode AGREEMENT}. */
  agree: boolean;
}

/**
 * Puts the scored ratios of two runs side by side. A goal scored in both runs is compared: they
 * agree when they differ by at most `tolerance`. A goal `unstable` or `missing` in either run is
 * listed but not compared. `ok` when at least one goal was compared and every compared one agrees.
 */
export function compareRuns(
  a: readonly Row[],
  b: readonly Row[],
  tolerance: number = AGREEMENT,
): { agreements: Agreement[]; ok: boolean } {
  const key = (entry: Score) => `${entry.goal.name}|${entry.runtime}`;
  const first = new Map(score(a).map((entry) => [key(entry), entry]));
  const second = new Map(score(b).map((entry) => [key(entry), entry]));
  const agreements: Agreement[] = [];
  for (const k of new Set([...first.keys(), ...second.keys()])) {
    const x = first.get(k);
    const y = second.get(k);
    const compared = scored(x) && scored(y);
    const difference = compared ? y.value - x.value : Number.NaN;
    agreements.push({
      goal: (x ?? y)!.goal,
      runtime: (x ?? y)!.runtime,
      a: x,
      b: y,
      difference,
      compared,
      // The small allowance keeps a difference of exactly the tolerance, printed to two
      // digits, from failing on the last bit of a float.
      agree: compared && Math.abs(difference) <= tolerance + 1e-9,
    });
  }
  const comparedOnes = agreements.filter((entry) => entry.compared);
  return {
    agreements,
    ok: comparedOnes.length > 0 && comparedOnes.every((entry) => entry.agree),
  };
}

/** `0.84×` / `unstable (1.62×)`-style text of a score, for tables. */
export function describeScore(entry: Score | undefined): string {
  if (entry === undefined || entry.status === 'missing') return '–';
  const value = `${entry.value.toFixed(2)}×`;
  const spreadText = Number.isFinite(entry.spread) ? `${entry.spread.toFixed(2)}×` : '–';
  if (entry.status === 'unstable') {
    const why = entry.rounds < MIN_ROUNDS
      ? `${entry.rounds} round${entry.rounds === 1 ? '' : 's'}`
      : `spread ${spreadText}`;
    return `${value} unstable (${why})`;
  }
  return `${value} ${entry.status === 'met' ? '✓' : '✗'} (spread ${spreadText})`;
}

/** The scored summary of a run as a Markdown table: one line per goal and runtime. */
export function scoreTable(rows: readonly Row[]): string {
  const out = [
    '| goal | runtime | muxws ÷ subject | spread of the rounds | rounds | status |',
    '| --- | --- | --- | --- | --- | --- |',
  ];
  for (const entry of score(rows)) {
    const inverted = entry.goal.inverted === undefined
      ? ''
      : ` (${entry.goal.inverted} ${(1 / entry.value).toFixed(2)}× ${
        ratioSubject(entry.goal.ratio)
      }'s)`;
    out.push(
      `| ${entry.goal.name} | ${entry.runtime} | ${
        Number.isFinite(entry.value) ? `${entry.value.toFixed(2)}×${inverted}` : '–'
      } | ${
        Number.isFinite(entry.spread) ? `${entry.spread.toFixed(2)}×` : '–'
      } | ${entry.rounds} | ${
        entry.status === 'unstable' ? 'unstable, not scored' : entry.status
      } |`,
    );
  }
  return out.join('\n');
}

/** The two runs side by side as a Markdown table, and a closing line saying whether they agree. */
export function comparisonTable(
  result: { agreements: Agreement[]; ok: boolean },
  tolerance: number = AGREEMENT,
): string {
  const out = [
    '| goal | runtime | run a | run b | b − a | agree |',
    '| --- | --- | --- | --- | --- | --- |',
  ];
  for (const entry of result.agreements) {
    out.push(
      `| ${entry.goal.name} | ${entry.runtime} | ${describeScore(entry.a)} | ${
        describeScore(entry.b)
      } | ${entry.compared ? entry.difference.toFixed(2) : '–'} | ${
        entry.compared ? (entry.agree ? 'yes' : 'NO') : 'not compared'
      } |`,
    );
  }
  const compared = result.agreements.filter((entry) => entry.compared);
  const agreeing = compared.filter((entry) => entry.agree).length;
  out.push(
    '',
    `${compared.length} ratios scored in both runs, ${agreeing} agree within ±${tolerance}, ${
      result.agreements.length - compared.length
    } not compared (unstable or missing in a run): ${
      result.ok ? 'the runs agree' : 'the runs do not agree'
    }`,
  );
  return out.join('\n');
}
