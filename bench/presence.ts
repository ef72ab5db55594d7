/**
 * The `presence` scenario of `bench/run.ts` (`--scenarios presence`): how fast a join or a leave
 * in one tag of 10,000 presences over two nodes on Redis reaches every follower, what a snapshot
 * costs, and how many Redis PUBLISHes a batch takes.
 *
 * Nodes a and b (`bench/_presence_server.ts`, an acceptor each with `redisBackplane` and
 * `redisPresence` on one fresh `redis-server` of `tests/_redis.ts`) and one process of dialers
 * (`bench/_presence_dialers.ts`): 10,000 dialers (1,000 with `--quick`), half on each node, each
 * tracked in `room:1` under its own key; then 200 of them (100) follow `room:1`, half on each
 * node. Then 50 rounds: a node (a, then b, in turn) tracks its mover peer with `{ at }` in the
 * meta, and once every follower saw it join, untracks it, until every follower saw it leave.
 * Rows:
 * - `presence-join-p50`, `-p99`, `-max` and `presence-leave-…` (ms): from the `track()` (or
 *   `untrack()`) call to the last follower's `onJoin` (`onLeave`), over the rounds; a round
 *   whose change some follower missed within 5 s counts as `NaN` and in `missed`;
 * - `presence-sync-p50`, `-p99` (ms): from a follower's `presence()` call to its snapshot, while
 *   every follower asks at once; `presence-sync-bytes` (B): the bytes one snapshot takes;
 * - `publish-per-batch`: Redis's PUBLISH calls during the rounds ÷ the store's batches (the goal
 *   is 1: one PUBLISH per batch, whatever the followers);
 * - `rss-node-a`, `rss-node-b` (B): each node's resident memory after the rounds;
 * - `peers`, `followers`, `rounds`, `missed` (count).
 *
 * The nodes and dialers run on the first of `--runtimes`.
 *
 * @module
 */
import type { Row } from './_common.ts';
import { quantile } from './_common.ts';
import type { ScenarioChild } from './recovery.ts';
import { startRedis } from '../tests/_redis.ts';

/** What the scenario needs of `bench/run.ts`. */
export interface PresenceScenarioOptions {
  /** The runtime of the nodes and of the dialers. */
  runtime: string;
  /** 1,000 peers and 100 followers instead of 10,000 and 200. */
  quick: boolean;
  /** Starts `bench/<script>.ts` on `runtime`. */
  start(runtime: string, script: string, args: string[]): ScenarioChild;
  /** Progress, on stderr. */
  log(message: string): void;
}

/** The rounds of a join and a leave. */
const ROUNDS = 50;
/** How long one change may take to reach every follower before the round counts as missed. */
const ROUND_BOUND_MS = 5_000;
/** The budget of the whole scenario in `bench/run.ts`. */
export function presenceBudgetMs(quick: boolean): number {
  return quick ? 40_000 : 180_000;
}

interface Seen {
  last: number;
  count: number;
}

/**
 * Measures one change: arms the dialers, makes `node` do `what`, and returns the ms from its call
 * to the last of the `followers` callbacks, or NaN when some follower missed it.
 */
async function change(
  node: ScenarioChild,
  dialers: ScenarioChild,
  what: 'join' | 'leave',
  key: string,
  followers: number,
): Promise<number> {
  dialers.send(`await ${what} ${key} ${ROUND_BOUND_MS}`);
  await dialers.waitFor('ARMED', 5_000);
  node.send(what);
  const at = Number(await node.waitFor(what === 'join' ? 'TRACKED' : 'UNTRACKED', 5_000));
  const seen = JSON.parse(await dialers.waitFor('SEEN', ROUND_BOUND_MS + 5_000)) as Seen;
  return seen.count === followers ? seen.last - at : Number.NaN;
}

