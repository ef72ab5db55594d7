// `npm test`: the whole gate on every runtime, then one summary line.
//
//   1. `deno task ok`: fmt check, lint, type check, doc lint, then the Deno tests (tests/ minus
//      tests/bun/ and tests/node/), JUnit to .test-results/deno.xml;
//   2. `bun test` over the shared tests (tests/*_test.ts and tests/<lib folder>/) and tests/bun/,
//      JUnit to .test-results/bun.xml;
//   3. build dist/, bundle the shared tests and tests/node/ against it, run them on this Node,
//      JUnit to .test-results/node.xml.
//
// Every runtime's count comes from its JUnit file; a runtime that wrote none (it crashed, or its
// files did not compile) counts as one failure, so a broken step never reads as zero failures.
// The last line printed is `N passed, M failed` over all runtimes; it is also written to
// .test-results/<run id>/summary.txt for .ci/run. Exit status is non-zero when anything failed.
//
// Flags: `--only deno,bun,node` runs a subset; `--files a_test.ts,node/b_test.ts` limits the
// tests to the files whose paths end so, shared and per-runtime (a quick loop while developing).
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { build, bundleTestsForNode, root, tsFiles } from './build.mjs';

const args = process.argv.slice(2);
const flag = (name) => {
  const i = args.indexOf(name);
  return i === -1 ? undefined : args[i + 1]?.split(',');
};
const only = flag('--only') ?? ['deno', 'bun', 'node'];
const filesFilter = flag('--files');

// Each run writes below .test-results/<run id> (MUXWS_RUN_ID, default `all`), its own dist/
// included, so runs started at once by different people do not clobber each other.
const results = join(root, '.test-results', process.env.MUXWS_RUN_ID ?? 'all');
rmSync(results, { recursive: true, force: true });
mkdirSync(results, { recursive: true });

const bin = (name) => join(root, 'node_modules', '.bin', name);
// Shared tests run on every runtime: tests/*_test.ts and the folders that mirror lib/'s
// (tests/session/, tests/dialer/, …); the per-runtime folders hold each runtime's own.
const RUNTIME_FOLDERS = ['deno', 'bun', 'node'];
const shared = tsFiles('tests', { suffix: '_test.ts' })
  .filter((f) => f.split('/').length === 2 || !RUNTIME_FOLDERS.includes(f.split('/')[1]))
  .filter((f) => !filesFilter || filesFilter.some((name) => f.endsWith(name)));
const own = (runtime) =>
  tsFiles(join('tests', runtime), { suffix: '_test.ts' })
    .filter((f) => !filesFilter || filesFilter.some((name) => f.endsWith(name)));

/** The `deno …` commands of a deno.json task that chains them with `&&`. */
function denoTask(name) {
  const task = JSON.parse(readFileSync(join(root, 'deno.json'), 'utf8')).tasks[name];
  const commands = task.split(' && ');
  for (const c of commands) {
    if (!c.startsWith('deno ')) {
      throw new Error(`Expected every step of task "${name}" to start with "deno ": found "${c}"`);
    }
  }
  return commands;
}

function run(label, command, commandArgs, env = {}) {
  console.log(`\n=== ${label}: ${[command, ...commandArgs].join(' ')}`);
  const started = Date.now();
  const r = spawnSync(command, commandArgs, {
    cwd: root,
    stdio: 'inherit',
    env: { ...process.env, ...env },
  });
  console.log(
    `=== ${label}: exit ${r.status ?? r.signal} after ${
      ((Date.now() - started) / 1000).toFixed(1)
    } s`,
  );
  return r.status === 0;
}

