// Every ```ts block of the user guide (docs/guide/*.md) runs as it stands, each in its own child
// process bounded at 30 s, from a file written below .test-results/ (so `@muxws/core` and the npm
// packages resolve as they do for any file of this repository):
//
// - ```ts        runs with `deno run -A --check --config deno.json`;
// - ```ts bun    runs with node_modules/.bin/bun;
// - ```ts node   is bundled by esbuild against the sources and run with this machine's node;
// - ```ts worker  is not run here: tests/node/guide_worker_blocks_test.ts runs it in workerd;
// - ```ts browser is not run here: tests/node/guide_browser_block_test.ts runs it in Chromium;
// - ```ts ignore is not run anywhere: counted per page against IGNORED, so the number cannot
//                grow unnoticed.
//
// The worker and browser blocks are counted per page against ELSEWHERE, so a block cannot move
// out of the Node tests' reach unnoticed.
//
// A block that reads REDIS_URL gets a redis-server of its own on a free loopback port. Any other
// info string after ```ts fails the test, so a typo cannot hide a block from it.
import { muxwsSources } from '../_muxws_sources.ts';
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import * as esbuild from 'esbuild';
import { repoRoot } from '../_repo.ts';
import { startRedis } from '../_redis.ts';
import { run } from './_run.ts';

const root = repoRoot();
const guide = join(root, 'docs', 'guide');

/** The blocks each page may leave unrun (```ts ignore): what no test here can host. */
const IGNORED: Record<string, number> = {};

/** The blocks each page has that the Node tests run (```ts worker, ```ts browser). */
const ELSEWHERE: Record<'worker' | 'browser', Record<string, number>> = {
  // the Worker and the Durable Object room
  worker: { 'getting-started.md': 2 },
  // the page's client
  browser: { 'getting-started.md': 1 },
};

interface Block {
  page: string;
  line: number;
  runtime: 'deno' | 'bun' | 'node' | 'worker' | 'browser' | 'ignore';
  code: string;
}

/** Every ```ts block of every page of the guide, in page then line order. */
function blocks(): Block[] {
  const out: Block[] = [];
  const pages = [...Deno.readDirSync(guide)]
    .filter((e) => e.isFile && e.name.endsWith('.md'))
    .map((e) => e.name)
    .sort();
  for (const page of pages) {
    const text = Deno.readTextFileSync(join(guide, page));
    for (const match of text.matchAll(/^```ts([^\n]*)\n([\s\S]*?)^```$/gm)) {
      const info = match[1].trim();
      const line = text.slice(0, match.index).split('\n').length;
      const runtime = info === '' ? 'deno' : info;
      if (!['deno', 'bun', 'node', 'worker', 'browser', 'ignore'].includes(runtime)) {
        throw new Error(
          `Expected the info string of the block at ${page}:${line} to be empty, bun, node, worker, browser or ignore: found "${info}"`,
        );
      }
      out.push({ page, line, runtime: runtime as Block['runtime'], code: match[2] });
    }
  }
  return out;
}

const all = blocks();

/** Runs one block on its runtime from a file in `dir`; returns the outcome. */
async function runBlock(block: Block, dir: string) {
  const base = join(dir, `${block.page.replace(/\.md$/, '')}-${block.line}`);
  await Deno.writeTextFile(`${base}.ts`, block.code);
  let env: Record<string, string> = {};
  let redis: Awaited<ReturnType<typeof startRedis>> | undefined;
  if (block.code.includes('REDIS_URL')) {
    redis = await startRedis();
    env = { REDIS_URL: redis.url };
  }
  try {
    if (block.runtime === 'deno') {
      return await run(
        Deno.execPath(),
        ['run', '-A', '--check', '--config', join(root, 'deno.json'), `${base}.ts`],
        root,
        env,
      );
    }
    if (block.runtime === 'bun') {
      return await run(join(root, 'node_modules', '.bin', 'bun'), ['run', `${base}.ts`], root, env);
    }
    await esbuild.build({
      entryPoints: [`${base}.ts`],
      outfile: `${base}.mjs`,
      bundle: true,
      packages: 'external',
      format: 'esm',
      platform: 'node',
      target: 'node20',
      logLevel: 'warning',
      plugins: [muxwsSources()],
    });
    return await run('node', [`${base}.mjs`], root, env);
  } finally {
    await redis?.[Symbol.asyncDispose]();
  }
}

const results = join(root, '.test-results');
await Deno.mkdir(results, { recursive: true });
const dir = await Deno.makeTempDir({ dir: results, prefix: 'guide-blocks-' });

test('the guide has blocks on every page it runs, and each one not run here is accounted for', () => {
  const count = (runtime: Block['runtime']) => {
    const by: Record<string, number> = {};
    for (const b of all.filter((b) => b.runtime === runtime)) by[b.page] = (by[b.page] ?? 0) + 1;
    return by;
  };
  assert(all.filter((b) => b.runtime === 'deno').length >= 8, 'the guide runs its examples');
  assert.deepEqual(count('ignore'), IGNORED);
  assert.deepEqual(count('worker'), ELSEWHERE.worker);
  assert.deepEqual(count('browser'), ELSEWHERE.browser);
});

for (const block of all) {
  if (block.runtime !== 'deno' && block.runtime !== 'bun' && block.runtime !== 'node') continue;
  const runtime = { deno: 'Deno', bun: 'Bun', node: 'Node' }[block.runtime];
  test(`the block at docs/guide/${block.page}:${block.line} runs on ${runtime} and exits 0`, async () => {
    const outcome = await runBlock(block, dir);
    assert.equal(outcome.code, 0, `stdout:\n${outcome.stdout}\nstderr:\n${outcome.stderr}`);
  });
}

test('the files the blocks ran from are removed', async () => {
  await Deno.remove(dir, { recursive: true });
});
