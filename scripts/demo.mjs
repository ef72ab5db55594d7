// `npm run demo`: bundles examples/demo.ts for Node 20 with esbuild (the package's own modules
// included from source, npm packages such as `ws` left as imports) and runs it in this process.
// The bundle is written below node_modules/.cache/muxws/ (so `ws` resolves from there), under a
// name of its own per process, and removed afterwards. Arguments are passed on (`--json`).
import * as esbuild from 'esbuild';
import { mkdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { root } from './build.mjs';

const dir = join(root, 'node_modules', '.cache', 'muxws');
const outfile = join(dir, `demo-${process.pid}.mjs`);
mkdirSync(dir, { recursive: true });
try {
  await esbuild.build({
    entryPoints: [join(root, 'examples', 'demo.ts')],
    outfile,
    bundle: true,
    packages: 'external',
    format: 'esm',
    platform: 'node',
    target: 'node20',
    logLevel: 'warning',
  });
  await import(pathToFileURL(outfile).href);
} finally {
  rmSync(outfile, { force: true });
}
