/**
 * The redial policy: the one place that says what the dialer does after close code X, after a
 * GOAWAY, and after a failed attempt. Pure: it reads plain data and the policy's `draw`, sets no
 * timer and reads no clock. Internal.
 *
 * @module
 */
import { backoffDelay, shouldRetry } from './schedule.ts';
import type { RedialPolicy } from './_dial_options.ts';

/** What to do next: stop, or redial after a wait. */
export interface Redial {
  /**
   * `terminal`: stop (`delayMs` 0); `fast`: redial on the fast path (a service restart or a
   * GOAWAY: the next context's `resumedFromServiceRestart`); `backoff`: redial after backoff.
   */
  readonly kind: 'terminal' | 'fast' | 'backoff';
  /** The consecutive failure count from now on. */
  readonly attempts: number;
  /** How long to wait before the redial, in ms. */
  readonly delayMs: number;
}

/** What to do after a failed redial, and whether that failure was an authorisation rejection. */
export interface FailureRedial extends Redial {
  /** True when the attempt failed on an `unauthorized` or `forbidden` hello rejection. */
  readonly auth: boolean;
}

/** The loss of an established connection, as {@linkcode afterLoss} reads it. */
export interface Loss {
  /** The close code (0 or missing already read as 1006). */
  readonly code: number;
  /** Consecutive failed attempts before this loss. */
  readonly attempts: number;
  /** True when the connection was lost before `stableAfterMs`: the flap counts as a failure. */
  readonly flapped: boolean;
  /** The GOAWAY received on the connection: when (epoch ms) and its `spreadMs`. */
  readonly goAway: { readonly at: number; readonly spreadMs: number } | undefined;
  /** When the socket closed (epoch ms). */
  readonly now: number;
}

/** A failed redial, as {@linkcode afterFailure} reads it. */
export interface Failure {
  /** Consecutive failed attempts before this one. */
  readonly attempts: number;
  /** True when the attempt was a fast-path redial, which consumes no attempt. */
  readonly fast: boolean;
  /** The close code of the attempt's socket, when it saw one. */
  readonly closeCode: number | undefined;
  /** The code of a hello rejection (`HelloRejectedError.code`), when that failed the attempt. */
  readonly helloRejection: string | undefined;
  /** True when the previous failure was an `unauthorized` or `forbidden` hello rejection. */
  readonly lastWasAuth: boolean;
  /** The wait a refusal's `Retry-After` asked for, when the runtime exposed it. */
  readonly retryAfterMs: number | undefined;
}

/** Hello rejections that end the redial loop when two come in a row. */
const AUTH_REJECTIONS: readonly string[] = ['unauthorized', 'forbidden'];

/**
 * After the loss of an established connection: terminal for `reconnect: false`, a terminal code
 * or an exhausted schedule; the fast path after a GOAWAY (at its receipt plus a uniform share of
 * its `spreadMs`, no sooner than now; or `serviceRestartDelayMs` jittered without a spread) or a
 * service-restart code; backoff otherwise.
 *
 * @param policy The resolved redial options.
 * @param loss The close code, the attempts before, the flap, the GOAWAY and the time of the loss.
 * @returns The decision; the fast path keeps `attempts`.
 */
export function afterLoss(policy: RedialPolicy, loss: Loss): Redial {
  const { reconnect, draw } = policy;
  const { code, goAway } = loss;
  const attempts = loss.flapped ? loss.attempts + 1 : loss.attempts;
  if (
    reconnect === false || policy.terminal.includes(code) || !shouldRetry(attempts, reconnect)
  ) return { kind: 'terminal', attempts, delayMs: 0 };
  let delayMs: number;
  if (goAway !== undefined || policy.serviceRestart.includes(code)) {
    const spreadMs = goAway?.spreadMs ?? 0;
    delayMs = spreadMs > 0
      ? Math.max(0, goAway!.at + Math.min((draw() + 1) / 2 * spreadMs, spreadMs) - loss.now)
      : Math.max(0, policy.serviceRestartDelayMs * (1 + draw() * reconnect.jitter));
    if (Number.isFinite(delayMs)) return { kind: 'fast', attempts, delayMs };
  } else {
    delayMs = backoffDelay(attempts, reconnect, draw);
    if (Number.isFinite(delayMs)) return { kind: 'backoff', attempts, delayMs };
  }
  return { kind: 'terminal', attempts, delayMs: 0 };
}

/**
 * After a failed redial: it counts as a failure unless it was on the fast path; terminal for
 * `reconnect: false`, an exhausted schedule, a terminal close code of the attempt's socket, or a
 * second `unauthorized`/`forbidden` hello rejection in a row; otherwise backoff, held at least
 * as long as a `Retry-After` asked, capped at the schedule's `maxDelayMs`.
 *
 * @param policy The resolved redial options.
 * @param failure The attempts before, the fast path, the attempt's close code, its hello
 *   rejection, the previous failure's kind and a refusal's `Retry-After`.
 * @returns The decision, with whether this failure was an authorisation rejection.
 */
export function afterFailure(policy: RedialPolicy, failure: Failure): FailureRedial {
  const { reconnect, draw } = policy;
  const { closeCode, helloRejection, retryAfterMs } = failure;
  const attempts = failure.fast ? failure.attempts : failure.attempts + 1;
  const auth = helloRejection !== undefined && AUTH_REJECTIONS.includes(helloRejection);
  if (
    (auth && failure.lastWasAuth) ||
    (closeCode !== undefined && policy.terminal.includes(closeCode)) ||
    reconnect === false || !shouldRetry(attempts, reconnect)
  ) return { kind: 'terminal', attempts, delayMs: 0, auth };
  let delayMs = backoffDelay(attempts, reconnect, draw);
  if (retryAfterMs !== undefined) {
    // the acceptor said when to come back: no sooner, and no later than the schedule's cap
    delayMs = Math.max(delayMs, Math.min(retryAfterMs, reconnect.maxDelayMs));
  }
  return { kind: 'backoff', attempts, delayMs, auth };
}
