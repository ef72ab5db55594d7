// Builds dist/ for Node and bundlers: one ESM file per source file (esbuild), with every relative
// `.ts` import rewritten to `.js`, and `.d.ts` files beside them (tsc). The module structure is
// kept, so `dist/lib/_session.js` is the same module whether a caller reaches it through
// `dist/mod.js` or directly (the Node test run relies on that for `instanceof`).
//
// Also exports `bundleTestsForNode()`, used by scripts/test.mjs: it bundles each shared test file
// for Node 20 with every import of the package by name (`@muxws/core/<entry>`, or the short
// `muxws/<entry>`), of `mod.ts` or of `lib/` pointed at dist/, so Node tests the built package,
// not the sources.
import * as esbuild from 'esbuild';
import { spawnSync } from 'node:child_process';
import { readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

export const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');

/** Every .ts file below `dir` (relative to the root), recursively, sorted. */
export function tsFiles(dir, { suffix = '.ts' } = {}) {
  const out = [];
  const walk = (d) => {
    for (const name of readdirSync(join(root, d)).sort()) {
      const rel = join(d, name);
      if (statSync(join(root, rel)).isDirectory()) walk(rel);
      else if (name.endsWith(suffix)) out.push(rel);
    }
  };
  try {
    walk(dir);
  } catch (error) {
    if (error.code !== 'ENOENT') throw error;
  }
  return out;
}

/** Keeps each relative import external, renamed from `.ts` to `.js`. */
const keepModules = {
  name: 'keep-modules',
  setup(build) {
    build.onResolve({ filter: /^\.\.?\// }, (args) => {
      if (args.kind === 'entry-point') return undefined;
      return { path: args.path.replace(/\.ts$/, '.js'), external: true };
    });
  },
};

/** Builds `dist` (default dist/): ESM + .d.ts. Throws when either step fails. */
export async function build(dist = join(root, 'dist')) {
  rmSync(dist, { recursive: true, force: true });
  const entryPoints = ['mod.ts', ...tsFiles('lib')].map((f) => join(root, f));
  await esbuild.build({
    entryPoints,
    outdir: dist,
    outbase: root,
    bundle: true,
    packages: 'external',
    format: 'esm',
    platform: 'neutral',
    target: 'es2022',
    plugins: [keepModules],
    logLevel: 'warning',
  });
  const tsc = spawnSync(process.execPath, [
    join(root, 'node_modules/typescript/bin/tsc'),
    '-p',
    root,
  ], {
    stdio: 'inherit',
  });
  if (tsc.status !== 0) throw new Error(`tsc failed with exit code ${tsc.status}`);
}

/**
 * Bundles test files for Node into `outDir`, pointing the package's own modules at `dist`.
 * Returns the bundled file paths.
 */
export async function bundleTestsForNode(files, outDir, dist) {
  const toDist = {
    name: 'to-dist',
    setup(b) {
      b.onResolve({ filter: /^(@muxws\/core|muxws)(\/.*)?$/ }, (args) => {
        const target = ownImports()[args.path];
        if (target === undefined) {
          return {
            errors: [{ text: `Expected an entry of deno.json's imports: found "${args.path}"` }],
          };
        }
        const built = join(dist, target.replace(/^\.\//, '').replace(/\.ts$/, '.js'));
        return { path: built, external: true };
      });
      b.onResolve({ filter: /^\.\.?\// }, (args) => {
        if (args.kind === 'entry-point') return undefined;
        const target = resolve(args.resolveDir, args.path);
        const rel = relative(root, target);
        if (rel === 'mod.ts' || rel.startsWith('lib/')) {
          return { path: join(dist, rel.replace(/\.ts$/, '.js')), external: true };
        }
        return undefined;
      });
    },
  };
  const outputs = [];
  for (const file of files) {
    const outfile = join(outDir, file.replace(/\.ts$/, '.mjs'));
    await esbuild.build({
      entryPoints: [join(root, file)],
      outfile,
      bundle: true,
      packages: 'external',
      format: 'esm',
      platform: 'node',
      target: 'node20',
      plugins: [toDist],
      logLevel: 'warning',
    });
    outputs.push(outfile);
  }
  return outputs;
}

/** deno.json's import map: the package's own names and the files they stand for. */
function ownImports() {
  return JSON.parse(readFileSync(join(root, 'deno.json'), 'utf8')).imports;
}

/** The package version, read from deno.json (authoritative). */
export function version() {
  return JSON.parse(readFileSync(join(root, 'deno.json'), 'utf8')).version;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  await build();
  console.log(`built dist/ for muxws ${version()}`);
}
