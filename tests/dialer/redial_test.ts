// The redial policy as a table: after a loss and after a failed redial, what the dialer does for
// each close code, GOAWAY, attempt count and hello rejection (WSM-RCN-002, -003, -020, -044,
// WSM-DIAL-004, WSM-WIRE-003). Pure: no sockets, no timers.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  afterFailure,
  afterLoss,
  type Failure,
  type FailureRedial,
  type Loss,
  type Redial,
} from '../../lib/dialer/_redial.ts';
import type { RedialPolicy } from '../../lib/dialer/_dial_options.ts';
import { DEFAULT_CLOSE_CODES, Reconnect } from 'muxws';

const NOW = 1_700_000_000_000;

/** The default policy, with a draw of 0 (no jitter) unless `draw` says otherwise. */
function policy(extra: Partial<RedialPolicy> = {}): RedialPolicy {
  return {
    reconnect: new Reconnect(),
    draw: () => 0,
    serviceRestart: DEFAULT_CLOSE_CODES.serviceRestart,
    terminal: DEFAULT_CLOSE_CODES.terminal,
    serviceRestartDelayMs: 250,
    ...extra,
  };
}

/** A decision: `kind`, the attempts from now on, the wait. */
function redial(kind: Redial['kind'], attempts: number, delayMs: number): Redial {
  return { kind, attempts, delayMs };
}

/** `afterLoss()` of a 1006 loss with no attempts before, no flap, no GOAWAY, unless `extra`. */
function lost(policy: RedialPolicy, extra: Partial<Loss> = {}): Redial {
  return afterLoss(policy, {
    code: 1006,
    attempts: 0,
    flapped: false,
    goAway: undefined,
    now: NOW,
    ...extra,
  });
}

/** `afterFailure()` of a plain failed redial with no attempts before, unless `extra`. */
function failed(policy: RedialPolicy, extra: Partial<Failure> = {}): FailureRedial {
  return afterFailure(policy, {
    attempts: 0,
    fast: false,
    closeCode: undefined,
    helloRejection: undefined,
    lastWasAuth: false,
    retryAfterMs: undefined,
    ...extra,
  });
}

/** One row of a table: what happens, under which policy, after which loss or failure. */
interface Row<Input, Expected> {
  name: string;
  policy?: Partial<RedialPolicy>;
  given: Partial<Input>;
  expected: Expected;
}

const lossCases: Row<Loss, Redial>[] = [
  { name: '1006 backs off 250 ms', given: {}, expected: redial('backoff', 0, 250) },
  { name: '1000 backs off', given: { code: 1000 }, expected: redial('backoff', 0, 250) },
  { name: '1011 backs off', given: { code: 1011 }, expected: redial('backoff', 0, 250) },
  {
    name: '4000 (own heartbeat) backs off',
    given: { code: 4000 },
    expected: redial('backoff', 0, 250),
  },
  {
    name: 'the backoff grows with the attempts',
    given: { attempts: 3 },
    expected: redial('backoff', 3, 2000),
  },
  {
    name: 'the backoff is capped at maxDelayMs',
    given: { attempts: 20 },
    expected: redial('backoff', 20, 30_000),
  },
  {
    name: 'a flap before stableAfterMs counts as a failure',
    given: { attempts: 1, flapped: true },
    expected: redial('backoff', 2, 1000),
  },
  ...DEFAULT_CLOSE_CODES.terminal.map((code): Row<Loss, Redial> => ({
    name: `${code} is terminal`,
    given: { code },
    expected: redial('terminal', 0, 0),
  })),
  {
    name: 'a configured terminal code stops',
    policy: { terminal: [4409] },
    given: { code: 4409 },
    expected: redial('terminal', 0, 0),
  },
  {
    name: 'a configured terminal list replaces the default',
    policy: { terminal: [4409] },
    given: { code: 1008 },
    expected: redial('backoff', 0, 250),
  },
  {
    name: '1012 redials fast, consuming no attempt',
    given: { code: 1012, attempts: 4 },
    expected: redial('fast', 4, 250),
  },
  {
    name: 'the fast delay is jittered with the schedule jitter',
    policy: { draw: () => 1 },
    given: { code: 1012 },
    expected: redial('fast', 0, 325),
  },
  {
    name: 'a configured service-restart code redials fast',
    policy: { serviceRestart: [4503] },
    given: { code: 4503 },
    expected: redial('fast', 0, 250),
  },
  {
    name: 'a GOAWAY without spreadMs redials fast',
    given: { code: 1000, goAway: { at: NOW - 100, spreadMs: 0 } },
    expected: redial('fast', 0, 250),
  },
  {
    name: 'a GOAWAY spreadMs redials at its receipt plus a uniform share',
    policy: { draw: () => 0 },
    given: { code: 1000, goAway: { at: NOW - 1000, spreadMs: 4000 } },
    expected: redial('fast', 0, 1000),
  },
  {
    name: 'a GOAWAY spread already passed redials at once',
    policy: { draw: () => -1 },
    given: { code: 1000, goAway: { at: NOW - 1000, spreadMs: 4000 } },
    expected: redial('fast', 0, 0),
  },
  {
    name: 'a GOAWAY before a terminal code still stops',
    given: { code: 1008, goAway: { at: NOW, spreadMs: 0 } },
    expected: redial('terminal', 0, 0),
  },
  {
    name: 'reconnect false stops',
    policy: { reconnect: false },
    given: {},
    expected: redial('terminal', 0, 0),
  },
  {
    name: 'reconnect false stops a 1012 too',
    policy: { reconnect: false },
    given: { code: 1012 },
    expected: redial('terminal', 0, 0),
  },
  {
    name: 'maxAttempts exhausted stops',
    policy: { reconnect: new Reconnect({ maxAttempts: 2 }) },
    given: { attempts: 2 },
    expected: redial('terminal', 2, 0),
  },
  {
    name: 'maxAttempts 0 never redials',
    policy: { reconnect: new Reconnect({ maxAttempts: 0 }) },
    given: {},
    expected: redial('terminal', 0, 0),
  },
  {
    name: 'a flap that exhausts maxAttempts stops',
    policy: { reconnect: new Reconnect({ maxAttempts: 2 }) },
    given: { attempts: 1, flapped: true },
    expected: redial('terminal', 2, 0),
  },
];

