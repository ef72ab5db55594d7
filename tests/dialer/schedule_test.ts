import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  backoffDelay,
  MuxwsError,
  type RandomDraw,
  Reconnect,
  type ReconnectOptions,
  seededDraw,
  shouldRetry,
  uniform,
  unjitteredDelay,
} from 'muxws';

/** Asserts that `fn` throws a plain `Error` (not a subclass, not a muxws error) matching `pattern`. */
function assertPlainError(fn: () => unknown, pattern: RegExp): void {
  assert.throws(fn, (error: unknown) => {
    assert.ok(error instanceof Error, 'expected an Error');
    assert.equal(error.constructor, Error, `expected a plain Error, got ${error.constructor.name}`);
    assert.ok(!(error instanceof MuxwsError), 'a configuration error is not a MuxwsError');
    assert.match(error.message, pattern);
    return true;
  });
}

const fixed = (value: number): RandomDraw => () => value;

// --- Reconnect ---------------------------------------------------------------------------------

test('WSM-RCN-002 new Reconnect() has the defaults 250 ms, factor 2, 30000 ms, jitter 0.3, unlimited attempts', () => {
  const schedule = new Reconnect();
  assert.equal(schedule.initialDelayMs, 250);
  assert.equal(schedule.factor, 2);
  assert.equal(schedule.maxDelayMs, 30_000);
  assert.equal(schedule.jitter, 0.3);
  assert.equal(schedule.maxAttempts, Infinity);
  assert.deepEqual({ ...new Reconnect({}) }, { ...schedule });
});

test('WSM-RCN-002 Reconnect keeps every given option and defaults the ones left out or undefined', () => {
  const patient: ReconnectOptions = { initialDelayMs: 500, maxDelayMs: 60_000, jitter: 0.5 };
  const impatient: ReconnectOptions = { initialDelayMs: 50, maxAttempts: 3 };
  assert.equal(new Reconnect(patient).maxDelayMs, 60_000);
  assert.equal(new Reconnect(patient).initialDelayMs, 500);
  assert.equal(new Reconnect(patient).jitter, 0.5);
  assert.equal(new Reconnect(patient).factor, 2);
  assert.equal(new Reconnect(impatient).maxAttempts, 3);
  assert.equal(new Reconnect(impatient).initialDelayMs, 50);
  assert.equal(new Reconnect({ factor: undefined }).factor, 2);
  const all = new Reconnect({
    initialDelayMs: 10,
    factor: 3,
    maxDelayMs: 900,
    jitter: 0,
    maxAttempts: 7,
  });
  assert.deepEqual({ ...all }, {
    initialDelayMs: 10,
    factor: 3,
    maxDelayMs: 900,
    jitter: 0,
    maxAttempts: 7,
  });
});

test('WSM-RCN-002 a Reconnect is frozen, so a running schedule cannot be changed', () => {
  const schedule = new Reconnect();
  assert.ok(Object.isFrozen(schedule));
  assert.throws(() => {
    (schedule as { factor: number }).factor = 10;
  }, TypeError);
  assert.equal(schedule.factor, 2);
});

test('WSM-RCN-002 Reconnect rejects initialDelayMs not greater than 0 (NaN included) with a plain Error', () => {
  for (const initialDelayMs of [0, -0, -1, -Infinity, NaN]) {
    assertPlainError(
      () => new Reconnect({ initialDelayMs }),
      /^Cannot create Reconnect as "initialDelayMs" must be greater than 0: current value is /,
    );
  }
  assertPlainError(() => new Reconnect({ initialDelayMs: NaN }), /current value is NaN$/);
  assertPlainError(() => new Reconnect({ initialDelayMs: -1 }), /current value is -1$/);
  assert.equal(new Reconnect({ initialDelayMs: 0.001 }).initialDelayMs, 0.001);
});

test('WSM-RCN-002 Reconnect rejects factor below 1 (NaN included) with a plain Error and accepts 1', () => {
  for (const factor of [0.5, 0.999, 0, -2, NaN]) {
    assertPlainError(
      () => new Reconnect({ factor }),
      /^Cannot create Reconnect as "factor" must be at least 1: current value is /,
    );
  }
  assertPlainError(() => new Reconnect({ factor: 0.5 }), /current value is 0\.5$/);
  assert.equal(new Reconnect({ factor: 1 }).factor, 1);
});

