// The design notes cite the contract's rule ids; each must be a link to the section of
// docs/spec.md that states it, and no doc may send the reader to a file outside the repository.
// scripts/doc_links.mjs holds the check (and, with --fix, links the ids); these tests run it on
// every doc and prove it notices each kind of problem. The user docs (the README, the guide, the
// reference pages, the examples and the JSDoc) say how to use muxws and cite no rule ids at all.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { repoRoot } from './_repo.ts';

const root = repoRoot();
const read = (file: string): string => readFileSync(join(root, file), 'utf8');

/** The files below `dir` whose names end with one of `ends`, as paths from the repository. */
function filesUnder(dir: string, ends: string[]): string[] {
  const out: string[] = [];
  for (const entry of readdirSync(join(root, dir), { withFileTypes: true })) {
    const path = `${dir}/${entry.name}`;
    if (entry.isDirectory()) out.push(...filesUnder(path, ends));
    else if (ends.some((end) => entry.name.endsWith(end))) out.push(path);
  }
  return out;
}

test('every rule id in docs/ outside docs/spec.md links to the section of docs/spec.md that states it, and no doc links outside the repository', async () => {
  const { designDocs, problems } = await import('../scripts/doc_links.mjs');
  const spec = read('docs/spec.md');
  const found: string[] = [];
  for (const file of [...designDocs(), 'README.md']) {
    found.push(...problems(file, read(file), spec));
  }
  assert.deepEqual(found, [], 'run node scripts/doc_links.mjs --fix, then deno fmt docs/');
});

test('the docs check names an unlinked rule id, an unknown one, a dead spec anchor and a link out of the repository', async () => {
  const { problems } = await import('../scripts/doc_links.mjs');
  const spec = read('docs/spec.md');
  const text = [
    'A bare WSM-RCN-002, a linked [WSM-RCN-002](spec.md#5-reconnect-dialer-only),',
    'an unknown WSM-NOPE-999, a dead [WSM-RCN-002](spec.md#no-such-section),',
    'the [page](../../shared/seeds/000_x.txt) and `../shared/seeds/000_x.txt` in text.',
  ].join('\n');
  assert.deepEqual(problems('docs/reconnect.md', text, spec), [
    'docs/reconnect.md: the link to spec.md#no-such-section names no heading of docs/spec.md',
    'docs/reconnect.md: the link to ../../shared/seeds/000_x.txt leads outside the repository',
    'docs/reconnect.md: "../../shared/seeds/000_x.txt" names a file outside the repository',
    'docs/reconnect.md: "../shared/seeds/000_x.txt" names a file outside the repository',
    'docs/reconnect.md: WSM-RCN-002 is not a link to docs/spec.md',
    'docs/reconnect.md: WSM-NOPE-999 is no rule of docs/spec.md',
  ]);
});

test('the docs fixer links a bare rule id to its section of docs/spec.md, relative to the doc', async () => {
  const { linkRuleIds } = await import('../scripts/doc_links.mjs');
  const spec = read('docs/spec.md');
  assert.equal(
    linkRuleIds(
      'docs/design/x.md',
      'jitter (WSM-RCN-002), kept [WSM-WIRE-001](../spec.md#x)',
      spec,
    ),
    'jitter ([WSM-RCN-002](../spec.md#5-reconnect-dialer-only)), kept [WSM-WIRE-001](../spec.md#x)',
  );
});

test('the README, the guide, the examples and the JSDoc import the package by the name an install gives it', () => {
  const files = [
    'README.md',
    'mod.ts',
    ...filesUnder('docs/guide', ['.md']),
    ...filesUnder('examples', ['.ts', '.md']),
    ...filesUnder('lib', ['.ts']),
  ];
  const found: string[] = [];
  for (const file of files) {
    const text = read(file);
    for (const m of text.matchAll(/from ['"](muxws(?:\/[a-z]+)?)['"]/g)) {
      found.push(`${file}: imports '${m[1]}' (the package is @muxws/core)`);
    }
    if (file.startsWith('examples/')) {
      for (const m of text.matchAll(/from '((?:\.\.\/)+(?:lib\/[\w/]+|mod)\.ts)'/g)) {
        found.push(`${file}: imports ${m[1]} instead of an entry of @muxws/core`);
      }
    }
  }
  assert.deepEqual(found, []);
});

test('user docs name no rule ids: the README, the guide, the reference pages, the examples and the JSDoc', () => {
  const reference = [
    'acceptor',
    'backplane',
    'cloudflare',
    'demo',
    'dialer',
    'presence',
    'reconnect',
    'recovery',
  ].map((name) => `docs/${name}.md`);
  const files = [
    'README.md',
    'mod.ts',
    ...reference,
    ...filesUnder('docs/guide', ['.md']),
    ...filesUnder('examples', ['.ts', '.md', '.toml']),
    ...filesUnder('lib', ['.ts']),
  ];
  const found: string[] = [];
  for (const file of files) {
    const text = read(file);
    // In TypeScript only the JSDoc blocks are user docs; plain comments may cite the contract.
    const docs = file.endsWith('.ts') && !file.startsWith('examples/')
      ? [...text.matchAll(/\/\*\*[\s\S]*?\*\//g)].map((m) => m[0])
      : [text];
    for (const doc of docs) {
      for (const m of doc.matchAll(/WSM-[\w*.-]*/g)) found.push(`${file}: ${m[0]}`);
    }
  }
  assert.deepEqual(found, []);
});

test('docs/security.md states each limit of the acceptor with its default, and what the default Origin check does against DNS rebinding (WSM-LIM-005)', () => {
  const security = read('docs/security.md');
  for (
    const limit of [
      'maxMessageBytes',
      'maxMessageItems',
      'maxHelloBytes',
      'maxResetRate',
      'maxBufferedBytes',
      'recovery.maxHeldBytes',
      'recovery.maxReplay',
      'recovery.stallTimeoutMs',
    ]
  ) {
    assert.match(security, new RegExp(`^\\| \`${limit.replace('.', '\\.')}\``, 'm'), limit);
  }
  const origins = security.slice(security.indexOf('### Origins and DNS rebinding'));
  assert.match(origins, /DNS rebinding/);
  assert.match(origins, /`origins`/);
});
