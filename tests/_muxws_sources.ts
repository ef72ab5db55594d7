/** The esbuild plugin that resolves a user's `@muxws/core` imports to this repository's sources. */
import type * as esbuild from 'esbuild';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { repoRoot } from './_repo.ts';

/**
 * An esbuild plugin resolving `@muxws/core` and `@muxws/core/<entry>` (and the short `muxws`,
 * `muxws/<entry>` the tests use) to the sources, as deno.json's import map does: what a user's
 * `import ... from '@muxws/core/cloudflare'` reaches once published.
 */
export function muxwsSources(): esbuild.Plugin {
  const root = repoRoot();
  const imports: Record<string, string> =
    JSON.parse(readFileSync(join(root, 'deno.json'), 'utf8')).imports;
  return {
    name: 'muxws-sources',
    setup(build) {
      build.onResolve({ filter: /^(@muxws\/core|muxws)(\/.*)?$/ }, (args) => {
        const target = imports[args.path];
        if (target === undefined) {
          return {
            errors: [{ text: `Expected an entry of deno.json's imports: found "${args.path}"` }],
          };
        }
        return { path: join(root, target) };
      });
    },
  };
}
