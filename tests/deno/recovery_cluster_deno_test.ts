// Recovery across nodes: two acceptor nodes in their own processes (node a on Deno, node b on
// Bun, tests/_recovery_node.ts) share one real redis-server for their backplane and their
// broadcast history (redisHistory). A dialer in this process reaches node a through a loopback
// proxy (tests/_fault_proxy.ts); node a is killed with SIGKILL, the proxy refuses connections
// while node b broadcasts, then forwards to node b, where the dialer resumes.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { connect, type Connection, recovery } from 'muxws';
import { type FaultProxy, startFaultProxy } from '../_fault_proxy.ts';
import { type RedisServer, startRedis } from '../_redis.ts';
import { waitFor, within } from '../_wait.ts';

const root = new URL('../../', import.meta.url);
const script = new URL('tests/_recovery_node.ts', root).pathname;

interface Node {
  id: string;
  port: number;
  /** Writes one command line; resolves with the line that answers it. */
  send(line: string, ms?: number): Promise<string>;
  kill(): Promise<void>;
}

interface Recovered {
  tag: string;
  replayed: number;
  gap: boolean;
  /** How many broadcasts of the tag had been delivered when the marker arrived. */
  after: number;
}

interface Dialer {
  connection: Connection;
  /** Every delivered PUBLISH: its tag, its payload's n, its sequence number. */
  published: { tag: string; n: number; seq: number | undefined }[];
  recovered: Recovered[];
  closes: number;
  ns(tag: string): number[];
}

function range(first: number, last: number): number[] {
  return Array.from({ length: last - first + 1 }, (_, i) => first + i);
}

async function startNode(
  runtime: 'deno' | 'bun',
  redisUrl: string,
  id: string,
  retention: Record<string, number>,
): Promise<Node> {
  const bin = new URL(`node_modules/.bin/${runtime}`, root).pathname;
  const args = runtime === 'deno' ? ['run', '-A', '--quiet', script] : [script];
  const child = new Deno.Command(bin, {
    args: [...args, redisUrl, id, JSON.stringify(retention)],
    cwd: root.pathname,
    stdin: 'piped',
    stdout: 'piped',
    stderr: 'inherit',
    env: { NO_COLOR: '1' },
  }).spawn();
  const stdin = child.stdin.getWriter();
  const lines: string[] = [];
  let ended = false;
  let wake = () => {};
  void (async () => {
    let buffer = '';
    try {
      for await (const chunk of child.stdout.pipeThrough(new TextDecoderStream())) {
        buffer += chunk;
        let i;
        while ((i = buffer.indexOf('\n')) !== -1) {
          lines.push(buffer.slice(0, i).trim());
          buffer = buffer.slice(i + 1);
        }
        wake();
      }
    } catch {
      // killed
    }
    ended = true;
    wake();
  })();
  const nextLine = (ms: number, what: string) =>
    within(
      (async () => {
        while (lines.length === 0) {
          if (ended) throw new Error(`${id} exited before ${what}`);
          await new Promise<void>((resolve) => (wake = resolve));
        }
        return lines.shift()!;
      })(),
      ms,
      `${id}: ${what}`,
    );
  let killed = false;
  const kill = async () => {
    if (!killed) {
      killed = true;
      await stdin.close().catch(() => {});
      try {
        child.kill('SIGKILL');
      } catch {
        // already gone
      }
    }
    await within(child.status, 5000, `${id} to exit`).catch(() => {});
  };
  try {
    const first = await nextLine(30_000, 'listening');
    const match = /^PORT (\d+)$/.exec(first);
    if (!match) throw new Error(`${id} printed "${first}" instead of its port`);
    let chain: Promise<unknown> = Promise.resolve();
    const send = (line: string, ms = 15_000) => {
      const answer = chain.then(async () => {
        await stdin.write(new TextEncoder().encode(`${line}\n`));
        return await nextLine(ms, `the answer to "${line}"`);
      });
      chain = answer.catch(() => {});
      return answer;
    };
    return { id, port: Number(match[1]), send, kill };
  } catch (error) {
    await kill();
    throw error;
  }
}

