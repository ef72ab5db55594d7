// The session's time-dependent logic on its injected clock (`SessionOptions.now`): window growth's
// one-second gate and the reset budget's one-second window, driven by a hand-moved clock with no
// fake global timers.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { probe, settle } from '../_session_pair.ts';

const WINDOW = 65536;
const GROWTH = 256 * 1024 - WINDOW;

/** A clock the test moves by hand. */
function handClock(start = 5_000): { now: () => number; advance(ms: number): void } {
  let t = start;
  return {
    now: () => t,
    advance(ms) {
      t += ms;
    },
  };
}

/**
 * Feeds stream 1 (a reader that keeps up) half a window of DATA, moving the clock by `gapMs`
 * after the first message is read; returns the units of the first CREDIT sent.
 */
async function firstCredit(gapMs: number): Promise<number | undefined> {
  const clock = handClock();
  using p = probe('acceptor', {
    now: clock.now,
    onStream: async (stream) => {
      for await (const _ of stream) { /* keeps up */ }
    },
  });
  p.session.receive(JSON.stringify([1, 1, 0, null, null]));
  const chunk = 'c'.repeat(1000);
  const data = JSON.stringify([2, 1, 0, chunk]);
  p.session.receive(data);
  await settle();
  clock.advance(gapMs);
  for (let sent = data.length; sent < WINDOW / 2; sent += data.length) {
    p.session.receive(data);
    await settle();
  }
  const credit = p.sent.find((frame) => (frame as unknown[])[0] === 5) as number[] | undefined;
  return credit?.[2];
}

test('Session grows a window on its own clock when half of it was read within 1 s, and not at 1 s (WSM-WIRE-006)', async () => {
  const size = JSON.stringify([2, 1, 0, 'c'.repeat(1000)]).length;
  const half = Math.ceil(WINDOW / 2 / size) * size;
  assert.equal(await firstCredit(999), half + GROWTH);
  assert.equal(await firstCredit(1000), half);
});

test('Session counts the reset budget on its own clock: one reset over maxResetRate within 1 s closes, at 1 s it does not (WSM-ACC-006)', () => {
  for (const [gapMs, closes] of [[999, true], [1000, false]] as const) {
    const clock = handClock();
    using p = probe('acceptor', { now: clock.now, limits: { maxResetRate: 3 } });
    // No stream handler: every OPEN is refused with `refused`, and each refusal counts.
    for (const id of [1, 3, 5]) p.session.receive(JSON.stringify([1, id, 0, null, null]));
    clock.advance(gapMs);
    p.session.receive(JSON.stringify([1, 7, 0, null, null]));
    assert.deepEqual(
      p.closes,
      closes ? [{ code: 1008, reason: 'more than 3 streams reset within one second' }] : [],
      `after ${gapMs} ms`,
    );
    const resets = p.sent.filter((frame) => (frame as unknown[])[0] === 4).length;
    assert.equal(resets, closes ? 3 : 4, 'the OPEN over the budget is not answered');
  }
});
