// The verdict of the soak run (bench/_soak_verdict.ts): the heap after the last restart against
// the heap after the first, each the median of its readings, unsettled calls and unexpected
// errors. No SPEC rule covers benchmarks, so the names cite no rule id.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { Stats } from '../bench/_soak_dialers.ts';
import { heapReading, judge, type RuntimeResult, type ServerMem } from '../bench/_soak_verdict.ts';

const MB = 1_000_000;

function mem(heap: number, errors = 0): ServerMem {
  return { rss: 50 * MB, heap, peers: 300, errors, samples: [], kept: 0 };
}

function dialerStats(over: Partial<Stats> = {}): Stats {
  return {
    dialers: 300,
    rss: 0,
    heap: 0,
    calls: 1000,
    answered: 990,
    refused: 8,
    crossed: 2,
    inFlight: 0,
    unsettled: 0,
    reopened: 600,
    reconnected: 600,
    ticks: 0,
    broadcasts: 0,
    closes: {},
    states: { open: 300 },
    failedRedials: 0,
    errors: 0,
    kinds: {},
    samples: [],
    ...over,
  };
}

/** A run with one restart per list of heap readings (MB), finished with `final`. */
function run(periods: number[][], final = dialerStats(), acceptorErrors = 0): RuntimeResult {
  const result: RuntimeResult = {
    runtime: 'deno',
    dialers: 300,
    rows: [],
    restarts: [],
    verdict: { pass: false, reasons: [], unsettled: 0, unexpected: 0 },
  };
  heapReading(result, mem(1 * MB)); // before the first restart: not compared
  for (const [k, readings] of periods.entries()) {
    result.restarts.push({
      atMs: (k + 1) * 60_000,
      closeMs: 100,
      allBackMs: 2000,
      heap: 0,
      rss: 0,
      heaps: [],
      rsses: [],
    });
    for (const heap of readings) heapReading(result, mem(heap * MB));
  }
  result.final = { dialers: final, acceptor: mem(4 * MB, acceptorErrors) };
  return result;
}

test('soak: a heap that stays within 10 % from the first restart to the last passes', () => {
  const result = run([[4, 4.1, 3.9], [5, 4.2, 4.1, 4.3], [4.3, 4.2, 4.4]]);
  judge(result, undefined);
  assert.deepEqual(result.verdict.reasons, []);
  assert.equal(result.verdict.pass, true);
  assert.equal(result.verdict.heapAfterFirstRestart, 4 * MB);
  assert.equal(result.verdict.heapAfterLastRestart, 4.3 * MB);
});

test('soak: the heap after a restart is the median of its readings, so one high reading fails nothing', () => {
  const result = run([[3.3, 4.1, 4.2, 4.1], [4.1, 8, 4.1, 4.2, 3.9]]);
  judge(result, undefined);
  assert.equal(result.restarts[0].heap, 4.1 * MB);
  assert.equal(result.restarts[1].heap, 4.1 * MB);
  assert.equal(result.verdict.pass, true);
});

test("soak: a heap more than 10 % above the first restart's after the last fails, naming both", () => {
  const result = run([[10, 10, 10], [11.5, 11.6, 11.4]]);
  judge(result, undefined);
  assert.equal(result.verdict.pass, false);
  assert.deepEqual(result.verdict.reasons, [
    'the heap after the last restart is 15.0 % above the heap after the first (medians of 3 and 3 readings: 10.0 MB → 11.5 MB), more than 10 %',
  ]);
});

test('soak: fewer than two restarts leave nothing to compare and fail', () => {
  const result = run([[4, 4]]);
  judge(result, undefined);
  assert.equal(result.verdict.pass, false);
  assert.match(result.verdict.reasons[0], /there were 1$/);
});

test('soak: an unsettled call or an unexpected error on either side fails', () => {
  const unsettled = run([[4], [4]], dialerStats({ unsettled: 2 }));
  judge(unsettled, undefined);
  assert.deepEqual(unsettled.verdict.reasons, ['2 calls never settled']);

  const dialerError = run(
    [[4], [4]],
    dialerStats({ errors: 1, kinds: { 'call:TimeoutError': 1 }, samples: ['call: timeout'] }),
  );
  judge(dialerError, undefined);
  assert.equal(dialerError.verdict.unexpected, 1);
  assert.match(dialerError.verdict.reasons[0], /^1 unexpected errors: \{"call:TimeoutError":1\}/);

  const acceptorError = run([[4], [4]], dialerStats(), 3);
  judge(acceptorError, undefined);
  assert.equal(acceptorError.verdict.unexpected, 3);
  assert.equal(acceptorError.verdict.pass, false);
});

test('soak: a run that stopped early fails with what stopped it', () => {
  const result = run([[4], [4]]);
  delete result.final;
  judge(result, new Error('deno _soak_dialers exited before "FINAL"'));
  assert.deepEqual(result.verdict.reasons, [
    'the run failed: deno _soak_dialers exited before "FINAL"',
  ]);
});
