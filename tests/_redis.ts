/**
 * A real `redis-server` for tests: its own process on a free 127.0.0.1 port, no persistence
 * (`--save ''`, `--appendonly no`) unless `dir` asks for an append-only file, so no system
 * service or shared instance is ever used.
 *
 * ```ts ignore
 * await using redis = await startRedis();
 * const client = createClient({ url: redis.url });
 * // ...
 * await redis.stop(); // an outage: the port stays reserved for start()
 * await redis.start(); // back on the same port, answering PING
 * ```
 *
 * Every wait is bounded: start waits at most `startTimeoutMs` for PING to be answered, stop at
 * most 5 s for the process to exit before killing it. Runs on Deno, Bun and Node (it uses only
 * `node:child_process` and `node:net`). The binary is `redis-server` from PATH, or
 * `MUXWS_REDIS_SERVER`.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { connect, createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import process from 'node:process';
import { createClient } from 'redis';
import { within } from './_wait.ts';

/** A running (or stopped, for an outage) Redis server of one test. */
export interface RedisServer extends AsyncDisposable {
  /** The loopback port. */
  readonly port: number;
  /** `redis://127.0.0.1:<port>`. */
  readonly url: string;
  /** True between a successful start and a stop. */
  readonly running: boolean;
  /** Starts it again on the same port; resolves once it answers PING. */
  start(): Promise<void>;
  /** Stops the process (SIGTERM, then SIGKILL after 5 s); resolves once it has exited. */
  stop(): Promise<void>;
}

/** Options of {@linkcode startRedis}. */
export interface StartRedisOptions {
  /** How long to wait for PING to be answered. @default {10000} */
  startTimeoutMs?: number;
  /**
   * Persist to an append-only file in this directory (`--appendonly yes`, fsync on every write),
   * so data survives `stop()` and `start()`. The caller creates and removes it. Absent: nothing
   * persists.
   */
  dir?: string;
  /** More `redis-server` arguments, such as `['--cluster-enabled', 'yes', …]`. */
  args?: readonly string[];
}

const STOP_TIMEOUT_MS = 5000;

/** Servers still running; killed if the test process exits without stopping them (a crash). */
const live = new Set<ChildProcess>();
let exitHookInstalled = false;
function killOnExit(proc: ChildProcess): void {
  live.add(proc);
  if (exitHookInstalled) return;
  exitHookInstalled = true;
  process.on('exit', () => {
    for (const child of live) child.kill('SIGKILL');
  });
}

/** A port nothing listens on right now, found by binding port 0 on 127.0.0.1. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      server.close(() => (port ? resolve(port) : reject(new Error('No port was assigned'))));
    });
  });
}

/** Resolves true when a Redis on `port` answers PING within `timeoutMs`, false otherwise. */
export function ping(port: number, timeoutMs: number = 500): Promise<boolean> {
  return new Promise((resolve) => {
    let answer = '';
    const socket = connect({ host: '127.0.0.1', port });
    const done = (ok: boolean) => {
      clearTimeout(timer);
      socket.destroy();
      resolve(ok);
    };
    const timer = setTimeout(() => done(false), timeoutMs);
    socket.once('error', () => done(false));
    socket.once('connect', () => socket.write('PING\r\n'));
    socket.on('data', (chunk) => {
      answer += chunk.toString();
      if (answer.includes('\r\n')) done(answer.startsWith('+PONG'));
    });
  });
}

