// The redial policy as a table: after a loss and after a failed redial, what the dialer does for
// each close code, GOAWAY, attempt count and hello rejection (WSM-RCN-002, -003, -020, -044,
// WSM-DIAL-004, WSM-WIRE-003). Pure: no sockets, no timers.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { afterFailure, afterLoss, type Redial } from '../../lib/dialer/_redial.ts';
import type { RedialPolicy } from '../../lib/dialer/_dial_options.ts';
import { DEFAULT_CLOSE_CODES, Reconnect } from '../../mod.ts';

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

/** The loss of an established connection, as the arguments of `afterLoss()` after the policy. */
interface Loss {
  code: number;
  attempts: number;
  flapped: boolean;
  goAway: { at: number; spreadMs: number } | undefined;
  now: number;
}

/** A failed redial attempt, as the arguments of `afterFailure()` after the policy. */
interface Failure {
  attempts: number;
  fast: boolean;
  closeCode: number | undefined;
  helloRejection: string | undefined;
  lastWasAuth: boolean;
  retryAfterMs: number | undefined;
}

/** `afterLoss()` of a 1006 loss with no attempts before, no flap, no GOAWAY, unless `extra`. */
function lost(policy: RedialPolicy, extra: Partial<Loss> = {}): Redial {
  const loss: Loss = {
    code: 1006,
    attempts: 0,
    flapped: false,
    goAway: undefined,
    now: NOW,
    ...extra,
  };
  return afterLoss(policy, loss.code, loss.attempts, loss.flapped, loss.goAway, loss.now);
}

/** `afterFailure()` of a plain failed redial with no attempts before, unless `extra`. */
function failed(policy: RedialPolicy, extra: Partial<Failure> = {}): readonly [...Redial, boolean] {
  const failure: Failure = {
    attempts: 0,
    fast: false,
    closeCode: undefined,
    helloRejection: undefined,
    lastWasAuth: false,
    retryAfterMs: undefined,
    ...extra,
  };
  return afterFailure(
    policy,
    failure.attempts,
    failure.fast,
    failure.closeCode,
    failure.helloRejection,
    failure.lastWasAuth,
    failure.retryAfterMs,
  );
}

const lossCases: [string, Partial<RedialPolicy>, Partial<Loss>, Redial][] = [
  ['1006 backs off 250 ms', {}, {}, ['backoff', 0, 250]],
  ['1000 backs off', {}, { code: 1000 }, ['backoff', 0, 250]],
  ['1011 backs off', {}, { code: 1011 }, ['backoff', 0, 250]],
  ['4000 (own heartbeat) backs off', {}, { code: 4000 }, ['backoff', 0, 250]],
  ['the backoff grows with the attempts', {}, { attempts: 3 }, ['backoff', 3, 2000]],
  ['the backoff is capped at maxDelayMs', {}, { attempts: 20 }, ['backoff', 20, 30_000]],
  ['a flap before stableAfterMs counts as a failure', {}, { attempts: 1, flapped: true }, [
    'backoff',
    2,
    1000,
  ]],
  ...DEFAULT_CLOSE_CODES.terminal.map((
    code,
  ): [string, Partial<RedialPolicy>, Partial<Loss>, Redial] => [
    `${code} is terminal`,
    {},
    { code },
    ['terminal', 0, 0],
  ]),
  ['a configured terminal code stops', { terminal: [4409] }, { code: 4409 }, ['terminal', 0, 0]],
  ['a configured terminal list replaces the default', { terminal: [4409] }, { code: 1008 }, [
    'backoff',
    0,
    250,
  ]],
  ['1012 redials fast, consuming no attempt', {}, { code: 1012, attempts: 4 }, ['fast', 4, 250]],
  ['the fast delay is jittered with the schedule jitter', { draw: () => 1 }, { code: 1012 }, [
    'fast',
    0,
    325,
  ]],
  ['a configured service-restart code redials fast', { serviceRestart: [4503] }, {
    code: 4503,
  }, ['fast', 0, 250]],
  ['a GOAWAY without spreadMs redials fast', {}, {
    code: 1000,
    goAway: { at: NOW - 100, spreadMs: 0 },
  }, ['fast', 0, 250]],
  ['a GOAWAY spreadMs redials at its receipt plus a uniform share', { draw: () => 0 }, {
    code: 1000,
    goAway: { at: NOW - 1000, spreadMs: 4000 },
  }, ['fast', 0, 1000]],
  ['a GOAWAY spread already passed redials at once', { draw: () => -1 }, {
    code: 1000,
    goAway: { at: NOW - 1000, spreadMs: 4000 },
  }, ['fast', 0, 0]],
  ['a GOAWAY before a terminal code still stops', {}, {
    code: 1008,
    goAway: { at: NOW, spreadMs: 0 },
  }, ['terminal', 0, 0]],
  ['reconnect false stops', { reconnect: false }, {}, ['terminal', 0, 0]],
  ['reconnect false stops a 1012 too', { reconnect: false }, { code: 1012 }, ['terminal', 0, 0]],
  ['maxAttempts exhausted stops', { reconnect: new Reconnect({ maxAttempts: 2 }) }, {
    attempts: 2,
  }, ['terminal', 2, 0]],
  ['maxAttempts 0 never redials', { reconnect: new Reconnect({ maxAttempts: 0 }) }, {}, [
    'terminal',
    0,
    0,
  ]],
  ['a flap that exhausts maxAttempts stops', { reconnect: new Reconnect({ maxAttempts: 2 }) }, {
    attempts: 1,
    flapped: true,
  }, ['terminal', 2, 0]],
];

