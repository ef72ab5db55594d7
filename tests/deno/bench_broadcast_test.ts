// bench/broadcast.ts runs end to end on a small scale: its four setups (muxws and socket.io, one
// node and two nodes over its own redis-server) connect, every broadcast reaches every peer, and
// it reports five interleaved repetitions of each with positive figures. Bounded at 120 s.
import { test } from 'node:test';
import assert from 'node:assert/strict';

const root = new URL('../../', import.meta.url);

interface Result {
  peers: number;
  reps: number;
  rounds: number;
  setups: {
    name: string;
    deliveriesPerSecond: number[];
    cpuMicrosPerDelivery: number[];
    dialersCpuMicrosPerDelivery: number[];
  }[];
  ratios: { oneNode: number; overRedis: number };
  table: string;
}

test(
  'WSM-ACC-005 WSM-BP-003 bench/broadcast.ts --quick fans out to every peer through one node and two nodes over Redis, for muxws and socket.io',
  { timeout: 150_000 },
  async () => {
    const dir = await Deno.makeTempDir({ prefix: 'muxws-bench-broadcast-' });
    try {
      const out = `${dir}/broadcast.json`;
      const run = await new Deno.Command(Deno.execPath(), {
        args: ['run', '-A', 'bench/broadcast.ts', '--quick', '--peers', '20', '--out', out],
        cwd: root,
        env: { NO_COLOR: '1' },
        stdin: 'null',
        signal: AbortSignal.timeout(120_000),
      }).output();
      const stderr = new TextDecoder().decode(run.stderr);
      assert.equal(run.code, 0, stderr);
      const result = JSON.parse(await Deno.readTextFile(out)) as Result;
      assert.equal(result.peers, 20);
      assert.equal(result.reps, 5);
      assert.deepEqual(result.setups.map((s) => s.name), [
        'muxws, one node',
        'socket.io, one node',
        'muxws, two nodes over Redis',
        'socket.io + redis-adapter, two nodes',
      ]);
      for (const setup of result.setups) {
        for (
          const series of [
            setup.deliveriesPerSecond,
            setup.cpuMicrosPerDelivery,
            setup.dialersCpuMicrosPerDelivery,
          ]
        ) {
          assert.equal(series.length, 5, setup.name);
          assert(series.every((v) => Number.isFinite(v) && v > 0), `${setup.name}: ${series}`);
        }
      }
      assert(result.ratios.oneNode > 0 && result.ratios.overRedis > 0);
      // The table it prints is the one it saved, one line per setup and metric.
      const stdout = new TextDecoder().decode(run.stdout);
      assert.equal(stdout.trim(), result.table);
      assert.equal(result.table.split('\n').filter((l) => l.startsWith('| one node |')).length, 3);
      assert.match(stderr, /muxws, two nodes over Redis: 20 peers connected/);
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  },
);
