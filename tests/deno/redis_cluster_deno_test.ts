// Acceptor nodes in separate Deno and Bun processes share a real redis-server through
// redisBackplane: dialers in this Deno process connect to every node, and broadcasts
// must reach every tagged peer on every node exactly once, never the untagged, with `except`
// holding across nodes; bursts arrive complete and in order per node; a 3 s Redis outage never
// stops local delivery, is reported, and delivery across nodes resumes within 1 s.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { connect, type Connection, type PublishMessage } from 'muxws';
import { type RedisServer, startRedis } from '../_redis.ts';
import { waitFor, within } from '../_wait.ts';

const root = new URL('../../', import.meta.url);
const script = new URL('tests/_redis_cluster_node.ts', root).pathname;

interface Node {
  id: string;
  port: number;
  control: Connection;
  kill(): Promise<void>;
}

interface Dialer {
  connection: Connection;
  published: (PublishMessage & { at: number })[];
}

async function dial(port: number, tags: string[]): Promise<Dialer> {
  const published: Dialer['published'] = [];
  const connection = await connect(`ws://127.0.0.1:${port}/`, {
    reconnect: false,
    heartbeat: false,
    onPublish: (message) => void published.push({ ...message, at: Date.now() }),
  });
  if (tags.length > 0) await connection.request({ op: 'join', tags }, { timeoutMs: 5000 });
  return { connection, published };
}

async function startNode(runtime: 'deno' | 'bun', redisUrl: string, id: string): Promise<Node> {
  const bin = new URL(`node_modules/.bin/${runtime}`, root).pathname;
  const args = runtime === 'deno' ? ['run', '-A', '--quiet', script] : [script];
  const child = new Deno.Command(bin, {
    args: [...args, redisUrl, id],
    cwd: root.pathname,
    stdout: 'piped',
    stderr: 'inherit',
    env: { NO_COLOR: '1' },
  }).spawn();
  const kill = async () => {
    try {
      child.kill('SIGKILL');
    } catch {
      // already gone
    }
    await within(child.status, 5000, `${id} to exit`).catch(() => {});
  };
  try {
    const reader = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
    let out = '';
    const port = await within(
      (async () => {
        for (;;) {
          const { value, done } = await reader.read();
          if (done) throw new Error(`${id} exited before listening: ${out}`);
          out += value;
          const match = /PORT (\d+)/.exec(out);
          if (match) return Number(match[1]);
        }
      })(),
      30_000,
      `${id} to listen`,
    );
    // Keep draining stdout so the child never blocks on a full pipe.
    void (async () => {
      try {
        while (!(await reader.read()).done) { /* drain */ }
      } catch {
        // the child was killed
      }
    })();
    const control = (await dial(port, [])).connection;
    return { id, port, control, kill };
  } catch (error) {
    await kill();
    throw error;
  }
}

/** Starts Redis and the nodes; `finish()` closes every dialer, node and Redis, bounded. */
async function cluster(specs: ['deno' | 'bun', string][]) {
  const redis: RedisServer = await startRedis();
  const nodes: Node[] = [];
  const dialers: Dialer[] = [];
  const finish = async () => {
    for (const d of dialers) await within(d.connection.close(), 2000, 'a dialer').catch(() => {});
    for (const n of nodes) {
      await within(n.control.close(), 2000, 'a control').catch(() => {});
      await n.kill();
    }
    await redis.stop();
  };
  try {
    for (const [runtime, id] of specs) nodes.push(await startNode(runtime, redis.url, id));
  } catch (error) {
    await finish();
    throw error;
  }
  const add = async (node: Node, tags: string[]) => {
    const d = await dial(node.port, tags);
    dialers.push(d);
    return d;
  };
  return { redis, nodes, add, finish };
}

function fromNode(d: Dialer, id: string): number[] {
  return d.published
    .filter((m) => (m.payload as { from: string }).from === id)
    .map((m) => (m.payload as { n: number }).n);
}

test(
  'WSM-ACC-005 WSM-BP-003 a broadcast from any node reaches every tagged peer on every node once, never the untagged, except holding across nodes',
  {
    timeout: 120_000,
  },
  async () => {
    const c = await cluster([['deno', 'deno-a'], ['bun', 'bun-b'], ['deno', 'deno-c']]);
    try {
      const tagged: Dialer[] = [];
      const muted: Dialer[] = [];
      const outsiders: Dialer[] = [];
      for (const node of c.nodes) {
        tagged.push(await c.add(node, ['room']));
        muted.push(await c.add(node, ['room', 'muted']));
        outsiders.push(await c.add(node, ['lobby']));
      }
      for (const round of [1, 2]) {
        const counts = await Promise.all(c.nodes.map((node) =>
          node.control.request(
            {
              op: 'broadcast',
              tag: 'room',
              payload: { from: node.id, n: round },
              except: ['muted'],
            },
            { timeoutMs: 5000 },
          )
        ));
        assert.deepEqual(counts, [1, 1, 1], 'each node reports its local delivery count');
        await waitFor(
          () => tagged.every((d) => d.published.length >= 3 * round),
          10_000,
          `round ${round} at every tagged peer`,
        );
      }
      // Round 2 arrived everywhere after round 1, so any repeat of round 1 would be visible now.
      for (const d of tagged) {
        for (const node of c.nodes) assert.deepEqual(fromNode(d, node.id), [1, 2], node.id);
        assert.ok(d.published.every((m) => m.tag === 'room' && m.headers === null));
        assert.equal(d.published.length, 6);
      }
      for (const d of [...muted, ...outsiders]) assert.deepEqual(d.published, []);
    } finally {
      await c.finish();
    }
  },
);