test('WSM-RCN-002 Reconnect rejects a NaN maxDelayMs and accepts any other number, even below initialDelayMs', () => {
  assertPlainError(
    () => new Reconnect({ maxDelayMs: NaN }),
    /^Cannot create Reconnect as "maxDelayMs" must be a number, not NaN: current value is NaN$/,
  );
  for (const maxDelayMs of [0, -5, 100, Infinity]) {
    assert.equal(new Reconnect({ maxDelayMs }).maxDelayMs, maxDelayMs);
  }
});

test('WSM-RCN-002 Reconnect rejects jitter outside 0 to 1 (NaN included) with a plain Error and accepts both bounds', () => {
  for (const jitter of [-0.01, 1.01, -1, 2, Infinity, NaN]) {
    assertPlainError(
      () => new Reconnect({ jitter }),
      /^Cannot create Reconnect as "jitter" must be from 0 to 1: current value is /,
    );
  }
  assert.equal(new Reconnect({ jitter: 0 }).jitter, 0);
  assert.equal(new Reconnect({ jitter: 1 }).jitter, 1);
});

test('WSM-RCN-002 Reconnect rejects a non-number setting from an untyped caller with a plain Error', () => {
  const untyped = (options: Record<string, unknown>) => new Reconnect(options as ReconnectOptions);
  assertPlainError(() => untyped({ initialDelayMs: '250' }), /"initialDelayMs".*"250"$/);
  assertPlainError(() => untyped({ factor: '2' }), /"factor".*"2"$/);
  assertPlainError(() => untyped({ maxDelayMs: '30000' }), /"maxDelayMs".*"30000"$/);
  assertPlainError(() => untyped({ jitter: null }), /"jitter".*null$/);
});

test('WSM-RCN-044 Reconnect does not validate maxAttempts: negative and NaN values are kept as given', () => {
  assert.equal(new Reconnect({ maxAttempts: -3 }).maxAttempts, -3);
  assert.ok(Number.isNaN(new Reconnect({ maxAttempts: NaN }).maxAttempts));
  assert.equal(new Reconnect({ maxAttempts: 0 }).maxAttempts, 0);
});

// --- unjitteredDelay ---------------------------------------------------------------------------

test('WSM-RCN-002 unjitteredDelay() doubles from 250 ms and holds the 30000 ms cap with the defaults', () => {
  const schedule = new Reconnect({ initialDelayMs: 250, factor: 2, maxDelayMs: 30_000 });
  assert.deepEqual(
    [0, 1, 2, 3, 4, 5, 6, 7, 8, 9].map((attempt) => unjitteredDelay(attempt, schedule)),
    [250, 500, 1000, 2000, 4000, 8000, 16_000, 30_000, 30_000, 30_000],
  );
  assert.equal(unjitteredDelay(50, schedule), 30_000);
});

test('WSM-RCN-002 unjitteredDelay() caps a fast-growing schedule at maxDelayMs', () => {
  const capped = new Reconnect({ initialDelayMs: 1000, factor: 10, maxDelayMs: 5000 });
  assert.deepEqual(
    [0, 1, 2, 3].map((attempt) => unjitteredDelay(attempt, capped)),
    [1000, 5000, 5000, 5000],
  );
});

test('WSM-RCN-002 unjitteredDelay() gives maxDelayMs when factor ** attempts overflows', () => {
  const schedule = new Reconnect();
  assert.equal(2 ** 5000, Infinity); // the overflow this test is about
  assert.equal(unjitteredDelay(5000, schedule), 30_000);
  assert.equal(unjitteredDelay(Infinity, schedule), 30_000);
  assert.equal(unjitteredDelay(1e6, new Reconnect({ factor: 1.5, maxDelayMs: 123 })), 123);
});

test('WSM-RCN-002 a maxDelayMs below initialDelayMs caps every delay, jittered or not', () => {
  const schedule = new Reconnect({ initialDelayMs: 1000, maxDelayMs: 300, jitter: 0.5 });
  for (const attempt of [0, 1, 2, 10, 5000]) {
    assert.equal(unjitteredDelay(attempt, schedule), 300);
    assert.equal(backoffDelay(attempt, schedule, fixed(0)), 300);
    assert.equal(backoffDelay(attempt, schedule, fixed(-1)), 150);
    assert.equal(backoffDelay(attempt, schedule, fixed(1)), 450);
  }
});

