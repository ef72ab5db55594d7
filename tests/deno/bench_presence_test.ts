// bench/run.ts --scenarios presence runs end to end on a small scale: two Deno nodes on a fresh
// redis-server, 1,000 tracked peers in one tag, 100 of them following, and the rounds of a join
// and a leave; it reports every row the performance page reads, each measured. Bounded at 90 s.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { Row } from '../../bench/_common.ts';
import { withBenchRun } from './_bench_run.ts';

test(
  'WSM-PRS-004 bench presence --quick carries joins and leaves to every follower of 1,000 presences on two nodes over Redis, one PUBLISH per batch',
  { timeout: 120_000 },
  async () => {
    await withBenchRun(
      ['--quick', '--scenarios', 'presence', '--runtimes', 'deno'],
      90_000,
      async ({ code, stderr, out }) => {
        assert.equal(code, 0, stderr);
        const rows = JSON.parse(await Deno.readTextFile(`${out}/latest.json`)) as Row[];
        const mine = rows.filter((r) => r.scenario === 'presence');
        const value = (metric: string) => {
          const row = mine.find((r) => r.metric === metric);
          assert(row !== undefined, `the row ${metric}: ${stderr}`);
          assert.equal(row.runtime, 'deno');
          assert.equal(row.subject, 'muxws');
          return row.value;
        };
        for (const change of ['join', 'leave']) {
          const [p50, p99, max] = ['p50', 'p99', 'max'].map((q) =>
            value(`presence-${change}-${q}`)
          );
          assert(p50 > 0 && p50 <= p99 && p99 <= max, `${change}: ${p50} ${p99} ${max}`);
        }
        assert(value('presence-sync-p50') > 0);
        // One snapshot of 1,000 entries: at least a key and a 36-character ref each.
        assert(value('presence-sync-bytes') > 1_000 * 40, `${value('presence-sync-bytes')}`);
        assert.equal(value('publish-per-batch'), 1);
        assert(value('rss-node-a') > 0 && value('rss-node-b') > 0);
        assert.equal(value('peers'), 1_000);
        assert.equal(value('followers'), 100);
        assert.equal(value('missed'), 0);
        assert.match(
          await Deno.readTextFile(`${out}/latest.md`),
          /\| presence \| deno \| presence-join-p99 \(ms\) \| [\d.,]+ \|/,
        );
      },
    );
  },
);
