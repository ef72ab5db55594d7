/**
 * The broadcast fan-out benchmark: one broadcast to 1,000 connected peers, through one
 * acceptor node and through two nodes over Redis (500 peers on each), muxws beside socket.io's
 * `io.to(room).emit` without and with `@socket.io/redis-adapter`, in the same run.
 *
 * `deno run -A bench/broadcast.ts [--quick] [--runtime node|deno|bun] [--peers 1000]
 * [--reps 9] [--rounds 20] [--out bench/results/broadcast.json]` (`npm run bench:broadcast`).
 * Loopback only.
 *
 * - The nodes are `bench/_broadcast_server.ts` processes on `--runtime` (default node: socket.io's
 *   own runtime; muxws there runs on `ws`), bundled for Node with esbuild. The Redis is a
 *   `redis-server` of its own on a free loopback port (`tests/_redis.ts`), no persistence.
 * - The peers are one process of dialers: this one (Deno), with `bench/_clients.ts` (muxws
 *   `connect()`, socket.io-client on its websocket transport). Peer i dials node i mod n; one
 *   more client on node A, also in the room, asks for each broadcast (`bench/fanout.ts`'s
 *   `broadcastOnce`: from asking until the last of the peers received it).
 * - A repetition is `--rounds` broadcasts one after another; it reports the peers' deliveries
 *   per second (peers × rounds ÷ the rounds' total time), and the CPU time per delivery of the
 *   nodes (together; each answers `cpu` on stdin) and of the dialers' process. After one warm-up round per subject,
 *   the two subjects of a pair alternate which goes first, `--reps` repetitions each (≥ 5);
 *   each reports the median and min–max. muxws ÷ socket.io is the ratio of the medians (the
 *   goal is judged on it); `paired` is the median of the ratios of the repetitions run back to
 *   back, which resists drift in the machine's load.
 * - `--quick`: 5 repetitions of 3 rounds. Every wait is bounded; the whole run is killed after
 *   10 minutes (4 with `--quick`).
 *
 * Prints a Markdown table on stdout (progress on stderr) and writes it with the raw figures to
 * `--out` (relative to the repository).
 *
 * @module
 */
import { type BenchClient, openClient } from './_clients.ts';
import { args, cpuMicros, median, numberOption, option, within } from './_common.ts';
import { broadcastOnce } from './fanout.ts';
import { BIN, bundleEntries, Child, command, killAll, progress, ROOT } from './_child.ts';
import { type RedisServer, startRedis } from '../tests/_redis.ts';

const quick = args.includes('--quick');
const serverRuntime = option('runtime', 'node');
const peerCount = numberOption('peers', 1000);
const reps = Math.max(5, numberOption('reps', quick ? 5 : 9));
const rounds = Math.max(1, numberOption('rounds', quick ? 3 : 20));
const outFile = option('out', 'bench/results/broadcast.json');
const BUDGET_MS = quick ? 4 * 60_000 : 10 * 60_000;
const NODE_BUILD = `${ROOT}/bench/results/node-broadcast-${Deno.pid}`;
const started = Date.now();

if (!Number.isInteger(peerCount) || peerCount < 2) {
  throw new RangeError(`--peers must be an integer of at least 2: current value is ${peerCount}`);
}
if (!['node', 'deno', 'bun'].includes(serverRuntime)) {
  throw new RangeError(`--runtime must be node, deno or bun: current value is ${serverRuntime}`);
}

const log = progress('broadcast', started);

/** One server process of `bench/_broadcast_server.ts`. */
interface Node {
  readonly port: number;
  /** Its CPU time so far (user + system), in µs. */
  cpu(): Promise<number>;
  stop(): Promise<void>;
}

async function startNode(subject: string, redisUrl: string, id: string): Promise<Node> {
  const serverArgs = ['--subject', subject, '--redis', redisUrl, '--node', id];
  const child = new Child(
    `${subject} node ${id}`,
    ...command(serverRuntime, '_broadcast_server', serverArgs, NODE_BUILD),
  );
  const stop = async () => {
    child.endInput();
    await child.done(10_000).catch(() => child.kill());
  };
  try {
    const port = Number(await child.waitFor('READY', 30_000));
    return {
      port,
      async cpu() {
        child.send('cpu');
        return Number(await child.waitFor('CPU', 10_000));
      },
      stop,
    };
  } catch (error) {
    child.kill();
    throw error;
  }
}

