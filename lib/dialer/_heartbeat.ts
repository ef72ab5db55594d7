/**
 * The heartbeat of an established connection: after `intervalMs` of silence it sends a PING, and
 * when nothing at all arrives within `timeoutMs` of it the connection counts as lost. Anything
 * received answers a PING; the next one is due `intervalMs` after it. One timer, re-armed from the
 * clock rather than per message, so a busy connection costs no timer churn; a send notices a
 * deadline the timer missed (a clock that jumped while timers were paused). Internal.
 *
 * @module
 */
import { TimeoutError } from '../errors.ts';
import { timerDelay } from '../util/delay.ts';

/** What the heartbeat needs of its connection. */
interface HeartbeatHost {
  /** Sends a PING. */
  ping(): void;
  /** Nothing arrived in time: end the connection with `error`. */
  lost(error: TimeoutError): void;
  /** When (epoch ms) the connection last heard from its peer; its establishment counts. */
  lastHeard(): number;
}

/** One connection's heartbeat, from establishment to {@linkcode Heartbeat.stop}. */
export class Heartbeat {
  readonly #host: HeartbeatHost;
  readonly #intervalMs: number;
  readonly #timeoutMs: number;
  readonly #now: () => number;
  /** When the outstanding PING was sent, if one is. */
  #pingSentAt: number | undefined;
  #timer: ReturnType<typeof setTimeout> | undefined;
  #stopped = false;

  /**
   * Creates the heartbeat; {@linkcode Heartbeat.check} starts it.
   *
   * @param host The connection.
   * @param options `intervalMs` and `timeoutMs`, resolved.
   * @param now The clock, epoch ms.
   */
  constructor(
    host: HeartbeatHost,
    options: { intervalMs: number; timeoutMs: number },
    now: () => number,
  ) {
    this.#host = host;
    this.#intervalMs = options.intervalMs;
    this.#timeoutMs = options.timeoutMs;
    this.#now = now;
  }

  /** Acts on the clock: arms the timer for what is due next, sends a PING, or loses the connection. */
  check(): void {
    if (this.#stopped) return;
    clearTimeout(this.#timer);
    this.#timer = undefined;
    if (this.#pingSentAt !== undefined && this.#host.lastHeard() >= this.#pingSentAt) {
      this.#pingSentAt = undefined;
    }
    const wait = this.#dueAt() - this.#now();
    if (wait > 0) this.#arm(wait);
    else if (this.#pingSentAt === undefined) this.#probe();
    else {
      this.stop();
      this.#host.lost(
        new TimeoutError(`Nothing was received within ${this.#timeoutMs} ms of a PING`),
      );
    }
  }

  /** After each send: a deadline already passed is acted on at once (in a microtask). */
  sent(): void {
    if (this.#timer !== undefined && this.#now() >= this.#dueAt()) {
      void Promise.resolve().then(() => this.check());
    }
  }

  /**
   * After each message received: an answer to an outstanding PING makes the next one due
   * `intervalMs` from now, not when the answered PING's deadline would have passed.
   */
  received(): void {
    if (this.#pingSentAt !== undefined) this.check();
  }

  /** Sends a PING now unless one is outstanding (an `offline` hint). */
  probe(): void {
    if (!this.#stopped && this.#pingSentAt === undefined) this.#probe();
  }

  /** Stops for good: clears the timer. */
  stop(): void {
    this.#stopped = true;
    clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#pingSentAt = undefined;
  }

  /** The outstanding PING's deadline, or `intervalMs` of silence after the last thing heard. */
  #dueAt(): number {
    return this.#pingSentAt !== undefined
      ? this.#pingSentAt + this.#timeoutMs
      : this.#host.lastHeard() + this.#intervalMs;
  }

  #probe(): void {
    this.#pingSentAt = this.#now();
    this.#arm(this.#timeoutMs);
    this.#host.ping();
  }

  #arm(ms: number): void {
    clearTimeout(this.#timer);
    this.#timer = setTimeout(() => this.check(), timerDelay(ms));
  }
}
