// `npm run demo` (scripts/demo.mjs → examples/demo.ts) run as a child process with `--json`,
// bounded at 40 s: it must exit 0 on its own within 30 s and its summary must tell the story the
// README promises. The timings come from real sockets on 127.0.0.1, so the checks bound them
// loosely; the delays themselves are checked against the schedule the demo documents.
import { spawn } from 'node:child_process';
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Reconnect, unjitteredDelay } from 'muxws';
import { repoRoot as repositoryRoot } from '../_repo.ts';

interface Summary {
  requests: { ok: number; failed: number; failedOutsideOutages: number };
  reconnects: number;
  fastPathRedials: number;
  outages: { kind: 'restart' | 'stop'; from: number; to?: number; ms: number }[];
  longestOutageMs: number;
  backoffDelaysMs: number[];
  dials: {
    at: number;
    reason: 'initial' | 'reconnect';
    attempt: number;
    resumedFromServiceRestart: boolean;
  }[];
  reconnecting: { at: number; attempt: number; delayMs: number }[];
  opens: { at: number; reconnected: boolean; attempts: number; welcome: unknown }[];
  closes: { at: number; code: number; delayMs?: number }[];
}

interface Run {
  code: number | null;
  signal: string | null;
  stdout: string;
  stderr: string;
  wallMs: number;
  summary: Summary;
}

let demo: Promise<Run> | undefined;
/** Runs the demo once for every test of this file. */
function runDemo(): Promise<Run> {
  demo ??= new Promise<Run>((resolve, reject) => {
    const started = Date.now();
    const child = spawn(process.execPath, ['scripts/demo.mjs', '--json'], {
      cwd: repositoryRoot(),
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, NO_COLOR: '1' },
    });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
    const deadline = setTimeout(() => child.kill('SIGKILL'), 40_000);
    child.once('error', (error) => {
      clearTimeout(deadline);
      reject(error);
    });
    child.once('close', (code, signal) => {
      clearTimeout(deadline);
      const last = stdout.trimEnd().split('\n').at(-1) ?? '';
      try {
        resolve({
          code,
          signal,
          stdout,
          stderr,
          wallMs: Date.now() - started,
          summary: JSON.parse(last),
        });
      } catch {
        reject(
          new Error(
            `The demo printed no JSON summary (exit ${code ?? signal}):\n${stdout}\n${stderr}`,
          ),
        );
      }
    });
  });
  return demo;
}

test('npm run demo ends by itself within 30 s, exits 0 and prints the timeline and summary', async () => {
  const run = await runDemo();
  assert.equal(run.signal, null, `killed after 40 s:\n${run.stdout}`);
  assert.equal(run.code, 0, `${run.stdout}\n${run.stderr}`);
  assert.equal(run.stderr, '');
  assert(run.wallMs < 30_000, `the demo took ${run.wallMs} ms`);
  assert.match(run.stdout, /^ +time +state +attempt +next delay +resumed +ok\/failed +event$/m);
  assert.match(run.stdout, /restart: acceptor #2 takes new upgrades/);
  assert.match(run.stdout, /start: acceptor #3 listening on 127\.0\.0\.1:\d+ again/);
  assert.match(run.stdout, /^summary after \d+\.\d s$/m);
  assert.match(run.stdout, /^ {2}longest outage +\d+\.\d\d s \(stop\)$/m);
});

test('WSM-RCN-020 npm run demo survives the acceptor restart (GOAWAY, 1012) by a fast-path redial with resumedFromServiceRestart', async () => {
  const { summary } = await runDemo();
  const restart = summary.outages.find((outage) => outage.kind === 'restart');
  assert(restart?.to !== undefined, 'the dialer came back after the restart');
  const fast = summary.dials.filter((dial) => dial.resumedFromServiceRestart);
  assert.equal(summary.fastPathRedials, 1);
  assert.equal(fast.length, 1);
  assert.equal(fast[0].reason, 'reconnect');
  assert.equal(fast[0].attempt, 0, 'the fast path consumes no attempt');
  // Redialled within the GOAWAY spread (1000 ms) of the restart, and established at once.
  assert(fast[0].at >= restart.from && fast[0].at <= restart.from + 1500, `${fast[0].at}`);
  const reopened = summary.opens[1];
  assert.deepEqual(
    { reconnected: reopened.reconnected, attempts: reopened.attempts, welcome: reopened.welcome },
    { reconnected: true, attempts: 0, welcome: 'acceptor #2' },
  );
  assert(restart.to - restart.from < 2000, `restart outage ${restart.to - restart.from} ms`);
});

test('WSM-RCN-002 npm run demo redials the stopped acceptor on the backoff schedule until it is back', async () => {
  const { summary } = await runDemo();
  const stop = summary.outages.find((outage) => outage.kind === 'stop');
  assert(stop?.to !== undefined, 'the dialer came back after the stop');
  const schedule = new Reconnect({ initialDelayMs: 200, factor: 2, maxDelayMs: 2000, jitter: 0.3 });
  const waits = summary.reconnecting.filter((r) => r.at >= stop.from);
  // Stopped 4 s: a wait after the loss, then one after each refused redial; the seeded waits of
  // 238, 447 and 760 ms end by 1.5 s, so a fourth wait (1717 ms) starts well inside the outage
  // (a fifth too on an idle machine; asking for four leaves room for late timers under load).
  assert(waits.length >= 4, `${waits.length} redials`);
  assert.deepEqual(waits.map((r) => r.attempt), waits.map((_, i) => i));
  for (const r of waits) {
    const base = unjitteredDelay(r.attempt, schedule);
    assert(
      r.delayMs >= base * 0.7 && r.delayMs <= base * 1.3,
      `attempt ${r.attempt}: ${r.delayMs} ms, schedule ${base} ms ±30 %`,
    );
    const dial = summary.dials.find((d) => d.at >= r.at && d.attempt === r.attempt);
    assert(dial, `no redial after the wait of attempt ${r.attempt}`);
    assert.equal(dial.resumedFromServiceRestart, false);
    // The wait starts as the redial is scheduled: after a loss that is just before onClose (whose
    // own work delays onReconnecting under load), after a refused redial just before
    // onReconnecting.
    const close = summary.closes.findLast((c) => c.at <= r.at);
    const from = r.attempt === 0 && close ? close.at : r.at;
    assert(
      dial.at - from >= r.delayMs - 5,
      `attempt ${r.attempt} redialled ${Math.round(dial.at - from)} ms after its wait of ${
        Math.round(r.delayMs)
      } ms began`,
    );
  }
  assert.deepEqual(summary.backoffDelaysMs, waits.map((r) => Math.round(r.delayMs)));
  const back = summary.opens[2];
  assert.equal(back.welcome, 'acceptor #3');
  assert.equal(back.attempts, waits.length - 1, 'every redial but the last failed');
  assert.equal(summary.reconnects, 2);
  const longest = Math.max(...summary.outages.map((outage) => outage.ms));
  assert.equal(summary.longestOutageMs, longest);
  assert.equal(longest, Math.round(stop.to - stop.from), 'the stop is the longest outage');
});

test('npm run demo: requests fail only during the two outages', async () => {
  const { summary } = await runDemo();
  assert.equal(summary.requests.failedOutsideOutages, 0);
  assert(summary.requests.failed > 0, 'requests made while the acceptor was stopped failed');
  // 18 s at one request per 200 ms is about 90; about 6 s of outage.
  assert(summary.requests.ok >= 40, `${summary.requests.ok} ok`);
  assert(summary.requests.ok + summary.requests.failed >= 80);
});
