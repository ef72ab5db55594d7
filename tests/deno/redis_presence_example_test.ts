// The @example of redisPresence() runs as it stands (it needs a Redis server, so the doc tests
// skip it as `ts ignore`): taken from the JSDoc, pointed at a redis-server of its own, run with
// `deno run --check` and bounded at 30 s.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { repoRoot } from '../_repo.ts';
import { startRedis } from '../_redis.ts';
import { run } from './_run.ts';

const root = repoRoot();

test('the example of redisPresence() runs against a real Redis', { timeout: 60_000 }, async () => {
  const source = await Deno.readTextFile(join(root, 'lib', 'stores', 'redis_presence.ts'));
  const example = /@example[^\n]*\n \* ```ts ignore\n([\s\S]*?) \* ```\n/.exec(source);
  assert.ok(example, 'the JSDoc of redisPresence() has a ```ts ignore example');
  const code = example[1].split('\n').map((line) => line.replace(/^ \* ?/, '')).join('\n');
  assert.match(code, /redis:\/\/127\.0\.0\.1:6379/);
  await using redis = await startRedis();
  const dir = join(root, '.test-results', 'examples');
  await Deno.mkdir(dir, { recursive: true });
  const file = join(dir, 'redis_presence_example.ts');
  await Deno.writeTextFile(file, code.replace('redis://127.0.0.1:6379', redis.url));
  const output = await run(
    Deno.execPath(),
    ['run', '-A', '--check', '--config', join(root, 'deno.json'), file],
    root,
  );
  assert.equal(output.code, 0, output.stderr);
});
