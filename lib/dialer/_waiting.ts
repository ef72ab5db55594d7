/**
 * Requests that wait for the connection (`waitWhileReconnecting()`): a request made while no
 * connection is established (or one drains after a GOAWAY) is held here, at most `maxWaiting` at
 * once, until the next establishment sends it, each with what is left of its timeout. Its timer,
 * its signal and the connection's close remove it unsent. It sends through the function it is
 * handed and reads the clock it is given, so it knows nothing of the connection. Internal.
 *
 * @module
 */
import { NotConnectedError, StreamResetError, TimeoutError } from '../errors.ts';
import type { RequestOptions } from '../session/stream.ts';
import { ResetCode } from '../wire/codes.ts';
import { timerDelay } from '../util/delay.ts';
import { mustBe } from '../util/describe.ts';
import type { RequestWaiter, SendRequest } from './_features.ts';

/** One request held until the next establishment. */
interface Held {
  readonly payload: unknown;
  readonly options: RequestOptions | undefined;
  /** Its timeout, the wait included; undefined for none. */
  readonly timeoutMs: number | undefined;
  /** When its timeout expires (epoch ms); undefined without one. */
  readonly deadline: number | undefined;
  timer: ReturnType<typeof setTimeout> | undefined;
  removeSignal: (() => void) | undefined;
  resolve(value: unknown): void;
  reject(error: unknown): void;
}

/** The requests waiting for a connection, in the order they were made. */
export class WaitingRequests implements RequestWaiter {
  readonly #held = new Set<Held>();
  readonly #max: number;
  readonly #now: () => number;

  /**
   * @param max How many may wait at once (`maxWaiting`).
   * @param now The clock, epoch ms.
   */
  constructor(max: number, now: () => number) {
    this.#max = max;
    this.#now = now;
  }

  /**
   * Holds a request until {@linkcode WaitingRequests.send}. Rejects at once with
   * `NotConnectedError` when `max` already wait, with `TimeoutError` when `timeoutMs` passes
   * first (nothing is sent), and with `StreamResetError` `cancel` when its signal aborts first.
   *
   * @param timeoutMs The request's timeout, the wait included; undefined for none. Anything but a
   * finite number of at least 0 rejects with `RangeError`, as a sent request's does.
   * @param state The connection's state, for the refusal's message.
   */
  hold(
    payload: unknown,
    options: RequestOptions | undefined,
    timeoutMs: number | undefined,
    state: string,
  ): Promise<unknown> {
    if (this.#held.size >= this.#max) {
      return Promise.reject(
        new NotConnectedError(
          `Cannot send a request: the connection is ${state} and ${this.#max} requests already wait for it (maxWaiting)`,
        ),
      );
    }
    if (
      timeoutMs !== undefined &&
      (typeof timeoutMs !== 'number' || !(timeoutMs >= 0) || !Number.isFinite(timeoutMs))
    ) {
      return Promise.reject(
        new RangeError(mustBe('send a request', 'timeoutMs', 'a non-negative number', timeoutMs)),
      );
    }
    const signal = options?.signal;
    if (signal?.aborted) return Promise.reject(cancelled());
    return new Promise<unknown>((resolve, reject) => {
      const held: Held = {
        payload,
        options,
        timeoutMs,
        deadline: timeoutMs === undefined ? undefined : this.#now() + timeoutMs,
        timer: undefined,
        removeSignal: undefined,
        resolve,
        reject,
      };
      if (timeoutMs !== undefined) {
        held.timer = setTimeout(() => this.#expire(held), timerDelay(timeoutMs));
      }
      if (signal !== undefined) {
        const onAbort = () => {
          this.#drop(held);
          reject(cancelled());
        };
        signal.addEventListener('abort', onAbort, { once: true });
        held.removeSignal = () => signal.removeEventListener('abort', onAbort);
      }
      this.#held.add(held);
    });
  }

  /** Sends every waiting request with `send`, in order, each with what is left of its timeout. */
  send(send: SendRequest): void {
    if (this.#held.size === 0) return;
    const now = this.#now();
    for (const held of [...this.#held]) {
      if (held.deadline !== undefined && held.deadline <= now) {
        this.#expire(held);
        continue;
      }
      this.#drop(held);
      const options = held.deadline === undefined
        ? held.options
        : { ...held.options, timeoutMs: held.deadline - now };
      send(held.payload, options ?? {}).then(held.resolve, held.reject);
    }
  }

  /** The connection closed for good: every waiting request rejects with `error()`, unsent. */
  fail(error: () => unknown): void {
    if (this.#held.size === 0) return;
    const reason = error();
    for (const held of [...this.#held]) {
      this.#drop(held);
      held.reject(reason);
    }
  }

  /** Its timeout passed before a connection came: it rejects, unsent. */
  #expire(held: Held): void {
    this.#drop(held);
    held.reject(
      new TimeoutError(
        `The request got no answer within ${held.timeoutMs} ms: it waited for the connection and was never sent`,
      ),
    );
  }

  #drop(held: Held): void {
    this.#held.delete(held);
    clearTimeout(held.timer);
    held.removeSignal?.();
  }
}

function cancelled(): StreamResetError {
  return new StreamResetError('The request was cancelled before it was sent', {
    code: ResetCode.Cancel,
    remote: false,
  });
}
