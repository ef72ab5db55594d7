/**
 * The child processes of a bench orchestrator (Deno): a process whose stdout lines are read as
 * they come, the command that runs a bench script on a runtime, and the esbuild bundle Node runs
 * (Node runs no TypeScript).
 *
 * @module
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { sleep } from './_common.ts';

/** The repository's root. */
export const ROOT: string = new URL('..', import.meta.url).pathname.replace(/\/$/, '');
/** The repository's `node_modules/.bin`. */
export const BIN = `${ROOT}/node_modules/.bin`;

/**
 * A progress line on stderr, `[<tag> <seconds since started> s] <message>`, for an orchestrator
 * that began at `started`.
 */
export function progress(tag: string, started: number): (message: string) => void {
  return (message) =>
    console.error(`[${tag} ${((Date.now() - started) / 1000).toFixed(1)} s] ${message}`);
}

/** Every child process still running. */
export const children: Set<Child> = new Set();

/** A child process whose stdout lines are read as they come. */
export class Child {
  readonly proc: ChildProcess;
  readonly lines: string[] = [];
  #consumed = new Set<number>();
  #wake: (() => void) | undefined;
  #stderr = '';
  exited = false;

  constructor(readonly name: string, command: string, args: string[]) {
    this.proc = spawn(command, args, { cwd: ROOT, stdio: ['pipe', 'pipe', 'pipe'] });
    children.add(this);
    let buffer = '';
    this.proc.stdout!.setEncoding('utf8');
    this.proc.stdout!.on('data', (chunk: string) => {
      buffer += chunk;
      let i;
      while ((i = buffer.indexOf('\n')) !== -1) {
        this.lines.push(buffer.slice(0, i));
        buffer = buffer.slice(i + 1);
      }
      this.#wake?.();
    });
    this.proc.stderr!.setEncoding('utf8');
    this.proc.stderr!.on('data', (chunk: string) => {
      this.#stderr = (this.#stderr + chunk).slice(-4000);
    });
    // 'close', not 'exit': Node may report the exit before the last of stdout was read, and a
    // line the process did print would then count as never printed.
    this.proc.on('close', (code, signal) => {
      if (buffer) this.lines.push(buffer);
      buffer = '';
      this.#stderr += `[exited: ${signal ?? `code ${code}`}]`;
      this.exited = true;
      children.delete(this);
      this.#wake?.();
    });
    this.proc.stdin!.on('error', () => {});
  }

  /** The last 4,000 characters the process wrote on stderr. */
  get stderr(): string {
    return this.#stderr;
  }

  /** The rest of the first unread line starting with `prefix`. */
  async waitFor(prefix: string, ms: number): Promise<string> {
    const deadline = Date.now() + ms;
    while (true) {
      const i = this.lines.findIndex((line, k) =>
        !this.#consumed.has(k) && line.startsWith(prefix)
      );
      if (i !== -1) {
        this.#consumed.add(i);
        return this.lines[i].slice(prefix.length).trim();
      }
      if (this.exited) {
        throw new Error(`${this.name} exited before "${prefix}":\n${this.#stderr}`);
      }
      const left = deadline - Date.now();
      if (left <= 0) {
        throw new Error(`${this.name} printed no "${prefix}" in ${ms} ms:\n${this.#stderr}`);
      }
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, Math.min(left, 1000));
        this.#wake = () => {
          clearTimeout(timer);
          resolve();
        };
      });
    }
  }

  /** Resolves once the process exited and its output was read; rejects after `ms`. */
  async done(ms: number): Promise<void> {
    const deadline = Date.now() + ms;
    while (!this.exited && Date.now() < deadline) await sleep(50);
    if (!this.exited) throw new Error(`${this.name} did not finish in ${ms} ms:\n${this.#stderr}`);
  }

  /** Closes its stdin: a bench process that reads commands exits when it ends. */
  endInput(): void {
    this.proc.stdin!.end();
  }

  /** Writes one line to its stdin. */
  send(line: string): void {
    if (!this.exited) this.proc.stdin!.write(`${line}\n`);
  }

  /** SIGKILL. */
  kill(): void {
    if (!this.exited) this.proc.kill('SIGKILL');
  }
}

/** Kills every child process still running. */
export function killAll(): void {
  for (const child of children) child.kill();
}

/**
 * The command running `script` (a file of bench/ without extension) on `runtime`, with garbage
 * collection exposed; Node runs the bundle of it in `nodeBuild` ({@linkcode bundleEntries}).
 */
export function command(
  runtime: string,
  script: string,
  args: string[],
  nodeBuild: string,
): [string, string[]] {
  if (runtime === 'deno') {
    return [Deno.execPath(), [
      'run',
      '-A',
      '--v8-flags=--expose-gc',
      `bench/${script}.ts`,
      ...args,
    ]];
  }
  if (runtime === 'bun') return [`${BIN}/bun`, [`bench/${script}.ts`, ...args]];
  return ['node', ['--expose-gc', `${nodeBuild}/${script}.mjs`, ...args]];
}

/**
 * Bundles each of `entries` (paths from the repository's root, such as `bench/_server.ts`) into
 * `outdir` as `<name>.mjs` (packages left external), for Node; `outdir` must sit inside the
 * repository so packages resolve.
 */
export function bundleEntries(entries: string[], outdir: string): void {
  const proc = new Deno.Command(`${BIN}/esbuild`, {
    args: [
      ...entries,
      '--bundle',
      '--platform=node',
      '--format=esm',
      '--packages=external',
      '--log-level=error',
      `--outdir=${outdir}`,
      '--out-extension:.js=.mjs',
    ],
    cwd: ROOT,
  }).outputSync();
  if (!proc.success) throw new Error(`esbuild failed: ${new TextDecoder().decode(proc.stderr)}`);
}
