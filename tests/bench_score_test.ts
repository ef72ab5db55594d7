// How far a benchmark figure can be trusted (bench/_score.ts): the spread over rounds, per-round
// ratios, the unstable mark, the scored summary of a run and the comparison of two runs. No SPEC
// rule covers benchmarks, so the names cite no rule id.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { Row } from '../bench/_common.ts';
import {
  compareRuns,
  comparisonTable,
  RoundBook,
  roundRatios,
  score,
  scoreTable,
  spread,
  status,
  summaryRows,
} from '../bench/_score.ts';

test('spread() is max ÷ min over the rounds, and unknown without positive figures', () => {
  assert.equal(spread([10, 20, 15]), 2);
  assert.equal(spread([7]), 1);
  assert.ok(Number.isNaN(spread([])));
  assert.ok(Number.isNaN(spread([3, 0])));
  assert.ok(Number.isNaN(spread([3, Number.NaN])));
});

test('summaryRows() gives the median, min, max and spread of a figure over its rounds', () => {
  const base = { scenario: 'req-resp-1', runtime: 'deno', subject: 'muxws' };
  assert.deepEqual(summaryRows(base, 'throughput', 'round trips/s', [100, 300, 200, 120]), [
    { ...base, metric: 'throughput', value: 160, unit: 'round trips/s' },
    { ...base, metric: 'throughput-min', value: 100, unit: 'round trips/s' },
    { ...base, metric: 'throughput-max', value: 300, unit: 'round trips/s' },
    { ...base, metric: 'throughput-spread', value: 3, unit: '×' },
  ]);
});

test('roundRatios() pairs the rounds one by one, inverted where lower is better', () => {
  assert.deepEqual(roundRatios([8, 9, 10], [10, 10, 10], false), [0.8, 0.9, 1]);
  assert.deepEqual(roundRatios([20, 40], [10, 10], true), [0.5, 0.25]);
  // A round only one subject ran (the run stopped mid-round) is left out.
  assert.deepEqual(roundRatios([8, 9, 10], [10, 10], false), [0.8, 0.9]);
});

test('RoundBook.ratioSpread() is the spread of the per-round ratios, not of either subject', () => {
  const book = new RoundBook();
  const base = { scenario: 'req-resp-1', runtime: 'bun', metric: 'throughput' };
  // Both subjects slow down together in round 2: each alone spreads 2×, their ratio not at all.
  book.add({ ...base, subject: 'muxws', values: [80, 40, 80] });
  book.add({ ...base, subject: 'raw decoding', values: [100, 50, 100] });
  book.add({ ...base, subject: 'raw', values: [100, 100, 50] });
  const ours = ['req-resp-1', 'muxws', 'throughput'] as const;
  assert.deepEqual(
    book.ratioSpread('req-resp-1', 'bun', 'vs-raw decoding', [...ours], [
      'req-resp-1',
      'raw decoding',
      'throughput',
    ], false),
    {
      scenario: 'req-resp-1',
      runtime: 'bun',
      subject: 'ratio',
      metric: 'vs-raw decoding-spread',
      value: 1,
      unit: '×',
    },
  );
  // Against raw, the rounds disagree: 0.8, 0.4 and 1.6, a spread of 4×.
  const row = book.ratioSpread('req-resp-1', 'bun', 'vs-raw', [...ours], [
    'req-resp-1',
    'raw',
    'throughput',
  ], false);
  assert.equal(row?.value, 4);
  // No spread from fewer than two paired rounds, nor for a figure never recorded.
  book.add({ ...base, subject: 'socket.io', values: [60] });
  assert.equal(
    book.ratioSpread('req-resp-1', 'bun', 'vs-socket.io', [...ours], [
      'req-resp-1',
      'socket.io',
      'throughput',
    ], false),
    undefined,
  );
  assert.equal(
    book.ratioSpread('x', 'bun', 'vs-raw', ['x', 'muxws', 'y'], ['x', 'raw', 'y'], false),
    undefined,
  );
  assert.equal(book.all().length, 4);
});

test('status() marks a ratio unstable when its rounds disagree by more than 1.5× or are too few', () => {
  assert.equal(status(0.95, 1.2, 9, 0.9), 'met');
  assert.equal(status(0.85, 1.2, 9, 0.9), 'not met');
  assert.equal(status(0.95, 1.5, 9, 0.9), 'met');
  assert.equal(status(0.95, 1.51, 9, 0.9), 'unstable');
  assert.equal(status(0.5, 3, 9, 0.9), 'unstable');
  assert.equal(status(0.95, 1.1, 2, 0.9), 'unstable');
  assert.equal(status(0.95, Number.NaN, 9, 0.9), 'unstable');
  assert.equal(status(Number.NaN, 1.1, 9, 0.9), 'missing');
});

/** The rows a run leaves for one ratio of one scenario on one runtime. */
function ratioRows(
  scenario: string,
  runtime: string,
  other: string,
  ratio: string,
  value: number,
  ratioSpread: number,
  rounds = 9,
): Row[] {
  return [
    { scenario, runtime, subject: 'muxws', metric: 'rounds', value: rounds, unit: 'count' },
    { scenario, runtime, subject: other, metric: 'rounds', value: rounds, unit: 'count' },
    { scenario, runtime, subject: 'ratio', metric: ratio, value, unit: '×' },
    {
      scenario,
      runtime,
      subject: 'ratio',
      metric: `${ratio}-spread`,
      value: ratioSpread,
      unit: '×',
    },
  ];
}

