// The bundle figures of the benchmarks (bench/bundle.ts): each entry's minified and gzipped size,
// and the breakdown of one entry by file. No SPEC rule covers benchmarks, so the names cite no
// rule id.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { bundleBreakdown, bundleSizes, ENTRIES } from '../bench/bundle.ts';
import { repoRoot } from './_repo.ts';

const root = repoRoot();
const esbuild = join(root, 'node_modules', '.bin', 'esbuild');

test('bundle: bundleBreakdown() gives the connect bundle to its files, shares summing to the bundle', () => {
  const source = "export { connect } from './mod.ts';";
  const shares = bundleBreakdown(esbuild, root, source);
  const files = shares.map((share) => share.file);
  for (
    const file of [
      'lib/dialer/dialer.ts',
      'lib/session/session.ts',
      'lib/session/stream.ts',
      'lib/wire/frame.ts',
    ]
  ) {
    assert.ok(files.includes(file), `${file} in ${files.join(', ')}`);
  }
  assert.ok(!files.includes('lib/acceptor/acceptor.ts'));
  assert.ok(shares.every((share) => share.minified > 0 && share.gzipped > 0));
  const connectOnly = bundleSizes(esbuild, root)
    .find((size) => size.subject === 'muxws connect only')!;
  const minified = shares.reduce((sum, share) => sum + share.minified, 0);
  const gzipped = shares.reduce((sum, share) => sum + share.gzipped, 0);
  // Only esbuild's export statement lies outside every file; only gzip's header and trailer
  // lie outside every share.
  assert.ok(minified <= connectOnly.minified && minified > connectOnly.minified - 100);
  assert.ok(gzipped < connectOnly.gzipped && gzipped > connectOnly.gzipped - 40);
});

test('bundle: the entries include connect alone and connect with Reconnect and Hello', () => {
  const sources = new Map(ENTRIES);
  assert.equal(sources.get('muxws connect only'), "export { connect } from './mod.ts';");
  assert.equal(
    sources.get('muxws connect, Reconnect, Hello'),
    "export { connect, Reconnect, Hello } from './mod.ts';",
  );
});