/** Redis, node a (Deno) behind the proxy, node b (Bun); `finish()` closes all, bounded. */
async function cluster(retention: Record<string, number> = {}) {
  const redis: RedisServer = await startRedis();
  const nodes: Node[] = [];
  const dialers: Dialer[] = [];
  let proxy: FaultProxy | undefined;
  const finish = async () => {
    for (const d of dialers) await within(d.connection.close(), 2000, 'a dialer').catch(() => {});
    await proxy?.close();
    for (const n of nodes) await n.kill();
    await redis.stop();
  };
  try {
    nodes.push(await startNode('deno', redis.url, 'deno-a', retention));
    nodes.push(await startNode('bun', redis.url, 'bun-b', retention));
    proxy = await startFaultProxy(nodes[0].port);
  } catch (error) {
    await finish();
    throw error;
  }
  const [a, b] = nodes;
  const through = proxy;

  /** A dialer through the proxy, whose hello takes `tags`. */
  const add = async (tags: string[]): Promise<Dialer> => {
    const d: Dialer = {
      connection: undefined as unknown as Connection,
      published: [],
      recovered: [],
      closes: 0,
      ns: (tag) => d.published.filter((m) => m.tag === tag).map((m) => m.n),
    };
    d.connection = await connect(`ws://127.0.0.1:${through.port}/`, {
      hello: { payload: { tags } },
      reconnect: { initialDelayMs: 50, maxDelayMs: 200 },
      heartbeat: false,
      onPublish: (message) => {
        d.published.push({
          tag: message.tag,
          n: (message.payload as { n: number }).n,
          seq: message.seq,
        });
      },
      recovery: recovery({
        onRecovered: (info) => {
          d.recovered.push({ ...info, after: d.ns(info.tag).length });
        },
      }),
      onClose: () => void d.closes++,
    });
    dialers.push(d);
    return d;
  };

  /** Node a dies: the proxy refuses new connections, node a is SIGKILLed, the dialer notices. */
  const killA = async (d: Dialer) => {
    const closes = d.closes;
    through.mode = { kind: 'cut', afterBytes: 0 };
    await a.kill();
    await waitFor(() => d.closes > closes, 5000, 'the dialer to lose node a');
  };

  /** The proxy forwards to node b from now on. */
  const heal = () => {
    through.target = b.port;
    through.mode = { kind: 'pass' };
  };

  return { redis, a, b, add, killA, heal, finish };
}

async function sent(node: Node, tag: string, first: number, count: number) {
  const line = await node.send(`broadcast ${tag} ${first} ${count}`);
  assert.match(line, /^SENT /, `${node.id} answered "${line}"`);
  return JSON.parse(line.slice(5)) as { delivered: number; failed: number };
}

async function errors(node: Node): Promise<string[]> {
  const line = await node.send('report');
  return (JSON.parse(line.slice(7)) as { errors: string[] }).errors;
}

/** Every delivered sequence number of `tag` is above the one before it. */
function assertIncreasing(d: Dialer, tag: string): void {
  const seqs = d.published.filter((m) => m.tag === tag).map((m) => m.seq);
  for (let i = 1; i < seqs.length; i++) {
    assert.ok(
      seqs[i] !== undefined && seqs[i]! > seqs[i - 1]!,
      `seq ${seqs[i]} after ${seqs[i - 1]}`,
    );
  }
}

test(
  'a dialer whose node was killed gets the 100 broadcasts of the outage from the other node, in order, once each, then live ones (WSM-REC-001 WSM-REC-002 WSM-REC-003 WSM-REC-004 WSM-REC-005)',
  { timeout: 90_000 },
  async () => {
    const c = await cluster();
    try {
      const d = await c.add(['room:1']);
      assert.deepEqual(await sent(c.a, 'room:1', 1, 5), { delivered: 5, failed: 0 });
      await waitFor(() => d.ns('room:1').length === 5, 10_000, 'the first 5 on node a');

      await c.killA(d);
      assert.deepEqual(await sent(c.b, 'room:1', 6, 100), { delivered: 0, failed: 0 });
      c.heal();
      await waitFor(() => d.recovered.length > 0, 15_000, 'the recovery on node b');
      await sent(c.b, 'room:1', 106, 5);
      await waitFor(() => d.ns('room:1').length >= 110, 10_000, 'the live ones after');
      // One more live broadcast: a repeat of anything before it would have arrived by now.
      await sent(c.b, 'room:1', 111, 1);
      await waitFor(() => d.ns('room:1').includes(111), 10_000, 'the last live one');

      assert.deepEqual(d.ns('room:1'), range(1, 111));
      // One store for both nodes: the sequence numbers count every broadcast to the tag, from
      // the first, drawn from the clock.
      const seqs = d.published.map((m) => m.seq!);
      assert.deepEqual(seqs, range(seqs[0], seqs[0] + 110));
      assert.deepEqual(d.recovered, [{ tag: 'room:1', replayed: 100, gap: false, after: 105 }]);
      assert.deepEqual(await errors(c.b), []);
    } finally {
      await c.finish();
    }
  },
);

test(
  'an outage longer than the retention by age recovers with a gap: what is still in the log arrives, nothing twice (WSM-REC-001 WSM-REC-004)',
  { timeout: 90_000 },
  async () => {
    const c = await cluster({ maxAgeMs: 60_000 });
    try {
      const d = await c.add(['room:1']);
      await sent(c.a, 'room:1', 1, 5);
      await waitFor(() => d.ns('room:1').length === 5, 10_000, 'the first 5 on node a');

      await c.killA(d);
      await sent(c.b, 'room:1', 6, 50);
      // Two minutes pass on node b's clock: broadcasts 6 to 55 are older than the retention.
      assert.equal(await c.b.send('advance 120000'), 'ADVANCED 120000');
      await sent(c.b, 'room:1', 56, 10);
      c.heal();
      await waitFor(() => d.recovered.length > 0, 15_000, 'the recovery on node b');
      await sent(c.b, 'room:1', 66, 1);
      await waitFor(() => d.ns('room:1').includes(66), 10_000, 'a live one after');

      assert.deepEqual(d.ns('room:1'), [...range(1, 5), ...range(56, 66)]);
      assertIncreasing(d, 'room:1');
      assert.deepEqual(d.recovered, [{ tag: 'room:1', replayed: 10, gap: true, after: 15 }]);
    } finally {
      await c.finish();
    }
  },
);

