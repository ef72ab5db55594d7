import { test } from 'node:test';
import assert from 'node:assert/strict';
import { RESET_WINDOW_MS, ResetBudget } from '../../lib/session/_reset_budget.ts';
import { sessionPair, settle } from '../_session_pair.ts';
import { goAway } from '../../lib/session/acceptor_api.ts';

/** Counts one reset at each time of `times` on a budget of `max`; returns each verdict. */
function verdicts(max: number, times: number[]): boolean[] {
  let now = 0;
  const budget = new ResetBudget(max, () => now);
  return times.map((at) => {
    now = at;
    return budget.count();
  });
}

const cases: { name: string; max: number; times: number[]; over: boolean[] }[] = [
  {
    name: 'up to max at once is within the budget',
    max: 3,
    times: [0, 0, 0],
    over: [false, false, false],
  },
  {
    name: 'one more than max within a second is over',
    max: 3,
    times: [0, 0, 0, 999],
    over: [false, false, false, true],
  },
  {
    name: 'one more than max a full second after the oldest is within',
    max: 3,
    times: [0, 0, 0, 1000],
    over: [false, false, false, false],
  },
  {
    name: 'exactly max a second, sustained, stays within',
    max: 2,
    times: [0, 500, 1000, 1500, 2000, 2500],
    over: [false, false, false, false, false, false],
  },
  {
    name: 'the ring compares with the oldest of the last max',
    max: 2,
    times: [0, 900, 1000, 1899],
    over: [false, false, false, true],
  },
  {
    name: 'a budget of one is over at a second reset within a second of the last',
    max: 1,
    times: [0, 999, 2500, 3499, 3600],
    over: [false, true, false, true, true],
  },
];

for (const { name, max, times, over } of cases) {
  test(`ResetBudget.count(): ${name}`, () => {
    assert.deepEqual(verdicts(max, times), over);
  });
}

test('ResetBudget window is one second', () => {
  assert.equal(RESET_WINDOW_MS, 1000);
});

test('A dialer that opens streams after its own GOAWAY has each refusal counted: the 201st within one second closes it with 1008 (WSM-LIM-002)', async () => {
  using pair = sessionPair({ acceptor: { onStream: () => new Promise(() => {}) } });
  goAway(pair.dialer, 'shutdown', 'leaving', 0);
  const refused: Promise<unknown>[] = [];
  for (let i = 0; i < 201; i++) refused.push(pair.dialer.request(i).catch((e) => e.code));
  await settle();
  const codes = await Promise.all(refused);
  assert.equal(codes.filter((code) => code === 'refused').length, 200);
  assert.equal(codes.at(-1), 'connection_lost');
  assert.deepEqual(pair.log.acceptor.closes.map((x) => x.code), [1008]);
  assert.deepEqual(pair.log.dialer.closes.map((x) => x.code), [1008]);
});

test('An acceptor whose peer never reads closes it at maxBufferedBytes rather than queue one more refusal, however high the reset budget (WSM-LIM-002)', async () => {
  using pair = sessionPair({
    acceptor: { limits: { maxResetRate: 1_000_000, highWaterMark: 1024, maxBufferedBytes: 4096 } },
  });
  pair.server.pause(); // what the acceptor sends stays buffered
  goAway(pair.dialer, 'shutdown', 'leaving', 0);
  for (let i = 0; i < 1000 && !pair.dialer.isClosed; i++) {
    pair.dialer.request(i).catch(() => {});
    await settle(2);
  }
  await settle();
  assert.deepEqual(pair.log.acceptor.closes.map((x) => x.code), [1008]);
  assert.deepEqual(pair.log.acceptor.closes.map((x) => x.reason), [
    'more than 4096 bytes buffered unread',
  ]);
  // It stopped at the cap: one refusal past 4 KiB at most was queued.
  const resets = pair.server.sent.filter((m) => typeof m === 'string' && m.startsWith('[4,'));
  const bytes = resets.reduce((n, m) => n + m.length, 0);
  assert.ok(bytes > 4096 && bytes < 4096 + 100, `${bytes} bytes of RESETs queued`);
});
