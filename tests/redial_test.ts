// The redial policy as a table: after a loss and after a failed redial, what the dialer does for
// each close code, GOAWAY, attempt count and hello rejection (WSM-RCN-002, -003, -020, -044,
// WSM-DIAL-004, WSM-WIRE-003). Pure: no sockets, no timers.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { afterFailure, afterLoss, type Failure, type Loss, type Redial } from '../lib/_redial.ts';
import type { RedialPolicy } from '../lib/_dial_options.ts';
import { DEFAULT_CLOSE_CODES, Reconnect } from '../mod.ts';

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

function loss(extra: Partial<Loss> = {}): Loss {
  return { code: 1006, attempts: 0, flapped: false, goAway: undefined, now: NOW, ...extra };
}

function failure(extra: Partial<Failure> = {}): Failure {
  return {
    attempts: 0,
    fast: false,
    closeCode: undefined,
    helloRejection: undefined,
    lastWasAuth: false,
    retryAfterMs: undefined,
    ...extra,
  };
}

const lossCases: [string, Partial<RedialPolicy>, Partial<Loss>, Redial][] = [
  ['1006 backs off 250 ms', {}, {}, { kind: 'backoff', delayMs: 250, attempts: 0 }],
  ['1000 backs off', {}, { code: 1000 }, { kind: 'backoff', delayMs: 250, attempts: 0 }],
  ['1011 backs off', {}, { code: 1011 }, { kind: 'backoff', delayMs: 250, attempts: 0 }],
  ['4000 (own heartbeat) backs off', {}, { code: 4000 }, {
    kind: 'backoff',
    delayMs: 250,
    attempts: 0,
  }],
  ['the backoff grows with the attempts', {}, { attempts: 3 }, {
    kind: 'backoff',
    delayMs: 2000,
    attempts: 3,
  }],
  ['the backoff is capped at maxDelayMs', {}, { attempts: 20 }, {
    kind: 'backoff',
    delayMs: 30_000,
    attempts: 20,
  }],
  ['a flap before stableAfterMs counts as a failure', {}, { attempts: 1, flapped: true }, {
    kind: 'backoff',
    delayMs: 1000,
    attempts: 2,
  }],
  ...DEFAULT_CLOSE_CODES.terminal.map((
    code,
  ): [string, Partial<RedialPolicy>, Partial<Loss>, Redial] => [
    `${code} is terminal`,
    {},
    { code },
    { kind: 'terminal', attempts: 0 },
  ]),
  ['a configured terminal code stops', { terminal: [4409] }, { code: 4409 }, {
    kind: 'terminal',
    attempts: 0,
  }],
  ['a configured terminal list replaces the default', { terminal: [4409] }, { code: 1008 }, {
    kind: 'backoff',
    delayMs: 250,
    attempts: 0,
  }],
  ['1012 redials fast, consuming no attempt', {}, { code: 1012, attempts: 4 }, {
    kind: 'fast',
    delayMs: 250,
    attempts: 4,
  }],
  ['the fast delay is jittered with the schedule jitter', { draw: () => 1 }, { code: 1012 }, {
    kind: 'fast',
    delayMs: 325,
    attempts: 0,
  }],
  ['a configured service-restart code redials fast', { serviceRestart: [4503] }, {
    code: 4503,
  }, { kind: 'fast', delayMs: 250, attempts: 0 }],
  ['a GOAWAY without spreadMs redials fast', {}, {
    code: 1000,
    goAway: { at: NOW - 100, spreadMs: 0 },
  }, { kind: 'fast', delayMs: 250, attempts: 0 }],
  ['a GOAWAY spreadMs redials at its receipt plus a uniform share', { draw: () => 0 }, {
    code: 1000,
    goAway: { at: NOW - 1000, spreadMs: 4000 },
  }, { kind: 'fast', delayMs: 1000, attempts: 0 }],
  ['a GOAWAY spread already passed redials at once', { draw: () => -1 }, {
    code: 1000,
    goAway: { at: NOW - 1000, spreadMs: 4000 },
  }, { kind: 'fast', delayMs: 0, attempts: 0 }],
  ['a GOAWAY before a terminal code still stops', {}, {
    code: 1008,
    goAway: { at: NOW, spreadMs: 0 },
  }, { kind: 'terminal', attempts: 0 }],
  ['reconnect false stops', { reconnect: false }, {}, { kind: 'terminal', attempts: 0 }],
  ['reconnect false stops a 1012 too', { reconnect: false }, { code: 1012 }, {
    kind: 'terminal',
    attempts: 0,
  }],
  ['maxAttempts exhausted stops', { reconnect: new Reconnect({ maxAttempts: 2 }) }, {
    attempts: 2,
  }, { kind: 'terminal', attempts: 2 }],
  ['maxAttempts 0 never redials', { reconnect: new Reconnect({ maxAttempts: 0 }) }, {}, {
    kind: 'terminal',
    attempts: 0,
  }],
  ['a flap that exhausts maxAttempts stops', { reconnect: new Reconnect({ maxAttempts: 2 }) }, {
    attempts: 1,
    flapped: true,
  }, { kind: 'terminal', attempts: 2 }],
];