/** A run with every goal on Deno and Bun at `values` (in the order of the goals, Deno first). */
function run(values: number[], spreads: number[] = []): Row[] {
  const goals = [
    ['req-resp-1', 'raw decoding', 'vs-raw decoding'],
    ['req-resp-64', 'raw decoding', 'vs-raw decoding'],
    ['connect', 'raw-hello', 'vs-raw-hello'],
    ['idle-memory', 'raw', 'vs-raw'],
  ];
  const rows: Row[] = [];
  let i = 0;
  for (const [scenario, other, ratio] of goals) {
    for (const runtime of ['deno', 'bun']) {
      rows.push(...ratioRows(scenario, runtime, other, ratio, values[i], spreads[i] ?? 1.1));
      i++;
    }
  }
  rows.push(
    ...ratioRows('one-way', 'deno', 'socket.io', 'vs-socket.io', 2, 1.1),
    ...ratioRows('one-way', 'bun', 'socket.io', 'vs-socket.io', values[i], spreads[i] ?? 1.1),
  );
  return rows;
}

test('score() scores each goal on each runtime, one-way against socket.io on Bun only', () => {
  const rows = run([0.95, 0.85, 0.9, 0.7, 0.91, 0.6, 0.84, 0.78, 1.05], [1, 1, 1, 1.7]);
  const entries = score(rows).map((e) => [e.goal.scenario, e.runtime, e.status]);
  assert.deepEqual(entries, [
    ['req-resp-1', 'deno', 'met'],
    ['req-resp-1', 'bun', 'not met'],
    ['req-resp-64', 'deno', 'met'],
    ['req-resp-64', 'bun', 'unstable'],
    ['connect', 'deno', 'met'],
    ['connect', 'bun', 'not met'],
    // Idle RSS ≤ 1.25× raw: the ratio is raw ÷ muxws, so 0.84 (RSS 1.19× raw) meets it and
    // 0.78 (RSS 1.28× raw) does not.
    ['idle-memory', 'deno', 'met'],
    ['idle-memory', 'bun', 'not met'],
    ['one-way', 'bun', 'met'],
  ]);
  const table = scoreTable(rows);
  assert.match(
    table,
    /\| req\/resp 64 in flight ≥ 0\.90× raw decoding \| bun \| 0\.70× \| 1\.70× \| 9 \| unstable, not scored \|/,
  );
  assert.match(table, /\| setup ≥ 0\.90× raw-hello \| bun \| 0\.60× \| 1\.10× \| 9 \| not met \|/);
  assert.match(
    table,
    /\| idle RSS ≤ 1\.25× raw \| bun \| 0\.78× \(RSS 1\.28× raw's\) \| 1\.10× \| 9 \| not met \|/,
  );
});

test('score() says missing for a goal whose ratio the run lacks, and counts the fewer rounds', () => {
  const rows: Row[] = [
    {
      scenario: 'connect',
      runtime: 'node',
      subject: 'muxws',
      metric: 'rounds',
      value: 9,
      unit: 'count',
    },
    ...ratioRows('req-resp-1', 'node', 'raw decoding', 'vs-raw decoding', 0.95, 1.1).map((row) =>
      row.subject === 'raw decoding' ? { ...row, value: 2 } : row
    ),
  ];
  const entries = score(rows);
  assert.deepEqual(entries.map((e) => [e.goal.scenario, e.status, e.rounds]), [
    ['req-resp-1', 'unstable', 2],
    ['connect', 'missing', 0],
  ]);
});

test('compareRuns() agrees when every ratio scored in both runs is within ±0.1', () => {
  const a = run([0.95, 0.85, 0.9, 0.7, 0.91, 0.6, 0.84, 0.78, 1.05]);
  const b = run([0.9, 0.95, 0.85, 0.8, 0.99, 0.55, 0.8, 0.8, 1.1]);
  const result = compareRuns(a, b);
  assert.equal(result.ok, true);
  assert.equal(result.agreements.length, 9);
  assert.ok(result.agreements.every((e) => e.compared && e.agree));
  assert.ok(Math.abs(result.agreements[1].difference - 0.1) < 1e-9);
  assert.match(
    comparisonTable(result),
    /9 ratios scored in both runs, 9 agree within ±0\.1, 0 not compared/,
  );
});

test('compareRuns() fails when a ratio scored in both runs moves by more than 0.1', () => {
  const a = run([0.95, 0.85, 0.9, 0.7, 0.91, 0.6, 0.84, 0.78, 1.05]);
  const b = run([0.95, 0.85, 0.9, 0.7, 0.91, 0.6, 0.84, 0.78, 0.65]);
  const result = compareRuns(a, b);
  assert.equal(result.ok, false);
  const moved = result.agreements.filter((e) => !e.agree);
  assert.deepEqual(moved.map((e) => [e.goal.scenario, e.runtime]), [['one-way', 'bun']]);
  assert.match(
    comparisonTable(result),
    /\| one-way on Bun ≥ socket\.io \| bun \| 1\.05× ✓ \(spread 1\.10×\) \| 0\.65× ✗ \(spread 1\.10×\) \| -0\.40 \| NO \|/,
  );
});

test('compareRuns() lists an unstable ratio without comparing it, and needs one compared', () => {
  const values = [0.95, 0.85, 0.9, 0.7, 0.91, 0.6, 0.84, 0.78, 1.05];
  const a = run(values);
  // Bun at one in flight flips from 0.85 to 0.28, but its rounds disagree by 2.8×.
  const b = run([0.95, 0.28, ...values.slice(2)], [1.1, 2.8]);
  const result = compareRuns(a, b);
  assert.equal(result.ok, true);
  const flipped = result.agreements[1];
  assert.equal(flipped.compared, false);
  assert.equal(flipped.b?.status, 'unstable');
  assert.match(comparisonTable(result), /0\.28× unstable \(spread 2\.80×\) \| – \| not compared/);
  const allUnstable = run(values, values.map(() => 2));
  assert.equal(compareRuns(allUnstable, allUnstable).ok, false);
});
