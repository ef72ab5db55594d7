/**
 * `npm run chaos`: random network and process faults against 50 dialers doing requests
 * and streams, then the accounting. Runs on Deno: `deno run -A scripts/chaos.ts [--quick]
 * [--seed N]`.
 *
 * Setup: one acceptor in its own process (`tests/hostile/serve_acceptor.ts`), ten fault proxies
 * (`tests/_fault_proxy.ts`) in front of it, five dialers (`connect()`, heartbeat 1 s + 1 s, fast
 * backoff) behind each proxy. Every dialer keeps issuing requests (echo, or held for up to
 * 200 ms) and streams (20 messages read to the end) while open.
 *
 * Faults, one every `durationMs / faults` ms, drawn from a seeded PRNG: a proxy reset (TCP RST
 * mid-stream), a blackhole for 0.5 to 2.5 s, a delay or a slow link for a while, a 1012 close of
 * a random peer by the acceptor, and (2 % of faults) a SIGKILL of the acceptor process, restarted
 * 300 ms later on a new port the proxies then point at. Full run: 1,000 faults over 180 s;
 * `--quick`: 150 faults over 30 s.
 *
 * Then every proxy heals, every dialer must be open again within 30 s (quick: 12 s), every
 * operation must settle within 20 s (quick: 8 s), and every dialer is closed. It prints: requests and streams issued, settled
 * ok, settled with an error (by error), still pending (must be 0), settled twice (must be 0),
 * timers and global listeners pending after all connections closed (must be 0), dialers that
 * never came back (must be 0), and the peak RSS of this process and of the acceptor's (sampled
 * every 250 ms and every second). It exits 1 on a
 * violation. The whole run is bounded (4.5 min full, 60 s quick): past it, it reports and exits 1.
 */
import process from 'node:process';
import { connect, type Connection } from '../lib/dialer/dialer.ts';
import { StreamResetError } from '../lib/errors.ts';
import { type FaultProxy, startFaultProxy } from '../tests/_fault_proxy.ts';
import { type ChildAcceptor, spawnAcceptor } from '../tests/hostile/_spawn.ts';
import { trackTimers } from '../tests/hostile/_timers.ts';

const args = process.argv.slice(2);
const quick = args.includes('--quick');
const seedArg = args.indexOf('--seed');
const SEED = seedArg === -1 ? 7 : Number(args[seedArg + 1]);
const FAULTS = quick ? 150 : 1000;
const DURATION_MS = quick ? 30_000 : 180_000;
const BUDGET_MS = quick ? 60_000 : 270_000;
/** How long dialers get to come back, and operations to settle, after the faults. */
const HEAL_MS = quick ? 12_000 : 30_000;
const SETTLE_MS = quick ? 8_000 : 20_000;
const PROXIES = 10;
const DIALERS_PER_PROXY = 5;

/** mulberry32: a small seeded PRNG, so a run's fault sequence is reproducible. */
function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
const random = prng(SEED);
const pick = <T>(items: readonly T[]): T => items[Math.floor(random() * items.length)];
/** True when `promise` settled within `ms`; the timer is cleared either way. */
async function settledWithin(promise: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<false>((resolve) => timer = setTimeout(() => resolve(false), ms));
  try {
    return await Promise.race([promise.then(() => true, () => true), timeout]);
  } finally {
    clearTimeout(timer);
  }
}
const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

interface Tally {
  issued: number;
  ok: number;
  failed: number;
  twice: number;
  byError: Map<string, number>;
  pending: Set<number>;
}
const tally: Tally = {
  issued: 0,
  ok: 0,
  failed: 0,
  twice: 0,
  byError: new Map(),
  pending: new Set(),
};
let nextOp = 0;

/** Counts one operation's outcome; its completion may run only once. */
function track(run: () => Promise<unknown>): Promise<void> {
  const op = nextOp++;
  tally.issued++;
  tally.pending.add(op);
  let settled = 0;
  const done = (error?: unknown) => {
    settled++;
    if (settled > 1) {
      tally.twice++;
      return;
    }
    tally.pending.delete(op);
    if (error === undefined) tally.ok++;
    else {
      tally.failed++;
      const name = error instanceof StreamResetError
        ? `StreamResetError(${error.code})`
        : (error as Error)?.name ?? String(error);
      tally.byError.set(name, (tally.byError.get(name) ?? 0) + 1);
    }
  };
  let promise: Promise<unknown>;
  try {
    promise = run();
  } catch (error) {
    done(error);
    return Promise.resolve();
  }
  return promise.then(() => done(), (error) => done(error ?? new Error('rejected without reason')));
}

