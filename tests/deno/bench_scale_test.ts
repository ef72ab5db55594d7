// The scale scenario of bench/run.ts end to end at tiny N on Deno: a server process and two client
// processes per point on 127.0.0.1, muxws and raw at 20 and 60 peers. It checks that every curve
// has its rows at every N, the flatness and ratio rows, and the charts, not the speed. Bounded at
// 90 s.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { ScaleRow } from '../../bench/_common.ts';
import { withBenchRun } from './_bench_run.ts';

test(
  'bench: --scenarios scale measures idle memory, broadcast and accept per peer at each N, with flatness and charts',
  {
    timeout: 120_000,
  },
  async () => {
    await withBenchRun(
      ['--quick', '--runtimes', 'deno', '--scenarios', 'scale', '--scale-ns', '20,60'],
      90_000,
      ({ code, stderr, out }) => {
        assert.equal(code, 0, stderr);
        assert.doesNotMatch(stderr, /failed|skipped/, stderr);
        const rows = JSON.parse(readFileSync(join(out, 'latest.json'), 'utf8')) as ScaleRow[];
        const at = (scenario: string, subject: string, metric: string, n: number) =>
          rows.find((r) =>
            r.scenario === scenario && r.subject === subject && r.metric === metric && r.n === n &&
            r.runtime === 'deno'
          );
        for (const subject of ['muxws', 'raw']) {
          for (const n of [20, 60]) {
            assert.equal(at('scale-accept', subject, 'connections', n)?.value, n);
            for (
              const [scenario, metric] of [
                ['scale-accept', 'time-per-connection'],
                ['scale-accept', 'server-cpu-per-connection'],
                ['scale-idle', 'heap-per-peer'],
                ['scale-broadcast', 'deliveries-per-second'],
                ['scale-broadcast', 'server-cpu-per-delivery'],
              ]
            ) {
              const value = at(scenario, subject, metric, n)?.value;
              assert.ok(value !== undefined && value > 0, `${scenario} ${metric} ${subject} ${n}`);
            }
            assert.ok(Number.isFinite(at('scale-idle', subject, 'rss-per-peer', n)?.value));
          }
          for (
            const [scenario, metric] of [
              ['scale-idle', 'rss-per-peer'],
              ['scale-broadcast', 'deliveries-per-second'],
              ['scale-accept', 'time-per-connection'],
            ]
          ) {
            const flat = rows.find((r) =>
              r.subject === 'flatness' && r.metric === `${metric} (${subject})`
            );
            // A curve has its flatness where both ends are positive; RSS per peer at 20 peers is
            // noise around 0 and may come out negative, and then there is none.
            const ends = [20, 60].map((n) => at(scenario, subject, metric, n)?.value ?? 0);
            if (ends.every((value) => value > 0)) {
              assert.ok(flat !== undefined && Number.isFinite(flat.value) && flat.n === 60, metric);
            } else assert.equal(flat, undefined, `${metric}: no flatness without positive ends`);
          }
        }
        assert.ok(at('scale-broadcast', 'ratio', 'vs-raw', 60) !== undefined);
        for (const scenario of ['scale-idle', 'scale-broadcast', 'scale-accept']) {
          assert.ok(existsSync(join(out, `${scenario}.svg`)), scenario);
        }
        assert.match(
          readFileSync(join(out, 'latest.md'), 'utf8'),
          /\| scale-broadcast: deliveries-per-second/,
        );
      },
    );
  },
);

test('bench: a bad --scale-ns is refused before any scenario runs or any process starts', async () => {
  await withBenchRun(
    ['--quick', '--runtimes', 'deno', '--scenarios', 'scale', '--scale-ns', '0,x'],
    30_000,
    ({ code, stderr }) => {
      assert.notEqual(code, 0);
      assert.match(
        stderr,
        /--scale-ns must be a comma list of whole numbers of at least 1: current value is "0,x"/,
      );
      // The run's first progress line (its pinning) comes before anything is built or started.
      assert.doesNotMatch(stderr, /pinned/);
    },
  );
});