/** One measured setup: a subject on one or two nodes, with its peers connected. */
interface Setup {
  readonly name: string;
  readonly subject: 'muxws' | 'socketio';
  readonly nodes: number;
  trigger?: BenchClient;
  peers: BenchClient[];
  servers: Node[];
  rates: number[];
  /** The nodes' CPU time per delivery, µs, per repetition. */
  cpu: number[];
  /** The dialers' process's CPU time per delivery, µs, per repetition. */
  clientCpu: number[];
}

async function open(setup: Setup, redisUrl: string): Promise<void> {
  for (let n = 0; n < setup.nodes; n++) {
    setup.servers.push(await startNode(setup.subject, redisUrl, String.fromCharCode(97 + n)));
  }
  setup.trigger = await openClient(setup.subject, setup.servers[0].port, 0);
  for (let i = 0; i < peerCount; i += 100) {
    const batch: Promise<BenchClient>[] = [];
    for (let k = i; k < Math.min(peerCount, i + 100); k++) {
      batch.push(openClient(setup.subject, setup.servers[k % setup.nodes].port, k + 1));
    }
    setup.peers.push(...await within(Promise.all(batch), 60_000, `${setup.name}: 100 peers`));
  }
  log(`${setup.name}: ${setup.peers.length} peers connected`);
}

async function close(setup: Setup): Promise<void> {
  for (const client of [setup.trigger, ...setup.peers]) client?.close();
  setup.peers = [];
  setup.trigger = undefined;
  await Promise.all(setup.servers.map((server) => server.stop()));
  setup.servers = [];
}

/** The nodes' CPU time so far, summed, in µs. */
async function serversCpu(setup: Setup): Promise<number> {
  let sum = 0;
  for (const cpu of await Promise.all(setup.servers.map((server) => server.cpu()))) sum += cpu;
  return sum;
}

/**
 * One repetition: `rounds` broadcasts one after another. Records the peers' deliveries per
 * second, the nodes' CPU time per delivery (all nodes together, Redis excluded) and the dialers'
 * process's (this one's, all threads).
 */
async function repetition(setup: Setup): Promise<number> {
  let ms = 0;
  const cpu0 = await serversCpu(setup);
  const clientCpu0 = cpuMicros();
  for (let r = 0; r < rounds; r++) ms += await broadcastOnce(setup.trigger!, setup.peers);
  const deliveries = setup.peers.length * rounds;
  setup.clientCpu.push((cpuMicros() - clientCpu0) / deliveries);
  setup.cpu.push((await serversCpu(setup) - cpu0) / deliveries);
  return deliveries / (ms / 1000);
}

/** Runs a pair of setups interleaved: a warm-up round each, then `reps` repetitions each. */
async function pair(setups: [Setup, Setup], redisUrl: string): Promise<void> {
  try {
    for (const setup of setups) await open(setup, redisUrl);
    for (const setup of setups) await broadcastOnce(setup.trigger!, setup.peers);
    for (let rep = 0; rep < reps; rep++) {
      const order = rep % 2 === 0 ? setups : [setups[1], setups[0]];
      for (const setup of order) {
        const rate = await repetition(setup);
        setup.rates.push(rate);
        log(`${setup.name}: repetition ${rep + 1}: ${Math.round(rate)} deliveries/s`);
      }
    }
  } finally {
    for (const setup of setups) await close(setup);
  }
}

function fmt(n: number): string {
  return n >= 100 ? Math.round(n).toLocaleString('en-US') : n.toPrecision(3);
}

function summary(r: readonly number[]): string {
  return `${fmt(median(r))} (${fmt(Math.min(...r))}–${fmt(Math.max(...r))})`;
}

const setups: Setup[] = [
  { name: 'muxws, one node', subject: 'muxws', nodes: 1 },
  { name: 'socket.io, one node', subject: 'socketio', nodes: 1 },
  { name: 'muxws, two nodes over Redis', subject: 'muxws', nodes: 2 },
  { name: 'socket.io + redis-adapter, two nodes', subject: 'socketio', nodes: 2 },
].map((s) => ({ ...s, peers: [], servers: [], rates: [], cpu: [], clientCpu: [] } as Setup));

const budget = setTimeout(() => {
  console.error(`bench/broadcast.ts: over its ${BUDGET_MS / 60_000} min budget, stopping`);
  killAll();
  Deno.exit(1);
}, BUDGET_MS);