test('WSM-RCN-002 factor 1 gives a fixed interval at every attempt count, even Infinity', () => {
  const schedule = new Reconnect({ initialDelayMs: 400, factor: 1 });
  for (const attempt of [0, 1, 30, 5000, Infinity]) {
    assert.equal(unjitteredDelay(attempt, schedule), 400);
  }
});

test('WSM-RCN-002 unjitteredDelay() does not check attempts: a negative count gives a delay below initialDelayMs', () => {
  const schedule = new Reconnect();
  assert.equal(unjitteredDelay(-1, schedule), 125);
  assert.equal(unjitteredDelay(-2, schedule), 62.5);
  assert.ok(Number.isNaN(unjitteredDelay(NaN, schedule)));
});

// --- backoffDelay ------------------------------------------------------------------------------

test('WSM-RCN-002 backoffDelay() multiplies the capped delay by 1 + draw() * jitter', () => {
  const schedule = new Reconnect({
    initialDelayMs: 1000,
    factor: 2,
    maxDelayMs: 30_000,
    jitter: 0.5,
  });
  assert.deepEqual(
    [0, 1, 2, 3].map((n) => backoffDelay(n, schedule, fixed(0))),
    [1000, 2000, 4000, 8000],
  );
  assert.equal(backoffDelay(0, schedule, fixed(-1)), 500);
  assert.equal(backoffDelay(0, schedule, fixed(1)), 1500);
  assert.equal(backoffDelay(0, schedule, fixed(0.5)), 1250);
  assert.equal(backoffDelay(3, schedule, fixed(-0.5)), 6000);
});

test('WSM-RCN-002 backoffDelay() applies jitter after the cap, so capped delays stay dispersed', () => {
  const schedule = new Reconnect({ initialDelayMs: 1000, maxDelayMs: 30_000, jitter: 0.5 });
  assert.equal(backoffDelay(20, schedule, fixed(-1)), 15_000);
  assert.equal(backoffDelay(20, schedule, fixed(1)), 45_000);
  assert.equal(backoffDelay(5000, schedule, fixed(0.2)), 33_000);
  const draw = seededDraw('capped');
  const delays = new Set(Array.from({ length: 50 }, () => backoffDelay(40, schedule, draw)));
  assert.equal(delays.size, 50, 'every capped retry gets its own delay');
});

test('WSM-RCN-002 backoffDelay() clamps the jittered delay at 0', () => {
  const full = new Reconnect({ initialDelayMs: 1000, jitter: 1 });
  assert.equal(backoffDelay(0, full, fixed(-1)), 0);
  assert.equal(backoffDelay(5000, full, fixed(-1)), 0);
  assert.equal(backoffDelay(0, full, fixed(1)), 2000);
  const negativeCap = new Reconnect({ maxDelayMs: -50, jitter: 0.3 });
  for (const value of [-1, 0, 0.99, 1]) {
    assert.equal(backoffDelay(3, negativeCap, fixed(value)), 0);
  }
  const unboundedCap = new Reconnect({ maxDelayMs: Infinity, jitter: 1 });
  assert.equal(backoffDelay(5000, unboundedCap, fixed(-1)), 0, 'not NaN');
  assert.equal(backoffDelay(5000, unboundedCap, fixed(0)), Infinity);
});

test('WSM-RCN-002 backoffDelay() with jitter 0 returns the unjittered delay whatever the draw', () => {
  const schedule = new Reconnect({ jitter: 0 });
  for (const value of [-1, -0.3, 0, 0.7, 1]) {
    assert.equal(backoffDelay(2, schedule, fixed(value)), 1000);
  }
});

test('WSM-RCN-002 backoffDelay() throws a plain Error on a negative or NaN attempt count', () => {
  const schedule = new Reconnect();
  let calls = 0;
  const counting: RandomDraw = () => {
    calls++;
    return 0;
  };
  assertPlainError(
    () => backoffDelay(-1, schedule),
    /^Cannot compute a backoff delay as "attempts" must not be negative: current value is -1$/,
  );
  assertPlainError(() => backoffDelay(-0.5, schedule, counting), /current value is -0\.5$/);
  assertPlainError(() => backoffDelay(NaN, schedule, counting), /current value is NaN$/);
  assert.equal(calls, 0, 'nothing is drawn for a rejected call');
  assert.equal(backoffDelay(0, schedule, counting), 250);
});

