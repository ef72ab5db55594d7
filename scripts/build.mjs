// Builds dist/ for Node and bundlers: one ESM file per source file (esbuild), with every relative
// `.ts` import rewritten to `.js`, and `.d.ts` files beside them (tsc). The module structure is
// kept, so `dist/lib/session/session.js` is the same module whether a caller reaches it through
// `dist/mod.js` or directly (the Node test run relies on that for `instanceof`).
//
// `--stage` also writes the npm package as it is published into npm-package/ (or the folder given
// after it): dist/, README.md, LICENSE and a package.json holding only what a consumer needs (no
// scripts, dev dependencies or workspaces; see publishedManifest() in scripts/entries.mjs). The
// npm package is published from there (`npm run stage && npm publish npm-package`); a publish from
// the checkout itself is refused (prepublishOnly), as its package.json is the developers'.
//
//   node scripts/build.mjs                     build dist/
//   node scripts/build.mjs --stage [folder]    build dist/, then stage the package (npm-package/)
//   node scripts/build.mjs --refuse-publish    exit 1 saying to publish the staged package
//
// Also exports `bundleTestsForNode()`, used by scripts/test.mjs: it bundles each shared test file
// for Node 20 with every import of the package by name (`@muxws/core/<entry>`, or the short
// `muxws/<entry>`), of `mod.ts` or of `lib/` pointed at dist/, so Node tests the built package,
// not the sources.
import * as esbuild from 'esbuild';
import { spawnSync } from 'node:child_process';
import {
  cpSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { publishedManifest } from './entries.mjs';

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

/**
 * Stages the npm package in `dir` (emptied first): the build of dist/, README.md, LICENSE and
 * the published package.json. Returns `dir`.
 */
export async function stage(dir = join(root, 'npm-package')) {
  await build();
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  cpSync(join(root, 'dist'), join(dir, 'dist'), { recursive: true });
  for (const file of ['README.md', 'LICENSE']) cpSync(join(root, file), join(dir, file));
  const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));
  writeFileSync(join(dir, 'package.json'), JSON.stringify(publishedManifest(pkg), null, 2) + '\n');
  return dir;
}

/** The package version, read from deno.json (authoritative). */
export function version() {
  return JSON.parse(readFileSync(join(root, 'deno.json'), 'utf8')).version;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const args = process.argv.slice(2);
  if (args[0] === '--refuse-publish') {
    console.error(
      'Cannot publish the checkout as its package.json carries the scripts and dev dependencies: ' +
        'publish the staged package with `npm run stage && npm publish npm-package`',
    );
    process.exit(1);
  } else if (args[0] === '--stage') {
    const dir = await stage(args[1] === undefined ? undefined : resolve(args[1]));
    console.log(`staged the npm package of muxws ${version()} in ${relative(process.cwd(), dir)}`);
  } else {
    await build();
    console.log(`built dist/ for muxws ${version()}`);
  }
}
