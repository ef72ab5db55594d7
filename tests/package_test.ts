// Package invariants: deno.json is authoritative, jsr.json mirrors it field for field (`deno
// publish` ignores jsr.json when deno.json exists, so a drift would publish something else than
// the files say), package.json carries the same version, and every entry point exists and is
// doc-linted.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { repoRoot as repositoryRoot } from './_repo.ts';

type Json = Record<string, unknown>;

const root = repositoryRoot();
const read = (name: string): Json => JSON.parse(readFileSync(join(root, name), 'utf8'));

test('STYLE layout: jsr.json mirrors deno.json for name, version, license, exports and publish', () => {
  const deno = read('deno.json');
  const jsr = read('jsr.json');
  for (const field of ['name', 'version', 'license', 'exports', 'publish']) {
    assert.ok(field in deno, `deno.json has no "${field}"`);
    assert.deepEqual(jsr[field], deno[field], `jsr.json "${field}" differs from deno.json`);
  }
  assert.equal(deno.name, '@muxws/core');
});

test('STYLE layout: package.json has the version and license of deno.json', () => {
  const deno = read('deno.json');
  const pkg = read('package.json');
  assert.equal(pkg.version, deno.version);
  assert.equal(pkg.license, deno.license);
  assert.match(String(deno.version), /^\d+\.\d+\.\d+(-[0-9A-Za-z.-]+)?$/);
});

test('STYLE layout: package.json exports every deno.json entry: the source on Deno and Bun, dist/ with types elsewhere', () => {
  const denoExports = read('deno.json').exports as Record<string, string>;
  const pkgExports = read('package.json').exports as Record<string, Record<string, string>>;
  assert.deepEqual(Object.keys(pkgExports).sort(), Object.keys(denoExports).sort());
  for (const [entry, source] of Object.entries(denoExports)) {
    const built = source.replace(/^\.\//, './dist/').replace(/\.ts$/, '.js');
    assert.deepEqual(
      pkgExports[entry],
      { types: built.replace(/\.js$/, '.d.ts'), bun: source, deno: source, default: built },
      `package.json exports["${entry}"]`,
    );
  }
});

test('STYLE layout: every deno.json export names a file that exists and is doc-linted by the doc and ok tasks', () => {
  const deno = read('deno.json');
  const exports = deno.exports as Record<string, string>;
  assert.ok(exports['.'], 'deno.json exports "."');
  const tasks = deno.tasks as Record<string, string>;
  const docLinted = (task: string) =>
    /deno doc --lint ([^&]+)/.exec(tasks[task] ?? '')?.[1].trim().split(/\s+/) ?? [];
  for (const [entry, file] of Object.entries(exports)) {
    assert.ok(
      existsSync(join(root, file)),
      `export "${entry}" names ${file}, which does not exist`,
    );
    const path = file.replace(/^\.\//, '');
    assert.ok(docLinted('doc').includes(path), `the doc task does not lint ${path}`);
    assert.ok(docLinted('ok').includes(path), `the ok task does not lint ${path}`);
  }
});

test('STYLE layout: every path deno.json publishes exists', () => {
  const include = (read('deno.json').publish as { include: string[] }).include;
  for (const path of include) assert.ok(existsSync(join(root, path)), `${path} is missing`);
});

test("SPEC reference: 'muxws' resolves to mod.ts on Deno (import map) and Bun (package self-reference)", () => {
  const deno = read('deno.json');
  const pkg = read('package.json');
  assert.equal((deno.imports as Record<string, string>).muxws, './mod.ts');
  assert.equal(pkg.name, 'muxws');
  const dot = (pkg.exports as Record<string, Record<string, string>>)['.'];
  assert.equal(dot.bun, './mod.ts');
  assert.equal(dot.deno, './mod.ts');
  assert.equal(dot.default, './dist/mod.js');
  assert.equal(dot.types, './dist/mod.d.ts');
});

test('STYLE layout: the LICENSE file is the MIT license that every manifest declares', () => {
  assert.equal(read('deno.json').license, 'MIT');
  assert.match(readFileSync(join(root, 'LICENSE'), 'utf8'), /^MIT License/);
});

test('STYLE layout: the entry points are listed once, in deno.json; every other list of them is derived from it', async () => {
  const { derive } = await import('../scripts/entries.mjs');
  const current = { deno: read('deno.json'), jsr: read('jsr.json'), pkg: read('package.json') };
  const wanted = derive(current.deno, current.jsr, current.pkg);
  assert.deepEqual(wanted['deno.json'], current.deno, 'deno.json imports or doc tasks');
  assert.deepEqual(wanted['jsr.json'], current.jsr, 'jsr.json');
  assert.deepEqual(wanted['package.json'], current.pkg, 'package.json');
  // A new entry reaches every derived list.
  const grown = structuredClone(current.deno);
  (grown.exports as Record<string, string>)['./extra'] = './lib/extra.ts';
  const next = derive(grown, current.jsr, current.pkg);
  assert.equal(next['deno.json'].imports['muxws/extra'], './lib/extra.ts');
  assert.match(next['deno.json'].tasks.ok, /deno doc --lint [^&]*lib\/extra\.ts/);
  assert.equal(next['jsr.json'].exports['./extra'], './lib/extra.ts');
  assert.equal(next['package.json'].exports['./extra'].default, './dist/lib/extra.js');
});