test('WSM-RCN-030 backoffDelay() calls draw exactly once', () => {
  const schedule = new Reconnect();
  let calls = 0;
  backoffDelay(4, schedule, () => {
    calls++;
    return 0.1;
  });
  assert.equal(calls, 1);
});

test('WSM-RCN-002 backoffDelay() applies the formula to a draw outside -1 to 1 and clamps only the result at 0', () => {
  const schedule = new Reconnect({ initialDelayMs: 1000, maxDelayMs: 30_000, jitter: 0.5 });
  // Above: nothing but 0 is a bound, so the formula runs as written.
  assert.equal(backoffDelay(0, schedule, fixed(2)), 2000);
  assert.equal(backoffDelay(0, schedule, fixed(1.5)), 1750);
  assert.equal(backoffDelay(20, schedule, fixed(3)), 75_000);
  assert.equal(backoffDelay(0, schedule, fixed(Infinity)), Infinity);
  // Below: the jittered value is clamped at 0.
  assert.equal(backoffDelay(0, schedule, fixed(-1.5)), 250);
  assert.equal(backoffDelay(0, schedule, fixed(-2)), 0);
  assert.equal(backoffDelay(0, schedule, fixed(-4)), 0);
  assert.equal(backoffDelay(0, schedule, fixed(-Infinity)), 0);
  // NaN and non-numbers: no delay the formula could give, so the clamp gives 0.
  assert.equal(backoffDelay(0, schedule, fixed(NaN)), 0);
  assert.equal(backoffDelay(0, schedule, (() => '0.5') as unknown as RandomDraw), 0);
  assert.equal(backoffDelay(0, schedule, (() => undefined) as unknown as RandomDraw), 0);
  assert.equal(backoffDelay(0, schedule, (() => 1n) as unknown as RandomDraw), 0);
  const unboundedCap = new Reconnect({ maxDelayMs: Infinity, jitter: 0.5 });
  assert.equal(backoffDelay(5000, unboundedCap, fixed(-2)), 0, 'not NaN');
  // Jitter 0 disables jitter: the draw does not matter, whatever it is.
  const fixedInterval = new Reconnect({ initialDelayMs: 1000, factor: 1, jitter: 0 });
  for (const value of [-2, 2, NaN, Infinity, -Infinity]) {
    assert.equal(backoffDelay(3, fixedInterval, fixed(value)), 1000, String(value));
  }
});

test('WSM-RCN-030 backoffDelay() defaults to uniform, keeping every delay within the jitter range', () => {
  const schedule = new Reconnect();
  const delays = Array.from({ length: 2000 }, () => backoffDelay(0, schedule));
  assert.ok(delays.every((d) => d >= 175 && d < 325), 'inside 250 ms ± 30 %');
  assert.ok(Math.min(...delays) < 185 && Math.max(...delays) > 315, 'spread over the range');
});

// --- shouldRetry -------------------------------------------------------------------------------

test('WSM-RCN-044 shouldRetry() allows attempts below maxAttempts only', () => {
  const limited = new Reconnect({ maxAttempts: 3 });
  assert.deepEqual(
    [0, 1, 2, 3, 4].map((attempt) => shouldRetry(attempt, limited)),
    [true, true, true, false, false],
  );
});

test('WSM-RCN-044 shouldRetry() is always true for the default unlimited schedule', () => {
  const unlimited = new Reconnect();
  for (const attempt of [0, 1, 1_000_000, Number.MAX_SAFE_INTEGER, Number.MAX_VALUE]) {
    assert.equal(shouldRetry(attempt, unlimited), true);
  }
});

test('WSM-RCN-044 shouldRetry() with maxAttempts 0 gives up before the first redial', () => {
  assert.equal(shouldRetry(0, new Reconnect({ maxAttempts: 0 })), false);
});

