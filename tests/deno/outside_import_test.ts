// A project outside the checkout that imports it by path, with a deno.json of its own (what a
// user trying the sources does), runs without a warning from Deno: the checkout declares no npm
// workspace, whose member Deno would report as a linked package it ignores. The project's run is
// a child Deno process bounded at 30 s, in a temporary folder removed afterwards.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { repoRoot } from '../_repo.ts';
import { run } from './_run.ts';

const root = repoRoot();

test('a Deno project outside the checkout imports @muxws/core from it without a warning', async () => {
  const dir = await Deno.makeTempDir({ prefix: 'muxws-outside-' });
  try {
    const imports = { '@muxws/core': pathToFileURL(join(root, 'mod.ts')).href };
    await Deno.writeTextFile(join(dir, 'deno.json'), JSON.stringify({ imports }));
    await Deno.writeTextFile(
      join(dir, 'main.ts'),
      "import { Reconnect, unjitteredDelay } from '@muxws/core';\nconsole.log(unjitteredDelay(0, new Reconnect()));\n",
    );
    const output = await run(Deno.execPath(), ['run', '--no-lock', 'main.ts'], dir);
    assert.equal(output.code, 0, output.stderr);
    assert.match(output.stdout, /^\d+\n$/);
    assert.equal(output.stderr, '', 'Deno printed nothing on stderr');
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
