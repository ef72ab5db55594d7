// Three backplane nodes on three runtimes share one real redis-server: a Deno process, a Bun
// process, and this Node process (against dist/). Each publishes 500 JSON frames and one binary
// frame; each must receive every other node's messages once, complete and in order, with the
// binary frame's bytes intact, proving the Redis envelope is runtime-neutral.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { createClient } from 'redis';
import type { BackplaneError, BackplaneMessage } from 'muxws/backplane';
import { redisBackplane } from 'muxws/redis';
import { startRedis } from '../_redis.ts';
import { repoRoot } from '../_repo.ts';
import { within } from '../_wait.ts';

const COUNT = 500;

interface Child {
  ready: Promise<void>;
  result: Promise<Record<string, unknown>>;
  go(): void;
  kill(): void;
}

function startNode(runtime: 'deno' | 'bun', url: string, origin: string): Child {
  const root = repoRoot();
  const script = join(root, 'tests', '_redis_backplane_node.ts');
  const bin = join(root, 'node_modules', '.bin', runtime);
  const args = runtime === 'deno' ? ['run', '-A', '--quiet', script] : [script];
  const child = spawn(bin, [...args, url, origin, String(COUNT), '2'], {
    cwd: root,
    stdio: ['pipe', 'pipe', 'pipe'],
    env: { ...process.env, NO_COLOR: '1' },
  });
  let out = '';
  let err = '';
  let onReady: () => void = () => {};
  let onResult: (value: Record<string, unknown>) => void = () => {};
  let onFail: (error: Error) => void = () => {};
  const ready = new Promise<void>((resolve, reject) => {
    onReady = resolve;
    onFail = reject;
  });
  const result = new Promise<Record<string, unknown>>((resolve, reject) => {
    onResult = resolve;
    child.once('exit', (code) => reject(new Error(`${runtime} node exited with ${code}: ${err}`)));
  });
  ready.catch(() => {});
  result.catch(() => {});
  child.stderr.on('data', (chunk) => (err += chunk));
  child.stdout.on('data', (chunk) => {
    out += chunk;
    if (out.includes('READY')) onReady();
    const match = /RESULT (.*)\n/.exec(out);
    if (match) onResult(JSON.parse(match[1]));
  });
  child.once('exit', (code) => onFail(new Error(`${runtime} node exited with ${code}: ${err}`)));
  return {
    ready,
    result,
    go: () => child.stdin.write('GO\n'),
    kill: () => {
      if (child.exitCode === null) child.kill('SIGKILL');
    },
  };
}

test(
  'WSM-BP-003 redisBackplane() carries messages between Deno, Bun and Node processes once each, in order, binary frames intact',
  { timeout: 90_000 },
  async () => {
    const redis = await startRedis();
    const children: Child[] = [];
    const clients: { destroy(): void }[] = [];
    let backplane: ReturnType<typeof redisBackplane> | undefined;
    try {
      const publisher = createClient({ url: redis.url, socket: { reconnectStrategy: () => 100 } });
      const subscriber = publisher.duplicate();
      clients.push(publisher, subscriber);
      for (const c of [publisher, subscriber]) c.on('error', () => {});
      await within(Promise.all([publisher.connect(), subscriber.connect()]), 5000, 'connecting');
      const errors: BackplaneError[] = [];
      backplane = redisBackplane({
        publisher,
        subscriber,
        channel: 'muxws-runtimes',
        onError: (error) => errors.push(error),
      });
      const atNode = new Map<string, BackplaneMessage[]>();
      backplane.subscribe((m) => {
        if (!atNode.has(m.origin)) atNode.set(m.origin, []);
        atNode.get(m.origin)!.push(m);
      });
      await within(backplane.ready(), 5000, 'node subscribed');

      children.push(
        startNode('deno', redis.url, 'deno-node'),
        startNode('bun', redis.url, 'bun-node'),
      );
      await within(Promise.all(children.map((c) => c.ready)), 30_000, 'the Deno and Bun nodes');
      for (const c of children) c.go();
      const published: Promise<void>[] = [];
      for (let n = 1; n <= COUNT; n++) {
        published.push(backplane.publish({
          tag: 'room',
          headers: { runtime: 'node' },
          payload: JSON.stringify([9, 'room', { runtime: 'node' }, n]),
          except: ['muted'],
          origin: 'node-node',
          codec: 'json',
        }));
      }
      const bytes = new Uint8Array(256).map((_, i) => 255 - i);
      published.push(backplane.publish({
        tag: 'room',
        headers: { runtime: 'node' },
        payload: bytes,
        except: [],
        origin: 'node-node',
        codec: 'msgpack',
      }));
      await within(Promise.all(published), 10_000, 'publishing');
      const [deno, bun] = await within(
        Promise.all(children.map((c) => c.result)),
        30_000,
        'results',
      );

      const expected = Array.from({ length: COUNT }, (_, i) => i + 1);
      const expectedBytes = [...bytes];
      assert.equal(deno.runtime, 'deno');
      assert.equal(bun.runtime, 'bun');
      for (
        const [result, others] of [[deno, ['bun-node', 'node-node']], [bun, [
          'deno-node',
          'node-node',
        ]]] as const
      ) {
        const received = result.received as Record<
          string,
          { numbers: number[]; binary: number[][]; runtimes: string[] }
        >;
        assert.deepEqual(
          Object.keys(received).sort(),
          [...others].sort(),
          `${result.runtime} never receives its own`,
        );
        for (const origin of others) {
          assert.deepEqual(received[origin].numbers, expected, `${result.runtime} from ${origin}`);
          assert.deepEqual(received[origin].binary, [expectedBytes]);
          assert.deepEqual(received[origin].runtimes, [origin.replace('-node', '')]);
        }
        assert.deepEqual(result.errors, []);
      }
      for (const origin of ['deno-node', 'bun-node']) {
        const messages = atNode.get(origin) ?? [];
        assert.deepEqual(
          messages.filter((m) => typeof m.payload === 'string').map((m) =>
            JSON.parse(m.payload as string)[3]
          ),
          expected,
        );
        const binary = messages.filter((m) => m.payload instanceof Uint8Array);
        assert.equal(binary.length, 1);
        assert.deepEqual([...(binary[0].payload as Uint8Array)], expectedBytes);
        assert.deepEqual(messages[0].except, ['muted']);
        assert.deepEqual(messages[0].headers, { runtime: origin.replace('-node', '') });
      }
      assert.deepEqual(atNode.get('node-node'), undefined);
      assert.deepEqual(errors, []);
    } finally {
      for (const c of children) c.kill();
      await backplane?.close().catch(() => {});
      for (const c of clients) {
        try {
          c.destroy();
        } catch {
          // already closed
        }
      }
      await redis.stop();
    }
  },
);
