// The package's entry points are listed once, in deno.json's "exports". This script derives
// everything else that names them from that list:
//
//   - jsr.json: name, version, license, exports and publish, field for field;
//   - package.json: "name", "version", "license" and "exports" (dist/ with types: the npm
//     tarball ships only the build, since Deno refuses TypeScript inside an npm package and Bun
//     runs the built JavaScript as it is; Deno users install from JSR). The tarball's own
//     package.json is publishedManifest() of it, written by `node scripts/build.mjs --stage`;
//   - deno.json: the import map and the file list of `deno doc --lint` in the "doc" and "ok"
//     tasks. The map serves the package's own name, "@muxws/core" and "@muxws/core/<entry>", so
//     the README, the guide and the examples import what a user's install names and still run
//     from this checkout; and the short "muxws" and "muxws/<entry>", which the tests and
//     benchmarks use;
//   - tsconfig.json: the same names as compilerOptions.paths, which is how Bun, tsc, esbuild and
//     editors resolve them in this repository to the sources.
//
//   node scripts/entries.mjs          rewrite the files from deno.json's exports
//   node scripts/entries.mjs --check  exit 1, naming each file that differs (tests run this)
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(fileURLToPath(import.meta.url), '..', '..');

/** Whether `name` is one of the names deno.json's import map gives the package itself. */
function ownName(name, packageName) {
  return [packageName, 'muxws'].some((own) => name === own || name.startsWith(`${own}/`));
}

/** What each manifest should hold, derived from deno.json. */
export function derive(deno, jsr, pkg, tsconfig) {
  const exports = deno.exports;
  const files = Object.values(exports).map((f) => f.replace(/^\.\//, ''));
  const nextDeno = structuredClone(deno);
  const imports = {};
  const paths = {};
  for (const prefix of [deno.name, 'muxws']) {
    for (const [entry, file] of Object.entries(exports)) {
      const name = entry === '.' ? prefix : `${prefix}/${entry.slice(2)}`;
      imports[name] = file;
      paths[name] = [file];
    }
  }
  for (const [name, target] of Object.entries(deno.imports ?? {})) {
    if (!ownName(name, deno.name)) imports[name] = target;
  }
  nextDeno.imports = imports;
  for (const task of ['doc', 'ok']) {
    nextDeno.tasks[task] = deno.tasks[task].replace(
      /deno doc --lint [^&]+?(?=( &&|$))/,
      `deno doc --lint ${files.join(' ')}`,
    );
  }
  const nextJsr = { ...jsr };
  for (const field of ['name', 'version', 'license', 'exports', 'publish']) {
    nextJsr[field] = deno[field];
  }
  const nextPkg = {
    ...pkg,
    name: deno.name,
    version: deno.version,
    license: deno.license,
    exports: {},
  };
  for (const [entry, source] of Object.entries(exports)) {
    const built = source.replace(/^\.\//, './dist/').replace(/\.ts$/, '.js');
    nextPkg.exports[entry] = { types: built.replace(/\.js$/, '.d.ts'), default: built };
  }
  const nextTsconfig = structuredClone(tsconfig);
  nextTsconfig.compilerOptions.paths = paths;
  return {
    'deno.json': nextDeno,
    'jsr.json': nextJsr,
    'package.json': nextPkg,
    'tsconfig.json': nextTsconfig,
  };
}

/**
 * The fields of package.json a consumer of the npm package needs; everything else (the scripts,
 * which npm warns about on install, the dev dependencies, the workspace set-up) stays in the
 * repository.
 */
export const PUBLISHED_FIELDS = [
  'name',
  'version',
  'description',
  'license',
  'repository',
  'homepage',
  'keywords',
  'type',
  'sideEffects',
  'files',
  'exports',
  'engines',
  'dependencies',
  'peerDependencies',
  'peerDependenciesMeta',
];

/** The package.json the npm tarball holds: the repository's, cut to {@link PUBLISHED_FIELDS}. */
export function publishedManifest(pkg) {
  const out = {};
  for (const field of PUBLISHED_FIELDS) if (pkg[field] !== undefined) out[field] = pkg[field];
  return out;
}

function main() {
  const read = (name) => JSON.parse(readFileSync(join(root, name), 'utf8'));
  const current = {
    'deno.json': read('deno.json'),
    'jsr.json': read('jsr.json'),
    'package.json': read('package.json'),
    'tsconfig.json': read('tsconfig.json'),
  };
  const wanted = derive(
    current['deno.json'],
    current['jsr.json'],
    current['package.json'],
    current['tsconfig.json'],
  );
  const check = process.argv.includes('--check');
  let stale = 0;
  for (const [name, value] of Object.entries(wanted)) {
    if (JSON.stringify(value) === JSON.stringify(current[name])) continue;
    stale++;
    if (check) {
      console.error(`${name} does not match deno.json's exports: run node scripts/entries.mjs`);
    } else {
      writeFileSync(join(root, name), JSON.stringify(value, null, 2) + '\n');
      console.log(`wrote ${name} (run \`deno fmt ${name}\` to restore its layout)`);
    }
  }
  if (check && stale > 0) process.exit(1);
}

// Run as a command only (a test imports derive(), and Node's test bundle inlines this module).
if (
  import.meta.url.endsWith('/scripts/entries.mjs') &&
  fileURLToPath(import.meta.url) === process.argv[1]
) {
  main();
}
