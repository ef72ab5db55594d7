// Package invariants: deno.json is authoritative, jsr.json mirrors it field for field (`deno
// publish` ignores jsr.json when deno.json exists, so a drift would publish something else than
// the files say), package.json carries the same name and version and ships only the build, and
// every entry point exists and is doc-linted. scripts/pack_check.mjs proves the npm tarball by
// installing it; these tests check the manifests it is built from.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import ts from 'typescript';
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

test('STYLE layout: package.json has the name, version and license of deno.json', () => {
  const deno = read('deno.json');
  const pkg = read('package.json');
  assert.equal(pkg.name, deno.name);
  assert.equal(pkg.version, deno.version);
  assert.equal(pkg.license, deno.license);
  assert.match(String(deno.version), /^\d+\.\d+\.\d+(-[0-9A-Za-z.-]+)?$/);
});

test('STYLE layout: package.json exports every deno.json entry from dist/, with its types', () => {
  const denoExports = read('deno.json').exports as Record<string, string>;
  const pkgExports = read('package.json').exports as Record<string, Record<string, string>>;
  assert.deepEqual(Object.keys(pkgExports).sort(), Object.keys(denoExports).sort());
  for (const [entry, source] of Object.entries(denoExports)) {
    const built = source.replace(/^\.\//, './dist/').replace(/\.ts$/, '.js');
    assert.deepEqual(
      pkgExports[entry],
      { types: built.replace(/\.js$/, '.d.ts'), default: built },
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

test("SPEC reference: '@muxws/core' and 'muxws' resolve to mod.ts in this repository, on Deno through the import map and on Bun through tsconfig paths", () => {
  const deno = read('deno.json');
  const tsconfig = read('tsconfig.json') as {
    compilerOptions: { paths: Record<string, string[]> };
  };
  for (const own of ['@muxws/core', 'muxws']) {
    assert.equal((deno.imports as Record<string, string>)[own], './mod.ts');
    assert.deepEqual(tsconfig.compilerOptions.paths[own], ['./mod.ts']);
    for (const [entry, file] of Object.entries(deno.exports as Record<string, string>)) {
      const name = entry === '.' ? own : `${own}/${entry.slice(2)}`;
      assert.equal((deno.imports as Record<string, string>)[name], file, `imports "${name}"`);
      assert.deepEqual(tsconfig.compilerOptions.paths[name], [file], `tsconfig paths "${name}"`);
    }
  }
  // Node runs this file bundled against dist/, where esbuild has already rewritten both names.
  if ('Deno' in globalThis || 'Bun' in globalThis) {
    for (const own of ['@muxws/core', 'muxws']) {
      assert.equal(import.meta.resolve(own), pathToFileURL(join(root, 'mod.ts')).href);
      assert.equal(
        import.meta.resolve(`${own}/acceptor`),
        pathToFileURL(join(root, 'lib', 'acceptor', 'acceptor.ts')).href,
      );
    }
  }
});

test('WSM-APP-009 package.json is a public ESM package of dist/, README.md and LICENSE, built by prepack, for Node 20 and later', () => {
  const pkg = read('package.json');
  assert.equal(pkg.private, undefined);
  assert.equal(pkg.type, 'module');
  assert.deepEqual(pkg.files, ['dist/', 'README.md', 'LICENSE']);
  assert.equal((pkg.scripts as Record<string, string>).prepack, 'node scripts/build.mjs');
  // A git or folder install builds the package too (npm runs prepare for both).
  assert.equal((pkg.scripts as Record<string, string>).prepare, 'node scripts/build.mjs');
  assert.deepEqual(pkg.engines, { node: '>=20' });
  assert.equal(pkg.sideEffects, false);
});

test('WSM-APP-009 the published package.json keeps what a consumer needs and drops the scripts and dev dependencies', async () => {
  const { publishedManifest } = await import('../scripts/entries.mjs');
  const pkg = read('package.json');
  const published = publishedManifest(pkg) as Json;
  for (const field of ['scripts', 'devDependencies', 'workspaces']) {
    assert.equal(published[field], undefined, `the published package.json has "${field}"`);
  }
  for (const field of ['name', 'version', 'type', 'exports', 'engines', 'peerDependencies']) {
    assert.deepEqual(published[field], pkg[field], `the published package.json keeps "${field}"`);
  }
  // A publish from the checkout, whose package.json is the developers', is refused.
  const scripts = pkg.scripts as Record<string, string>;
  assert.equal(scripts.prepublishOnly, 'node scripts/build.mjs --refuse-publish');
  assert.equal(scripts.stage, 'node scripts/build.mjs --stage');
});

test('WSM-APP-009 ws and @msgpack/msgpack are optional peer dependencies, and the package has no other dependency', () => {
  const pkg = read('package.json');
  assert.equal(pkg.dependencies, undefined);
  const peers = pkg.peerDependencies as Record<string, string>;
  assert.deepEqual(Object.keys(peers).sort(), ['@msgpack/msgpack', 'ws']);
  assert.deepEqual(pkg.peerDependenciesMeta, {
    '@msgpack/msgpack': { optional: true },
    ws: { optional: true },
  });
  const dev = pkg.devDependencies as Record<string, string>;
  for (const name of Object.keys(peers)) assert.ok(dev[name], `${name} is a dev dependency too`);
});

test('STYLE layout: the libraries the benchmarks compare with are dev dependencies, with no npm workspace (Deno would warn of a linked package in a project importing the checkout)', () => {
  const pkg = read('package.json');
  assert.equal(pkg.workspaces, undefined);
  assert.ok(!existsSync(join(root, 'bench', 'package.json')), 'bench/ has no package.json');
  const dev = pkg.devDependencies as Record<string, string>;
  const lock = read('package-lock.json') as { packages: Record<string, Json> };
  const locked = (lock.packages[''] as { devDependencies: Record<string, string> }).devDependencies;
  for (
    const name of [
      'socket.io',
      'socket.io-client',
      '@socket.io/redis-adapter',
      '@socket.io/redis-streams-adapter',
      'partysocket',
      'reconnecting-websocket',
    ]
  ) {
    assert.ok(dev[name], `package.json has ${name} as a dev dependency`);
    assert.equal(locked[name], dev[name], `package-lock.json has ${name} as package.json does`);
  }
  assert.equal(lock.packages.bench, undefined, 'package-lock.json holds no bench workspace');
});

test('WSM-APP-009 "sideEffects": false holds: no module of the package runs a statement at its top level', () => {
  const files = [
    'mod.ts',
    ...Object.values(read('deno.json').exports as Record<string, string>),
  ];
  const seen = new Set<string>();
  const found: string[] = [];
  // Every module the entries reach, through their relative imports.
  while (files.length > 0) {
    const file = join(root, files.pop()!);
    if (seen.has(file)) continue;
    seen.add(file);
    const source = ts.createSourceFile(file, readFileSync(file, 'utf8'), ts.ScriptTarget.Latest);
    for (const statement of source.statements) {
      if (
        (ts.isImportDeclaration(statement) || ts.isExportDeclaration(statement)) &&
        statement.moduleSpecifier && ts.isStringLiteral(statement.moduleSpecifier) &&
        statement.moduleSpecifier.text.startsWith('.')
      ) {
        files.push(join(file, '..', statement.moduleSpecifier.text).slice(root.length + 1));
      }
      const declares = ts.isImportDeclaration(statement) || ts.isExportDeclaration(statement) ||
        ts.isInterfaceDeclaration(statement) || ts.isTypeAliasDeclaration(statement) ||
        ts.isFunctionDeclaration(statement) || ts.isClassDeclaration(statement) ||
        ts.isVariableStatement(statement) || ts.isEnumDeclaration(statement) ||
        ts.isModuleDeclaration(statement) || ts.isExportAssignment(statement);
      if (!declares) {
        found.push(`${file.slice(root.length + 1)}: ${ts.SyntaxKind[statement.kind]}`);
      }
    }
  }
  assert.ok(seen.size > 10, `reached ${seen.size} modules`);
  assert.deepEqual(found, []);
});

test('WSM-APP-009 the release workflow runs the tests, then publishes to JSR and npm with provenance on a v* tag', () => {
  const workflow = readFileSync(join(root, '.github', 'workflows', 'release.yml'), 'utf8');
  assert.match(workflow, /^on:\n {2}push:\n {4}tags:\n {6}- 'v\*'$/m);
  assert.match(workflow, /^ +id-token: write$/m);
  const test = workflow.indexOf('npm test');
  const jsr = workflow.search(/npx jsr publish|deno publish/);
  const npm = workflow.indexOf('npm publish --provenance --access public');
  assert.ok(test > 0 && jsr > test && npm > test, 'npm test runs before both publish steps');
  assert.doesNotMatch(workflow, /\t/, 'YAML forbids tabs in indentation');
});

test('WSM-APP-009 the README says how to install from JSR on Deno, Node and Bun, and from npm with ws', () => {
  const readme = readFileSync(join(root, 'README.md'), 'utf8');
  const section = /^## Install\n([\s\S]*?)^## /m.exec(readme)?.[1];
  assert.ok(section, 'README.md has an "## Install" section');
  for (
    const command of [
      'deno add jsr:@muxws/core',
      'npx jsr add @muxws/core',
      'npm install @muxws/core',
      'npm install ws',
    ]
  ) {
    assert.ok(section.includes(command), `the Install section says ${command}`);
  }
});

test('STYLE layout: the LICENSE file is the MIT license that every manifest declares', () => {
  assert.equal(read('deno.json').license, 'MIT');
  assert.match(readFileSync(join(root, 'LICENSE'), 'utf8'), /^MIT License/);
});

test('STYLE layout: the entry points are listed once, in deno.json; every other list of them is derived from it', async () => {
  const { derive } = await import('../scripts/entries.mjs');
  const current = {
    deno: read('deno.json'),
    jsr: read('jsr.json'),
    pkg: read('package.json'),
    tsconfig: read('tsconfig.json'),
  };
  const wanted = derive(current.deno, current.jsr, current.pkg, current.tsconfig);
  assert.deepEqual(wanted['deno.json'], current.deno, 'deno.json imports or doc tasks');
  assert.deepEqual(wanted['jsr.json'], current.jsr, 'jsr.json');
  assert.deepEqual(wanted['package.json'], current.pkg, 'package.json');
  assert.deepEqual(wanted['tsconfig.json'], current.tsconfig, 'tsconfig.json paths');
  // A new entry reaches every derived list.
  const grown = structuredClone(current.deno);
  (grown.exports as Record<string, string>)['./extra'] = './lib/extra.ts';
  const next = derive(grown, current.jsr, current.pkg, current.tsconfig);
  assert.equal(next['deno.json'].imports['muxws/extra'], './lib/extra.ts');
  assert.equal(next['deno.json'].imports['@muxws/core/extra'], './lib/extra.ts');
  assert.match(next['deno.json'].tasks.ok, /deno doc --lint [^&]*lib\/extra\.ts/);
  assert.equal(next['jsr.json'].exports['./extra'], './lib/extra.ts');
  assert.equal(next['package.json'].exports['./extra'].default, './dist/lib/extra.js');
  assert.deepEqual(next['tsconfig.json'].compilerOptions.paths['muxws/extra'], ['./lib/extra.ts']);
  assert.deepEqual(next['tsconfig.json'].compilerOptions.paths['@muxws/core/extra'], [
    './lib/extra.ts',
  ]);
});
