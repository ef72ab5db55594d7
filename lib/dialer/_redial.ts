/**
 * The redial policy (WSM-RCN-002, -003, -020, -044, WSM-DIAL-004, WSM-WIRE-003): the one place
 * that says what the dialer does after close code X, after a GOAWAY, and after a failed attempt.
 * Pure: it reads plain data and the policy's `draw`, sets no timer and reads no clock. Internal.
 *
 * @module
 */
import { backoffDelay, shouldRetry } from './schedule.ts';
import type { RedialPolicy } from './_dial_options.ts';

/**
 * What to do next, as `[kind, attempts, delayMs]`: stop (`terminal`, `delayMs` 0), redial after
 * `delayMs` on the fast path (a service restart or a GOAWAY: the next context's
 * `resumedFromServiceRestart`), or after `delayMs` of backoff. `attempts` is the consecutive
 * failure count from now on. A tuple and positional parameters rather than records: the
 * connection calls this file across a file boundary, and positions cost no property names in
 * the bundle.
 */
export type Redial = readonly [
  kind: 'terminal' | 'fast' | 'backoff',
  attempts: number,
  delayMs: number,
];

/** Hello rejections that end the redial loop when two come in a row (WSM-DIAL-004). */
const AUTH_REJECTIONS: readonly string[] = ['unauthorized', 'forbidden'];

/**
 * After the loss of an established connection: terminal for `reconnect: false`, a terminal code
 * or an exhausted schedule; the fast path after a GOAWAY (at its receipt plus a uniform share of
 * its `spreadMs`, no sooner than now; or `serviceRestartDelayMs` jittered without a spread) or a
 * service-restart code; backoff otherwise.
 *
 * @param policy The resolved redial options.
 * @param code The close code (0 or missing already read as 1006).
 * @param attempts Consecutive failed attempts before this loss.
 * @param flapped True when the connection was lost before `stableAfterMs`: the flap counts as a
 *   failure.
 * @param goAway The GOAWAY received on the connection: when (epoch ms) and its `spreadMs`.
 * @param now When the socket closed (epoch ms).
 * @returns The decision; the fast path keeps `attempts`.
 */
export function afterLoss(
  policy: RedialPolicy,
  code: number,
  attempts: number,
  flapped: boolean,
  goAway: { at: number; spreadMs: number } | undefined,
  now: number,
): Redial {
  const { reconnect, draw } = policy;
  if (flapped) attempts++;
  if (
    reconnect === false || policy.terminal.includes(code) || !shouldRetry(attempts, reconnect)
  ) return ['terminal', attempts, 0];
  let delayMs: number;
  if (goAway !== undefined || policy.serviceRestart.includes(code)) {
    const spreadMs = goAway?.spreadMs ?? 0;
    delayMs = spreadMs > 0
      ? Math.max(0, goAway!.at + Math.min((draw() + 1) / 2 * spreadMs, spreadMs) - now)
      : Math.max(0, policy.serviceRestartDelayMs * (1 + draw() * reconnect.jitter));
    if (Number.isFinite(delayMs)) return ['fast', attempts, delayMs];
  } else {
    delayMs = backoffDelay(attempts, reconnect, draw);
    if (Number.isFinite(delayMs)) return ['backoff', attempts, delayMs];
  }
  return ['terminal', attempts, 0];
}

/**
 * After a failed redial: it counts as a failure unless it was on the fast path; terminal for
 * `reconnect: false`, an exhausted schedule, a terminal close code of the attempt's socket, or a
 * second `unauthorized`/`forbidden` hello rejection in a row; otherwise backoff, held at least
 * as long as a `Retry-After` asked, capped at the schedule's `maxDelayMs`.
 *
 * @param policy The resolved redial options.
 * @param attempts Consecutive failed attempts before this one.
 * @param fast True when the attempt was a fast-path redial, which consumes no attempt.
 * @param closeCode The close code of the attempt's socket, when it saw one.
 * @param helloRejection The code of a hello rejection (`HelloRejectedError.code`), when that
 *   failed the attempt.
 * @param lastWasAuth True when the previous failure was an `unauthorized` or `forbidden` hello
 *   rejection.
 * @param retryAfterMs The wait a refusal's `Retry-After` asked for, when the runtime exposed it.
 * @returns The decision, then whether this failure was an authorisation rejection.
 */
export function afterFailure(
  policy: RedialPolicy,
  attempts: number,
  fast: boolean,
  closeCode: number | undefined,
  helloRejection: string | undefined,
  lastWasAuth: boolean,
  retryAfterMs: number | undefined,
): readonly [...Redial, auth: boolean] {
  const { reconnect, draw } = policy;
  if (!fast) attempts++;
  const auth = helloRejection !== undefined && AUTH_REJECTIONS.includes(helloRejection);
  if (
    (auth && lastWasAuth) || (closeCode !== undefined && policy.terminal.includes(closeCode)) ||
    reconnect === false || !shouldRetry(attempts, reconnect)
  ) return ['terminal', attempts, 0, auth];
  let delayMs = backoffDelay(attempts, reconnect, draw);
  if (retryAfterMs !== undefined) {
    // the acceptor said when to come back: no sooner, and no later than the schedule's cap
    delayMs = Math.max(delayMs, Math.min(retryAfterMs, reconnect.maxDelayMs));
  }
  return ['backoff', attempts, delayMs, auth];
}
