// The type tests of tests/types/: `deno check` passes on the files that must compile (and on
// those whose wrong uses are each marked `@ts-expect-error`), and fails on a copy of the latter
// with the marks removed, with an error on every line that was marked. Spawns deno, so it runs
// the same under Deno, Bun and Node.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { repoRoot } from './_repo.ts';

const root = repoRoot();
const EXPECT_ERROR = /^\s*\/\/ @ts-expect-error\b.*$/;

function denoCheck(...files: string[]): { status: number | null; output: string } {
  const env: Record<string, string | undefined> = { ...process.env, NO_COLOR: '1' };
  delete env.FORCE_COLOR;
  const result = spawnSync(
    join(root, 'node_modules', '.bin', 'deno'),
    ['check', '--no-lock', '--config', join(root, 'deno.json'), ...files],
    { cwd: root, encoding: 'utf8', timeout: 120_000, env },
  );
  return { status: result.status, output: `${result.stdout}${result.stderr}` };
}

test('the route types accept every right use and refuse each marked wrong one (WSM-APP-003)', () => {
  const { status, output } = denoCheck('tests/types/routes_ok.ts', 'tests/types/routes_fail.ts');
  assert.equal(status, 0, output);
});

test('connect<Api>() and new Acceptor<Api, PeerData>() type both sides end to end (WSM-APP-003)', () => {
  const { status, output } = denoCheck('tests/types/api_ok.ts', 'tests/types/api_fail.ts');
  assert.equal(status, 0, output);
});

test("a routed stream reads the route's replies and writes its uploads, on both sides (WSM-APP-003)", () => {
  const { status, output } = denoCheck('tests/types/uploads_ok.ts', 'tests/types/uploads_fail.ts');
  assert.equal(status, 0, output);
});

test('route() types its handler from zod, valibot and arktype schemas, and ApiOf gives the Api both sides use (WSM-API-002)', () => {
  const { status, output } = denoCheck('tests/types/schemas_ok.ts', 'tests/types/schemas_fail.ts');
  assert.equal(status, 0, output);
});

test("a route's generator yields tracked messages of its type and reads ctx.lastEventId (WSM-API-005)", () => {
  const { status, output } = denoCheck('tests/types/tracked_ok.ts', 'tests/types/tracked_fail.ts');
  assert.equal(status, 0, output);
});

test("events are typed by Api[':events'] on both sides: names, payloads and the handler's parameters (WSM-API-001)", () => {
  const { status, output } = denoCheck('tests/types/events_ok.ts', 'tests/types/events_fail.ts');
  assert.equal(status, 0, output);
});

test("presence() types its metas by Api[':presence'] in every callback and in its state (WSM-PRS-002)", () => {
  const { status, output } = denoCheck(
    'tests/types/presence_ok.ts',
    'tests/types/presence_fail.ts',
  );
  assert.equal(status, 0, output);
});

for (
  const [name, rules, rule] of [
    ['routes', 'the route types', 'WSM-APP-003'],
    ['api', 'the end-to-end types of connect<Api>() and Acceptor<Api, PeerData>', 'WSM-APP-003'],
    ['uploads', 'the types of a routed stream', 'WSM-APP-003'],
    [
      'schemas',
      "the types route() and ApiOf read from schemas, and connect<Api>() of an Api declaring ':hello' without its hello,",
      'WSM-API-002, WSM-API-003',
    ],
    ['tracked', 'the types of tracked messages', 'WSM-API-005'],
    ['events', 'the types of events', 'WSM-API-001'],
    ['presence', 'the types of a presence follower', 'WSM-PRS-002'],
  ] as const
) {
  test(`${rules} refuse every wrong use once its @ts-expect-error is removed (${rule})`, () => {
    const source = readFileSync(join(root, 'tests', 'types', `${name}_fail.ts`), 'utf8');
    const lines = source.split('\n');
    const marked: number[] = [];
    const unmarked = lines.map((line, i) => {
      if (!EXPECT_ERROR.test(line)) return line;
      marked.push(i + 2); // the wrong use is on the line after the mark (1-based)
      return '//'; // keeps every line where it was
    }).join('\n')
      .replaceAll(`'../../lib/`, `'${pathToFileURL(join(root, 'lib')).href}/`);
    assert.ok(marked.length >= 10, `expected the marked lines, found ${marked.length}`);
    const dir = mkdtempSync(join(tmpdir(), 'muxws-types-'));
    try {
      const file = join(dir, `${name}_unmarked.ts`);
      writeFileSync(file, unmarked);
      const { status, output } = denoCheck(file);
      assert.notEqual(status, 0, 'the unmarked copy should fail to check');
      const failing = new Set(
        [...output.matchAll(new RegExp(`${name}_unmarked\\.ts:(\\d+):\\d+`, 'g'))].map((
          match,
        ) => Number(match[1])),
      );
      for (const line of marked) {
        assert.ok(failing.has(line), `expected a type error on line ${line}:\n${output}`);
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
}

test("the dialer's WebSocket option takes the ws class and the global WebSocket with no cast (WSM-APP-008)", () => {
  const { status, output } = denoCheck('tests/types/node_ws_ok.ts');
  assert.equal(status, 0, output);
});

test("the issues of an error are readonly { path, message } arrays, and StreamError takes a schema's issues as they are (WSM-API-003)", () => {
  // An unused @ts-expect-error is itself an error: every marked wrong use must fail to check.
  const { status, output } = denoCheck('tests/types/issues_ok.ts', 'tests/types/issues_fail.ts');
  assert.equal(status, 0, output);
});
