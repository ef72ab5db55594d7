// lib/acceptor/_upgrade.ts: the upgrade decision as plain functions over Request.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  checkUpgrade,
  offers,
  originCheck,
  type UpgradeRules,
} from '../../lib/acceptor/_upgrade.ts';
import type { OriginPolicy } from 'muxws/acceptor';

function request(headers: Record<string, string>, method = 'GET'): Request {
  return new Request('http://api.example/ws', { method, headers });
}

function rules(origin: OriginPolicy | undefined, closing = false, reported: unknown[] = []) {
  return {
    protocol: 'muxws.v1.json',
    origin: originCheck(origin),
    closing,
    report: (error: unknown) => reported.push(error),
  } satisfies UpgradeRules;
}

const WS = { upgrade: 'websocket', 'sec-websocket-protocol': 'muxws.v1.json' };

test('offers() finds the token in a header value or a list, never a prefix of it (WSM-ACC-001)', () => {
  const cases: Array<[string | readonly string[] | null | undefined, boolean]> = [
    ['muxws.v1.json', true],
    ['token.abc, muxws.v1.json', true],
    [' muxws.v1.json ,x', true],
    [['chat', 'muxws.v1.json'], true],
    [['chat, muxws.v1.json'], true],
    ['muxws.v1.json2', false],
    ['muxws.v1.jso', false],
    ['chat', false],
    ['', false],
    [[], false],
    [null, false],
    [undefined, false],
  ];
  for (const [offered, expected] of cases) {
    assert.equal(offers(offered, 'muxws.v1.json'), expected, JSON.stringify(offered));
  }
});

test('originCheck() applies same host, any, a list and a predicate (WSM-ACC-003)', () => {
  const host = { host: 'api.example' };
  const cases: Array<[OriginPolicy | undefined, string | null, Record<string, string>, boolean]> = [
    [undefined, null, host, true],
    [undefined, 'http://api.example', host, true],
    [undefined, 'https://api.example', host, true],
    [undefined, 'https://evil.example', host, false],
    [undefined, 'null', host, false],
    [undefined, 'not a url', host, false],
    [undefined, 'http://api.example', {}, true],
    ['*', 'https://evil.example', host, true],
    ['*', null, host, true],
    [['https://app.example'], 'https://APP.example:443', host, true],
    [['https://app.example'], 'https://evil.example', host, false],
    [['https://app.example'], null, host, true],
    [(origin) => origin === 'https://x.example', 'https://x.example', host, true],
    [(origin) => origin === 'https://x.example', null, host, false],
  ];
  for (const [policy, origin, headers, expected] of cases) {
    const check = originCheck(policy);
    assert.equal(check(origin, request(headers)), expected, `${String(policy)} ${origin}`);
  }
});

test('originCheck() refuses a policy that is not a list of origins, a function or * (WSM-ACC-003)', () => {
  assert.throws(() => originCheck(['app.example']), {
    name: 'TypeError',
    message:
      'Cannot create Acceptor as "origins" must list origins such as "https://app.example": found "app.example"',
  });
  assert.throws(() => originCheck(42 as unknown as OriginPolicy), {
    name: 'TypeError',
    message:
      `Cannot create Acceptor as "origins" must be '*', a list of origins or a function: current value is 42`,
  });
});

test('checkUpgrade() refuses with 426, 503 while closing, 403 and 400, in that order (WSM-ACC-003)', async () => {
  const cases: Array<
    [string, Request, ReturnType<typeof rules>, number | string, Record<string, string>?]
  > = [
    ['a POST', request(WS, 'POST'), rules('*'), 426, { upgrade: 'websocket' }],
    ['no Upgrade', request({ 'sec-websocket-protocol': 'muxws.v1.json' }), rules('*'), 426],
    ['Upgrade: h2c', request({ ...WS, upgrade: 'h2c' }), rules('*'), 426],
    ['closing', request({ ...WS, origin: 'https://evil.example' }), rules(undefined, true), 503, {
      'retry-after': '1',
    }],
    ['a foreign Origin', request({ ...WS, origin: 'https://evil.example' }), rules(undefined), 403],
    [
      'no muxws offer',
      request({ upgrade: 'websocket', 'sec-websocket-protocol': 'chat' }),
      rules('*'),
      400,
    ],
    ['no offer', request({ upgrade: 'WebSocket' }), rules('*'), 400],
    [
      'an offer among others',
      request({ ...WS, 'sec-websocket-protocol': 'a, muxws.v1.json' }),
      rules('*'),
      'muxws.v1.json',
    ],
  ];
  for (const [what, req, r, expected, headers] of cases) {
    const decision = checkUpgrade(req, r);
    if (typeof expected === 'string') {
      assert.deepEqual(decision, { protocol: expected }, what);
      continue;
    }
    assert.ok(decision instanceof Response, what);
    assert.equal(decision.status, expected, what);
    assert.equal(decision.headers.get('content-type'), 'text/plain; charset=utf-8', what);
    for (const [name, value] of Object.entries(headers ?? {})) {
      assert.equal(decision.headers.get(name), value, `${what}: ${name}`);
    }
    await decision.body?.cancel();
  }
});

test('checkUpgrade() reports a throwing origin predicate and refuses with 403 (WSM-ACC-003)', () => {
  const reported: unknown[] = [];
  const boom = new Error('boom');
  const decision = checkUpgrade(
    request({ ...WS, origin: 'https://x.example' }),
    rules(
      () => {
        throw boom;
      },
      false,
      reported,
    ),
  );
  assert.ok(decision instanceof Response && decision.status === 403);
  assert.deepEqual(reported, [boom]);
});