test(
  'WSM-ACC-005 WSM-BP-003 1,000 broadcasts in a burst from each of a Deno and a Bun node arrive complete and in order per node',
  {
    timeout: 120_000,
  },
  async () => {
    const c = await cluster([['deno', 'deno-a'], ['bun', 'bun-b']]);
    try {
      const tagged = [await c.add(c.nodes[0], ['room']), await c.add(c.nodes[1], ['room'])];
      const counts = await within(
        Promise.all(
          c.nodes.map((node) =>
            node.control.request({ op: 'burst', tag: 'room', count: 1000 }, { timeoutMs: 30_000 })
          ),
        ),
        30_000,
        'the bursts',
      );
      assert.deepEqual(counts, [1000, 1000]);
      await waitFor(
        () => tagged.every((d) => d.published.length >= 2000),
        30_000,
        '2,000 each',
      );
      const expected = Array.from({ length: 1000 }, (_, i) => i + 1);
      for (const d of tagged) {
        assert.deepEqual(fromNode(d, 'deno-a'), expected);
        assert.deepEqual(fromNode(d, 'bun-b'), expected);
      }
    } finally {
      await c.finish();
    }
  },
);

test(
  'WSM-BP-004 WSM-BP-003 Redis stopped for 3 s while nodes broadcast: local delivery never stops, the gap is reported, delivery across nodes resumes within 1 s, nothing duplicated',
  {
    timeout: 120_000,
  },
  async () => {
    const c = await cluster([['deno', 'deno-a'], ['bun', 'bun-b']]);
    try {
      const [onA, onB] = [await c.add(c.nodes[0], ['room']), await c.add(c.nodes[1], ['room'])];
      for (const node of c.nodes) {
        await node.control.request({ op: 'tick', tag: 'room', everyMs: 10 }, { timeoutMs: 5000 });
      }
      await waitFor(
        () => fromNode(onA, 'bun-b').length >= 20 && fromNode(onB, 'deno-a').length >= 20,
        10_000,
        'traffic across nodes before the outage',
      );
      await c.redis.stop();
      const stoppedAt = Date.now();
      await new Promise((resolve) => setTimeout(resolve, 3000));
      await c.redis.start();
      const backAt = Date.now();
      const remoteAfter = (d: Dialer, id: string) =>
        d.published.find((m) => (m.payload as { from: string }).from === id && m.at >= backAt);
      await waitFor(
        () => remoteAfter(onA, 'bun-b') !== undefined && remoteAfter(onB, 'deno-a') !== undefined,
        10_000,
        'delivery across nodes after the outage',
      );
      await new Promise((resolve) => setTimeout(resolve, 300));
      const stops = await Promise.all(
        c.nodes.map((node) => node.control.request({ op: 'stop' }, { timeoutMs: 5000 })),
      ) as { ticks: number; tickFailures: number }[];
      const [ticksA, ticksB] = stops.map((s) => s.ticks);
      await waitFor(
        () => fromNode(onA, 'deno-a').length >= ticksA && fromNode(onB, 'bun-b').length >= ticksB,
        10_000,
        'the last local ticks',
      );
      const reports = await Promise.all(
        c.nodes.map((node) => node.control.request({ op: 'report' }, { timeoutMs: 5000 })),
      ) as {
        publishFailures: number;
        otherAcceptorErrors: string[];
        lostConnections: number;
        outageGaps: { startedAt: number; endedAt: number }[];
        otherBackplaneErrors: string[];
      }[];

      const resumedA = remoteAfter(onA, 'bun-b')!.at - backAt;
      const resumedB = remoteAfter(onB, 'deno-a')!.at - backAt;
      console.log(
        `Cluster outage: ticks ${ticksA}/${ticksB}, publish failures ${
          reports.map((r) => r.publishFailures).join('/')
        }, remote delivery back after ${resumedA}/${resumedB} ms`,
      );
      for (const [i, node] of c.nodes.entries()) {
        const local = fromNode(i === 0 ? onA : onB, node.id);
        // Local delivery never stopped: every tick reached the node's own peer, in order, once.
        assert.deepEqual(local, Array.from({ length: stops[i].ticks }, (_, k) => k + 1), node.id);
        assert.equal(stops[i].tickFailures, 0, 'broadcast() never rejected');
        const report = reports[i];
        assert.ok(report.publishFailures > 0, `${node.id} reported failed publishes`);
        assert.equal(report.lostConnections, 2, `${node.id}: publisher and subscriber, once each`);
        assert.equal(report.outageGaps.length, 1, `${node.id} reported the gap`);
        const gap = report.outageGaps[0];
        // Redis was down from stoppedAt until at least stoppedAt + 3000; the node may notice its
        // return a little before this process's own PING does (backAt).
        assert.ok(gap.startedAt >= stoppedAt - 1000 && gap.startedAt <= stoppedAt + 1000);
        assert.ok(gap.endedAt >= stoppedAt + 3000 && gap.endedAt <= backAt + 1000);
        assert.deepEqual(report.otherAcceptorErrors, []);
        assert.deepEqual(report.otherBackplaneErrors, []);
      }
      for (const [d, id] of [[onA, 'bun-b'], [onB, 'deno-a']] as const) {
        const remote = fromNode(d, id);
        for (let k = 1; k < remote.length; k++) {
          assert.ok(remote[k] > remote[k - 1], `${id}: ${remote[k]} after ${remote[k - 1]}`);
        }
      }
      assert.ok(resumedA <= 1000 && resumedB <= 1000, `resumed after ${resumedA}/${resumedB} ms`);
    } finally {
      await c.finish();
    }
  },
);