test(
  'an outage that outlasts the retention by count recovers with a gap: the last maxEntries arrive, nothing twice (WSM-REC-001 WSM-REC-004)',
  { timeout: 90_000 },
  async () => {
    const c = await cluster({ maxEntries: 20 });
    try {
      const d = await c.add(['room:1']);
      await sent(c.a, 'room:1', 1, 5);
      await waitFor(() => d.ns('room:1').length === 5, 10_000, 'the first 5 on node a');

      await c.killA(d);
      await sent(c.b, 'room:1', 6, 100);
      c.heal();
      await waitFor(() => d.recovered.length > 0, 15_000, 'the recovery on node b');
      await sent(c.b, 'room:1', 106, 1);
      await waitFor(() => d.ns('room:1').includes(106), 10_000, 'a live one after');

      assert.deepEqual(d.ns('room:1'), [...range(1, 5), ...range(86, 106)]);
      assertIncreasing(d, 'room:1');
      assert.deepEqual(d.recovered, [{ tag: 'room:1', replayed: 20, gap: true, after: 25 }]);
    } finally {
      await c.finish();
    }
  },
);

test(
  'a peer that joined a tag and received nothing on it before the outage recovers what it missed (WSM-REC-002 WSM-REC-003)',
  { timeout: 90_000 },
  async () => {
    const c = await cluster();
    try {
      // The room had traffic before the peer joined; the peer itself receives none of it.
      await sent(c.a, 'room:1', 1, 3);
      const d = await c.add(['room:1', 'probe']);
      // The history answers node a's commands in order, so the peer's position on room:1 (read
      // when it joined) reached it before this broadcast on another tag.
      await sent(c.a, 'probe', 1, 1);
      await waitFor(() => d.ns('probe').length === 1, 10_000, 'the probe');
      assert.deepEqual(d.ns('room:1'), []);

      await c.killA(d);
      await sent(c.b, 'room:1', 4, 50);
      c.heal();
      await waitFor(
        () => d.recovered.some((r) => r.tag === 'room:1'),
        15_000,
        'the recovery of room:1',
      );
      await sent(c.b, 'room:1', 54, 1);
      await waitFor(() => d.ns('room:1').includes(54), 10_000, 'a live one after');

      assert.deepEqual(d.ns('room:1'), range(4, 54));
      const seqs = d.published.filter((m) => m.tag === 'room:1').map((m) => m.seq!);
      assert.deepEqual(seqs, range(seqs[0], seqs[0] + 50));
      assert.deepEqual(
        d.recovered.find((r) => r.tag === 'room:1'),
        { tag: 'room:1', replayed: 50, gap: false, after: 50 },
      );
      assert.deepEqual(d.ns('probe'), [1]);
    } finally {
      await c.finish();
    }
  },
);

test(
  'Redis restarted without persistence during the outage: the dialer is told of a gap, is replayed what was logged after the restart, and gets nothing twice (WSM-REC-004 WSM-REC-005)',
  { timeout: 90_000 },
  async () => {
    const c = await cluster();
    try {
      const d = await c.add(['room:1']);
      await sent(c.a, 'room:1', 1, 20);
      await waitFor(() => d.ns('room:1').length === 20, 10_000, 'the first 20 on node a');

      await c.killA(d);
      await sent(c.b, 'room:1', 21, 10);
      // The log and the counter are lost: numbering starts again from the clock, above the
      // dialer's position (Redis runs on this machine, whose clock moved on).
      await c.redis.stop();
      await c.redis.start();
      assert.equal(await c.b.send('redis'), 'REDIS ok');
      const after = await sent(c.b, 'room:1', 31, 5);
      assert.equal(after.failed, 0, 'node b broadcasts again once Redis is back');
      c.heal();
      await waitFor(() => d.recovered.length > 0, 15_000, 'the recovery on node b');
      await sent(c.b, 'room:1', 36, 5);
      await waitFor(() => d.ns('room:1').includes(40), 10_000, 'the live ones after the reset');

      // 21 to 30 went with the lost log (the gap); 31 to 35, logged after the restart, are
      // replayed; 36 to 40 arrive live.
      assert.deepEqual(d.ns('room:1'), [...range(1, 20), ...range(31, 40)]);
      assertIncreasing(d, 'room:1');
      assert.deepEqual(d.recovered, [{ tag: 'room:1', replayed: 5, gap: true, after: 25 }]);
    } finally {
      await c.finish();
    }
  },
);
