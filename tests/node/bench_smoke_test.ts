// A smoke test of the benchmark harness (bench/run.ts): one short side-by-side scenario on Node
// (three server processes and a client process on 127.0.0.1) and the bundle sizes, written to a
// temporary directory. It checks the shape of latest.json, not the speed.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import process from 'node:process';
import { repoRoot } from '../_repo.ts';
import type { Row } from '../../bench/_common.ts';

test('bench: a quick run writes rows for muxws, muxws routed, raw, raw decoding and socket.io, ratios with their spreads, the scored goals and bundle sizes', async () => {
  const root = repoRoot();
  const out = mkdtempSync(join(tmpdir(), 'muxws-bench-'));
  const child = spawn(join(root, 'node_modules', '.bin', 'deno'), [
    'run',
    '-A',
    'bench/run.ts',
    '--quick',
    '--runtimes',
    'node',
    '--scenarios',
    'req-resp-1,bundle',
    '--out',
    out,
  ], { cwd: root, stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, NO_COLOR: '1' } });
  let stderr = '';
  child.stderr.setEncoding('utf8');
  child.stderr.on('data', (chunk: string) => (stderr = (stderr + chunk).slice(-4000)));
  child.stdout.resume();
  let timer: ReturnType<typeof setTimeout> | undefined;
  try {
    const code = await new Promise<number | null>((resolve, reject) => {
      timer = setTimeout(
        () => reject(new Error(`bench/run.ts took over 40 s:\n${stderr}`)),
        40_000,
      );
      child.on('error', reject);
      child.on('exit', (exitCode) => resolve(exitCode));
    });
    assert.equal(code, 0, stderr);
    const rows = JSON.parse(readFileSync(join(out, 'latest.json'), 'utf8')) as Row[];
    for (const row of rows) {
      assert.deepEqual(Object.keys(row).sort(), [
        'metric',
        'runtime',
        'scenario',
        'subject',
        'unit',
        'value',
      ]);
    }
    const find = (subject: string, metric: string, scenario = 'req-resp-1') =>
      rows.find((r) =>
        r.scenario === scenario && r.subject === subject && r.metric === metric &&
        (scenario === 'bundle' || r.runtime === 'node')
      );
    for (const subject of ['muxws', 'muxws routed', 'raw', 'raw decoding', 'socket.io']) {
      const row = find(subject, 'throughput');
      assert.ok(row && row.value > 0 && row.unit === 'round trips/s', `${subject}: ${stderr}`);
      const min = find(subject, 'throughput-min')!.value;
      const max = find(subject, 'throughput-max')!.value;
      assert.ok(min <= row.value && row.value <= max);
      assert.ok(find(subject, 'p99')!.value >= find(subject, 'p50')!.value);
    }
    const vsRaw = find('ratio', 'vs-raw')!;
    assert.ok(
      Math.abs(
        vsRaw.value - find('muxws', 'throughput')!.value / find('raw', 'throughput')!.value,
      ) <
        1e-9,
    );
    assert.ok(find('ratio', 'vs-socket.io')!.value > 0);
    assert.equal(
      find('ratio', 'vs-raw decoding')!.value,
      find('muxws', 'throughput')!.value / find('raw decoding', 'throughput')!.value,
    );
    assert.match(
      readFileSync(join(out, 'latest.md'), 'utf8'),
      /\| req-resp-1 \| node \| throughput \(round trips\/s\), raw decoding each message \| \| [\d,]+/,
    );
    // What a route costs, as muxws routed ÷ muxws, on throughput and on CPU per operation.
    assert.equal(
      find('ratio', 'routed-vs-muxws')!.value,
      find('muxws routed', 'throughput')!.value / find('muxws', 'throughput')!.value,
    );
    assert.equal(
      find('ratio', 'cpu-routed-vs-muxws')!.value,
      find('muxws routed', 'cpu')!.value / find('muxws', 'cpu')!.value,
    );
    assert.match(
      readFileSync(join(out, 'latest.md'), 'utf8'),
      /\| req-resp-1 \| node \| cpu \(µs\/op\), muxws routed \(ratio: routed ÷ muxws\) \| [\d,.]+ .*\| [\d.]+×( \([\d.]+×\))? \| \|\n/,
    );
    // Each figure's spread over its rounds, each ratio's over its per-round ratios when two
    // rounds or more ran, every round's value in rounds.json, how the run was made, and the
    // scored goals.
    const rounds = find('muxws', 'rounds')!.value;
    assert.ok(rounds >= 1);
    assert.ok(find('muxws', 'throughput-spread')!.value >= 1);
    const perRound = JSON.parse(readFileSync(join(out, 'rounds.json'), 'utf8')) as Array<
      Row & { values: number[] }
    >;
    const muxwsRounds = perRound.find((r) =>
      r.scenario === 'req-resp-1' && r.subject === 'muxws' && r.metric === 'throughput'
    )!;
    assert.equal(muxwsRounds.values.length, rounds);
    if (rounds >= 2) assert.ok(find('ratio', 'vs-raw decoding-spread')!.value >= 1);
    const method = rows.filter((r) => r.scenario === 'method').map((r) => r.metric).sort();
    assert.deepEqual(method, ['pinned', 'rounds']);
    assert.match(
      readFileSync(join(out, 'latest.md'), 'utf8'),
      /\| req\/resp 1 in flight ≥ 0\.90× raw decoding \| node \| [\d.]+× \| .* \| \d+ \| (met|not met|unstable, not scored) \|/,
    );
    const dialer = find('muxws', 'min+gzip', 'bundle')!;
    const socketIo = find('socket.io', 'min+gzip', 'bundle')!;
    assert.ok(dialer.value > 1000 && dialer.value < find('muxws', 'min', 'bundle')!.value);
    // Smaller is better for size, so the ratio is socket.io ÷ muxws.
    assert.equal(find('ratio', 'vs-socket.io', 'bundle')!.value, socketIo.value / dialer.value);
    assert.match(readFileSync(join(out, 'latest.md'), 'utf8'), /\| req-resp-1 \| node \|/);
  } finally {
    clearTimeout(timer);
    if (child.exitCode === null) child.kill('SIGKILL');
    rmSync(out, { recursive: true, force: true });
  }
});