let redis: RedisServer | undefined;
try {
  if (serverRuntime === 'node') bundleEntries(['bench/_broadcast_server.ts'], NODE_BUILD);
  log(`${peerCount} peers, ${reps} repetitions of ${rounds} broadcasts, nodes on ${serverRuntime}`);
  await pair([setups[0], setups[1]], '');
  redis = await startRedis();
  await pair([setups[2], setups[3]], redis.url);
} finally {
  await redis?.stop();
  killAll();
  await Deno.remove(NODE_BUILD, { recursive: true }).catch(() => {});
  clearTimeout(budget);
}

const ratio = (a: readonly number[], b: readonly number[]) => median(a) / median(b);
/** The median of the ratios of repetitions run back to back, which resists drift in load. */
const paired = (a: readonly number[], b: readonly number[]) => median(a.map((v, i) => v / b[i]));
const oneNode = ratio(setups[0].rates, setups[1].rates);
const overRedis = ratio(setups[2].rates, setups[3].rates);
const version = (cmd: string, flag: string) =>
  new TextDecoder().decode(new Deno.Command(cmd, { args: [flag] }).outputSync().stdout).trim()
    .split('\n')[0];
const runtimeVersion = serverRuntime === 'node'
  ? `Node ${version('node', '-v')}`
  : serverRuntime === 'bun'
  ? `Bun ${version(`${BIN}/bun`, '--version')}`
  : `Deno ${Deno.version.deno}`;
const rows = ([[0, 1, 'one node', oneNode, 2], [
  2,
  3,
  `two nodes over Redis (${Math.ceil(peerCount / 2)} + ${Math.floor(peerCount / 2)} peers)`,
  overRedis,
  1.5,
]] as const).flatMap(([m, s, label, r, goal]) => [
  `| ${label} | deliveries/s | ${summary(setups[m].rates)} | ${summary(setups[s].rates)} | ${
    r.toFixed(2)
  }× | ${paired(setups[m].rates, setups[s].rates).toFixed(2)}× | ≥ ${goal}× ${
    r >= goal ? '✓' : '✗'
  } |`,
  `| ${label} | nodes' CPU µs per delivery | ${summary(setups[m].cpu)} | ${
    summary(setups[s].cpu)
  } | ${ratio(setups[m].cpu, setups[s].cpu).toFixed(2)}× | ${
    paired(setups[m].cpu, setups[s].cpu).toFixed(2)
  }× | |`,
  `| ${label} | dialers' CPU µs per delivery | ${summary(setups[m].clientCpu)} | ${
    summary(setups[s].clientCpu)
  } | ${ratio(setups[m].clientCpu, setups[s].clientCpu).toFixed(2)}× | ${
    paired(setups[m].clientCpu, setups[s].clientCpu).toFixed(2)
  }× | |`,
]);
const table = [
  `Broadcast fan-out to ${peerCount} peers: median (min–max) of ${reps} repetitions of ${rounds} ` +
  `broadcasts each, interleaved. Nodes on ${runtimeVersion}, peers in one Deno ` +
  `${Deno.version.deno} process, ${new Date().toISOString()}.`,
  '',
  '| setup | metric | muxws | socket.io | muxws ÷ socket.io | paired | goal |',
  '| --- | --- | --- | --- | --- | --- | --- |',
  ...rows,
].join('\n');
console.log(table);
const outPath = outFile.startsWith('/') ? outFile : `${ROOT}/${outFile}`;
await Deno.mkdir(outPath.slice(0, outPath.lastIndexOf('/')), { recursive: true });
await Deno.writeTextFile(
  outPath,
  JSON.stringify(
    {
      command: `deno run -A bench/broadcast.ts ${args.join(' ')}`.trim(),
      peers: peerCount,
      reps,
      rounds,
      runtime: runtimeVersion,
      setups: setups.map(({ name, rates, cpu, clientCpu }) => ({
        name,
        deliveriesPerSecond: rates,
        median: median(rates),
        cpuMicrosPerDelivery: cpu,
        medianCpu: median(cpu),
        dialersCpuMicrosPerDelivery: clientCpu,
        medianDialersCpu: median(clientCpu),
      })),
      ratios: {
        oneNode,
        overRedis,
        oneNodePaired: paired(setups[0].rates, setups[1].rates),
        overRedisPaired: paired(setups[2].rates, setups[3].rates),
      },
      table,
    },
    null,
    2,
  ) + '\n',
);