/** One dialer's workload while the run lasts. */
async function work(c: Connection, stop: { now: boolean }): Promise<void> {
  while (!stop.now) {
    if (c.state !== 'open') {
      await sleep(20);
      continue;
    }
    const kind = random();
    if (kind < 0.5) {
      await track(() => c.request({ op: 'echo', value: kind }, { timeoutMs: 10_000 }));
    } else if (kind < 0.8) {
      await track(() =>
        c.request({ op: 'hold', ms: Math.floor(random() * 200) }, { timeoutMs: 10_000 })
      );
    } else {
      await track(async () => {
        const stream = c.open({ op: 'count', n: 20 }, { end: true });
        let last: unknown;
        for await (const value of stream) last = value;
        if (last !== 'done') throw new Error(`The stream ended early with ${String(last)}`);
      });
    }
    await sleep(Math.floor(random() * 20));
  }
}

async function main(): Promise<number> {
  const startedAt = Date.now();
  using timers = trackTimers();
  let child: ChildAcceptor = await spawnAcceptor({ idleTimeoutMs: 30_000 });
  const proxies: FaultProxy[] = [];
  const dialers: Connection[] = [];
  const counts = { reset: 0, blackhole: 0, delay: 0, slow: 0, kick: 0, kill: 0 };
  let peakRss = process.memoryUsage().rss;
  let acceptorPeakRss = 0;
  let samples = 0;
  const sampler = setInterval(() => {
    peakRss = Math.max(peakRss, process.memoryUsage().rss);
    // The acceptor's own RSS (no collection), every second, across its restarts.
    if (samples++ % 4 === 0) {
      fetch(`http://127.0.0.1:${child.port}/stats?nogc`)
        .then((r) => r.json())
        .then((stats) => void (acceptorPeakRss = Math.max(acceptorPeakRss, stats.rss ?? 0)))
        .catch(() => {});
    }
  }, 250);
  const heals = new Set<ReturnType<typeof setTimeout>>();
  const stop = { now: false };
  const workers: Promise<void>[] = [];
  let violations: string[] = [];
  try {
    for (let i = 0; i < PROXIES; i++) proxies.push(await startFaultProxy(child.port));
    for (const proxy of proxies) {
      for (let i = 0; i < DIALERS_PER_PROXY; i++) {
        const c = await connect(`ws://127.0.0.1:${proxy.port}/ws`, {
          reconnect: { initialDelayMs: 50, maxDelayMs: 1000, jitter: 0.5 },
          heartbeat: { intervalMs: 1000, timeoutMs: 1000 },
          serviceRestartDelayMs: 50,
          handshakeTimeoutMs: 3000,
          onError: () => {},
        });
        dialers.push(c);
        workers.push(work(c, stop));
      }
    }
    console.log(
      `chaos: seed ${SEED}, ${FAULTS} faults over ${
        DURATION_MS / 1000
      } s, ${dialers.length} dialers behind ${PROXIES} proxies`,
    );

    // Fault f is due at f * interval from the start, whatever the earlier ones cost (a restart
    // takes about a second), so the run keeps its length.
    const interval = DURATION_MS / FAULTS;
    const faultsFrom = Date.now();
    for (let f = 0; f < FAULTS; f++) {
      await sleep(Math.max(0, faultsFrom + (f + 1) * interval - Date.now()));
      const roll = random();
      const proxy = pick(proxies);
      const heal = (ms: number) => {
        const timer = setTimeout(() => {
          heals.delete(timer);
          proxy.mode = { kind: 'pass' };
        }, ms);
        heals.add(timer);
      };
      if (roll < 0.02) {
        counts.kill++;
        await child.kill();
        await sleep(300);
        child = await spawnAcceptor({ idleTimeoutMs: 30_000 });
        for (const p of proxies) p.target = child.port;
      } else if (roll < 0.42) {
        counts.reset++;
        proxy.reset();
      } else if (roll < 0.62) {
        counts.blackhole++;
        proxy.mode = { kind: 'blackhole' };
        heal(500 + random() * 2000);
      } else if (roll < 0.87) {
        counts.kick++;
        await fetch(`http://127.0.0.1:${child.port}/kick?code=1012`)
          .then((r) => r.body?.cancel())
          .catch(() => {});
      } else if (roll < 0.95) {
        counts.delay++;
        proxy.mode = { kind: 'delay', ms: Math.floor(50 + random() * 250) };
        heal(500 + random() * 1500);
      } else {
        counts.slow++;
        proxy.mode = { kind: 'slow', bytesPerSecond: 20_000 };
        heal(500 + random() * 1500);
      }
      if (Date.now() - faultsFrom > DURATION_MS + 15_000) {
        violations.push(`the faults ran past their time budget at fault ${f + 1}`);
        break;
      }
    }

    // Heal and settle.
    for (const timer of heals) clearTimeout(timer);
    heals.clear();
    for (const p of proxies) p.mode = { kind: 'pass' };
    const healedAt = Date.now();
    while (dialers.some((c) => c.state !== 'open') && Date.now() - healedAt < HEAL_MS) {
      await sleep(100);
    }
    const neverBack = dialers.filter((c) => c.state !== 'open').length;
    stop.now = true;
    const settleBy = Date.now() + SETTLE_MS;
    while (tally.pending.size > 0 && Date.now() < settleBy) await sleep(50);
    const stats = await fetch(`http://127.0.0.1:${child.port}/stats`).then((r) => r.json())
      .catch(() => ({ rss: 0 }));
    acceptorPeakRss = Math.max(acceptorPeakRss, stats.rss ?? 0);
    const stillPending = tally.pending.size;

    // Close everything, then look for leftovers.
    await Promise.all(dialers.map((c) => c.close()));
    const workersDone = Promise.all(workers);
    for (let waited = 0; waited < 5000 && !(await settledWithin(workersDone, 100)); waited += 100);
    for (const p of proxies) await p.close();
    await child.kill();
    clearInterval(sampler);
    await sleep(200);
    const timersLeft = timers.pending;
    const listenersLeft = timers.listeners;

    const mb = (bytes: number) => `${(bytes / 1048576).toFixed(1)} MB`;
    const errors = [...tally.byError.entries()].sort((a, b) => b[1] - a[1])
      .map(([name, n]) => `${name} ${n}`).join(', ');
    console.log(
      `faults: ${Object.entries(counts).map(([k, v]) => `${k} ${v}`).join(', ')}`,
    );
    console.log(`requests and streams issued: ${tally.issued}`);
    console.log(`settled ok: ${tally.ok}`);
    console.log(`settled with an error: ${tally.failed} (${errors || 'none'})`);
    console.log(`still pending: ${stillPending}`);
    console.log(`settled twice: ${tally.twice}`);
    console.log(`dialers not open after healing: ${neverBack}`);
    console.log(`timers pending after all connections closed: ${timersLeft}`);
    console.log(`listeners pending after all connections closed: ${listenersLeft}`);
    console.log(
      `peak RSS: dialers' process ${mb(peakRss)}, acceptor's process ${mb(acceptorPeakRss)}`,
    );
    console.log(`elapsed: ${((Date.now() - startedAt) / 1000).toFixed(1)} s`);

    if (stillPending !== 0) violations.push(`${stillPending} operations still pending`);
    if (tally.twice !== 0) violations.push(`${tally.twice} operations settled twice`);
    if (timersLeft !== 0) violations.push(`${timersLeft} timers left`);
    if (listenersLeft !== 0) violations.push(`${listenersLeft} listeners left`);
    if (neverBack !== 0) violations.push(`${neverBack} dialers did not come back`);
    if (tally.ok === 0) violations.push('nothing succeeded');
    if (Date.now() - startedAt > BUDGET_MS) violations.push('the run exceeded its time budget');
  } catch (error) {
    violations = [...violations, `the run failed: ${String(error)}`];
    stop.now = true;
    for (const timer of heals) clearTimeout(timer);
    clearInterval(sampler);
    await Promise.allSettled(dialers.map((c) => c.close()));
    for (const p of proxies) await p.close().catch(() => {});
    await child.kill().catch(() => {});
  }
  for (const v of violations) console.error(`VIOLATION: ${v}`);
  console.log(violations.length === 0 ? 'chaos: ok' : 'chaos: FAILED');
  return violations.length === 0 ? 0 : 1;
}

// A hard stop, whatever happens.
const guard = setTimeout(() => {
  console.error('VIOLATION: the run did not finish within its budget; exiting');
  process.exit(1);
}, BUDGET_MS + 15_000);
const code = await main();
clearTimeout(guard);
process.exit(code);