/** Counts test cases in a JUnit file: passed, failed, skipped. */
function countJUnit(file) {
  const xml = readFileSync(file, 'utf8');
  let passed = 0;
  let failed = 0;
  let skipped = 0;
  // Attribute values are matched as quoted strings, since Node's reporter leaves a `>` in a
  // test name unescaped.
  const cases = xml.match(/<testcase\b(?:\s+[\w:.-]+="[^"]*")*\s*(\/>|>[\s\S]*?<\/testcase>)/g) ??
    [];
  for (const c of cases) {
    if (/<(failure|error)\b/.test(c)) failed++;
    else if (/<skipped\b/.test(c)) skipped++;
    else passed++;
  }
  return { passed, failed, skipped };
}

const tally = [];
function record(runtime, ok, junit) {
  if (!existsSync(junit)) {
    tally.push({ runtime, passed: 0, failed: 1, skipped: 0, note: 'no report written' });
    return;
  }
  const counts = countJUnit(junit);
  // A runner that exits non-zero with every case green failed outside a test (a type error,
  // an unhandled rejection between tests): count it, so it cannot pass unnoticed.
  if (!ok && counts.failed === 0) counts.failed = 1;
  tally.push({ runtime, ...counts, note: ok ? '' : 'runner exited non-zero' });
}

/** With --files, a runtime none of whose files matched runs nothing and counts nothing. */
function nothingFor(runtime, files) {
  if (!filesFilter || files.length > 0) return false;
  console.log(`\n=== ${runtime}: no test file matches --files; nothing run`);
  return true;
}

if (only.includes('deno') && !nothingFor('deno', [...shared, ...own('deno')])) {
  const junit = join(results, 'deno.xml');
  // `deno task ok` is a chain of `deno …` commands (deno.json is authoritative). It is run
  // here command by command with the npm-installed binary, since `deno task` resolves a nested
  // `deno` to node_modules/.bin/deno and cannot run that binary as a script.
  // With --files, only the chosen files run (shared and tests/deno/); `deno test` with no file
  // would run the whole suite, so a filter that matches nothing for Deno runs nothing.
  const chosen = [...shared, ...own('deno')];
  const steps = filesFilter
    ? (chosen.length > 0 ? [['test', '-A', ...chosen]] : [])
    : denoTask('ok').map((command) => command.split(/\s+/).slice(1));
  let ok = true;
  for (const step of steps) {
    if (step[0] === 'test') step.splice(1, 0, `--junit-path=${junit}`);
    ok = run('deno', bin('deno'), step) && ok;
    if (!ok) break;
  }
  record('deno', ok, junit);
}

if (only.includes('bun') && !nothingFor('bun', [...shared, ...own('bun')])) {
  const junit = join(results, 'bun.xml');
  const files = [...shared, ...own('bun')].map((f) => `./${f}`);
  const ok = run('bun', bin('bun'), [
    'test',
    '--timeout=60000',
    '--reporter=junit',
    `--reporter-outfile=${junit}`,
    ...files,
  ]);
  record('bun', ok, junit);
}

if (only.includes('node')) {
  const junit = join(results, 'node.xml');
  let ok = false;
  try {
    const dist = join(results, 'dist');
    await build(dist);
    const bundled = await bundleTestsForNode(
      [...shared, ...own('node')],
      join(results, 'node'),
      dist,
    );
    ok = run('node', process.execPath, [
      '--test',
      '--test-concurrency=1',
      '--test-reporter=spec',
      '--test-reporter-destination=stdout',
      '--test-reporter=junit',
      `--test-reporter-destination=${junit}`,
      ...bundled,
    ]);
  } catch (error) {
    console.error('node: build or bundle failed:', error);
  }
  record('node', ok, junit);
}

console.log('\n=== summary');
let passed = 0;
let failed = 0;
let skipped = 0;
for (const t of tally) {
  console.log(
    `${t.runtime}: ${t.passed} passed, ${t.failed} failed, ${t.skipped} skipped${
      t.note ? ` (${t.note})` : ''
    }`,
  );
  passed += t.passed;
  failed += t.failed;
  skipped += t.skipped;
}
const line = `${passed} passed, ${failed} failed` + (skipped ? `, ${skipped} skipped` : '');
writeFileSync(join(results, 'summary.txt'), line + '\n');
console.log(line);
process.exit(failed === 0 && tally.length > 0 ? 0 : 1);
