/**
 * Starts a child acceptor process and reads its port; `kill()` sends SIGKILL and resolves once
 * the process is gone. {@linkcode spawnAcceptor} runs `serve_acceptor.ts` with the running
 * runtime (Deno or Bun); {@linkcode spawnAcceptorWith} runs any script of this runtime that
 * prints `PORT <n>` (Node's is the bundled test file itself, see
 * `tests/node/hostile_node_test.ts`).
 */
import { spawn } from 'node:child_process';
import process from 'node:process';

/** A child acceptor process. */
export interface ChildAcceptor {
  /** Its port on 127.0.0.1. */
  readonly port: number;
  /** SIGKILL, resolving once it exited (bounded: 5 s). */
  kill(): Promise<void>;
}

const script = new URL('./serve_acceptor.ts', import.meta.url).pathname;

/** Options of {@linkcode spawnAcceptor}. */
export interface SpawnOptions {
  /** The child acceptor's `idleTimeoutMs`. @default {30000} */
  idleTimeoutMs?: number;
  /** Which child acceptor: `recovery` for `_child_recovery.ts`. @default {the one of `_child_acceptor.ts`} */
  child?: 'recovery';
  /** More environment for the child, e.g. `MUXWS_CHILD` to configure its acceptor. */
  env?: Record<string, string>;
}

/** Spawns `serve_acceptor.ts`; rejects when it prints no port within 10 s. */
export function spawnAcceptor(options: SpawnOptions = {}): Promise<ChildAcceptor> {
  const isBun = 'Bun' in globalThis;
  return spawnAcceptorWith(isBun ? [script] : ['run', '-A', '--quiet', script], options);
}

/**
 * Spawns this runtime's executable with `args` as the child acceptor, its environment this
 * process's plus `MUXWS_IDLE_MS` and `env` (a variable set to undefined is removed); rejects when
 * it prints no port within 10 s.
 */
export function spawnAcceptorWith(
  args: string[],
  options: SpawnOptions = {},
  env: Record<string, string | undefined> = {},
): Promise<ChildAcceptor> {
  const childEnv: Record<string, string> = {};
  const merged = {
    ...process.env,
    MUXWS_IDLE_MS: String(options.idleTimeoutMs ?? 30_000),
    MUXWS_CHILD: options.child,
    ...options.env,
    ...env,
  };
  for (const [name, value] of Object.entries(merged)) {
    if (value !== undefined) childEnv[name] = value;
  }
  const child = spawn(process.execPath, args, {
    stdio: ['ignore', 'pipe', 'inherit'],
    env: childEnv,
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  return new Promise((resolve, reject) => {
    let out = '';
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error('The child acceptor printed no port within 10000 ms'));
    }, 10_000);
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`The child acceptor exited with ${code} before listening`));
    });
    child.stdout!.on('data', (chunk: Uint8Array) => {
      out += new TextDecoder().decode(chunk);
      const match = /PORT (\d+)/.exec(out);
      if (!match) return;
      clearTimeout(timer);
      resolve({
        port: Number(match[1]),
        async kill() {
          child.kill('SIGKILL');
          let timeout: ReturnType<typeof setTimeout> | undefined;
          await Promise.race([
            exited,
            new Promise((done) => timeout = setTimeout(done, 5000)),
          ]);
          clearTimeout(timeout);
        },
      });
    });
  });
}
