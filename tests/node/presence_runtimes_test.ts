// Presence across two nodes on two runtimes sharing one real redis-server: a Deno process and a
// Bun process (tests/_presence_node.ts: redisBackplane, redisPresence, graceMs 1500,
// nodeTimeoutMs 2000), with dialers in this Node process (against dist/): one follower per node
// and the tracked users, some through a fault proxy. Each test asks both nodes for list() and
// compares it with what every follower holds, bounded at 5 s per wait; every process is killed
// and every connection closed on every path.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { join } from 'node:path';
import process from 'node:process';
import WebSocket from 'ws';
import { connect, type Connection, presence, type PresenceFollower } from 'muxws';
import { wsDialer } from 'muxws/node';
import { type RedisServer, startRedis } from '../_redis.ts';
import { type FaultProxy, startFaultProxy } from '../_fault_proxy.ts';
import { repoRoot } from '../_repo.ts';
import { waitFor, within } from '../_wait.ts';

type Meta = { tab: number };
type Api = { ':presence': Meta };
/** key → metas, as list() and a follower's state give it. */
type View = Record<string, readonly Meta[]>;

const GRACE_MS = 1500;
const NODE_TIMEOUT_MS = 2000;
const WAIT_MS = 5000;

/** One node process, answering one line per command, in order. */
interface Node {
  readonly runtime: 'deno' | 'bun';
  readonly port: number;
  ask(command: string): Promise<string>;
  kill(): void;
  readonly exited: Promise<void>;
}

async function startNode(runtime: 'deno' | 'bun', url: string, id: string): Promise<Node> {
  const root = repoRoot();
  const script = join(root, 'tests', '_presence_node.ts');
  const bin = join(root, 'node_modules', '.bin', runtime);
  const args = runtime === 'deno' ? ['run', '-A', '--quiet', script] : [script];
  const child: ChildProcess = spawn(bin, [...args, url, id], {
    cwd: root,
    stdio: ['pipe', 'pipe', 'pipe'],
    env: { ...process.env, NO_COLOR: '1' },
  });
  let err = '';
  let out = '';
  const waiting: ((line: string) => void)[] = [];
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  child.stderr!.on('data', (chunk) => (err = (err + chunk).slice(-4000)));
  child.stdout!.on('data', (chunk) => {
    out += chunk;
    let i;
    while ((i = out.indexOf('\n')) !== -1) {
      const line = out.slice(0, i).trim();
      out = out.slice(i + 1);
      if (line) waiting.shift()?.(line);
    }
  });
  const next = (what: string) =>
    within(
      Promise.race([
        new Promise<string>((resolve) => waiting.push(resolve)),
        exited.then(() => {
          throw new Error(`the ${runtime} node exited: ${err}`);
        }),
      ]),
      WAIT_MS,
      `${what} from the ${runtime} node (stderr: ${err})`,
    );
  const node = {
    runtime,
    port: 0,
    ask(command: string) {
      const answer = next(command);
      child.stdin!.write(`${command}\n`);
      return answer;
    },
    kill() {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    },
    exited,
  };
  try {
    const ready = await within(next('READY'), 30_000, `the ${runtime} node to start`);
    assert.match(ready, /^READY \d+$/);
    return { ...node, port: Number(ready.split(' ')[1]) };
  } catch (error) {
    node.kill();
    throw error;
  }
}

/** What a follower was told, in order: `join ada {"tab":1}`, `leave bob {"tab":1}`. */
interface Watcher {
  readonly follower: PresenceFollower<Meta>;
  readonly events: string[];
}

/** Two nodes (Deno, Bun) on one Redis, a follower on each, and what the test opened. */
interface Cluster extends AsyncDisposable {
  readonly redis: RedisServer;
  readonly deno: Node;
  readonly bun: Node;
  readonly watchers: Watcher[];
  /** Dials `port` (a node or a proxy), tracked as `user` with the meta `{ tab }`. */
  dial(port: number, user: string, tab?: number): Promise<Connection<Api>>;
  proxy(port: number): Promise<FaultProxy>;
}

