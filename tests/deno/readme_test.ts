// The README's feed and reconnect-schedule examples, run as they stand: the ```ts block under each
// heading is written to a temporary file and run with this repository's deno.json (whose import
// map resolves `@muxws/core`), in a child Deno process bounded at 30 s. (tests/deno/demo_test.ts runs
// the quick start.)
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { run } from './_run.ts';

const root = new URL('../../', import.meta.url);

/** The first ```ts block after the README heading `heading`, without its fences. */
async function blockAfter(heading: string): Promise<string> {
  const readme = await Deno.readTextFile(new URL('README.md', root));
  const section = readme.split(heading)[1];
  assert(section !== undefined, `README.md has a "${heading}" section`);
  const block = section.match(/^```ts[^\n]*\n([\s\S]*?)^```$/m);
  assert(block, `the "${heading}" section shows a \`\`\`ts block`);
  return block[1];
}

/** Runs `code` from a temporary file with the repository's deno.json; returns its stdout. */
async function runBlock(code: string, name: string): Promise<string> {
  const dir = await Deno.makeTempDir({ prefix: `muxws-readme-${name}-` });
  try {
    const file = `${dir}/${name}.ts`;
    await Deno.writeTextFile(file, code);
    const output = await run(
      Deno.execPath(),
      ['run', '-A', '--config', new URL('deno.json', root).pathname, file],
      root,
    );
    assert.equal(output.code, 0, output.stderr);
    return output.stdout;
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

test('the README feed example subscribes to a route, waits for ready, and is refused an unknown symbol with not_found (WSM-APP-003 WSM-APP-004)', async () => {
  const code = await blockAfter('### A feed');
  assert.match(code, /subscribe\(connection, 'ticker'/);
  const stdout = await runBlock(code, 'feed');
  assert.equal(stdout.trim(), 'active 100 refused not_found');
});

test('the README reconnect-schedule example runs as it stands and prints what its comments say (WSM-RCN-002 WSM-RCN-030 WSM-RCN-044)', async () => {
  const code = await blockAfter('## Reconnect schedule');
  const lines = (await runBlock(code, 'schedule')).trim().split('\n');
  assert.equal(lines[0], '[ 500, 1000, 2000, 4000, 8000, 10000 ]');
  const delay = Number(lines[1]);
  assert.ok(delay >= 350 && delay <= 650, `backoffDelay(0) printed ${lines[1]}`);
  assert.equal(lines[2], 'true false');
  assert.match(lines[3], /^Cannot create Reconnect as "jitter" must be from 0 to 1: /);
});
