// The reference page (shared/seeds/000_49085b16b9da5da2.txt) is normative, and its TypeScript
// examples must run unchanged against this package. This file reads the page at test time (the
// examples are not copied into the repository), writes each TypeScript example to a file below
// .test-results/, and runs it in a subprocess of the current runtime:
//
// - Deno: `deno run` with the repository's deno.json, whose import map sends 'muxws' to mod.ts;
// - Bun: `bun run`, which resolves 'muxws' to mod.ts through tsconfig.json's "paths" (the package
//   is named @muxws/core, so a self-reference would not match);
// - Node: the example is transformed with esbuild and 'muxws' pointed at the dist/ build this
//   test run made, so Node checks the built package.
//
// Each run must exit 0 and print what the page says it prints. The page sits beside the
// repository in CI, and .ci/run fails when it does not; on a clone without it, these tests are
// skipped with a message saying so, and tests/dialer/schedule_hello_figures_test.ts still holds the same
// figures with nothing from outside the repository.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { repoRoot as repositoryRoot } from './_repo.ts';

const SEED_NAME = '000_49085b16b9da5da2.txt';

type Runtime = 'deno' | 'bun' | 'node';
const runtime: Runtime = 'Deno' in globalThis ? 'deno' : 'Bun' in globalThis ? 'bun' : 'node';

const root = repositoryRoot();
const seedPath = join(root, '..', 'shared', 'seeds', SEED_NAME);

/** Why the page's examples are skipped (the page is not beside this clone), or false to run them. */
const skip: string | false = existsSync(seedPath)
  ? false
  : `the reference page is not at ${seedPath}: ` +
    'its examples run where the page sits beside the repository (CI requires it)';
if (skip) console.warn(`seed_examples_test.ts: skipped, as ${skip}`);

/** A heading line of the page, or the start of its table of contents. */
const HEADING = /^`?[A-Za-z_]+(\(\))?`?\s*(\((TypeScript|Python)\))?\s*$/;

