/**
 * workerd for tests: bundles a Worker script with esbuild and runs it in a real workerd (through
 * the `miniflare` npm package) on 127.0.0.1 with an ephemeral port.
 *
 * ```ts ignore
 * await using worker = await startWorkerd({
 *   script: await bundleWorker('examples/cloudflare/worker.ts'),
 *   durableObjects: { ROOM: 'Room' },
 * });
 * const socket = new WebSocket(worker.wsUrl('/room/a'), ['muxws.v1.json']);
 * ```
 *
 * Runs on Node (miniflare needs Node's `node:` modules and spawns the workerd binary); the tests
 * using it live in `tests/node/`. Start is bounded by `startTimeoutMs`; `stop()` is bounded by
 * `stopTimeoutMs` and is idempotent.
 */
import * as esbuild from 'esbuild';
import { Log, LogLevel, Miniflare } from 'miniflare';
import { join } from 'node:path';
import { repoRoot } from './_repo.ts';
import { muxwsSources } from './_muxws_sources.ts';

export { muxwsSources };

/**
 * Bundles a Worker entry (a path relative to the repository root) into one ES module string for
 * workerd, the way wrangler would: esbuild, browser conditions, every import inlined.
 */
export async function bundleWorker(entry: string): Promise<string> {
  return await bundle({ entryPoints: [join(repoRoot(), entry)] });
}

/**
 * Bundles a Worker given as TypeScript source, its imports resolved from the repository root
 * (so `'./lib/adapters/cloudflare.ts'` or `'hono'` work), like {@linkcode bundleWorker}.
 */
export async function bundleWorkerSource(source: string): Promise<string> {
  return await bundle({
    stdin: { contents: source, resolveDir: repoRoot(), sourcefile: 'worker.ts', loader: 'ts' },
  });
}

/**
 * Bundles a Worker given as TypeScript source written as a user writes it, its `muxws` imports
 * resolved to the sources (see {@linkcode muxwsSources}), like {@linkcode bundleWorker}.
 */
export async function bundleUserWorker(source: string): Promise<string> {
  return await bundle({
    stdin: { contents: source, resolveDir: repoRoot(), sourcefile: 'worker.ts', loader: 'ts' },
    plugins: [muxwsSources()],
  });
}

async function bundle(
  input: Pick<esbuild.BuildOptions, 'entryPoints' | 'stdin' | 'plugins'>,
): Promise<string> {
  const result = await esbuild.build({
    ...input,
    bundle: true,
    write: false,
    format: 'esm',
    platform: 'browser',
    conditions: ['workerd', 'worker', 'browser'],
    target: 'es2022',
    logLevel: 'warning',
  });
  return result.outputFiles[0].text;
}

/** Options of {@linkcode startWorkerd}. */
export interface WorkerdOptions {
  /** The Worker's ES module source (see {@linkcode bundleWorker}). */
  script: string;
  /**
   * Durable Object bindings: binding name to exported class name, or to the class name and
   * whether the class stores in SQLite (wrangler's `new_sqlite_classes`).
   */
  durableObjects?: Record<string, string | { className: string; useSQLite?: boolean }>;
  /** Plain-text and JSON bindings (the Worker's `env`). */
  bindings?: Record<string, unknown>;
  /** workerd compatibility date. */
  compatibilityDate?: string;
  /** Milliseconds allowed for workerd to start and listen. */
  startTimeoutMs?: number;
  /** Milliseconds allowed for workerd to stop before the helper gives up waiting. */
  stopTimeoutMs?: number;
}

/** A running workerd. */
export interface WorkerdInstance extends AsyncDisposable {
  /** `http://127.0.0.1:<port>/`. */
  readonly url: URL;
  /** The `ws://` URL of `path` on this instance. */
  wsUrl(path?: string): string;
  /** The `http://` URL of `path` on this instance. */
  httpUrl(path?: string): string;
  /** Stops workerd (idempotent, bounded). */
  stop(): Promise<void>;
}

function within<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} took longer than ${ms} ms`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

/** Starts workerd with `options.script` on 127.0.0.1 and an ephemeral port. */
export async function startWorkerd(options: WorkerdOptions): Promise<WorkerdInstance> {
  const {
    startTimeoutMs = 30_000,
    stopTimeoutMs = 10_000,
    compatibilityDate = '2025-04-01',
  } = options;
  const mf = new Miniflare({
    modules: true,
    script: options.script,
    compatibilityDate,
    durableObjects: options.durableObjects ?? {},
    bindings: (options.bindings ?? {}) as Record<string, never>,
    host: '127.0.0.1',
    port: 0,
    log: new Log(LogLevel.WARN),
    // A fixed placeholder `request.cf`: by default miniflare downloads one from Cloudflare, and
    // tests reach nothing but the loopback interface.
    cf: false,
  });
  let stopped: Promise<void> | undefined;
  const stop = (): Promise<void> => {
    stopped ??= within(mf.dispose(), stopTimeoutMs, 'Stopping workerd').catch((error) => {
      console.error('workerd did not stop cleanly:', error);
    });
    return stopped;
  };
  let url: URL;
  try {
    url = await within(mf.ready, startTimeoutMs, 'Starting workerd');
  } catch (error) {
    await stop();
    throw error;
  }
  const at = (scheme: string, path = '/'): string =>
    new URL(path, url).href.replace(/^http:/, scheme);
  return {
    url,
    wsUrl: (path) => at('ws:', path),
    httpUrl: (path) => at('http:', path),
    stop,
    [Symbol.asyncDispose]: stop,
  };
}
