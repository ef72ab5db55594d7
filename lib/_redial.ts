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
 * What to do next: stop (`terminal`), redial after `delayMs` on the fast path (a service restart
 * or a GOAWAY: the next context's `resumedFromServiceRestart`), or after `delayMs` of backoff.
 * `attempts` is the consecutive failure count from now on.
 */
export type Redial =
  | { kind: 'terminal'; attempts: number }
  | { kind: 'fast' | 'backoff'; delayMs: number; attempts: number };

/** The loss of an established connection, as {@linkcode afterLoss} reads it. */
export interface Loss {
  /** The close code (0 or missing already read as 1006). */
  code: number;
  /** Consecutive failed attempts before this loss. */
  attempts: number;
  /** True when the connection was lost before `stableAfterMs`: the flap counts as a failure. */
  flapped: boolean;
  /** The GOAWAY received on the connection: when (epoch ms) and its `spreadMs`. */
  goAway: { at: number; spreadMs: number } | undefined;
  /** When the socket closed (epoch ms). */
  now: number;
}

/** A failed redial attempt, as {@linkcode afterFailure} reads it. */
export interface Failure {
  /** Consecutive failed attempts before this one. */
  attempts: number;
  /** True when the attempt was a fast-path redial, which consumes no attempt. */
  fast: boolean;
  /** The close code of the attempt's socket, when it saw one. */
  closeCode: number | undefined;
  /** The code of a hello rejection (`HelloRejectedError.code`), when that failed the attempt. */
  helloRejection: string | undefined;
  /** True when the previous failure was an `unauthorized` or `forbidden` hello rejection. */
  lastWasAuth: boolean;
  /** The wait a refusal's `Retry-After` asked for, when the runtime exposed it. */
  retryAfterMs: number | undefined;
}

/** Hello rejections that end the redial loop when two come in a row (WSM-DIAL-004). */
const AUTH_REJECTIONS: readonly string[] = ['unauthorized', 'forbidden'];

/**
 * After the loss of an established connection: terminal for `reconnect: false`, a terminal code
 * or an exhausted schedule; the fast path after a GOAWAY (at its receipt plus a uniform share of
 * its `spreadMs`, no sooner than now; or `serviceRestartDelayMs` jittered without a spread) or a
 * service-restart code; backoff otherwise.
 *
 * @param policy The resolved redial options.
 * @param loss What was lost and how.
 * @returns The decision; the fast path keeps `attempts`.
 */
export function afterLoss(policy: RedialPolicy, loss: Loss): Redial {
  const { reconnect, draw } = policy;
  const attempts = loss.flapped ? loss.attempts + 1 : loss.attempts;
  if (
    reconnect === false || policy.terminal.includes(loss.code) || !shouldRetry(attempts, reconnect)
  ) return { kind: 'terminal', attempts };
  const goAway = loss.goAway;
  let delayMs: number;
  if (goAway !== undefined || policy.serviceRestart.includes(loss.code)) {
    const spreadMs = goAway?.spreadMs ?? 0;
    delayMs = spreadMs > 0
      ? Math.max(0, goAway!.at + Math.min((draw() + 1) / 2 * spreadMs, spreadMs) - loss.now)
      : Math.max(0, policy.serviceRestartDelayMs * (1 + draw() * reconnect.jitter));
    if (Number.isFinite(delayMs)) return { kind: 'fast', delayMs, attempts };
  } else {
    delayMs = backoffDelay(attempts, reconnect, draw);
    if (Number.isFinite(delayMs)) return { kind: 'backoff', delayMs, attempts };
  }
  return { kind: 'terminal', attempts };
}

/**
 * After a failed redial: it counts as a failure unless it was on the fast path; terminal for
 * `reconnect: false`, an exhausted schedule, a terminal close code of the attempt's socket, or a
 * second `unauthorized`/`forbidden` hello rejection in a row; otherwise backoff, held at least
 * as long as a `Retry-After` asked, capped at the schedule's `maxDelayMs`.
 *
 * @param policy The resolved redial options.
 * @param failure How the attempt failed.
 * @returns The decision, and whether this failure was an authorisation rejection.
 */
export function afterFailure(policy: RedialPolicy, failure: Failure): Redial & { auth: boolean } {
  const { reconnect, draw } = policy;
  const attempts = failure.fast ? failure.attempts : failure.attempts + 1;
  const auth = failure.helloRejection !== undefined &&
    AUTH_REJECTIONS.includes(failure.helloRejection);
  const code = failure.closeCode;
  if (
    (auth && failure.lastWasAuth) || (code !== undefined && policy.terminal.includes(code)) ||
    reconnect === false || !shouldRetry(attempts, reconnect)
  ) return { kind: 'terminal', attempts, auth };
  let delayMs = backoffDelay(attempts, reconnect, draw);
  const retryAfter = failure.retryAfterMs;
  if (retryAfter !== undefined) {
    // the acceptor said when to come back: no sooner, and no later than the schedule's cap
    delayMs = Math.max(delayMs, Math.min(retryAfter, reconnect.maxDelayMs));
  }
  return { kind: 'backoff', delayMs, attempts, auth };
}