for (const row of lossCases) {
  test(`afterLoss(): ${row.name} (WSM-RCN-020)`, () => {
    assert.deepEqual(lost(policy(row.policy), row.given), row.expected);
  });
}

/** A decision after a failed redial: {@linkcode redial} with whether it was an auth rejection. */
function after(
  kind: Redial['kind'],
  attempts: number,
  delayMs: number,
  auth: boolean,
): FailureRedial {
  return { kind, attempts, delayMs, auth };
}

const failureCases: Row<Failure, FailureRedial>[] = [
  {
    name: 'a failed redial counts and backs off',
    given: {},
    expected: after('backoff', 1, 500, false),
  },
  {
    name: 'a failed fast redial consumes no attempt',
    given: { fast: true, attempts: 2 },
    expected: after('backoff', 2, 1000, false),
  },
  {
    name: 'a terminal close of the attempt socket stops',
    given: { closeCode: 4401 },
    expected: after('terminal', 1, 0, false),
  },
  {
    name: 'a configured terminal close of the attempt socket stops',
    policy: { terminal: [4409] },
    given: { closeCode: 4409 },
    expected: after('terminal', 1, 0, false),
  },
  {
    name: 'a non-terminal close of the attempt socket backs off',
    given: { closeCode: 1006 },
    expected: after('backoff', 1, 500, false),
  },
  {
    name: 'one unauthorized hello backs off and is remembered',
    given: { helloRejection: 'unauthorized' },
    expected: after('backoff', 1, 500, true),
  },
  {
    name: 'unauthorized twice in a row stops',
    given: { helloRejection: 'unauthorized', lastWasAuth: true },
    expected: after('terminal', 1, 0, true),
  },
  {
    name: 'forbidden after unauthorized stops',
    given: { helloRejection: 'forbidden', lastWasAuth: true },
    expected: after('terminal', 1, 0, true),
  },
  {
    name: 'another rejection after unauthorized backs off and forgets it',
    given: { helloRejection: 'invalid', lastWasAuth: true },
    expected: after('backoff', 1, 500, false),
  },
  {
    name: 'maxAttempts exhausted stops',
    policy: { reconnect: new Reconnect({ maxAttempts: 3 }) },
    given: { attempts: 2 },
    expected: after('terminal', 3, 0, false),
  },
  {
    name: 'reconnect false stops',
    policy: { reconnect: false },
    given: {},
    expected: after('terminal', 1, 0, false),
  },
  {
    name: 'Retry-After longer than the backoff holds the redial',
    given: { retryAfterMs: 5000 },
    expected: after('backoff', 1, 5000, false),
  },
  {
    name: 'Retry-After past maxDelayMs is capped at it',
    given: { retryAfterMs: 120_000 },
    expected: after('backoff', 1, 30_000, false),
  },
  {
    name: 'Retry-After shorter than the backoff leaves the backoff',
    given: { attempts: 3, retryAfterMs: 1000 },
    expected: after('backoff', 4, 4000, false),
  },
  {
    name: 'Retry-After does not override a terminal close',
    given: { closeCode: 1008, retryAfterMs: 1000 },
    expected: after('terminal', 1, 0, false),
  },
];

for (const row of failureCases) {
  test(`afterFailure(): ${row.name} (WSM-RCN-020, WSM-DIAL-004)`, () => {
    assert.deepEqual(failed(policy(row.policy), row.given), row.expected);
  });
}

test('afterLoss() draws once per decision, only when it redials (WSM-RCN-002)', () => {
  let draws = 0;
  const draw = () => (draws++, 0);
  lost(policy({ draw }), { code: 1008 });
  lost(policy({ draw, reconnect: false }));
  assert.equal(draws, 0);
  lost(policy({ draw }));
  lost(policy({ draw }), { code: 1012 });
  lost(policy({ draw }), { goAway: { at: NOW, spreadMs: 100 } });
  assert.equal(draws, 3);
});