for (const [name, extraPolicy, extraLoss, expected] of lossCases) {
  test(`afterLoss(): ${name} (WSM-RCN-020)`, () => {
    assert.deepEqual(lost(policy(extraPolicy), extraLoss), expected);
  });
}

const failureCases: [
  string,
  Partial<RedialPolicy>,
  Partial<Failure>,
  readonly [...Redial, boolean],
][] = [
  ['a failed redial counts and backs off', {}, {}, ['backoff', 1, 500, false]],
  ['a failed fast redial consumes no attempt', {}, { fast: true, attempts: 2 }, [
    'backoff',
    2,
    1000,
    false,
  ]],
  ['a terminal close of the attempt socket stops', {}, { closeCode: 4401 }, [
    'terminal',
    1,
    0,
    false,
  ]],
  ['a configured terminal close of the attempt socket stops', { terminal: [4409] }, {
    closeCode: 4409,
  }, ['terminal', 1, 0, false]],
  ['a non-terminal close of the attempt socket backs off', {}, { closeCode: 1006 }, [
    'backoff',
    1,
    500,
    false,
  ]],
  ['one unauthorized hello backs off and is remembered', {}, {
    helloRejection: 'unauthorized',
  }, ['backoff', 1, 500, true]],
  ['unauthorized twice in a row stops', {}, {
    helloRejection: 'unauthorized',
    lastWasAuth: true,
  }, ['terminal', 1, 0, true]],
  ['forbidden after unauthorized stops', {}, { helloRejection: 'forbidden', lastWasAuth: true }, [
    'terminal',
    1,
    0,
    true,
  ]],
  ['another rejection after unauthorized backs off and forgets it', {}, {
    helloRejection: 'invalid',
    lastWasAuth: true,
  }, ['backoff', 1, 500, false]],
  ['maxAttempts exhausted stops', { reconnect: new Reconnect({ maxAttempts: 3 }) }, {
    attempts: 2,
  }, ['terminal', 3, 0, false]],
  ['reconnect false stops', { reconnect: false }, {}, ['terminal', 1, 0, false]],
  ['Retry-After longer than the backoff holds the redial', {}, { retryAfterMs: 5000 }, [
    'backoff',
    1,
    5000,
    false,
  ]],
  ['Retry-After past maxDelayMs is capped at it', {}, { retryAfterMs: 120_000 }, [
    'backoff',
    1,
    30_000,
    false,
  ]],
  ['Retry-After shorter than the backoff leaves the backoff', {}, {
    attempts: 3,
    retryAfterMs: 1000,
  }, ['backoff', 4, 4000, false]],
  ['Retry-After does not override a terminal close', {}, {
    closeCode: 1008,
    retryAfterMs: 1000,
  }, ['terminal', 1, 0, false]],
];

for (const [name, extraPolicy, extraFailure, expected] of failureCases) {
  test(`afterFailure(): ${name} (WSM-RCN-020, WSM-DIAL-004)`, () => {
    assert.deepEqual(failed(policy(extraPolicy), extraFailure), expected);
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
