// The ```ts worker blocks of the user guide (docs/guide/*.md) in a real workerd (miniflare), as a
// user deploys them: each block is bundled as one Worker module with esbuild (its `muxws` imports
// resolved to the sources), with the Durable Object bindings of the ```toml block (its
// wrangler.toml) that follows it before the next ```ts block, started on 127.0.0.1, dialled by
// the project's connect() (the built package) over the `ws` package, asked one thing its server
// answers, then stopped. The harness adds nothing to a block's code.
//
// Each block must match exactly one exercise below, so a new Worker block in the guide fails this
// file until it gets one.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import WebSocket from 'ws';
import { connect, type Connection, type DialerSocketConstructor, type PublishMessage } from 'muxws';
import { repoRoot } from '../_repo.ts';
import { bundleUserWorker, startWorkerd, type WorkerdInstance } from '../_workerd.ts';

interface WorkerBlock {
  page: string;
  line: number;
  code: string;
  /** The wrangler.toml that follows the block on its page, or `undefined`. */
  toml: string | undefined;
}

/** Every ```ts worker block of the guide, with the ```toml block that follows it, if any. */
function workerBlocks(): WorkerBlock[] {
  const guide = join(repoRoot(), 'docs', 'guide');
  const out: WorkerBlock[] = [];
  for (const page of readdirSync(guide).filter((name) => name.endsWith('.md')).sort()) {
    const text = readFileSync(join(guide, page), 'utf8');
    const fences = [...text.matchAll(/^```(\w+)([^\n]*)\n([\s\S]*?)^```$/gm)];
    fences.forEach((fence, i) => {
      if (fence[1] !== 'ts' || fence[2].trim() !== 'worker') return;
      let toml: string | undefined;
      for (const next of fences.slice(i + 1)) {
        if (next[1] === 'ts') break;
        if (next[1] === 'toml') {
          toml = next[3];
          break;
        }
      }
      const line = text.slice(0, fence.index).split('\n').length;
      out.push({ page, line, code: fence[3], toml });
    });
  }
  return out;
}

/**
 * The Durable Object bindings of a wrangler.toml, for miniflare: each `[[durable_objects.bindings]]`
 * `name` to its `class_name`, stored in SQLite when `[[migrations]]` lists it in
 * `new_sqlite_classes`. Reads only the keys the guide's files use.
 */
function durableObjects(
  toml: string | undefined,
): Record<string, { className: string; useSQLite: boolean }> {
  if (toml === undefined) return {};
  const sqlite = new Set<string>();
  for (const m of toml.matchAll(/^new_sqlite_classes\s*=\s*\[([^\]]*)\]/gm)) {
    for (const name of m[1].matchAll(/"([^"]+)"/g)) sqlite.add(name[1]);
  }
  const out: Record<string, { className: string; useSQLite: boolean }> = {};
  for (const section of toml.split(/^(?=\[)/m)) {
    if (!section.startsWith('[[durable_objects.bindings]]')) continue;
    const name = /^name\s*=\s*"([^"]+)"/m.exec(section)?.[1];
    const className = /^class_name\s*=\s*"([^"]+)"/m.exec(section)?.[1];
    if (!name || !className) {
      throw new Error(`Expected a binding with name and class_name: found ${section.trim()}`);
    }
    out[name] = { className, useSQLite: sqlite.has(className) };
  }
  return out;
}

const socket = WebSocket as unknown as DialerSocketConstructor;

/** Resolves with `promise`, or rejects once `ms` have passed. */
function within<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} took longer than ${ms} ms`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

/** connect() with no redial and no heartbeat, its handshake and hello bounded at 5 s. */
function dial(
  url: string,
  hello?: unknown,
  onPublish?: (message: PublishMessage) => void,
): Promise<Connection> {
  return connect(url, {
    WebSocket: socket,
    reconnect: false,
    heartbeat: false,
    handshakeTimeoutMs: 5000,
    ...(hello === undefined ? {} : { hello: { payload: hello, timeoutMs: 5000 } }),
    ...(onPublish ? { onPublish } : {}),
  });
}

interface Exercise {
  what: string;
  matches(code: string): boolean;
  /** Bindings the block must declare in its wrangler.toml. */
  bindings: string[];
  run(worker: WorkerdInstance): Promise<void>;
}

const EXERCISES: Exercise[] = [
  {
    what: 'answers a plain request, and a call on /ws with its sum',
    matches: (code) => code.includes('upgrade(request, acceptor)'),
    bindings: [],
    async run(worker) {
      const page = await fetch(worker.httpUrl('/'), { signal: AbortSignal.timeout(5000) });
      assert.equal(await page.text(), 'muxws lives at /ws');
      const connection = await dial(worker.wsUrl('/ws'));
      try {
        assert.equal(await connection.call('add', { a: 1, b: 2 }), 3);
      } finally {
        await connection.close();
      }
    },
  },
  {
    what: 'welcomes two users to a room and broadcasts what one says to both',
    matches: (code) => code.includes('export class Room'),
    bindings: ['ROOM'],
    async run(worker) {
      const heard: { ada: PublishMessage[]; bob: PublishMessage[] } = { ada: [], bob: [] };
      let bobHeard!: () => void;
      const bobHears = new Promise<void>((resolve) => bobHeard = resolve);
      const connections: Connection[] = [];
      try {
        const ada = await dial(worker.wsUrl('/room/lobby'), { user: 'ada' }, (m) => {
          heard.ada.push(m);
        });
        connections.push(ada);
        const bob = await dial(worker.wsUrl('/room/lobby'), { user: 'bob' }, (m) => {
          heard.bob.push(m);
          bobHeard();
        });
        connections.push(bob);
        assert.equal(ada.welcome, 'welcome, ada');
        assert.equal(bob.welcome, 'welcome, bob');
        const reached = await within(ada.call('say', { text: 'hi' }), 5000, 'The call to say');
        assert.equal(reached, 2);
        await within(bobHears, 5000, 'The broadcast reaching bob');
        assert.deepEqual(heard.bob.map((m) => [m.tag, m.payload]), [['room', 'ada: hi']]);
        const other = await fetch(worker.httpUrl('/elsewhere'), {
          signal: AbortSignal.timeout(5000),
        });
        assert.equal(other.status, 404);
        await other.body?.cancel();
      } finally {
        await Promise.all(connections.map((c) => c.close()));
      }
    },
  },
];

const blocks = workerBlocks();

test('the guide has one Worker block per exercise, each matched by exactly one', () => {
  assert.equal(blocks.length, EXERCISES.length);
  for (const block of blocks) {
    const found = EXERCISES.filter((e) => e.matches(block.code)).length;
    assert.equal(found, 1, `exercises matching the block at ${block.page}:${block.line}`);
  }
});

for (const block of blocks) {
  const exercise = EXERCISES.find((e) => e.matches(block.code));
  if (!exercise) continue;
  test(`the Worker block at docs/guide/${block.page}:${block.line} runs in workerd and ${exercise.what}`, async () => {
    const bindings = durableObjects(block.toml);
    assert.deepEqual(Object.keys(bindings).sort(), exercise.bindings);
    const worker = await startWorkerd({
      script: await bundleUserWorker(block.code),
      durableObjects: bindings,
    });
    try {
      await exercise.run(worker);
    } finally {
      await worker.stop();
    }
  });
}
