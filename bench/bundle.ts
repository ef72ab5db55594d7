/**
 * Scenario `bundle`: esbuild minified (ESM, browser platform) and gzipped (level 9) size of each
 * entry, bundled the same way: muxws `mod.ts` (the dialer front door, everything it exports),
 * only `connect` from it (what an app that imports just the dialer ships), the acceptor entry
 * `lib/acceptor.ts`, and beside them socket.io-client, partysocket and reconnecting-websocket
 * (each as `export * from '<package>'`).
 *
 * @module
 */
import { spawnSync } from 'node:child_process';
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
  ['muxws acceptor', "export * from './lib/acceptor.ts';"],
  ['socket.io', "export * from 'socket.io-client';"],
  ['partysocket', "export * from 'partysocket';"],
  ['reconnecting-websocket', "export { default } from 'reconnecting-websocket';"],
];

/** Bundles every entry with the esbuild binary at `esbuild`, from `root`. */
export function bundleSizes(esbuild: string, root: string): BundleSize[] {
  return ENTRIES.map(([subject, source]) => {
    const result = spawnSync(esbuild, [
      '--bundle',
      '--minify',
      '--format=esm',
      '--platform=browser',
      '--loader=ts',
      '--sourcefile=entry.ts',
      '--log-level=error',
    ], { cwd: root, input: source, maxBuffer: 64 << 20 });
    if (result.status !== 0) {
      throw new Error(`esbuild failed for ${subject}: ${String(result.stderr)}`);
    }
    const code = result.stdout as Uint8Array;
    return { subject, minified: code.byteLength, gzipped: gzipSync(code, { level: 9 }).byteLength };
  });
}
