/**
 * The `recovery` scenario of `bench/run.ts` (`--scenarios recovery`): what a dialer gets of the
 * broadcasts it missed while its connection was down, when its node died, muxws with
 * `redisHistory()` beside Socket.IO with `@socket.io/redis-streams-adapter` and its connection
 * state recovery, each on two nodes sharing one fresh `redis-server` (`tests/_redis.ts`).
 *
 * For each subject: nodes a and b (`bench/_recovery_server.ts`) and one process of dialers
 * (`bench/_recovery_dialers.ts`, 1,000 dialers, 50 with `--quick`, half on each node through a
 * loopback proxy each) in the room `room:1`. Node b broadcasts once and every dialer receives it
 * (Socket.IO recovers only a session that received an event). Then node a is killed (SIGKILL)
 * and both proxies end every connection and refuse new ones for 2 s, while node b broadcasts 200
 * messages spread over those 2 s. Then the proxies forward again, node a's to node b, and the
 * dialers redial with their libraries' own backoff. Measured until every dialer is back and
 * either holds all 200 or was told it never will (at most 15 s, 8 s with `--quick`):
 * - `time-to-full-recovery` (ms): from the heal until the last dialer held all 200; none when
 *   one never did;
 * - `time-to-all-back` (ms): from the heal until the last dialer was connected again;
 * - `replayed-per-second`: the deliveries after the heal (over all dialers) ÷ the span from the
 *   first to the last of them;
 * - `complete` (share): dialers holding all 200 exactly once, and `complete-node-died` /
 *   `complete-node-survived` by whether their node was the killed one;
 * - `recovered-node-died` / `recovered-node-survived` (share): dialers whose library said it
 *   recovered (muxws `onRecovered` without a gap, Socket.IO `socket.recovered`);
 * - `duplicates`, `missing` (count, over all dialers);
 * - `rss-growth` (B): node b's resident memory after the recovery minus before the cut (it holds
 *   twice the connections afterwards, and the replay's buffers).
 *
 * The nodes and dialers run on the first of `--runtimes`.
 *
 * @module
 */
import type { Row } from './_common.ts';
import { sleep } from './_common.ts';
import { startRedis } from '../tests/_redis.ts';

/** A child process of `bench/run.ts`, read line by line. */
export interface ScenarioChild {
  /** The rest of the first unread stdout line starting with `prefix`; rejects after `ms`. */
  waitFor(prefix: string, ms: number): Promise<string>;
  /** Writes one line to its stdin. */
  send(line: string): void;
  /** SIGKILL. */
  kill(): void;
  /** Resolves once it exited; rejects after `ms`. */
  done(ms: number): Promise<void>;
}

/** What the scenario needs of `bench/run.ts`. */
export interface RecoveryScenarioOptions {
  /** The runtime of the nodes and of the dialers. */
  runtime: string;
  /** 50 dialers instead of 1,000, an 8 s bound instead of 15 s. */
  quick: boolean;
  /** Starts `bench/<script>.ts` on `runtime`. */
  start(runtime: string, script: string, args: string[]): ScenarioChild;
  /** Progress, on stderr. */
  log(message: string): void;
}

/** What the dialers' process answers to `result` (`bench/_recovery_dialers.ts`). */
interface Outcome {
  dialers: number;
  complete: { died: number; survived: number };
  recovered: { died: number; survived: number };
  back: number;
  allBackMs: number | null;
  duplicates: number;
  missing: number;
  fullRecoveryMs: number | null;
  deliveredAfterHeal: number;
  deliverySpanMs: number;
}

const OUTAGE_MS = 2_000;
const MISSED = 200;

