// Runs bench/run.ts as a child process for the bench tests on Deno: from the repository's root,
// into a fresh results directory that is removed afterwards, bounded in time.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** What one run of bench/run.ts left: its exit code, its stderr and its results directory. */
export interface BenchRun {
  code: number;
  stderr: string;
  /** The directory given as `--out`: latest.json, latest.md, the charts. */
  out: string;
}

/**
 * Runs `deno run -A bench/run.ts ...args --out <fresh directory>`, killed after `ms`, then hands
 * the run to `check`; the directory is removed whatever `check` does.
 */
export async function withBenchRun(
  args: string[],
  ms: number,
  check: (run: BenchRun) => void | Promise<void>,
): Promise<void> {
  const out = mkdtempSync(join(tmpdir(), 'muxws-bench-run-'));
  try {
    const run = await new Deno.Command(Deno.execPath(), {
      args: ['run', '-A', 'bench/run.ts', ...args, '--out', out],
      cwd: new URL('../../', import.meta.url),
      env: { NO_COLOR: '1' },
      stdin: 'null',
      stdout: 'null',
      signal: AbortSignal.timeout(ms),
    }).output();
    await check({ code: run.code, stderr: new TextDecoder().decode(run.stderr), out });
  } finally {
    rmSync(out, { recursive: true, force: true });
  }
}
