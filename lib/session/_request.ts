/**
 * {@linkcode PendingRequest}: the answer a `request()` waits for (WSM-STR-005): the first message
 * of the stream, or `undefined` when the other side ends it without one; with `timeoutMs`, a
 * deadline that rejects with `TimeoutError` and has the stream reset with `timeout`. The stream
 * makes one when a request must wait.
 *
 * The requests of one session share one timer, {@linkcode RequestDeadlines}: it is armed for the
 * earliest deadline and stays armed while any request waits, so requests that overlap set about
 * one timer per `timeoutMs` instead of one each. When it fires it times out what is due and
 * re-arms for the earliest deadline left; once no request waits it is cleared, so an idle session
 * holds none. A request made without a session's deadlines gets a `RequestDeadlines` of its own.
 *
 * Private to `lib/session/`.
 *
 * @module
 */
import { TimeoutError } from '../errors.ts';

/** One request waiting for its answer (see the module doc). */
export class PendingRequest {
  /** Settles with the answer, or rejects with the stream's error or `TimeoutError`. */
  readonly promise: Promise<unknown>;
  /** When it times out (epoch ms), set by its {@linkcode RequestDeadlines}; else unused. */
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
   * @param deadlines The session's shared timer; without it, the request holds a timer of its own.
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
    if (timeoutMs !== undefined) {
      (this.#deadlines = deadlines ?? new RequestDeadlines()).add(this, timeoutMs);
    }
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
  /** The deadline the timer was armed for. */
  #armedFor = 0;
  /** The session's clock. */
  readonly #now: () => number;

  /** @param now The clock deadlines are read on (the session's). */
  constructor(now: () => number = Date.now) {
    this.#now = now;
  }

  /** `request` waits, for `timeoutMs` from now. */
  add(request: PendingRequest, timeoutMs: number): void {
    const now = this.#now();
    this.#waiting.add(request);
    this.#arm(request.deadline = now + timeoutMs, now);
  }

  /**
   * `request` settled: it no longer waits. The timer stays armed while other requests wait (when
   * it fires it re-arms for the earliest left), and is cleared once none does: a session that
   * ends fails every request it had, so it is left with none.
   */
  settled(request: PendingRequest): void {
    const waiting = this.#waiting;
    if (waiting.delete(request) && waiting.size === 0) {
      clearTimeout(this.#timer);
      this.#timer = undefined;
    }
  }

  /** Arms the timer for `deadline`, unless it is armed for an earlier one. */
  #arm(deadline: number, now: number): void {
    if (this.#timer !== undefined) {
      if (deadline >= this.#armedFor) return;
      clearTimeout(this.#timer);
    }
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
    const due = Math.max(this.#now(), this.#armedFor);
    const waiting = this.#waiting;
    // A timeout's reset runs abort listeners (user code), which may settle a request due after
    // it (then it no longer waits) or make new ones (which arm the timer themselves).
    for (const request of [...waiting].sort((a, b) => a.deadline - b.deadline)) {
      if (!waiting.has(request)) continue;
      if (request.deadline > due) {
        this.#arm(request.deadline, due);
        return;
      }
      waiting.delete(request);
      request.expire();
    }
  }
}
