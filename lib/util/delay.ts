/**
 * The one conversion of a delay to what `setTimeout` takes: whole milliseconds, never negative,
 * at most 2147483647 (a larger delay fires at once on every runtime). Internal.
 *
 * @module
 */

const MAX_TIMER_MS = 2_147_483_647;

/** `ms` rounded up and clamped to 0–2147483647, for `setTimeout`. */
export function timerDelay(ms: number): number {
  return Math.min(Math.max(0, Math.ceil(ms)), MAX_TIMER_MS);
}
