/**
 * Scenario `bundle`: esbuild minified (ESM, browser platform) and gzipped (level 9) size of each
 * entry, bundled the same way: muxws `mod.ts` (the dialer front door, everything it exports),
 * only `connect` from it (what an app that imports just the dialer ships), `connect` with the
 * two classes an app configures it with, the acceptor entry `lib/acceptor/acceptor.ts`, and beside them
 * socket.io-client, partysocket and reconnecting-websocket (each as `export * from '<package>'`).
 *
 * Run directly, it prints where the bytes of one entry go, file by file (default: `connect`
 * only): `deno run -A bench/bundle.ts ["export { connect } from './mod.ts';"]`.
 *
 * @module
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';

/** One bundled entry. */
export interface BundleSize {
  /** `muxws`, `muxws connect only`, `muxws acceptor`, or the package name. */
  subject: string;
  /** Minified bytes. */
  minified: number;
  /** Minified and gzipped bytes. */
  gzipped: number;
}

/** The entries measured, as source text bundled from the repository root. */
export const ENTRIES: ReadonlyArray<readonly [string, string]> = [
  ['muxws', "export * from './mod.ts';"],
  ['muxws connect only', "export { connect } from './mod.ts';"],
  ['muxws connect, Reconnect, Hello', "export { connect, Reconnect, Hello } from './mod.ts';"],
  ['muxws acceptor', "export * from './lib/acceptor/acceptor.ts';"],
  ['socket.io', "export * from 'socket.io-client';"],
  ['partysocket', "export * from 'partysocket';"],
  ['reconnecting-websocket', "export { default } from 'reconnecting-websocket';"],
];

/** The esbuild flags every entry is bundled with. */
const FLAGS = [
  '--bundle',
  '--minify',
  '--format=esm',
  '--platform=browser',
  '--loader=ts',
  '--sourcefile=entry.ts',
  '--log-level=error',
];

function gzipped(code: Uint8Array): number {
  return gzipSync(code, { level: 9 }).byteLength;
}

/**
 * Bundles `source` (entry text, resolved from `root`) with the esbuild binary at `esbuild`, with
 * the flags every entry is measured with; `extra` flags are added. Returns the bundle's bytes.
 */
export function esbuildRun(
  esbuild: string,
  root: string,
  source: string,
  extra: string[] = [],
): Uint8Array {
  const result = spawnSync(esbuild, [...FLAGS, ...extra], {
    cwd: root,
    input: source,
    maxBuffer: 64 << 20,
  });
  if (result.status !== 0) {
    throw new Error(`esbuild failed for ${source}: ${String(result.stderr)}`);
  }
  return result.stdout as Uint8Array;
}

/** Bundles every entry with the esbuild binary at `esbuild`, from `root`. */
export function bundleSizes(esbuild: string, root: string): BundleSize[] {
  return ENTRIES.map(([subject, source]) => {
    const code = esbuildRun(esbuild, root, source);
    return { subject, minified: code.byteLength, gzipped: gzipped(code) };
  });
}

/** One input file's share of a bundle. */
export interface FileShare {
  /** The file, relative to the root. */
  file: string;
  /** Its minified bytes in the bundle. */
  minified: number;
  /**
   * What it adds to the gzipped size, the files before it in the bundle being there already
   * (gzip of the bundle up to its end minus gzip up to its start). The shares sum to the total
   * less gzip's own header and trailer (about 20 bytes).
   */
  gzipped: number;
}

/**
 * Where the bytes of one entry go: esbuild's `--metafile` gives each input file's minified bytes,
 * in bundle order; each file's gzip share is what its bytes add to the gzip of what precedes them.
 */
export function bundleBreakdown(esbuild: string, root: string, source: string): FileShare[] {
  const dir = mkdtempSync(join(tmpdir(), 'muxws-bundle-'));
  try {
    const out = join(dir, 'out.js');
    const meta = join(dir, 'meta.json');
    esbuildRun(esbuild, root, source, [`--outfile=${out}`, `--metafile=${meta}`]);
    const code = readFileSync(out);
    const outputs = JSON.parse(readFileSync(meta, 'utf8')).outputs as Record<
      string,
      { inputs: Record<string, { bytesInOutput: number }> }
    >;
    const inputs = Object.values(outputs)[0].inputs;
    const shares: FileShare[] = [];
    let at = 0;
    let before = 0;
    for (const [file, { bytesInOutput }] of Object.entries(inputs)) {
      if (bytesInOutput === 0) continue;
      at += bytesInOutput;
      const upTo = gzipped(code.subarray(0, at));
      shares.push({ file, minified: bytesInOutput, gzipped: upTo - before });
      before = upTo;
    }
    return shares;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

if (import.meta.main) {
  const root = join(import.meta.dirname ?? '.', '..');
  const source = Deno.args[0] ?? "export { connect } from './mod.ts';";
  const shares = bundleBreakdown(join(root, 'node_modules', '.bin', 'esbuild'), root, source);
  console.log(`${source}\n\n| file | min | gzip share |\n| --- | --- | --- |`);
  for (const { file, minified, gzipped } of shares.sort((a, b) => b.gzipped - a.gzipped)) {
    console.log(`| ${file} | ${minified} B | ${gzipped} B |`);
  }
  const sum = (key: 'minified' | 'gzipped') => shares.reduce((n, s) => n + s[key], 0);
  console.log(`| sum | ${sum('minified')} B | ${sum('gzipped')} B |`);
}
