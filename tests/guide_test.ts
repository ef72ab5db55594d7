// The option tables of docs/guide/options.md are generated from the JSDoc by
// scripts/guide_options.mjs: the page must be what the script writes, and the script's check must
// notice a table that went stale.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { repoRoot } from './_repo.ts';

const root = repoRoot();
const script = join(root, 'scripts', 'guide_options.mjs');
const page = join(root, 'docs', 'guide', 'options.md');

/** Runs the generator's check on `file`, bounded at 60 s. */
function check(file: string) {
  return spawnSync('node', [script, '--check', '--page', file], {
    cwd: root,
    encoding: 'utf8',
    timeout: 60_000,
  });
}

test('the option tables of the guide are what the JSDoc gives', () => {
  const run = check(page);
  assert.equal(run.status, 0, `${run.stdout}\n${run.stderr}`);
});

test('the check fails and names the table when a documented default differs from the JSDoc', () => {
  const text = readFileSync(page, 'utf8');
  const row = /^\| `requestTimeoutMs\?` +\| `number` +\| `30000` /m;
  assert.match(text, row, 'the connect table documents requestTimeoutMs with its default');
  const dir = mkdtempSync(join(tmpdir(), 'muxws-guide-'));
  try {
    const stale = join(dir, 'options.md');
    writeFileSync(stale, text.replace(row, (m) => m.replace('`30000`', '`20000`')));
    const run = check(stale);
    assert.equal(run.status, 1, `${run.stdout}\n${run.stderr}`);
    assert.match(run.stderr, /stale \(tables: connect\)/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('the check fails when a table marker is missing from the page', () => {
  const text = readFileSync(page, 'utf8');
  const dir = mkdtempSync(join(tmpdir(), 'muxws-guide-'));
  try {
    const broken = join(dir, 'options.md');
    writeFileSync(broken, text.replace('<!-- options:heartbeat -->', '<!-- heartbeat -->'));
    const run = check(broken);
    assert.equal(run.status, 2, `${run.stdout}\n${run.stderr}`);
    assert.match(run.stderr, /missing heartbeat/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('the guide never mentions rule ids and never sends the reader into the sources', () => {
  const dir = join(root, 'docs', 'guide');
  for (
    const name of [
      'README.md',
      'getting-started.md',
      'recipes.md',
      'options.md',
      'errors.md',
      'coming-from-socket.io.md',
    ]
  ) {
    const text = readFileSync(join(dir, name), 'utf8');
    assert.doesNotMatch(text, /WSM-[A-Z]+-\d+/, `${name} mentions a rule id`);
    assert.doesNotMatch(text, /\]\((\.\.\/)+lib\/|`lib\//, `${name} sends the reader into lib/`);
  }
});

/**
 * The modules whose JSDoc a user reads: every entry point of deno.json and every file an entry
 * re-exports from (`export … from`), followed down. A folder's face that no entry re-exports
 * (`lib/session/session.ts`, `lib/wire/codes.ts`) is the library's own and may cite the contract.
 */
function publicModules(): string[] {
  const exports: Record<string, string> =
    JSON.parse(readFileSync(join(root, 'deno.json'), 'utf8')).exports;
  const seen = new Set<string>();
  const visit = (file: string): void => {
    if (seen.has(file)) return;
    seen.add(file);
    const text = readFileSync(join(root, file), 'utf8');
    for (const m of text.matchAll(/(?:^|\n)export\b[^;'"]*?\bfrom\s*'(\.[^']+)'/g)) {
      visit(join(dirname(file), m[1]));
    }
  };
  for (const file of Object.values(exports)) visit(file.replace(/^\.\//, ''));
  return [...seen].filter((file) => file !== 'mod.ts').sort();
}

test('the JSDoc of every public module never mentions rule ids or contract sections', () => {
  const found: string[] = [];
  for (const path of publicModules()) {
    const text = readFileSync(join(root, path), 'utf8');
    for (const block of text.match(/\/\*\*[\s\S]*?\*\//g) ?? []) {
      for (const hit of block.match(/WSM-[A-Z]+-\d+|SPEC §/g) ?? []) {
        found.push(`${path}: ${hit}`);
      }
    }
  }
  const mod = readFileSync(join(root, 'mod.ts'), 'utf8');
  for (const hit of mod.match(/WSM-[A-Z]+-\d+|SPEC §/g) ?? []) found.push(`mod.ts: ${hit}`);
  assert.deepEqual(found, [], 'user docs (JSDoc) say how to use muxws, not which rule they follow');
});