async function oneSubject(
  subject: 'muxws' | 'socketio',
  options: RecoveryScenarioOptions,
): Promise<Row[]> {
  const { runtime, quick, start } = options;
  const count = quick ? 50 : 1_000;
  const boundMs = quick ? 8_000 : 15_000;
  const redis = await startRedis();
  const children: ScenarioChild[] = [];
  try {
    const node = (id: string) => {
      const child = start(runtime, '_recovery_server', [
        '--subject',
        subject,
        '--redis',
        redis.url,
        '--node',
        id,
      ]);
      children.push(child);
      return child;
    };
    const [a, b] = [node('a'), node('b')];
    const [portA, portB] = await Promise.all(
      [a, b].map(async (n) => Number(await n.waitFor('READY', 30_000))),
    );
    const dialers = start(runtime, '_recovery_dialers', [
      '--subject',
      subject,
      '--ports',
      `${portA},${portB}`,
      '--count',
      String(count),
    ]);
    children.push(dialers);
    await dialers.waitFor('OPEN', 60_000);

    b.send('burst 1 1 0');
    await b.waitFor('SENT', 5_000);
    dialers.send('wait 1');
    const warm = Number(await dialers.waitFor('HAVE', 25_000));
    if (warm !== count) throw new Error(`${warm} of ${count} dialers received the first broadcast`);
    b.send('mem');
    const before = JSON.parse(await b.waitFor('MEM', 10_000)) as { rss: number };

    a.kill();
    dialers.send('cut');
    await dialers.waitFor('CUT', 5_000);
    const cutAt = Date.now();
    b.send(`burst 2 ${MISSED} ${OUTAGE_MS - 200}`);
    await b.waitFor('SENT', OUTAGE_MS + 5_000);
    await sleep(Math.max(0, cutAt + OUTAGE_MS - Date.now()));
    dialers.send(`heal ${portB}`);
    await dialers.waitFor('HEALED', 5_000);
    dialers.send(`result 2 ${MISSED + 1} ${boundMs}`);
    const outcome = JSON.parse(await dialers.waitFor('RESULT', boundMs + 10_000)) as Outcome;
    b.send('mem');
    const after = JSON.parse(await b.waitFor('MEM', 10_000)) as { rss: number };

    const half = { died: Math.ceil(count / 2), survived: Math.floor(count / 2) };
    const base = {
      scenario: 'recovery',
      runtime,
      subject: subject === 'socketio' ? 'socket.io' : 'muxws',
    };
    const rows: Row[] = [
      {
        ...base,
        metric: 'time-to-full-recovery',
        value: outcome.fullRecoveryMs ?? Number.NaN,
        unit: 'ms',
      },
      { ...base, metric: 'time-to-all-back', value: outcome.allBackMs ?? Number.NaN, unit: 'ms' },
      {
        ...base,
        metric: 'replayed-per-second',
        value: outcome.deliverySpanMs > 0
          ? outcome.deliveredAfterHeal / (outcome.deliverySpanMs / 1000)
          : Number.NaN,
        unit: 'msg/s',
      },
      {
        ...base,
        metric: 'complete',
        value: (outcome.complete.died + outcome.complete.survived) / count,
        unit: 'share',
      },
      {
        ...base,
        metric: 'complete-node-died',
        value: outcome.complete.died / half.died,
        unit: 'share',
      },
      {
        ...base,
        metric: 'complete-node-survived',
        value: outcome.complete.survived / half.survived,
        unit: 'share',
      },
      {
        ...base,
        metric: 'recovered-node-died',
        value: outcome.recovered.died / half.died,
        unit: 'share',
      },
      {
        ...base,
        metric: 'recovered-node-survived',
        value: outcome.recovered.survived / half.survived,
        unit: 'share',
      },
      { ...base, metric: 'duplicates', value: outcome.duplicates, unit: 'count' },
      { ...base, metric: 'missing', value: outcome.missing, unit: 'count' },
      { ...base, metric: 'rss-growth', value: after.rss - before.rss, unit: 'B' },
      { ...base, metric: 'dialers', value: count, unit: 'count' },
    ];
    dialers.send('quit');
    await dialers.done(5_000).catch(() => {});
    return rows;
  } finally {
    for (const child of children) child.kill();
    await redis.stop();
  }
}

/** Runs the scenario for muxws, then Socket.IO; a subject that fails is logged and skipped. */
export async function recoveryScenario(options: RecoveryScenarioOptions): Promise<Row[]> {
  const rows: Row[] = [];
  for (const subject of ['muxws', 'socketio'] as const) {
    options.log(`recovery ${subject} on ${options.runtime}`);
    try {
      rows.push(...await oneSubject(subject, options));
    } catch (error) {
      options.log(`recovery ${subject} on ${options.runtime} failed: ${(error as Error).message}`);
    }
  }
  return rows;
}
