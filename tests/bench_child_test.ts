// The bench orchestrator's child processes (bench/_child.ts): a real process, its stdout read as
// lines. No SPEC rule covers benchmarks, so the names cite no rule id.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import process from 'node:process';
import { Child } from '../bench/_child.ts';

test('bench child: a line printed just before exiting is found, not reported as never printed', async () => {
  // Much output then the line and an immediate exit: the exit can be seen before the last of
  // stdout was read.
  for (let i = 0; i < 5; i++) {
    const child = new Child('printer', process.execPath, [
      '-e',
      "process.stdout.write('x'.repeat(200) + '\\n'); process.stdout.write('filler\\n'.repeat(30000) + 'READY 7\\n'); process.exit(0)",
    ]);
    try {
      assert.equal(await child.waitFor('READY', 10_000), '7');
      await child.done(10_000);
      assert.equal(child.exited, true);
    } finally {
      child.kill();
    }
  }
});

test('bench child: a last line without a newline is read once the process closed its output', async () => {
  const child = new Child('printer', process.execPath, [
    '-e',
    "process.stdout.write('READY 8'); process.exit(0)",
  ]);
  try {
    assert.equal(await child.waitFor('READY', 10_000), '8');
  } finally {
    child.kill();
  }
});
