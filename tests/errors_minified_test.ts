// Error names in a minified browser bundle. A minifier renames classes, so a `name` read from the
// class would come out as `Y`; every error class sets its name as a literal instead. This test
// bundles the package with the esbuild binary (`--bundle --minify --platform=browser`, as
// bench/bundle.ts does), writes the bundle to a temporary file, imports it, and constructs every
// error class it exports:
//
// - Deno and Bun bundle the sources (mod.ts and lib/broadcast/backplane.ts);
// - Node bundles the dist/ build this test run made (scripts/test.mjs's layout), which is what a
//   browser application's bundler sees of the npm package.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { repoRoot } from './_repo.ts';

const isNode = !('Deno' in globalThis) && !('Bun' in globalThis);
const root = repoRoot();

/** The folder whose mod and lib/broadcast/backplane the bundle starts from, and their extension. */
function packageDir(): { dir: string; ext: string } {
  if (!isNode) return { dir: root, ext: 'ts' };
  // This file runs as <results>/node/tests/errors_minified_test.mjs; the build is <results>/dist.
  const dir = fileURLToPath(new URL('../../dist/', import.meta.url));
  assert.ok(
    existsSync(join(dir, 'mod.js')),
    `Expected the built package at ${dir}: run this test on Node through scripts/test.mjs`,
  );
  return { dir, ext: 'js' };
}

/** Bundles the package minified for the browser and imports the bundle. */
async function importMinified(): Promise<Record<string, unknown>> {
  const { dir, ext } = packageDir();
  const source = `export * from './mod.${ext}';\n` +
    `export { BackplaneError, BackplaneGapError } from './lib/broadcast/backplane.${ext}';\n`;
  const result = spawnSync(join(root, 'node_modules', '.bin', 'esbuild'), [
    '--bundle',
    '--minify',
    '--format=esm',
    '--platform=browser',
    '--loader=ts',
    '--sourcefile=entry.ts',
    '--log-level=error',
  ], { cwd: dir, input: source, maxBuffer: 64 << 20, timeout: 60_000 });
  assert.equal(result.status, 0, `esbuild failed: ${String(result.stderr)}`);
  const temp = mkdtempSync(join(tmpdir(), 'muxws-minified-'));
  try {
    const file = join(temp, 'bundle.mjs');
    writeFileSync(file, result.stdout);
    return await import(pathToFileURL(file).href);
  } finally {
    rmSync(temp, { recursive: true, force: true });
  }
}

type ErrorClass = new (...args: never[]) => Error;

/** How to construct each exported error class, by the name it must report. */
const CONSTRUCT: Record<string, (C: ErrorClass) => Error> = {
  MuxwsError: (C) => new (C as new (m: string) => Error)('a'),
  ConnectError: (C) => new (C as new (m: string) => Error)('a'),
  ProtocolError: (C) => new (C as new (m: string) => Error)('a'),
  NotConnectedError: (C) => new (C as new (m: string) => Error)('a'),
  HelloRejectedError: (C) =>
    new (C as new (m: string, o: { code: string }) => Error)('a', { code: 'unauthorized' }),
  StreamResetError: (C) =>
    new (C as new (m: string, o: { code: string; remote: boolean }) => Error)('a', {
      code: 'refused',
      remote: true,
    }),
  StreamError: (C) => new (C as new (code: string, m: string) => Error)('not_found', 'a'),
  TimeoutError: (C) => new (C as new (m: string) => Error)('a'),
  ClosedError: (C) => new (C as new (m: string) => Error)('a'),
  BackplaneError: (C) => new (C as new (m: string) => Error)('a'),
  BackplaneGapError: (C) =>
    new (C as new (m: string, o: { startedAt: number; endedAt: number }) => Error)('a', {
      startedAt: 0,
      endedAt: 1,
    }),
};

test('SPEC §8: every error class keeps its name in a minified browser bundle', async () => {
  const bundle = await importMinified();
  const classes = Object.entries(bundle).filter(([, value]) =>
    typeof value === 'function' && (value as ErrorClass).prototype instanceof Error
  ) as Array<[string, ErrorClass]>;
  assert.deepEqual(
    classes.map(([exported]) => exported).sort(),
    Object.keys(CONSTRUCT).sort(),
    'the bundle exports exactly the error classes this test constructs',
  );
  const renamed = classes.filter(([exported, C]) => C.name !== exported);
  assert.deepEqual(
    renamed.map(([exported]) => exported),
    classes.map(([exported]) => exported),
    'the minifier renamed every class, so the names below cannot come from the classes',
  );
  const MuxwsError = bundle.MuxwsError as ErrorClass;
  for (const [exported, C] of classes) {
    const error = CONSTRUCT[exported](C);
    assert.ok(error instanceof C && error instanceof MuxwsError, exported);
    assert.equal(error.name, exported);
    assert.equal(String(error), `${exported}: a`);
  }
});
