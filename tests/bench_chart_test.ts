// The scale curves' picture, table and figures of merit (bench/_chart.ts, bench/scale_table.ts,
// bench/scale.ts), on rows made here: no process, no socket. No SPEC rule covers benchmarks, so
// the names cite no rule id.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { scaleChart } from '../bench/_chart.ts';
import { scaleTable } from '../bench/scale_table.ts';
import { flatness, maxPeers, ratios, scaleNs } from '../bench/scale.ts';
import { derivedRows } from '../bench/scale_streams.ts';
import type { ScaleRow } from '../bench/_common.ts';

function row(
  scenario: string,
  runtime: string,
  subject: string,
  metric: string,
  n: number,
  value: number,
  unit = 'B',
): ScaleRow {
  return { scenario, runtime, subject, metric, value, unit, n };
}

const IDLE: ScaleRow[] = [
  ...['deno', 'bun', 'node'].flatMap((runtime) =>
    ['muxws', 'raw'].flatMap((subject) =>
      [1_000, 10_000, 19_500].map((n, i) =>
        row('scale-idle', runtime, subject, 'rss-per-peer', n, 20_000 + i * 1_000)
      )
    )
  ),
  row('idle-memory', 'deno', 'muxws', 'rss-per-connection', 5_000, 1) as ScaleRow,
];