test('WSM-RCN-044 shouldRetry() treats a negative or NaN maxAttempts as 0', () => {
  const zero = new Reconnect({ maxAttempts: 0 });
  for (const maxAttempts of [-1, -3, -Infinity, NaN]) {
    const schedule = new Reconnect({ maxAttempts });
    for (const attempt of [-1, 0, 1, 2, 10]) {
      assert.equal(
        shouldRetry(attempt, schedule),
        shouldRetry(attempt, zero),
        `maxAttempts ${maxAttempts}, attempt ${attempt}`,
      );
    }
    assert.equal(shouldRetry(0, schedule), false);
  }
});

// --- uniform -----------------------------------------------------------------------------------

test('WSM-RCN-030 uniform() returns values from -1 (inclusive) to 1 (exclusive) from Math.random', () => {
  const original = Math.random;
  try {
    Math.random = () => 0;
    assert.equal(uniform(), -1);
    Math.random = () => 0.5;
    assert.equal(uniform(), 0);
    Math.random = () => 1 - 2 ** -53;
    assert.ok(uniform() < 1);
  } finally {
    Math.random = original;
  }
  const values = Array.from({ length: 5000 }, uniform);
  assert.ok(values.every((v) => v >= -1 && v < 1));
  const mean = values.reduce((a, b) => a + b, 0) / values.length;
  assert.ok(Math.abs(mean) < 0.05, `mean ${mean}`);
});

// --- seededDraw --------------------------------------------------------------------------------

/** Pearson correlation of two equally long samples. */
function correlation(xs: number[], ys: number[]): number {
  const n = xs.length;
  const mx = xs.reduce((a, b) => a + b, 0) / n;
  const my = ys.reduce((a, b) => a + b, 0) / n;
  let sxy = 0;
  let sxx = 0;
  let syy = 0;
  for (let i = 0; i < n; i++) {
    sxy += (xs[i] - mx) * (ys[i] - my);
    sxx += (xs[i] - mx) ** 2;
    syy += (ys[i] - my) ** 2;
  }
  return sxy / Math.sqrt(sxx * syy);
}

test('WSM-RCN-030 seededDraw() gives the same sequence for the same seed, on every runtime', () => {
  const a = seededDraw('client-1');
  const b = seededDraw('client-1');
  const first = Array.from({ length: 200 }, a);
  assert.deepEqual(Array.from({ length: 200 }, b), first);
  // Pinned values: the sequence is part of the contract (reproducible spread per identity), so
  // a change to the hash or the generator must be deliberate.
  // Each value is a 32-bit output u mapped to u / 2 ** 31 - 1, so the comparison is exact.
  assert.deepEqual(
    first.slice(0, 3),
    [2470282802, 475134877, 1368065631].map((u) => u / 2 ** 31 - 1),
  );
});

test('WSM-RCN-030 seededDraw() returns values from -1 (inclusive) to 1 (exclusive), fresh on every call', () => {
  const draw = seededDraw('range');
  const values = Array.from({ length: 100_000 }, draw);
  assert.ok(values.every((v) => typeof v === 'number' && v >= -1 && v < 1));
  assert.ok(Math.min(...values) < -0.999 && Math.max(...values) > 0.999);
  assert.ok(new Set(values).size > 99_990, 'values do not repeat in a short cycle');
  const mean = values.reduce((a, b) => a + b, 0) / values.length;
  assert.ok(Math.abs(mean) < 0.01, `mean ${mean}`);
  const lag1 = correlation(values.slice(0, -1), values.slice(1));
  assert.ok(Math.abs(lag1) < 0.015, `consecutive values correlate: ${lag1}`);
});

test('WSM-RCN-030 seededDraw() keeps no shared state: interleaved draws give each seed its own sequence', () => {
  const xAlone = Array.from({ length: 20 }, seededDraw('x'));
  const yAlone = Array.from({ length: 40 }, seededDraw('y'));
  const x = seededDraw('x');
  const y = seededDraw('y');
  const xAgain = seededDraw('x');
  const xs: number[] = [];
  const ys: number[] = [];
  for (let i = 0; i < 20; i++) {
    xs.push(x());
    ys.push(y(), y());
  }
  assert.deepEqual(xs, xAlone);
  assert.deepEqual(ys, yAlone);
  assert.deepEqual(
    Array.from({ length: 20 }, xAgain),
    xAlone,
    'another draw of one seed is untouched',
  );
});

