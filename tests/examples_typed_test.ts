// What an application developer copies must show the typed forms (SPEC §10): every example, the
// README and the user guide call routes typed by a shared `Api`, so none of them casts a payload,
// tells the hello apart by its stream id, switches on an `op` field or asserts that the hello is
// there.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { repoRoot } from './_repo.ts';

const root = repoRoot();

/** Every file below `dir` whose name ends with `ext`, as paths relative to the repository root. */
function files(dir: string, ext: string): string[] {
  const out: string[] = [];
  for (const name of readdirSync(join(root, dir))) {
    const path = join(dir, name);
    if (statSync(join(root, path)).isDirectory()) out.push(...files(path, ext));
    else if (name.endsWith(ext)) out.push(path);
  }
  return out.sort();
}

/** The untyped forms, each with what it is. */
const UNTYPED: ReadonlyArray<readonly [RegExp, string]> = [
  [/\.payload as\b/, 'a cast on a payload'],
  [/\bstream\.id ===/, 'a test of the stream id'],
  [/\brequest\(\{\s*op\b/, 'a request switched on its `op`'],
  [/\bas Operation\b/, 'a cast to an operation'],
  [/\bhello!/, 'a non-null assertion on the hello'],
];

test('the examples, the README and the guide use typed routes: no payload cast, no stream id test, no op switch, no non-null hello (WSM-APP-003)', () => {
  const sources = [...files('examples', '.ts'), 'README.md', ...files('docs/guide', '.md')];
  assert.ok(sources.length >= 25, `found ${sources.length} files`);
  const found: string[] = [];
  for (const file of sources) {
    const lines = readFileSync(join(root, file), 'utf8').split('\n');
    lines.forEach((text, i) => {
      for (const [pattern, what] of UNTYPED) {
        if (pattern.test(text)) found.push(`${file}:${i + 1} has ${what}: ${text.trim()}`);
      }
    });
  }
  assert.deepEqual(found, []);
});
