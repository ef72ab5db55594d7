/**
 * {@linkcode PendingRequest}: the answer a `request()` waits for: the first message
 * of the stream, or `undefined` when the other side ends it without one; with `timeoutMs`, a
 * deadline that rejects with `TimeoutError` and has the stream reset with `timeout`. The stream
 * makes one when a request must wait.
 *
 * The requests of one session share one timer, {@linkcode RequestDeadlines}, a deadline wheel with
 * a coarse tick: while requests wait it fires at least every {@linkcode DEADLINE_TICK_MS}, and at
 * each deadline that falls between two ticks, and times out what is due. A request that is
 * answered leaves the timer as it is, so requests one after another arm no timer each; the tick
 * after the last request settled finds none waiting and does not re-arm, so an idle session holds
 * no timer at most one tick after its last request, and none once it ended.
 *
 * Private to `lib/session/`.
 *
 * @module
 */
import { TimeoutError } from '../errors.ts';

/**
 * At most how long the deadline timer stays armed after the last waiting request settled, in
 * milliseconds; while requests wait, it fires at least this often. Short enough that an idle
 * connection soon holds no timer (a Durable Object may hibernate), long enough that ten wake-ups a
 * second while requests wait cost nothing measurable.
 */
export const DEADLINE_TICK_MS = 100;

/** One request waiting for its answer (see the module doc). */
export class PendingRequest {
  /** Settles with the answer, or rejects with the stream's error or `TimeoutError`. */
  readonly promise: Promise<unknown>;
  /** When it times out, on its {@linkcode RequestDeadlines}' clock; else unused. */
  deadline = 0;
  #resolve!: (value: unknown) => void;
  #reject!: (error: unknown) => void;
  readonly #id: number;
  readonly #timeoutMs: number | undefined;
  readonly #onTimeout: (message: string, error: TimeoutError) => void;
  readonly #deadlines: RequestDeadlines | undefined;

  /**
   * @param id The stream's id, for the timeout's message.
   * @param timeoutMs Milliseconds to wait; undefined waits as long as the stream lives.
   * @param onTimeout Called after the promise rejected with `error` (the `TimeoutError`): resets
   * the stream with `message`.
   * @param deadlines The session's timer, which times the request out; needed with `timeoutMs`.
   */
  constructor(
    id: number,
    timeoutMs: number | undefined,
    onTimeout: (message: string, error: TimeoutError) => void,
    deadlines: RequestDeadlines | undefined,
  ) {
    this.promise = new Promise<unknown>((resolve, reject) => {
      this.#resolve = resolve;
      this.#reject = reject;
    });
    this.#id = id;
    this.#timeoutMs = timeoutMs;
    this.#onTimeout = onTimeout;
    if (timeoutMs !== undefined) (this.#deadlines = deadlines)!.add(this, timeoutMs);
  }

  /** The answer arrived (`undefined` for an END without a message). */
  answer(value: unknown): void {
    this.#deadlines?.settled(this);
    this.#resolve(value);
  }

  /** The stream failed first: the request rejects with `error`. */
  fail(error: unknown): void {
    this.#deadlines?.settled(this);
    this.#reject(error);
  }

  /**
   * The deadline passed (called once, by its deadlines, while it waits): rejects with
   * `TimeoutError`, then asks for the reset.
   */
  expire(): void {
    const timeoutMs = this.#timeoutMs;
    const error = new TimeoutError(`Stream ${this.#id} got no answer within ${timeoutMs} ms`);
    this.#reject(error);
    this.#onTimeout(`No answer within ${timeoutMs} ms`, error);
  }
}

/** The pending requests of one session and their one timer (see the module doc). */
export class RequestDeadlines {
  /** The requests waiting, in the order they were made. */
  readonly #waiting = new Set<PendingRequest>();
  #timer: ReturnType<typeof setTimeout> | undefined;
  /** When the timer fires, on this clock. */
  #armedFor = 0;
  /** The latest time this clock read: it never goes back. */
  #latest = 0;
  /** What this clock adds to the session's: how far that one went back, in all. */
  #skew = 0;
  /** The session's clock. */
  readonly #now: () => number;

  /** @param now The clock deadlines are read on: the session's. */
  constructor(now: () => number) {
    this.#now = now;
  }

  /** `request` waits, for `timeoutMs` from now. */
  add(request: PendingRequest, timeoutMs: number): void {
    const now = this.#time();
    this.#waiting.add(request);
    this.#arm(Math.min(request.deadline = now + timeoutMs, now + DEADLINE_TICK_MS), now);
  }

  /** `request` settled: it no longer waits. The timer stays as it is (see the module doc). */
  settled(request: PendingRequest): void {
    this.#waiting.delete(request);
  }

  /** The session ended: it clears the timer (every request it had failed first). */
  stop(): void {
    clearTimeout(this.#timer);
    this.#timer = undefined;
  }

  /**
   * The session's clock made monotonic. Read after it went back, it reads the latest time read
   * and counts on from there: the time that passed between that read and the jump is not counted,
   * so a request waiting across the jump is late by at most that (under one tick, as the timer
   * reads the clock at least once a tick while requests wait), never early. (One that jumped ahead
   * times out what it passed.)
   */
  #time(): number {
    const least = this.#latest;
    let now = this.#now() + this.#skew;
    if (now < least) {
      this.#skew += least - now;
      now = least;
    }
    return this.#latest = now;
  }

  /** Has the timer fire by `at`. */
  #arm(at: number, now: number): void {
    if (this.#timer !== undefined) {
      if (at >= this.#armedFor) return;
      clearTimeout(this.#timer);
    }
    this.#armedFor = at;
    this.#timer = setTimeout(() => this.#fire(), at - now);
  }

  /**
   * Times out every request due, earliest deadline first, after re-arming for the earliest
   * deadline left or the next tick, whichever comes first, while any request is left. Runs once
   * per tick or deadline, so walking the requests costs nothing per request.
   */
  #fire(): void {
    this.#timer = undefined;
    // Not raised to the time the timer was armed for: after the clock went back, that would count
    // time twice and time out early the requests made after the jump.
    const now = this.#time();
    const waiting = this.#waiting;
    const due: PendingRequest[] = [];
    let next = now + DEADLINE_TICK_MS;
    for (const request of waiting) {
      if (request.deadline <= now) due.push(request);
      else if (request.deadline < next) next = request.deadline;
    }
    if (waiting.size > due.length) this.#arm(next, now);
    // A timeout's reset runs abort listeners (user code), which may settle a request due after
    // it (then it no longer waits) or make new ones (which arm the timer themselves).
    for (const request of due.sort((a, b) => a.deadline - b.deadline)) {
      if (waiting.delete(request)) request.expire();
    }
  }
}
