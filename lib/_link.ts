/**
 * One wire and its `Session` as the connection keeps them (the {@linkcode Link}): its heartbeat
 * once established (WSM-DIAL-009), and the GOAWAY drain (WSM-WIRE-003): after a GOAWAY the link closes with 1000 once the streams that matter
 * (opened with `open()`/`request()` or by the acceptor, not the subscriptions) are done.
 * Internal.
 *
 * @module
 */
import type { GoAway } from './_session.ts';
import { CloseCode } from './_codes.ts';
import type { AttemptLink } from './_attempt.ts';
import { Heartbeat } from './_heartbeat.ts';

/** One wire and its session, from the wire's opening to its close. */
export interface Link extends AttemptLink {
  /** When the link was made, then when it was established (epoch ms). */
  establishedAt: number;
  heartbeat?: Heartbeat;
  /** Streams that keep the connection open after a GOAWAY (not the subscriptions). */
  inflight: number;
  /** The GOAWAY received: when (epoch ms) and its `spreadMs`. */
  goAway?: { at: number; spreadMs: number };
  /** Set before this side closes the session with an error of its own. */
  lossError?: unknown;
}

/**
 * Starts the heartbeat of an established link: PINGs through its session, a loss closes it with
 * 4000 `heartbeat timeout`, and the establishment counts as heard.
 */
export function startHeartbeat(
  link: Link,
  options: { intervalMs: number; timeoutMs: number },
  now: () => number,
): void {
  const session = link.session;
  link.heartbeat = new Heartbeat(
    {
      ping: () => session.ping(),
      lost: (error) => {
        link.lossError = error;
        session.close(CloseCode.Heartbeat, 'heartbeat timeout');
      },
      lastHeard: () => Math.max(session.lastReceivedAt, link.establishedAt),
    },
    options,
    now,
  );
  link.heartbeat.check();
}

/** Counts `pending` in flight on `link` until it settles. */
export function track(link: Link, pending: Promise<unknown>): void {
  link.inflight++;
  const done = () => {
    link.inflight--;
    drain(link);
  };
  pending.then(done, done);
}

/** Records a GOAWAY received at `now` on `link`, and drains it if it is established. */
export function goneAway(link: Link, goAway: GoAway, now: number): void {
  link.goAway = {
    at: now,
    spreadMs: Number.isFinite(goAway.spreadMs) ? Math.max(0, goAway.spreadMs) : 0,
  };
  drain(link);
}

/**
 * After a GOAWAY on an established link, closes it with 1000 once nothing is in flight (in a
 * microtask, so a stream opened in the same turn still counts).
 */
export function drain(link: Link): void {
  if (link.goAway === undefined || link.inflight > 0 || link.phase !== 'open') return;
  void Promise.resolve().then(() => {
    if (link.phase === 'open' && link.inflight === 0) {
      link.session.close(CloseCode.Normal, 'goaway');
    }
  });
}
