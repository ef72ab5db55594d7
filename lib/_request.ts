/**
 * {@linkcode PendingRequest}: the answer a `request()` waits for (WSM-STR-005): the first message
 * of the stream, or `undefined` when the other side ends it without one; with `timeoutMs`, a
 * deadline that rejects with `TimeoutError` and has the stream reset with `timeout`. The stream
 * makes one when a request must wait.
 *
 * A request made alone holds a timer of its own, cleared on every outcome. The requests of one
 * session share one timer instead, {@linkcode RequestDeadlines}: it is armed for the earliest
 * deadline and stays armed while any request waits, so requests that overlap set about one timer
 * per `timeoutMs` instead of one each. When it fires it times out what is due and re-arms for the
 * earliest deadline left; once no request waits it is cleared, so an idle session holds none.
 *
 * Internal: imported from `lib/` only.
 *
 * @module
 */
import { TimeoutError } from './errors.ts';

/** One request waiting for its answer (see the module doc). */
export class PendingRequest {
  /** Settles with the answer, or rejects with the stream's error or `TimeoutError`. */
  readonly promise: Promise<unknown>;
  /** When it times out (epoch ms), with shared deadlines; else unused. */
  deadline = 0;
  /** True once settled: shared deadlines skip it. */
  settled = false;
  #resolve!: (value: unknown) => void;
  #reject!: (error: unknown) => void;
  #timer: ReturnType<typeof setTimeout> | undefined;
  readonly #id: number;
  readonly #timeoutMs: number | undefined;
  readonly #onTimeout: (message: string, error: TimeoutError) => void;
  readonly #deadlines: RequestDeadlines | undefined;

  /**
   * @param id The stream's id, for the timeout's message.
   * @param timeoutMs Milliseconds to wait; undefined waits as long as the stream lives.
   * @param onTimeout Called after the promise rejected with `error` (the `TimeoutError`): resets
   * the stream with `message`.
   * @param deadlines The session's shared timer; without it, the request holds its own.
   */
  constructor(
    id: number,
    timeoutMs: number | undefined,
    onTimeout: (message: string, error: TimeoutError) => void,
    deadlines?: RequestDeadlines,
  ) {
    this.promise = new Promise<unknown>((resolve, reject) => {
      this.#resolve = resolve;
      this.#reject = reject;
    });
    this.#id = id;
    this.#timeoutMs = timeoutMs;
    this.#onTimeout = onTimeout;
    this.#deadlines = timeoutMs === undefined ? undefined : deadlines;
    if (timeoutMs === undefined) return;
    if (deadlines !== undefined) {
      const now = Date.now();
      this.deadline = now + timeoutMs;
      deadlines.add(this, now);
    } else {
      this.#timer = setTimeout(() => {
        this.#timer = undefined;
        this.expire();
      }, timeoutMs);
    }
  }

  /** The answer arrived (`undefined` for an END without a message). */
  answer(value: unknown): void {
    this.#settle();
    this.#resolve(value);
  }

  /** The stream failed first: the request rejects with `error`. */
  fail(error: unknown): void {
    this.#settle();
    this.#reject(error);
  }

  /** The deadline passed: rejects with `TimeoutError`, then asks for the reset. */
  expire(): void {
    if (this.settled) return;
    this.settled = true;
    const timeoutMs = this.#timeoutMs;
    const error = new TimeoutError(`Stream ${this.#id} got no answer within ${timeoutMs} ms`);
    this.#reject(error);
    this.#onTimeout(`No answer within ${timeoutMs} ms`, error);
  }

  #settle(): void {
    if (this.settled) return;
    this.settled = true;
    if (this.#deadlines !== undefined) this.#deadlines.settled(this);
    else if (this.#timer !== undefined) clearTimeout(this.#timer);
  }
}

/** The pending requests of one session and their one timer (see the module doc). */
export class RequestDeadlines {
  /** The requests waiting, in the order they were made. */
  readonly #waiting = new Set<PendingRequest>();
  #timer: ReturnType<typeof setTimeout> | undefined;
  /** The deadline the timer was armed for. */
  #armedFor = 0;

  /** A request with a deadline waits; `now` is when its deadline was counted from. */
  add(request: PendingRequest, now: number): void {
    this.#waiting.add(request);
    if (this.#timer === undefined || request.deadline < this.#armedFor) {
      this.#arm(request.deadline, now);
    }
  }

  /**
   * `request` settled: it no longer waits. The timer stays armed while other requests wait (when
   * it fires it re-arms for the earliest left), and is cleared once none does.
   */
  settled(request: PendingRequest): void {
    const waiting = this.#waiting;
    waiting.delete(request);
    if (waiting.size === 0) this.stop();
  }

  /** Nothing waits any more (the last request settled, or the session ended): no timer. */
  stop(): void {
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#waiting.clear();
  }

  #arm(deadline: number, now: number): void {
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    this.#armedFor = deadline;
    this.#timer = setTimeout(() => this.#fire(), Math.max(0, deadline - now));
  }

  /**
   * Times out every request due (the one the timer was armed for, at least), earliest deadline
   * first, then re-arms for the earliest left. Runs once per deadline that passes with requests
   * waiting, so walking them all here costs nothing per request.
   */
  #fire(): void {
    this.#timer = undefined;
    // Never before the deadline the timer was armed for: its own delay has passed, even if the
    // wall clock went back meanwhile (a clock that jumped ahead times out what it passed).
    const due = Math.max(Date.now(), this.#armedFor);
    const expired: PendingRequest[] = [];
    for (const request of this.#waiting) {
      if (request.deadline <= due) {
        expired.push(request);
        this.#waiting.delete(request);
      }
    }
    expired.sort((a, b) => a.deadline - b.deadline);
    // A timeout's reset runs abort listeners (user code), which may make new requests.
    for (const request of expired) request.expire();
    let next = Infinity;
    for (const request of this.#waiting) next = Math.min(next, request.deadline);
    if (next !== Infinity && (this.#timer === undefined || next < this.#armedFor)) {
      this.#arm(next, due);
    }
  }
}