const WebSocketClass = wsDialer(WebSocket);

async function cluster(): Promise<Cluster> {
  const redis = await startRedis();
  const nodes: Node[] = [];
  const connections: Connection<Api>[] = [];
  const proxies: FaultProxy[] = [];
  const dispose = async () => {
    for (const node of nodes) node.kill();
    await Promise.all(connections.map((c) => c.close().catch(() => {})));
    await Promise.all(proxies.map((p) => p.close()));
    await Promise.all(nodes.map((n) => n.exited));
    await redis.stop();
  };
  try {
    const started = await Promise.allSettled([
      startNode('deno', redis.url, 'deno-node'),
      startNode('bun', redis.url, 'bun-node'),
    ]);
    for (const s of started) if (s.status === 'fulfilled') nodes.push(s.value);
    for (const s of started) if (s.status === 'rejected') throw s.reason;
    const [deno, bun] = nodes;
    const dial = async (port: number, user?: string, tab = 1) => {
      const query = user === undefined ? '' : `?user=${user}&tab=${tab}`;
      const connection = await within(
        connect<Api>(`ws://127.0.0.1:${port}/${query}`, {
          WebSocket: WebSocketClass,
          onError: () => {},
        }),
        WAIT_MS,
        `a dialer to ${port}`,
      );
      connections.push(connection);
      return connection;
    };
    const watchers: Watcher[] = [];
    for (const node of [deno, bun]) {
      const events: string[] = [];
      const follower = presence(await dial(node.port), 'room:1', {
        onJoin: (key, joined) =>
          events.push(...joined.map((m) => `join ${key} ${JSON.stringify(m)}`)),
        onLeave: (key, left) =>
          events.push(...left.map((m) => `leave ${key} ${JSON.stringify(m)}`)),
      });
      await within(follower.ready, WAIT_MS, `the follower on the ${node.runtime} node`);
      watchers.push({ follower, events });
    }
    return {
      redis,
      deno,
      bun,
      watchers,
      dial: (port, user, tab) => dial(port, user, tab),
      async proxy(port) {
        const proxy = await startFaultProxy(port);
        proxies.push(proxy);
        return proxy;
      },
      [Symbol.asyncDispose]: dispose,
    };
  } catch (error) {
    await dispose();
    throw error;
  }
}

/** `view` with its keys and each key's metas in a fixed order, for comparison. */
function sorted(view: View): Record<string, Meta[]> {
  const out: Record<string, Meta[]> = {};
  for (const key of Object.keys(view).sort()) {
    out[key] = [...view[key]].sort((a, b) => a.tab - b.tab);
  }
  return out;
}

async function list(node: Node): Promise<View> {
  const answer = await node.ask('LIST room:1');
  assert.match(answer, /^LIST /);
  return JSON.parse(answer.slice(5)) as View;
}

/**
 * Waits (at most 5 s) until list() on each of `nodes` and the state of each of `watchers` equal
 * `expected`; fails naming what differed.
 */
