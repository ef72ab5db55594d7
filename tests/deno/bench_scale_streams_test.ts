// bench/run.ts --scenarios scale-streams runs end to end on a small scale: one connection holding
// 1 and then 100 streams open on Deno, request/responses beside raw at each, and the rows the
// docs read (CPU and wall time per message with their N, raw ÷ muxws at each N, the flatness
// rows). No SPEC rule covers benchmarks, so the names cite no rule id. Bounded at 90 s.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { ScaleRow } from '../../bench/_common.ts';
import { withBenchRun } from './_bench_run.ts';

test(
  'bench scale-streams --quick holds 1 and 100 streams open on one connection and reports the cost per message beside raw, with its flatness',
  { timeout: 120_000 },
  async () => {
    await withBenchRun(
      ['--quick', '--scenarios', 'scale-streams', '--runtimes', 'deno'],
      90_000,
      async ({ code, stderr, out: dir }) => {
        assert.equal(code, 0, stderr);
        const rows = JSON.parse(await Deno.readTextFile(`${dir}/latest.json`)) as ScaleRow[];
        const mine = rows.filter((r) => r.scenario === 'scale-streams');
        for (const subject of ['muxws', 'raw']) {
          for (const n of [1, 100]) {
            for (const metric of ['cpu', 'server-cpu', 'wall']) {
              const row = mine.find((r) =>
                r.subject === subject && r.metric === metric && r.n === n
              );
              assert(row !== undefined && row.value > 0, `${subject} ${metric} at ${n}`);
              assert.equal(row.runtime, 'deno');
              assert.equal(row.unit, 'µs/msg');
            }
          }
        }
        assert.equal(
          mine.find((r) => r.subject === 'muxws' && r.metric === 'streams' && r.n === 100)?.value,
          100,
        );
        for (const n of [1, 100]) {
          const ratio = mine.find((r) => r.subject === 'ratio' && r.n === n);
          assert(ratio !== undefined && ratio.metric === 'cpu-vs-raw' && ratio.value > 0);
        }
        const flatness = mine.filter((r) => r.subject === 'flatness').map((r) => r.metric).sort();
        assert.deepEqual(flatness, ['cpu (muxws)', 'cpu (raw)', 'wall (muxws)', 'wall (raw)']);
        assert(mine.every((r) => r.subject !== 'flatness' || r.n === 100));
        // No side-by-side ratio is taken from a scale curve's first N as if it were the scenario's.
        assert(!mine.some((r) => r.subject === 'ratio' && r.n === undefined));
        const table = await Deno.readTextFile(`${dir}/latest.md`);
        // One table per metric, once each, with the flatness column filled in.
        assert.equal(
          table.split('| scale-streams: cpu (µs/msg) | N = 1 | N = 100 | flatness |').length,
          2,
        );
        assert.match(table, /\| muxws on deno \| [\d.,]+ \| [\d.,]+ \| [\d.,]+ [✓✗] \|/);
        assert.match(table, /\| muxws vs raw on deno \| [\d.,]+× \| [\d.,]+× \| \|/);
      },
    );
  },
);