/** The TypeScript examples of the page, keyed by their section's heading, in page order. */
function pageExamples(): Map<string, string> {
  let text: string;
  try {
    text = readFileSync(seedPath, 'utf8');
  } catch (error) {
    assert.fail(
      `Cannot read the reference page at ${seedPath}: the shared/ folder must sit beside the ` +
        `repository (${(error as Error).message})`,
    );
  }
  const examples = new Map<string, string>();
  const lines = text.split(/\r?\n/);
  let section: string | undefined;
  for (let i = 0; i < lines.length; i++) {
    const heading = /^`([^`]+)` \((TypeScript|Python)\)\s*$/.exec(lines[i]);
    if (heading) {
      section = heading[2] === 'TypeScript' ? heading[1] : undefined;
      continue;
    }
    if (section === undefined || !/^import .* from 'muxws';$/.test(lines[i])) continue;
    const body: string[] = [];
    let j = i;
    for (; j < lines.length && !(j > i && HEADING.test(lines[j])); j++) body.push(lines[j]);
    while (body.length && body[body.length - 1].trim() === '') body.pop();
    examples.set(section, body.join('\n') + '\n');
    section = undefined;
    i = j - 1;
  }
  return examples;
}

/** Collapses what differs between runtimes' console.log: colour, whitespace, quotes, trailing commas. */
function normalize(output: string): string {
  return output
    // deno-lint-ignore no-control-regex
    .replace(/\x1b\[[0-9;]*m/g, '')
    .replace(/\s+/g, '')
    .replace(/'/g, '"')
    .replace(/,([}\]])/g, '$1');
}

/** Where this run writes its example files: .test-results/<run id>/seed/<runtime>/. */
function workDir(): string {
  const dir = join(root, '.test-results', process.env.MUXWS_RUN_ID ?? 'all', 'seed', runtime);
  mkdirSync(dir, { recursive: true });
  return dir;
}

/** The dist/ entry this Node test run was bundled against (scripts/test.mjs's layout). */
function builtModule(): string {
  // This file runs as <results>/node/tests/seed_examples_test.mjs; the build is <results>/dist.
  const candidate = fileURLToPath(new URL('../../dist/mod.js', import.meta.url));
  assert.ok(
    existsSync(candidate),
    `Expected the built package at ${candidate}: run this test on Node through scripts/test.mjs`,
  );
  return candidate;
}

/** The environment minus FORCE_COLOR, which makes Deno colour even a piped stdout. */
function withoutForceColor(env: Record<string, string | undefined>): Record<string, string> {
  const copy: Record<string, string> = {};
  for (const [key, value] of Object.entries(env)) {
    if (key !== 'FORCE_COLOR' && value !== undefined) copy[key] = value;
  }
  return copy;
}

/** Writes the example as the current runtime runs it and runs it; returns its stdout. */
async function runExample(name: string, source: string): Promise<string> {
  const file = join(workDir(), name.replace(/[^A-Za-z]+/g, '_'));
  let command: string[];
  if (runtime === 'node') {
    const { transform } = await import('esbuild');
    const js = (await transform(source, { loader: 'ts', format: 'esm', target: 'node20' })).code;
    const target = JSON.stringify(pathToFileURL(builtModule()).href);
    writeFileSync(`${file}.mjs`, js.replaceAll(`"muxws"`, target));
    command = [process.execPath, `${file}.mjs`];
  } else {
    writeFileSync(`${file}.ts`, source);
    command = runtime === 'deno'
      ? [process.execPath, 'run', '--no-lock', '--config', join(root, 'deno.json'), `${file}.ts`]
      : [process.execPath, 'run', `${file}.ts`];
  }
  const result = spawnSync(command[0], command.slice(1), {
    cwd: root,
    encoding: 'utf8',
    timeout: 60_000,
    env: { ...withoutForceColor(process.env), NO_COLOR: '1' },
  });
  assert.equal(
    result.status,
    0,
    `${command.join(' ')} exited with ${result.status ?? result.signal}:\n${result.stderr}`,
  );
  return result.stdout;
}

/**
 * What each example prints, normalized. The lines are the page's own output: the schedules'
 * figures, the by-value capture, and the rejections (their messages are muxws's wording).
 */
const EXPECTED: [section: string, rule: string, output: string[]][] = [
  ['Reconnect', 'WSM-RCN-002', [
    '[250, 500, 1000, 2000, 4000, 8000, 16000, 30000, 30000] milliseconds',
    '[1000, 5000, 5000, 5000] milliseconds',
    'rejected: Cannot create Reconnect as "factor" must be at least 1: current value is 0.5',
    'unlimited by default: Infinity',
  ]],
  ['ReconnectOptions', 'WSM-RCN-002', [
    '60000 milliseconds',
    '3 attempts before giving up',
    '250 milliseconds by default',
  ]],
  ['Hello', 'WSM-DIAL-004', [
    'true 10000 milliseconds',
    "captured by value: { client: 'docs', rooms: [ 'general' ] }",
    'a fresh copy per replay: true',
    'headers: { v: 1 }',
    'no hello configured: false',
    'rejected at construction: DataCloneError',
  ]],
  ['HelloOptions', 'WSM-DIAL-004', [
    'true 10000 milliseconds',
    'false 10000 milliseconds by default',
  ]],
  ['backoffDelay()', 'WSM-RCN-002', [
    'no jitter drawn: [ 1000, 2000, 4000, 8000 ] milliseconds',
    'jitter at its lowest: 500 milliseconds',
    'jitter at its highest: 1500 milliseconds',
    'the cap is jittered too: 15000 milliseconds',
    'rejected: Cannot compute a backoff delay as "attempts" must not be negative: current value is -1',
  ]],
  ['unjitteredDelay()', 'WSM-RCN-002', [
    '[250, 500, 1000, 2000, 4000, 8000, 16000, 30000, 30000, 30000] milliseconds',
    'the cap holds: 30000 milliseconds',
  ]],
  ['shouldRetry()', 'WSM-RCN-044', [
    '[ true, true, true, false, false ]',
    'unlimited by default: true',
    'maxAttempts 0 never dials: false',
  ]],
];

const how = 'on Deno and Bun from mod.ts, on Node from dist/';

test('WSM-RCN-002 the reference page has exactly the seven TypeScript examples this file runs', {
  skip,
}, () => {
  assert.deepEqual([...pageExamples().keys()], EXPECTED.map(([section]) => section));
});

for (const [section, rule, lines] of EXPECTED) {
  test(
    `${rule} the reference page's ${section} example runs unchanged (${how}) and prints its figures`,
    { skip },
    async () => {
      const source = pageExamples().get(section);
      assert.ok(source, `The reference page has no TypeScript example under "${section}"`);
      assert.match(source, /^import .* from 'muxws';\n/);
      const output = await runExample(section, source);
      assert.equal(normalize(output), normalize(lines.join('\n')), `printed:\n${output}`);
    },
  );
}
