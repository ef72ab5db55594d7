import { test } from 'node:test';
import assert from 'node:assert/strict';
import { RESET_WINDOW_MS, ResetBudget } from '../lib/_reset_budget.ts';

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