for (const [name, extraPolicy, extraLoss, expected] of lossCases) {
  test(`afterLoss(): ${name} (WSM-RCN-020)`, () => {
    assert.deepEqual(afterLoss(policy(extraPolicy), loss(extraLoss)), expected);
  });
}

const failureCases: [
  string,
  Partial<RedialPolicy>,
  Partial<Failure>,
  Redial & { auth: boolean },
][] = [
  ['a failed redial counts and backs off', {}, {}, {
    kind: 'backoff',
    delayMs: 500,
    attempts: 1,
    auth: false,
  }],
  ['a failed fast redial consumes no attempt', {}, { fast: true, attempts: 2 }, {
    kind: 'backoff',
    delayMs: 1000,
    attempts: 2,
    auth: false,
  }],
  ['a terminal close of the attempt socket stops', {}, { closeCode: 4401 }, {
    kind: 'terminal',
    attempts: 1,
    auth: false,
  }],
  ['a configured terminal close of the attempt socket stops', { terminal: [4409] }, {
    closeCode: 4409,
  }, { kind: 'terminal', attempts: 1, auth: false }],
  ['a non-terminal close of the attempt socket backs off', {}, { closeCode: 1006 }, {
    kind: 'backoff',
    delayMs: 500,
    attempts: 1,
    auth: false,
  }],
  ['one unauthorized hello backs off and is remembered', {}, {
    helloRejection: 'unauthorized',
  }, { kind: 'backoff', delayMs: 500, attempts: 1, auth: true }],
  ['unauthorized twice in a row stops', {}, {
    helloRejection: 'unauthorized',
    lastWasAuth: true,
  }, { kind: 'terminal', attempts: 1, auth: true }],
  ['forbidden after unauthorized stops', {}, { helloRejection: 'forbidden', lastWasAuth: true }, {
    kind: 'terminal',
    attempts: 1,
    auth: true,
  }],
  ['another rejection after unauthorized backs off and forgets it', {}, {
    helloRejection: 'invalid',
    lastWasAuth: true,
  }, { kind: 'backoff', delayMs: 500, attempts: 1, auth: false }],
  ['maxAttempts exhausted stops', { reconnect: new Reconnect({ maxAttempts: 3 }) }, {
    attempts: 2,
  }, { kind: 'terminal', attempts: 3, auth: false }],
  ['reconnect false stops', { reconnect: false }, {}, {
    kind: 'terminal',
    attempts: 1,
    auth: false,
  }],
  ['Retry-After longer than the backoff holds the redial', {}, { retryAfterMs: 5000 }, {
    kind: 'backoff',
    delayMs: 5000,
    attempts: 1,
    auth: false,
  }],
  ['Retry-After past maxDelayMs is capped at it', {}, { retryAfterMs: 120_000 }, {
    kind: 'backoff',
    delayMs: 30_000,
    attempts: 1,
    auth: false,
  }],
  ['Retry-After shorter than the backoff leaves the backoff', {}, {
    attempts: 3,
    retryAfterMs: 1000,
  }, { kind: 'backoff', delayMs: 4000, attempts: 4, auth: false }],
  ['Retry-After does not override a terminal close', {}, {
    closeCode: 1008,
    retryAfterMs: 1000,
  }, { kind: 'terminal', attempts: 1, auth: false }],
];

for (const [name, extraPolicy, extraFailure, expected] of failureCases) {
  test(`afterFailure(): ${name} (WSM-RCN-020, WSM-DIAL-004)`, () => {
    assert.deepEqual(afterFailure(policy(extraPolicy), failure(extraFailure)), expected);
  });
}

test('afterLoss() draws once per decision, only when it redials (WSM-RCN-002)', () => {
  let draws = 0;
  const draw = () => (draws++, 0);
  afterLoss(policy({ draw }), loss({ code: 1008 }));
  afterLoss(policy({ draw, reconnect: false }), loss());
  assert.equal(draws, 0);
  afterLoss(policy({ draw }), loss());
  afterLoss(policy({ draw }), loss({ code: 1012 }));
  afterLoss(policy({ draw }), loss({ goAway: { at: NOW, spreadMs: 100 } }));
  assert.equal(draws, 3);
});
