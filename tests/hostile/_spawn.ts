/**
 * Starts `serve_acceptor.ts` in a child process of the running runtime (Deno or Bun) and reads
 * its port; `kill()` sends SIGKILL and resolves once the process is gone.
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
}

/** Spawns the child acceptor; rejects when it prints no port within 10 s. */
export function spawnAcceptor(options: SpawnOptions = {}): Promise<ChildAcceptor> {
  const isBun = 'Bun' in globalThis;
  const args = isBun ? [script] : ['run', '-A', '--quiet', script];
  const env = { ...process.env, MUXWS_IDLE_MS: String(options.idleTimeoutMs ?? 30_000) };
  const child = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'inherit'], env });
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