/** Every tag of `svg` opened is closed (or self-closing), in order: XML-ish enough to parse. */
function assertWellFormed(svg: string): void {
  const stack: string[] = [];
  for (const [, close, name, selfClosing] of svg.matchAll(/<(\/?)([a-zA-Z]+)[^>]*?(\/?)>/g)) {
    if (close) assert.equal(stack.pop(), name, `</${name}> closes what was opened`);
    else if (!selfClosing) stack.push(name);
  }
  assert.deepEqual(stack, [], 'every element is closed');
  assert.ok(svg.trimStart().startsWith('<svg xmlns="http://www.w3.org/2000/svg"'));
  assert.ok(!/[<>&](?![a-z/!#]|amp;|lt;|gt;)/.test(svg.replace(/<[^>]*>/g, '')), 'text escaped');
}

test('bench chart: one path per subject and runtime, N on a log axis, both axes labelled', () => {
  const svg = scaleChart(IDLE, 'scale-idle');
  assert.ok(svg !== undefined);
  assertWellFormed(svg);
  const paths = [...svg.matchAll(/<path class="series" data-series="([^"]+)" d="([^"]+)"/g)];
  assert.deepEqual(paths.map(([, name]) => name).sort(), [
    'muxws on bun',
    'muxws on deno',
    'muxws on node',
    'raw on bun',
    'raw on deno',
    'raw on node',
  ]);
  // Three points each; on a log axis 1,000 → 10,000 spans as much as 10,000 → 100,000 would, so
  // the second point sits further from the first than 19,500 from the second.
  for (const [, , d] of paths) {
    const xs = [...d.matchAll(/[ML]([\d.]+) /g)].map(([, x]) => Number(x));
    assert.equal(xs.length, 3);
    assert.ok(xs[1] - xs[0] > 2 * (xs[2] - xs[1]), `log spacing of ${xs}`);
  }
  assert.match(svg, /class="x-label"[^>]*>peers \(N, log scale\)</);
  assert.match(svg, /class="y-label"[^>]*>server RSS per idle peer \(KiB\)</);
  assert.equal([...svg.matchAll(/class="legend"/g)].length, 6);
  assert.ok(!svg.includes('idle-memory'), "another scenario's rows are left out");
});

test('bench chart: a broadcast curve plots the time per delivery, not deliveries per second', () => {
  const rows = [
    row('scale-broadcast', 'bun', 'muxws', 'deliveries-per-second', 1_000, 1_000_000, '/s'),
    row('scale-broadcast', 'bun', 'muxws', 'deliveries-per-second', 10_000, 500_000, '/s'),
  ];
  const svg = scaleChart(rows, 'scale-broadcast')!;
  assertWellFormed(svg);
  const d = svg.match(/<path class="series"[^>]* d="([^"]+)"/)![1];
  const ys = [...d.matchAll(/[ML][\d.]+ ([\d.]+)/g)].map(([, y]) => Number(y));
  assert.ok(ys[1] < ys[0], 'the slower point (2 µs per delivery) is drawn higher than 1 µs');
  assert.match(svg, /µs per delivery/);
});

test('bench chart: rows of scale-streams (open streams on one connection) get a chart too', () => {
  const rows: ScaleRow[] = ['muxws', 'raw'].flatMap((subject) =>
    [1, 100, 10_000].flatMap((n) => [
      row('scale-streams', 'deno', subject, 'cpu', n, subject === 'raw' ? 20 : 25 + n / 1000, 'µs'),
      row('scale-streams', 'deno', subject, 'elapsed', n, 100, 'ms'),
    ])
  );
  rows.push(...derivedRows(rows));
  const svg = scaleChart(rows, 'scale-streams')!;
  assertWellFormed(svg);
  assert.equal([...svg.matchAll(/<path class="series"/g)].length, 2);
  assert.match(svg, /class="x-label"[^>]*>open streams on one connection \(N, log scale\)</);
  assert.match(svg, /class="y-label"[^>]*>cpu \(µs\)</);
  assert.equal(scaleChart(rows, 'scale-nothing'), undefined);
});

test('bench chart: a single N still draws a readable axis', () => {
  const svg = scaleChart(
    [row('scale-idle', 'node', 'raw', 'rss-per-peer', 200, 30_000)],
    'scale-idle',
  )!;
  assertWellFormed(svg);
  assert.doesNotMatch(svg, /NaN|Infinity/);
});

test('scale: flatness is the cost at the largest N over the smallest, per runtime and subject', () => {
  const rows = [
    row('scale-idle', 'bun', 'muxws', 'rss-per-peer', 1_000, 10_000),
    row('scale-idle', 'bun', 'muxws', 'rss-per-peer', 19_500, 13_000),
    row('scale-idle', 'bun', 'raw', 'rss-per-peer', 1_000, 8_000),
    row('scale-idle', 'bun', 'raw', 'rss-per-peer', 10_000, 8_000),
    row('scale-broadcast', 'bun', 'muxws', 'deliveries-per-second', 1_000, 2e6, '/s'),
    row('scale-broadcast', 'bun', 'muxws', 'deliveries-per-second', 19_500, 1e6, '/s'),
    row('scale-accept', 'bun', 'muxws', 'elapsed', 1_000, 100, 'ms'),
    row('scale-accept', 'bun', 'muxws', 'elapsed', 19_500, 2_000, 'ms'),
  ];
  const flat = flatness(rows);
  const find = (metric: string) => flat.find((r) => r.metric === metric);
  assert.equal(find('rss-per-peer (muxws)')?.value, 1.3);
  assert.equal(find('rss-per-peer (raw)')?.value, 1);
  // Half the deliveries per second is twice the time per delivery.
  assert.equal(find('deliveries-per-second (muxws)')?.value, 2);
  // A total (elapsed) is no cost per unit: no flatness.
  assert.equal(find('elapsed (muxws)'), undefined);
  // Memory that shrank at the smallest N (a figure of 0 or less) gives no ratio.
  const shrank = flatness([
    row('scale-idle', 'node', 'raw', 'rss-per-peer', 50, 0),
    row('scale-idle', 'node', 'raw', 'rss-per-peer', 200, 6_554),
  ]);
  assert.deepEqual(shrank, []);
  assert.ok(flat.every((r) => r.subject === 'flatness' && r.unit === '×'));
  assert.equal(find('rss-per-peer (muxws)')?.n, 19_500);

  const ratio = ratios(rows).filter((r) => r.scenario === 'scale-idle');
  assert.deepEqual(ratio.map((r) => [r.n, r.value]), [[1_000, 0.8], [19_500, 8_000 / 13_000]]);
});

test('scale: the table has a column per N, a line per runtime and subject, and flatness', () => {
  const rows = [...IDLE, ...flatness(IDLE), ...ratios(IDLE)];
  const text = scaleTable(rows);
  const lines = text.split('\n');
  assert.equal(
    lines[0],
    '| scale-idle: rss-per-peer (B) | N = 1,000 | N = 10,000 | N = 19,500 | flatness |',
  );
  assert.ok(lines.includes('| muxws on deno | 20,000 | 21,000 | 22,000 | 1.1 ✓ |'), text);
  assert.ok(lines.includes('| muxws vs raw on node | 1× | 1× | 1× | |'), text);
  assert.equal(scaleTable(IDLE.slice(-1)), '');
});

test('scale: scale-streams gets one table per metric, its flatness and its ratio under cpu', () => {
  const rows: ScaleRow[] = ['muxws', 'raw'].flatMap((subject) =>
    [1, 10_000].flatMap((n) => [
      row('scale-streams', 'deno', subject, 'rounds', n, 1, 'count'),
      row(
        'scale-streams',
        'deno',
        subject,
        'cpu',
        n,
        subject === 'raw' ? 20 : 20 + n / 1000,
        'µs/msg',
      ),
      row('scale-streams', 'deno', subject, 'cpu-min', n, 19, 'µs/msg'),
      row('scale-streams', 'deno', subject, 'cpu-max', n, 31, 'µs/msg'),
      row('scale-streams', 'deno', subject, 'wall', n, 40, 'µs/msg'),
    ])
  );
  const flat = derivedRows(rows).filter((r) => r.subject === 'flatness');
  assert.deepEqual(flat.map((r) => [r.metric, r.n]), [
    ['cpu (muxws)', 10_000],
    ['wall (muxws)', 10_000],
    ['cpu (raw)', 10_000],
    ['wall (raw)', 10_000],
  ]);
  const text = scaleTable([...rows, ...derivedRows(rows)]);
  const lines = text.split('\n');
  assert.deepEqual(lines.filter((line) => line.startsWith('| scale-streams:')), [
    '| scale-streams: cpu (µs/msg) | N = 1 | N = 10,000 | flatness |',
    '| scale-streams: wall (µs/msg) | N = 1 | N = 10,000 | flatness |',
  ]);
  assert.ok(lines.includes('| muxws on deno | 20 | 30 | 1.5 ✗ |'), text);
  assert.ok(lines.includes('| raw on deno | 20 | 20 | 1 ✓ |'), text);
  assert.equal(lines.filter((line) => line.startsWith('| muxws vs raw on deno |')).length, 1);
  assert.ok(lines.includes('| muxws vs raw on deno | 1× | 0.67× | |'), text);
});

test('scale: the largest N is the open-file limit less a margin, within 1,000 and 50,000', () => {
  assert.equal(maxPeers(20_000), 19_500);
  assert.equal(maxPeers(1_048_576), 50_000);
  assert.equal(maxPeers(1_024), 1_000);
  assert.deepEqual(scaleNs(false, 19_500), [1_000, 10_000, 19_500]);
  assert.deepEqual(scaleNs(false, 5_000), [1_000, 5_000]);
  assert.deepEqual(scaleNs(true, 19_500), [200, 1_000]);
});