/** Waits until both nodes' `list()` holds `count` metas; throws after `ms`. */
async function converged(nodes: ScenarioChild[], count: number, ms: number): Promise<void> {
  const deadline = Date.now() + ms;
  while (true) {
    let all = true;
    for (const node of nodes) {
      node.send('count');
      if (Number(await node.waitFor('COUNT', 5_000)) !== count) all = false;
    }
    if (all) return;
    if (Date.now() > deadline) throw new Error(`the nodes did not list ${count} presences`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

async function stats(node: ScenarioChild): Promise<{ publish: number; version: number }> {
  node.send('stats');
  return JSON.parse(await node.waitFor('STATS', 5_000));
}

/** Runs the scenario for muxws; a failure is logged and gives no rows. */
export async function presenceScenario(options: PresenceScenarioOptions): Promise<Row[]> {
  const { runtime, quick, start, log } = options;
  const peers = quick ? 1_000 : 10_000;
  const followers = quick ? 100 : 200;
  log(`presence on ${runtime}: ${peers} peers, ${followers} following`);
  const redis = await startRedis();
  const children: ScenarioChild[] = [];
  try {
    const node = (id: string) => {
      const child = start(runtime, '_presence_server', ['--redis', redis.url, '--node', id]);
      children.push(child);
      return child;
    };
    const [a, b] = [node('a'), node('b')];
    const [portA, portB] = await Promise.all(
      [a, b].map(async (n) => Number(await n.waitFor('READY', 30_000))),
    );
    const dialers = start(runtime, '_presence_dialers', [
      '--ports',
      `${portA},${portB}`,
      '--count',
      String(peers),
      '--followers',
      String(followers),
    ]);
    children.push(dialers);
    await dialers.waitFor('OPEN', quick ? 30_000 : 120_000);
    await converged([a, b], peers, 20_000);

    dialers.send('follow');
    const synced = JSON.parse(await dialers.waitFor('SYNCED', 70_000)) as {
      ms: number[];
      bytes: number;
      keys: number;
    };
    if (synced.ms.length !== followers || synced.keys !== peers) {
      throw new Error(
        `${synced.ms.length} of ${followers} followers synced, the first holding ${synced.keys} keys of ${peers}`,
      );
    }

    const before = await stats(a);
    const joins: number[] = [];
    const leaves: number[] = [];
    for (let round = 0; round < ROUNDS; round++) {
      const [at, id] = round % 2 === 0 ? [a, 'a'] : [b, 'b'];
      joins.push(await change(at, dialers, 'join', `mover-${id}`, followers));
      leaves.push(await change(at, dialers, 'leave', `mover-${id}`, followers));
    }
    const after = await stats(a);
    const rss: number[] = [];
    for (const n of [a, b]) {
      n.send('mem');
      rss.push((JSON.parse(await n.waitFor('MEM', 10_000)) as { rss: number }).rss);
    }

    const base = { scenario: 'presence', runtime, subject: 'muxws' };
    const rows: Row[] = [];
    const missed = [...joins, ...leaves].filter((ms) => Number.isNaN(ms)).length;
    for (const [name, list] of [['presence-join', joins], ['presence-leave', leaves]] as const) {
      const measured = list.filter((ms) => !Number.isNaN(ms));
      const none = measured.length === 0;
      rows.push(
        { ...base, metric: `${name}-p50`, value: none ? NaN : quantile(measured, 0.5), unit: 'ms' },
        {
          ...base,
          metric: `${name}-p99`,
          value: none ? NaN : quantile(measured, 0.99),
          unit: 'ms',
        },
        { ...base, metric: `${name}-max`, value: none ? NaN : Math.max(...measured), unit: 'ms' },
      );
    }
    const batches = after.version - before.version;
    rows.push(
      { ...base, metric: 'presence-sync-p50', value: quantile(synced.ms, 0.5), unit: 'ms' },
      { ...base, metric: 'presence-sync-p99', value: quantile(synced.ms, 0.99), unit: 'ms' },
      { ...base, metric: 'presence-sync-bytes', value: synced.bytes, unit: 'B' },
      {
        ...base,
        metric: 'publish-per-batch',
        value: batches > 0 ? (after.publish - before.publish) / batches : NaN,
        unit: '×',
      },
      { ...base, metric: 'rss-node-a', value: rss[0], unit: 'B' },
      { ...base, metric: 'rss-node-b', value: rss[1], unit: 'B' },
      { ...base, metric: 'peers', value: peers, unit: 'count' },
      { ...base, metric: 'followers', value: followers, unit: 'count' },
      { ...base, metric: 'rounds', value: ROUNDS, unit: 'count' },
      { ...base, metric: 'missed', value: missed, unit: 'count' },
    );
    dialers.send('quit');
    await dialers.done(5_000).catch(() => {});
    return rows;
  } catch (error) {
    log(`presence on ${runtime} failed: ${(error as Error).message}`);
    return [];
  } finally {
    for (const child of children) child.kill();
    await redis.stop();
  }
}