test('WSM-RCN-030 seededDraw() draws nothing from Math.random or crypto', () => {
  const random = Math.random;
  const getRandomValues = crypto.getRandomValues;
  try {
    Math.random = () => {
      throw new Error('Math.random was called');
    };
    crypto.getRandomValues = () => {
      throw new Error('crypto.getRandomValues was called');
    };
    const draw = seededDraw('no-global-rng');
    assert.equal(typeof draw(), 'number');
  } finally {
    Math.random = random;
    crypto.getRandomValues = getRandomValues;
  }
});

test('WSM-RCN-030 seededDraw() gives different seeds uncorrelated, uniform sequences', () => {
  const n = 20_000;
  const firsts: number[] = [];
  const seconds: number[] = [];
  for (let i = 0; i < n; i++) {
    const draw = seededDraw(`client-${i}`);
    firsts.push(draw());
    seconds.push(draw());
  }
  // Neighbouring identities do not move together.
  const neighbours = correlation(firsts.slice(0, -1), firsts.slice(1));
  assert.ok(Math.abs(neighbours) < 0.03, `neighbouring seeds correlate: ${neighbours}`);
  // One client's attempt k does not predict its attempt k + 1 across the cohort.
  const nextAttempt = correlation(firsts, seconds);
  assert.ok(Math.abs(nextAttempt) < 0.03, `attempt k predicts k + 1: ${nextAttempt}`);
  // First draws over the cohort are uniform: chi-square over 20 bins (19 degrees of freedom,
  // 60 is far beyond the 99.99th percentile of about 47).
  const bins = new Array(20).fill(0);
  for (const v of firsts) bins[Math.floor((v + 1) * 10)]++;
  const expected = n / 20;
  const chiSquare = bins.reduce((sum, count) => sum + (count - expected) ** 2 / expected, 0);
  assert.ok(chiSquare < 60, `first draws are not uniform: chi-square ${chiSquare}`);
  // Pairs sharing one of 100 buckets at one draw share one at the next about 1 % of the time, as
  // for independent draws; a cohort translated by one constant (seed 003) would keep ~100 %.
  const pairs = new Map<number, number>();
  const stillPairs = new Map<number, number>();
  for (let i = 0; i < n; i++) {
    const k = Math.floor((firsts[i] + 1) * 50);
    const k1 = Math.floor((seconds[i] + 1) * 50);
    pairs.set(k, (pairs.get(k) ?? 0) + 1);
    stillPairs.set(k * 100 + k1, (stillPairs.get(k * 100 + k1) ?? 0) + 1);
  }
  const choose2 = (c: number) => (c * (c - 1)) / 2;
  let together = 0;
  let stillTogether = 0;
  for (const c of pairs.values()) together += choose2(c);
  for (const c of stillPairs.values()) stillTogether += choose2(c);
  const share = stillTogether / together;
  assert.ok(share > 0.007 && share < 0.013, `share of pairs still together: ${share}`);
});

test('WSM-RCN-030 seededDraw() separates seeds that differ in one character, and accepts the empty seed', () => {
  const seeds = ['', ' ', 'a', 'b', 'ab', 'ba', 'client-1', 'client-2', 'client-10', '\u{1F600}'];
  const firsts = seeds.map((seed) => seededDraw(seed)());
  assert.equal(new Set(firsts).size, seeds.length);
  for (const v of firsts) assert.ok(v >= -1 && v < 1);
});

test('WSM-RCN-030 seededDraw() throws a TypeError for a seed that is not a string', () => {
  for (const seed of [42, undefined, null, {}, Symbol('s')]) {
    assert.throws(
      () => seededDraw(seed as unknown as string),
      (error: unknown) =>
        error instanceof TypeError &&
        /^Cannot create a seeded draw as "seed" must be a string: current value is /.test(
          error.message,
        ),
    );
  }
});

test('WSM-RCN-030 backoffDelay() with a seeded draw gives one client the same delays on every run', () => {
  const schedule = new Reconnect();
  const run = () => {
    const draw = seededDraw('user-1234');
    return Array.from({ length: 10 }, (_, attempt) => backoffDelay(attempt, schedule, draw));
  };
  const delays = run();
  assert.deepEqual(run(), delays);
  delays.forEach((delay, attempt) => {
    const base = unjitteredDelay(attempt, schedule);
    assert.ok(delay >= base * 0.7 && delay < base * 1.3, `attempt ${attempt}: ${delay}`);
  });
});