async function converge(
  nodes: Node[],
  watchers: Watcher[],
  expected: View,
  what: string,
): Promise<void> {
  const want = JSON.stringify(sorted(expected));
  const deadline = Date.now() + WAIT_MS;
  let last = '';
  while (true) {
    const views: string[] = [];
    for (const node of nodes) {
      views.push(`${node.runtime} list ${JSON.stringify(sorted(await list(node)))}`);
    }
    for (const [i, w] of watchers.entries()) {
      views.push(`follower ${i} ${JSON.stringify(sorted(w.follower.state))}`);
    }
    if (views.every((v) => v.endsWith(` ${want}`))) return;
    last = views.join('\n');
    if (Date.now() > deadline) {
      assert.fail(`${what}: expected ${want} everywhere within ${WAIT_MS} ms, found\n${last}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

test(
  "WSM-PRS-001 WSM-PRS-002 WSM-PRS-003 two nodes on Deno and Bun over Redis: each follower's view equals list() on both nodes after every join and leave",
  { timeout: 90_000 },
  async () => {
    await using c = await cluster();
    const nodes = [c.deno, c.bun];
    const ada1 = await c.dial(c.deno.port, 'ada', 1);
    await converge(nodes, c.watchers, { ada: [{ tab: 1 }] }, 'ada joins on Deno');
    const ada2 = await c.dial(c.bun.port, 'ada', 2);
    await converge(nodes, c.watchers, { ada: [{ tab: 1 }, { tab: 2 }] }, 'ada joins on Bun');
    const bob = await c.dial(c.deno.port, 'bob');
    const cy = await c.dial(c.bun.port, 'cy');
    const all = { ada: [{ tab: 1 }, { tab: 2 }], bob: [{ tab: 1 }], cy: [{ tab: 1 }] };
    await converge(nodes, c.watchers, all, 'bob and cy join');

    await ada2.close();
    await converge(nodes, c.watchers, { ...all, ada: [{ tab: 1 }] }, 'ada leaves on Bun');
    await bob.close();
    await converge(nodes, c.watchers, { ada: [{ tab: 1 }], cy: [{ tab: 1 }] }, 'bob leaves');
    await Promise.all([ada1.close(), cy.close()]);
    await converge(nodes, c.watchers, {}, 'everyone left');

    // Every follower was told each join and each leave once, in order, and nothing else.
    for (const { events } of c.watchers) {
      assert.deepEqual(events.filter((e) => e.startsWith('join')).sort(), [
        'join ada {"tab":1}',
        'join ada {"tab":2}',
        'join bob {"tab":1}',
        'join cy {"tab":1}',
      ]);
      assert.deepEqual(events.slice(0, 2), ['join ada {"tab":1}', 'join ada {"tab":2}']);
      assert.deepEqual(events.filter((e) => e.startsWith('leave')).slice(0, 2), [
        'leave ada {"tab":2}',
        'leave bob {"tab":1}',
      ]);
      assert.equal(events.length, 8);
    }
    for (const node of nodes) assert.equal(await node.ask('ERRORS'), 'ERRORS []');
  },
);

test(
  'WSM-PRS-001 a peer redialling to the other node within graceMs shows no leave and no join; after graceMs one leave, then one join',
  { timeout: 90_000 },
  async () => {
    await using c = await cluster();
    const nodes = [c.deno, c.bun];
    const proxy = await c.proxy(c.deno.port);
    await c.dial(proxy.port, 'ada');
    await converge(nodes, c.watchers, { ada: [{ tab: 1 }] }, 'ada joins on Deno');

    // The connection drops and the redial reaches the Bun node, inside the grace.
    proxy.target = c.bun.port;
    proxy.reset();
    await waitFor(() => proxy.accepted >= 2 && proxy.live >= 1, WAIT_MS, 'the redial');
    // Past the grace the Deno node's leave has been tried (and found the entry adopted); a later
    // join then shows that every follower received all that came before it.
    await new Promise((resolve) => setTimeout(resolve, GRACE_MS + 500));
    const bob = await c.dial(c.deno.port, 'bob');
    await converge(nodes, c.watchers, { ada: [{ tab: 1 }], bob: [{ tab: 1 }] }, 'bob joins');
    for (const { events } of c.watchers) {
      assert.deepEqual(events, ['join ada {"tab":1}', 'join bob {"tab":1}']);
    }

    // Now a redial after the grace: one leave, then one join.
    proxy.mode = { kind: 'cut', afterBytes: 0 };
    proxy.reset();
    await converge(nodes, c.watchers, { bob: [{ tab: 1 }] }, 'ada leaves after the grace');
    proxy.target = c.deno.port;
    proxy.mode = { kind: 'pass' };
    await converge(nodes, c.watchers, { ada: [{ tab: 1 }], bob: [{ tab: 1 }] }, 'ada is back');
    for (const { events } of c.watchers) {
      assert.deepEqual(events.slice(2), ['leave ada {"tab":1}', 'join ada {"tab":1}']);
    }
    await bob.close();
  },
);

test(
  "WSM-PRS-003 a SIGKILLed node's entries leave within nodeTimeoutMs everywhere, each exactly once",
  { timeout: 90_000 },
  async () => {
    await using c = await cluster();
    await c.dial(c.deno.port, 'ada', 1);
    await c.dial(c.bun.port, 'ada', 2);
    await c.dial(c.bun.port, 'cy');
    await c.dial(c.deno.port, 'bob');
    const all = { ada: [{ tab: 1 }, { tab: 2 }], bob: [{ tab: 1 }], cy: [{ tab: 1 }] };
    await converge([c.deno, c.bun], c.watchers, all, 'everyone joined');

    const onDeno = c.watchers[0];
    const before = onDeno.events.length;
    const killedAt = Date.now();
    c.bun.kill();
    await c.bun.exited;
    const remaining = { ada: [{ tab: 1 }], bob: [{ tab: 1 }] };
    await converge([c.deno], [onDeno], remaining, "the Bun node's entries leave");
    const tookMs = Date.now() - killedAt;
    assert(tookMs <= NODE_TIMEOUT_MS, `the entries left ${tookMs} ms after the kill`);

    // A later join shows every follower received all that came before it: nothing left twice.
    await new Promise((resolve) => setTimeout(resolve, NODE_TIMEOUT_MS));
    await c.dial(c.deno.port, 'dee');
    await converge([c.deno], [onDeno], { ...remaining, dee: [{ tab: 1 }] }, 'dee joins');
    assert.deepEqual(onDeno.events.slice(before).sort(), [
      'join dee {"tab":1}',
      'leave ada {"tab":2}',
      'leave cy {"tab":1}',
    ]);
  },
);

/** Two nodes with ada on two tabs, bob and cy; Redis restarts empty while bob closes for good. */
async function restartRedis(c: Cluster): Promise<{ tookMs: number }> {
  const nodes = [c.deno, c.bun];
  await c.dial(c.deno.port, 'ada', 1);
  await c.dial(c.bun.port, 'ada', 2);
  const bob = await c.dial(c.deno.port, 'bob');
  await c.dial(c.bun.port, 'cy');
  const all = { ada: [{ tab: 1 }, { tab: 2 }], bob: [{ tab: 1 }], cy: [{ tab: 1 }] };
  await converge(nodes, c.watchers, all, 'everyone joined');

  await c.redis.stop();
  await bob.close(); // for good, while Redis is down
  await c.redis.start();
  const restartedAt = Date.now();
  // A beat finds Redis empty and each node puts back what it holds; a beat later every node has
  // reloaded.
  const live = { ada: [{ tab: 1 }, { tab: 2 }], cy: [{ tab: 1 }] };
  await converge(nodes, c.watchers, live, 'the live peers after the restart');
  return { tookMs: Date.now() - restartedAt };
}

test(
  'WSM-PRS-003 a restarted Redis is rebuilt from the live peers and followers converge',
  { timeout: 90_000 },
  async () => {
    await using c = await cluster();
    const { tookMs } = await restartRedis(c);
    assert(tookMs <= 2 * NODE_TIMEOUT_MS, `converged ${tookMs} ms after the restart`);
    for (const { events } of c.watchers) {
      assert.equal(events.at(-1), 'leave bob {"tab":1}', events.join('\n'));
    }
  },
);

test(
  'WSM-PRS-003 a restarted Redis shows followers only the net change: no live presence leaves and joins again',
  { timeout: 90_000 },
  async () => {
    await using c = await cluster();
    await restartRedis(c);
    for (const { events } of c.watchers) {
      assert.deepEqual(events.slice(4), ['leave bob {"tab":1}'], events.join('\n'));
    }
  },
);