function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** Starts a fresh `redis-server` on a free loopback port and waits until it answers PING. */
export async function startRedis(options: StartRedisOptions = {}): Promise<RedisServer> {
  const startTimeoutMs = options.startTimeoutMs ?? 10_000;
  const binary = process.env.MUXWS_REDIS_SERVER ?? 'redis-server';
  const port = await freePort();
  let child: ChildProcess | undefined;
  let exited: Promise<void> = Promise.resolve();

  async function start(): Promise<void> {
    if (child) throw new Error(`redis-server on port ${port} is already running`);
    let output = '';
    let failure: Error | undefined;
    const proc = spawn(binary, [
      '--port',
      String(port),
      '--bind',
      '127.0.0.1',
      '--save',
      '',
      ...(options.dir === undefined
        ? ['--appendonly', 'no']
        : ['--appendonly', 'yes', '--appendfsync', 'always', '--dir', options.dir]),
      '--daemonize',
      'no',
      '--loglevel',
      'warning',
      ...(options.args ?? []),
    ], { stdio: ['ignore', 'pipe', 'pipe'] });
    child = proc;
    killOnExit(proc);
    proc.stdout?.on('data', (chunk) => (output += chunk));
    proc.stderr?.on('data', (chunk) => (output += chunk));
    exited = new Promise((resolve) => {
      proc.once('error', (error) => {
        failure = error;
        resolve();
      });
      proc.once('exit', () => resolve());
    });
    let gone = false;
    void exited.then(() => {
      gone = true;
      live.delete(proc);
      if (child === proc) child = undefined;
    });
    const deadline = Date.now() + startTimeoutMs;
    while (Date.now() < deadline) {
      if (gone) {
        throw new Error(
          `redis-server on port ${port} exited before answering PING: ${
            failure?.message ?? output.trim()
          }`,
        );
      }
      if (await ping(port, 250)) return;
      await delay(25);
    }
    await stop();
    throw new Error(`redis-server on port ${port} did not answer PING within ${startTimeoutMs} ms`);
  }

  async function stop(): Promise<void> {
    const proc = child;
    if (!proc) return;
    proc.kill('SIGTERM');
    let timer: ReturnType<typeof setTimeout> | undefined;
    const killed = new Promise<void>((resolve) => {
      timer = setTimeout(() => {
        proc.kill('SIGKILL');
        resolve();
      }, STOP_TIMEOUT_MS);
    });
    await Promise.race([exited, killed]);
    clearTimeout(timer);
    await exited;
    child = undefined;
  }

  await start();
  return {
    port,
    url: `redis://127.0.0.1:${port}`,
    get running() {
      return child !== undefined;
    },
    start,
    stop,
    [Symbol.asyncDispose]: stop,
  };
}

/** Sends one command to the Redis on `port` and resolves with its raw reply; bounded by `timeoutMs`. */
function command(port: number, args: readonly string[], timeoutMs: number = 2000): Promise<string> {
  return new Promise((resolve, reject) => {
    let answer = '';
    const socket = connect({ host: '127.0.0.1', port });
    const done = (error?: Error) => {
      clearTimeout(timer);
      socket.destroy();
      error ? reject(error) : resolve(answer);
    };
    const timer = setTimeout(
      () =>
        done(new Error(`Redis on port ${port} did not answer ${args[0]} within ${timeoutMs} ms`)),
      timeoutMs,
    );
    socket.once('error', done);
    socket.once(
      'connect',
      () =>
        socket.write(`*${args.length}\r\n${args.map((a) => `$${a.length}\r\n${a}\r\n`).join('')}`),
    );
    socket.on('data', (chunk) => {
      answer += chunk.toString();
      const bulk = /^\$(\d+)\r\n/.exec(answer);
      if (bulk ? answer.length >= bulk[0].length + Number(bulk[1]) + 2 : answer.endsWith('\r\n')) {
        done();
      }
    });
  });
}

/**
 * A `redis-server` in cluster mode that serves every slot itself (a cluster of one node), with
 * its cluster config in a temporary directory removed by `stop()`. Resolves once the cluster
 * state is ok (at most 5 s).
 */
export async function startRedisCluster(): Promise<RedisServer> {
  const dir = mkdtempSync(join(tmpdir(), 'muxws-redis-cluster-'));
  let redis: RedisServer | undefined;
  try {
    redis = await startRedis({
      args: ['--cluster-enabled', 'yes', '--cluster-config-file', join(dir, 'nodes.conf')],
    });
    await command(redis.port, ['CLUSTER', 'ADDSLOTSRANGE', '0', '16383']);
    const deadline = Date.now() + 5000;
    while (!(await command(redis.port, ['CLUSTER', 'INFO'])).includes('cluster_state:ok')) {
      if (Date.now() > deadline) throw new Error('Timed out after 5000 ms waiting for the cluster');
      await delay(20);
    }
  } catch (error) {
    await redis?.stop();
    rmSync(dir, { recursive: true, force: true });
    throw error;
  }
  const server = redis;
  const stop = async () => {
    await server.stop();
    rmSync(dir, { recursive: true, force: true });
  };
  return {
    port: server.port,
    url: server.url,
    get running() {
      return server.running;
    },
    start: () => server.start(),
    stop,
    [Symbol.asyncDispose]: stop,
  };
}

/**
 * A node-redis client of `url`, connected (within 5 s), redialling every 100 ms. Its `error`
 * events are ignored: the code under test reports failures through its calls and `onError`.
 */
export async function connectClient(url: string) {
  const client = createClient({ url, socket: { reconnectStrategy: () => 100 } });
  client.on('error', () => {});
  await within(client.connect(), 5000, 'the Redis client to connect');
  return client;
}

/** A client of {@linkcode connectClient}. */
export type Client = Awaited<ReturnType<typeof connectClient>>;

/** Destroys `client`, if any; one already closed is left as it is. */
export function destroy(client: Client | undefined): void {
  try {
    client?.destroy();
  } catch {
    // already closed
  }
}
