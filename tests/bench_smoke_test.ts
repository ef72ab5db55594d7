// The herd figures of the benchmarks (bench/_herd_stats.ts): T50/T95/T100, the busiest 100 ms
// window and lumpiness, on arrival times made here, and the parsing of `--herd-runtime`. No SPEC
// rule covers benchmarks, so the names cite no rule id.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { herdRuntimes, herdStats, sparkline } from '../bench/_herd_stats.ts';

test('herd: arrivals spread evenly over 1 s score a lumpiness just under 1', () => {
  const times = Array.from({ length: 1000 }, (_, i) => i);
  const stats = herdStats(times, 1000);
  assert.equal(stats.arrived, 1000);
  assert.equal(stats.t50, 499);
  assert.equal(stats.t95, 949);
  assert.equal(stats.t100, 999);
  assert.equal(stats.share, 0.1);
  assert.ok(Math.abs(stats.lumpiness - 0.949) < 1e-9);
  assert.equal(stats.histogram.length, 100);
  assert.ok(stats.histogram.every((n) => n === 10));
});

test('herd: everyone inside one 100 ms window at 4 s scores about 40', () => {
  const times = Array.from({ length: 1000 }, (_, i) => 4000 + (i % 50));
  const stats = herdStats(times, 1000);
  assert.equal(stats.share, 1);
  assert.equal(stats.t95, 4047);
  assert.ok(Math.abs(stats.lumpiness - 40.47) < 1e-9);
  assert.equal(stats.histogram.length, 405);
  assert.equal(stats.histogram[400] + stats.histogram[401] + stats.histogram[402], 600);
  assert.equal(stats.histogram.slice(0, 400).reduce((a, b) => a + b, 0), 0);
});

test('herd: the busiest window is the densest 100 ms, not a fixed bin', () => {
  // 30 arrivals from 50 to 79 ms and 30 from 120 to 149 ms: no fixed bin of 100 holds both
  // groups, but the window [50, 150) does.
  const times = [
    ...Array.from({ length: 30 }, (_, i) => 50 + i),
    ...Array.from({ length: 30 }, (_, i) => 120 + i),
    ...Array.from({ length: 40 }, (_, i) => 1000 + i * 50),
  ];
  const stats = herdStats(times, 100);
  assert.equal(stats.share, 0.6);
});

test('herd: dialers that never came back leave T95 and T100 unreached', () => {
  const stats = herdStats([10, 20, 30], 10);
  assert.equal(stats.arrived, 3);
  assert.ok(Number.isNaN(stats.t50));
  assert.ok(Number.isNaN(stats.t95));
  assert.ok(Number.isNaN(stats.t100));
  assert.ok(Number.isNaN(stats.lumpiness));
  // An arrival recorded just before the instant the server could accept counts as 0 ms.
  assert.equal(herdStats([-3, 5], 2).t50, 0);
});

test('herd: the sparkline has one mark per 100 ms, tallest for the busiest', () => {
  const histogram = new Array<number>(30).fill(0);
  histogram[0] = 1;
  histogram[25] = 8;
  assert.equal(sparkline(histogram), '▁·█');
  assert.equal(sparkline([]), '');
});

test('herd: --herd-runtime picks the runtimes, node and bun by default, node when quick', () => {
  assert.deepEqual(herdRuntimes([], false), ['node', 'bun']);
  assert.deepEqual(herdRuntimes(['--quick'], true), ['node']);
  assert.deepEqual(herdRuntimes(['--herd-runtime', 'deno'], false), ['deno']);
  assert.deepEqual(herdRuntimes(['--quick', '--herd-runtime', 'bun'], true), ['bun']);
  assert.deepEqual(
    herdRuntimes(['--scenarios', 'herd', '--herd-runtime', 'bun,node,bun,,deno'], false),
    ['bun', 'node', 'deno'],
  );
});

test('herd: --herd-runtime refuses an unknown runtime or an empty list', () => {
  assert.throws(() => herdRuntimes(['--herd-runtime', 'node,workerd'], false), {
    name: 'RangeError',
    message:
      '--herd-runtime must be a comma list of node, bun, deno: current value is "node,workerd"',
  });
  assert.throws(() => herdRuntimes(['--herd-runtime'], false), RangeError);
  assert.throws(() => herdRuntimes(['--herd-runtime', ','], false), RangeError);
});
