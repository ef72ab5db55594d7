// examples/cluster/ run as its README says: the ```sh block under "## Running it" is read, its
// redis-server line replaced by a redis-server of this test (tests/_redis.ts, free loopback port,
// passed as REDIS_URL), ports 8001 and 8002 by free ones, and each other line run as written
// (`deno` is this Deno, `bun` the repository's Bun). Every wait is bounded; every process is
// stopped in `finally`.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { freePort, startRedis } from '../_redis.ts';
import { within } from '../_wait.ts';

const root = new URL('../../', import.meta.url);
const BIN: Record<string, string> = {
  deno: Deno.execPath(),
  bun: new URL('node_modules/.bin/bun', root).pathname,
};

/** The command lines of the README's "## Running it" ```sh block. */
async function readmeCommands(): Promise<string[][]> {
  const readme = await Deno.readTextFile(new URL('examples/cluster/README.md', root));
  const section = readme.split(/^## Running it$/m)[1];
  assert(section !== undefined, 'examples/cluster/README.md has a "## Running it" section');
  const block = section.match(/^```sh\n([\s\S]*?)^```$/m);
  assert(block, 'the section shows a ```sh block');
  return block[1].trim().split('\n').map((line) => line.trim().split(/\s+/));
}

function spawn(argv: string[], env: Record<string, string>): Deno.ChildProcess {
  const bin = BIN[argv[0]];
  assert(bin, `the README runs ${argv[0]}, which this test knows`);
  return new Deno.Command(bin, {
    args: argv.slice(1),
    cwd: root,
    env: { NO_COLOR: '1', ...env },
    stdin: 'null',
    stdout: 'piped',
    stderr: 'piped',
  }).spawn();
}

/** Reads a node's stdout until its "listening" line; keeps draining it (and stderr) after. */
async function listening(node: Deno.ChildProcess, name: string): Promise<string> {
  const decoder = new TextDecoder();
  const reader = node.stdout.getReader();
  let out = '';
  const line = await within(
    (async () => {
      for (;;) {
        const { value, done } = await reader.read();
        if (done) throw new Error(`${name} exited before listening: ${out}`);
        out += decoder.decode(value, { stream: true });
        const match = /^node \S+ listening on (ws:\/\/127\.0\.0\.1:\d+)$/m.exec(out);
        if (match) return match[0];
      }
    })(),
    30_000,
    `${name} to listen`,
  );
  void (async () => {
    while (!(await reader.read().catch(() => ({ done: true }))).done) { /* drain */ }
  })();
  return line;
}

test(
  'WSM-ACC-005 WSM-BP-003 examples/cluster runs from its README: a Deno node and a Bun node over Redis carry the chat both ways',
  { timeout: 120_000 },
  async () => {
    const commands = await readmeCommands();
    assert.equal(commands.length, 4, 'redis-server, two nodes, the chat');
    assert.equal(commands[0][0], 'redis-server');
    assert.deepEqual(commands.slice(1).map((c) => c[0]), ['deno', 'bun', 'deno']);
    const redis = await startRedis();
    const nodes: Deno.ChildProcess[] = [];
    const stderrs: Promise<string>[] = [];
    try {
      const ports = new Map([['8001', String(await freePort())], [
        '8002',
        String(await freePort()),
      ]]);
      const portFor = (arg: string) => arg.replace(/\b(8001|8002)\b/g, (port) => ports.get(port)!);
      const env = { REDIS_URL: redis.url };
      const lines: string[] = [];
      for (const [i, name] of [[1, 'node a'], [2, 'node b']] as const) {
        const node = spawn(commands[i].map(portFor), env);
        nodes.push(node);
        stderrs.push(new Response(node.stderr).text());
        lines.push(await listening(node, name));
      }
      assert.deepEqual(lines, [
        `node a listening on ws://127.0.0.1:${ports.get('8001')}`,
        `node b listening on ws://127.0.0.1:${ports.get('8002')}`,
      ]);

      const chat = spawn(commands[3].map(portFor), env);
      const [status, stdout, stderr] = await within(
        Promise.all([
          chat.status,
          new Response(chat.stdout).text(),
          new Response(chat.stderr).text(),
        ]),
        30_000,
        'the chat to finish',
      ).catch((error) => {
        chat.kill('SIGKILL');
        throw error;
      });
      assert.equal(status.code, 0, stderr);
      const out = stdout.trimEnd().split('\n');
      assert.equal(out[0], 'ada joined lobby on node a / bob joined lobby on node b');
      // Each screen line comes over its own socket, so its place among the others is not fixed,
      // but bob's reply is sent only after bob saw ada's message.
      assert.deepEqual(out.slice(1).sort(), [
        "[ada's screen] ada@a: hi bob",
        "[ada's screen] bob@b: hi ada",
        "[bob's screen] ada@a: hi bob",
        "[bob's screen] bob@b: hi ada",
        'both nodes delivered across the cluster',
        'node A reached 1 local peer',
        'node B reached 1 local peer',
      ]);
      assert(
        out.indexOf("[bob's screen] ada@a: hi bob") < out.indexOf("[ada's screen] bob@b: hi ada"),
      );

      // Both nodes stop cleanly on SIGTERM, having reported nothing.
      for (const node of nodes) node.kill('SIGTERM');
      const codes = await within(
        Promise.all(nodes.map((node) => node.status)),
        15_000,
        'the nodes to stop',
      );
      assert.deepEqual(codes.map((c) => c.code), [0, 0]);
      assert.deepEqual(await Promise.all(stderrs), ['', '']);
    } finally {
      for (const node of nodes) {
        try {
          node.kill('SIGKILL');
        } catch {
          // already exited
        }
        await within(node.status, 5000, 'a node to exit').catch(() => {});
      }
      await within(Promise.allSettled(stderrs), 5000, "the nodes' stderr").catch(() => {});
      await redis.stop();
    }
  },
);
