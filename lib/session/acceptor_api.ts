/**
 * The session API only an acceptor uses, as functions over a {@linkcode Session} rather than
 * methods of it, so a `connect` bundle carries none of it (docs/design/bundle-size.md): sending
 * GOAWAY, sending a PUBLISH encoded once for many peers, and waiting for the session to be idle.
 * The session keeps what they need: `goingAway`, which its maker's policy reads, and one host hook,
 * `onIdle`, which it calls when no stream is open any more or it ends (the hook clears itself).
 *
 * @module
 */
import { describe, mustBe } from '../util/describe.ts';
import { GOAWAY, isResetCode } from '../wire/frame.ts';
import type { Session } from './session.ts';

/**
 * Sends GOAWAY with `lastId` = the highest id the other side opened; the acceptor's policy
 * refuses the other side's later OPENs with `refused`.
 *
 * @throws {TypeError} When `code` is not a reset code or `message` not a string.
 * @throws {RangeError} When `spreadMs` is not a non-negative integer.
 */
export function goAway(session: Session, code: string, message: string, spreadMs: number): void {
  if (!isResetCode(code)) {
    throw new TypeError(
      `Cannot send GOAWAY as "code" must match ^[a-z][a-z0-9_.-]{0,63}$: current value is ${
        describe(code)
      }`,
    );
  }
  if (typeof message !== 'string') {
    throw new TypeError(
      mustBe('send GOAWAY', 'message', 'a string', message),
    );
  }
  if (!Number.isSafeInteger(spreadMs) || spreadMs < 0) {
    throw new RangeError(
      mustBe('send GOAWAY', 'spreadMs', 'a non-negative integer', spreadMs),
    );
  }
  session.goingAway = true;
  session.send(session.codec.encode([GOAWAY, session.highestRemote, code, message, spreadMs]));
}

/**
 * Sends one already-encoded message (a PUBLISH encoded once for many peers).
 *
 * @returns False, sending nothing, when the session ended or the sink's `bufferedAmount` is
 * above `highWaterMark`.
 */
export function sendEncoded(session: Session, data: string | Uint8Array): boolean {
  if (session.isClosed || session.congested()) return false;
  session.send(data);
  return true;
}

/** Resolves when no stream of `session` is open (at once when none is) or the session ends. */
export function idle(session: Session): Promise<void> {
  if (session.isClosed || session.activeStreams === 0) return Promise.resolve();
  return new Promise<void>((resolve) => {
    const before = session.onIdle;
    // The hook clears itself: it runs once, whoever set it first.
    session.onIdle = () => {
      session.onIdle = undefined;
      before?.();
      resolve();
    };
  });
}
