/** The repository root, for tests that read or run the project's files. */
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * The nearest folder above this module whose deno.json names `@muxws/core`. Node runs test files
 * bundled below .test-results/, so this walks up instead of assuming a depth.
 */
export function repoRoot(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (;;) {
    const config = join(dir, 'deno.json');
    if (existsSync(config) && JSON.parse(readFileSync(config, 'utf8')).name === '@muxws/core') {
      return dir;
    }
    const parent = dirname(dir);
    if (parent === dir) {
      throw new Error(`Cannot find the muxws repository above ${import.meta.url}`);
    }
    dir = parent;
  }
}
