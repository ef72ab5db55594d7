/**
 * Standing subscriptions (WSM-SUB-001..003): the registry of a connection's interests, each
 * re-opened on every new connection in registration order, with its dedupe window kept across
 * reconnects. It opens streams through the function it is handed and reports through a
 * {@linkcode Report}, so it knows nothing of the connection. Internal.
 *
 * @module
 */
import type { ReopenInfo, SubscribeOptions, Subscription } from './dialer_types.ts';
import { StreamResetError } from './errors.ts';
import type { OpenOptions, Stream } from './stream.ts';
import { ResetCode } from './_codes.ts';
import { callContained, type Report } from './_contain.ts';
import { mustBe } from './_describe.ts';

/** Opens a subscription's stream on the current connection (a session's `open`). */
export type OpenStream = (payload: unknown, options: OpenOptions) => Stream;

function subscribeError(field: string, expected: string, value: unknown): TypeError {
  return new TypeError(mustBe('subscribe', field, expected, value));
}

/**
 * Checks the options of `subscribe()`.
 *
 * @throws {TypeError} When a field has the wrong type.
 * @throws {RangeError} When `dedupe.window` is not an integer of at least 1.
 */
export function checkSubscribeOptions(options: SubscribeOptions): void {
  if (options === null || typeof options !== 'object') {
    throw subscribeError('options', 'an object', options);
  }
  if (typeof options.onMessage !== 'function') {
    throw subscribeError('onMessage', 'a function', options.onMessage);
  }
  if (options.onReopen !== undefined && typeof options.onReopen !== 'function') {
    throw subscribeError('onReopen', 'a function', options.onReopen);
  }
  const dedupe = options.dedupe;
  if (dedupe !== undefined) {
    if (dedupe === null || typeof dedupe !== 'object' || typeof dedupe.key !== 'function') {
      throw subscribeError('dedupe.key', 'a function', dedupe?.key);
    }
    const window = dedupe.window ?? 1024;
    if (!Number.isInteger(window) || window < 1) {
      throw new RangeError(
        mustBe('subscribe', 'dedupe.window', 'an integer of at least 1', window),
      );
    }
  }
}

/** A connection's standing subscriptions, in registration order. */
export class Subscriptions {
  readonly #live = new Set<LiveSubscription>();
  readonly #report: Report;

  /** @param report Where a throwing callback or a failed stream goes. */
  constructor(report: Report) {
    this.#report = report;
  }

  /** Registers a subscription (options already checked) and opens it with `open`. */
  add(payload: unknown, options: SubscribeOptions, open: OpenStream): Subscription {
    const sub = new LiveSubscription(this.#live, this.#report, payload, options);
    this.#live.add(sub);
    sub.attach(open, false);
    return sub;
  }

  /**
   * Re-opens every subscription with `open`, in registration order, each followed by its
   * `onReopen`; stops as soon as `proceed()` is false (the connection was lost or drains).
   */
  reopen(open: OpenStream, proceed: () => boolean): void {
    for (const sub of [...this.#live]) {
      if (!proceed()) break;
      sub.attach(open, true);
    }
  }

  /** The connection closed for good: every subscription ends, keeping nothing. */
  clear(): void {
    for (const sub of [...this.#live]) sub.detach();
    this.#live.clear();
  }
}

/** A standing subscription (WSM-SUB-001..003). */
class LiveSubscription implements Subscription {
  readonly #registry: Set<LiveSubscription>;
  readonly #report: Report;
  readonly #payload: unknown;
  readonly #headers: Record<string, unknown> | null;
  readonly #onMessage: (message: unknown) => unknown;
  readonly #onReopen: ((info: ReopenInfo) => unknown) | undefined;
  readonly #dedupe: { key: (message: unknown) => string; window: number } | undefined;
  readonly #keys = new Set<string>();
  #active = true;
  #stream: Stream | undefined;
  #removeSignal: (() => void) | undefined;

  constructor(
    registry: Set<LiveSubscription>,
    report: Report,
    payload: unknown,
    options: SubscribeOptions,
  ) {
    this.#registry = registry;
    this.#report = report;
    this.#payload = structuredClone(payload);
    this.#headers = structuredClone(options.headers ?? null);
    this.#onMessage = options.onMessage;
    this.#onReopen = options.onReopen;
    this.#dedupe = options.dedupe === undefined
      ? undefined
      : { key: options.dedupe.key, window: options.dedupe.window ?? 1024 };
    const signal = options.signal;
    if (signal) {
      const onAbort = () => this.unsubscribe();
      signal.addEventListener('abort', onAbort, { once: true });
      this.#removeSignal = () => signal.removeEventListener('abort', onAbort);
    }
  }

  get active(): boolean {
    return this.#active;
  }

  /**
   * Opens the subscription's stream with `open` (a fresh copy of its payload and headers) and
   * pumps it; a failed open goes to the report. On a reopen, then calls `onReopen`.
   */
  attach(open: OpenStream, reopened: boolean): void {
    let stream: Stream;
    try {
      stream = open(structuredClone(this.#payload), {
        headers: structuredClone(this.#headers),
        end: true,
      });
    } catch (error) {
      this.#report(error);
      return;
    }
    this.#stream = stream;
    void this.#pump(stream);
    if (reopened) callContained(this.#report, this.#onReopen, { resubscribed: true } as ReopenInfo);
  }

  /** The connection closed for good: forget the stream, keep nothing. */
  detach(): void {
    this.#active = false;
    this.#stream = undefined;
    this.#keys.clear();
    this.#removeSignal?.();
    this.#removeSignal = undefined;
  }

  unsubscribe(): void {
    if (!this.#active) return;
    const stream = this.#stream;
    this.detach();
    this.#registry.delete(this);
    if (stream !== undefined) {
      try {
        stream.reset(ResetCode.Cancel, 'unsubscribed');
      } catch {
        // the stream already ended
      }
    }
  }

  async #pump(stream: Stream): Promise<void> {
    try {
      for await (const message of stream) {
        if (this.#stream !== stream || !this.#active) return;
        if (this.#dedupe !== undefined && this.#seen(message)) continue;
        callContained(this.#report, this.#onMessage, message);
      }
    } catch (error) {
      if (this.#stream !== stream || !this.#active) return;
      if (error instanceof StreamResetError && !error.remote) return;
      this.#report(error);
    }
  }

  #seen(message: unknown): boolean {
    const dedupe = this.#dedupe!;
    let key: string;
    try {
      key = dedupe.key(message);
    } catch (error) {
      this.#report(error);
      return false;
    }
    if (this.#keys.has(key)) return true;
    this.#keys.add(key);
    if (this.#keys.size > dedupe.window) {
      const oldest = this.#keys.values().next().value as string;
      this.#keys.delete(oldest);
    }
    return false;
  }
}
