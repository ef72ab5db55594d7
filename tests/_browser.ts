/**
 * Chromium for tests: Debian's `/usr/bin/chromium`, headless, with a fresh user-data-dir, driven
 * by `playwright-core` over the DevTools protocol.
 *
 * ```ts ignore
 * await using browser = await launchBrowser();
 * const page = await browser.context.newPage();
 * await page.goto(server.url);
 * ```
 *
 * The helper spawns Chromium itself (rather than letting Playwright do it) so it owns the child
 * process: `close()` asks the browser to close, and kills the process if it has not exited within
 * `closeTimeoutMs`, then removes the profile directory. Launch is bounded by `launchTimeoutMs`.
 * Runs on Node; the tests using it live in `tests/node/`.
 */
import * as esbuild from 'esbuild';
import { chromium } from 'playwright-core';
import type { Browser, BrowserContext } from 'playwright-core';
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { repoRoot } from './_repo.ts';

/** Where the Debian package installs Chromium (`.ci/run` installs it with apt). */
export const CHROMIUM_PATH = '/usr/bin/chromium';

/** Flags for a quiet, hermetic headless Chromium in a container without a sandbox. */
export const CHROMIUM_ARGS: readonly string[] = [
  '--headless=new',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--no-default-browser-check',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--disable-dev-shm-usage',
];

/** Options of {@linkcode launchBrowser}. */
export interface LaunchOptions {
  /** Milliseconds allowed for Chromium to start and accept the DevTools connection. */
  launchTimeoutMs?: number;
  /** Milliseconds allowed for Chromium to close before its process is killed. */
  closeTimeoutMs?: number;
}

/** A running Chromium with its own profile. */
export interface TestBrowser extends AsyncDisposable {
  /** The browser. */
  readonly browser: Browser;
  /** The browser's context (a fresh profile); open pages with `context.newPage()`. */
  readonly context: BrowserContext;
  /** Closes Chromium (idempotent, bounded, kills it if needed) and removes its profile. */
  close(): Promise<void>;
}

function delay(ms: number): { promise: Promise<void>; cancel(): void } {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const promise = new Promise<void>((resolve) => {
    timer = setTimeout(resolve, ms);
  });
  return { promise, cancel: () => clearTimeout(timer) };
}

/** Launches headless Chromium with a fresh user-data-dir and connects playwright-core to it. */
export async function launchBrowser(options: LaunchOptions = {}): Promise<TestBrowser> {
  const { launchTimeoutMs = 30_000, closeTimeoutMs = 10_000 } = options;
  const profile = mkdtempSync(join(tmpdir(), 'muxws-chromium-'));
  const child = spawn(CHROMIUM_PATH, [
    ...CHROMIUM_ARGS,
    `--user-data-dir=${profile}`,
    '--remote-debugging-address=127.0.0.1',
    '--remote-debugging-port=0',
    'about:blank',
  ], { stdio: ['ignore', 'ignore', 'pipe'] });
  const exited = new Promise<void>((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) resolve();
    child.once('exit', () => resolve());
    child.once('error', () => resolve());
  });

  let browser: Browser | undefined;
  let closing: Promise<void> | undefined;
  const close = (): Promise<void> => {
    closing ??= (async () => {
      const limit = delay(closeTimeoutMs);
      await Promise.race([browser?.close().catch(() => {}), limit.promise]);
      child.kill('SIGTERM');
      const hard = await Promise.race([exited.then(() => false), limit.promise.then(() => true)]);
      if (hard) {
        child.kill('SIGKILL');
        const last = delay(closeTimeoutMs);
        await Promise.race([exited, last.promise]);
        last.cancel();
      }
      limit.cancel();
      try {
        // Chromium's helper processes may still be flushing the profile for a moment.
        rmSync(profile, { recursive: true, force: true, maxRetries: 10, retryDelay: 100 });
      } catch (error) {
        console.error(`Could not remove the Chromium profile ${profile}:`, error);
      }
    })();
    return closing;
  };

  try {
    const endpoint = await new Promise<string>((resolve, reject) => {
      let stderr = '';
      const timer = setTimeout(() => {
        reject(new Error(`Chromium did not start within ${launchTimeoutMs} ms: ${stderr}`));
      }, launchTimeoutMs);
      child.stderr!.setEncoding('utf8');
      const onData = (chunk: string): void => {
        stderr += chunk;
        const match = /DevTools listening on (ws:\/\/\S+)/.exec(stderr);
        if (match) {
          clearTimeout(timer);
          child.stderr!.off('data', onData);
          resolve(match[1]);
        }
      };
      child.stderr!.on('data', onData);
      child.once('error', (error) => {
        clearTimeout(timer);
        reject(error);
      });
      child.once('exit', (code, signal) => {
        clearTimeout(timer);
        reject(new Error(`Chromium exited (${code ?? signal}) before listening: ${stderr}`));
      });
    });
    // Keep draining stderr so Chromium never blocks on a full pipe.
    child.stderr!.resume();
    browser = await chromium.connectOverCDP(endpoint, { timeout: launchTimeoutMs });
    // The default context is as fresh as a new one (the profile directory is new), and cheaper.
    const context = browser.contexts()[0] ?? await browser.newContext();
    return { browser, context, close, [Symbol.asyncDispose]: close };
  } catch (error) {
    await close();
    throw error;
  }
}

/**
 * Bundles a page module (a path relative to the repository root) for the browser with esbuild:
 * one ES module, every import inlined, from the sources.
 */
export async function bundleForBrowser(entry: string): Promise<string> {
  const result = await esbuild.build({
    entryPoints: [join(repoRoot(), entry)],
    bundle: true,
    write: false,
    format: 'esm',
    platform: 'browser',
    target: 'es2022',
    logLevel: 'warning',
  });
  return result.outputFiles[0].text;
}

/**
 * Bundles a page module given as TypeScript source for the browser, like
 * {@linkcode bundleForBrowser}, its imports resolved from the repository root and by `plugins`
 * (say, `muxwsSources()` of tests/_muxws_sources.ts for a user's `import ... from 'muxws'`).
 */
export async function bundleSourceForBrowser(
  source: string,
  plugins: esbuild.Plugin[] = [],
): Promise<string> {
  const result = await esbuild.build({
    stdin: { contents: source, resolveDir: repoRoot(), sourcefile: 'app.ts', loader: 'ts' },
    bundle: true,
    write: false,
    format: 'esm',
    platform: 'browser',
    target: 'es2022',
    logLevel: 'warning',
    plugins,
  });
  return result.outputFiles[0].text;
}

/** Reads a file of the repository (a path relative to its root) as text. */
export function readRepoFile(path: string): string {
  return readFileSync(join(repoRoot(), path), 'utf8');
}
