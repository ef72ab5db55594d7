// The README's quick start and the chat example it condenses, run as they stand: the first
// ```ts block under "## Quick start" is written to a temporary file, type-checked and run with
// this repository's deno.json (whose import map resolves `@muxws/core`), and examples/chat.ts is run as
// its header says. Each run is a child Deno process bounded at 30 s.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { run, type RunOutput } from './_run.ts';

const root = new URL('../../', import.meta.url);

/** Runs `deno run -A <args>` in the repository, killed after 30 s; returns the outcome. */
function denoRun(...args: string[]): Promise<RunOutput> {
  return run(Deno.execPath(), ['run', '-A', ...args], root);
}

/** The first ```ts block after the README's "## Quick start" heading, without its fences. */
async function quickStart(): Promise<string> {
  const readme = await Deno.readTextFile(new URL('README.md', root));
  const section = readme.split(/^## Quick start$/m)[1];
  assert(section !== undefined, 'README.md has a "## Quick start" section');
  const block = section.match(/^```ts[^\n]*\n([\s\S]*?)^```$/m);
  assert(block, 'the quick start shows a ```ts block');
  return block[1];
}

test('WSM-ACC-005 WSM-APP-003 the README quick start is the chat in under 30 lines, typed with no non-null assertion, and running it broadcasts to both peers in the room', async () => {
  const code = await quickStart();
  const lines = code.trimEnd().split('\n');
  assert(lines.length < 30, `the quick start has ${lines.length} lines`);
  assert.match(code, /from '@muxws\/core\/acceptor'/);
  assert.doesNotMatch(code, /!\./, 'the quick start needs no non-null assertion');
  const dir = await Deno.makeTempDir({ prefix: 'muxws-quick-start-' });
  try {
    const file = `${dir}/chat.ts`;
    await Deno.writeTextFile(file, code);
    const run = await denoRun('--check', '--config', new URL('deno.json', root).pathname, file);
    assert.equal(run.code, 0, run.stderr);
    // ada's own screen shows the message before her request is answered (one socket, in order);
    // bob's arrives on another socket, so its place among the lines is not fixed.
    const out = run.stdout.trimEnd().split('\n');
    assert.equal(out[0], 'ada joined lobby / bob joined lobby');
    assert.deepEqual(out.slice(1).sort(), [
      "[ada's screen] ada: hi bob",
      "[bob's screen] ada: hi bob",
      'reached 2 peers',
    ]);
    assert(out.indexOf("[ada's screen] ada: hi bob") < out.indexOf('reached 2 peers'));
    assert.match(run.stderr, /^Listening on http:\/\/127\.0\.0\.1:\d+\/$/m);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

test('WSM-ACC-005 examples/chat.ts runs: a broadcast reaches exactly the peers tagged with its room', async () => {
  const run = await denoRun('examples/chat.ts');
  assert.equal(run.code, 0, run.stderr);
  const out = run.stdout.trimEnd().split('\n');
  assert.equal(out[0], 'ada joined lobby / bob joined lobby');
  assert.deepEqual(out.slice(1).sort(), [
    "[ada's screen] ada: hi bob",
    "[ada's screen] bob: hi ada",
    "[bob's screen] ada: hi bob",
    "[bob's screen] bob: hi ada",
    'reached 2 peers',
    'reached 2 peers',
  ]);
  assert(!run.stdout.includes('nobody hears this'), 'nobody is in the room "elsewhere"');
});
