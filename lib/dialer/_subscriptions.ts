/**
 * Standing subscriptions: the registry of a connection's interests, each opened on the established
 * connection (now, or at the next establishment when there is none), re-opened on every new
 * connection in registration order, with its dedupe window kept across reconnects, and its state
 * and `ready` promise saying what the acceptor made of it. Each remembers the id of the last
 * tracked message it received and re-opens with it in the reserved OPEN header `:last-event-id`. It
 * opens streams and reports through a {@linkcode SubscriptionsHost}, so it knows nothing of the
 * connection. Internal.
 *
 * @module
 */
import { Ready } from './_ready.ts';
import {
  checkOwnHeaders,
  EVENT_ID,
  isEventId,
  LAST_EVENT_ID,
  MUXWS,
  type MuxwsOpen,
  type WithMuxws,
} from '../wire/reserved.ts';
import type {
  ReopenInfo,
  SubscribeOptions,
  Subscription,
  SubscriptionState,
} from './dialer_types.ts';
import { ClosedError, StreamResetError } from '../errors.ts';
import type { OpenOptions, Stream } from '../session/stream.ts';
import { mapReads, type ReadMap } from '../session/stream_reads.ts';
import { ResetCode } from '../wire/codes.ts';
import { callContained, type Report } from '../util/contain.ts';
import { mustBe } from '../util/describe.ts';

/** What the registry needs of its connection. */
interface SubscriptionsHost {
  /** Where a throwing callback, or a reset no subscription's `onError` takes, goes. */
  readonly report: Report;
  /**
   * Opens a stream on the established connection (a session's `open`); `undefined` while none is
   * established or it drains after a GOAWAY, and the subscription waits for the next one.
   */
  open(payload: unknown, options: WithMuxws<OpenOptions>): Stream | undefined;
}

/**
 * What a subscription opens on every connection: its OPEN's payload and headers, and what muxws
 * itself adds (a routed subscription's `:route`).
 */
interface SubscriptionOpen {
  payload: unknown;
  headers: Record<string, unknown> | null;
  muxws?: MuxwsOpen;
}

/** A message with the id its DATA carried, as a subscription reads it. */
class Received {
  readonly value: unknown;
  /** Its DATA's `:id` header when that is an event id; else undefined. */
  readonly id: string | undefined;

  constructor(value: unknown, id: string | undefined) {
    this.value = value;
    this.id = id;
  }
}

/** How a subscription reads a message that has headers: with its `:id`. */
const withId: ReadMap = (value, headers) => {
  const id = headers[EVENT_ID];
  return new Received(value, isEventId(id) ? id : undefined);
};

/** Reset codes that refuse a subscription for good: it is not re-opened. */
const REFUSALS: readonly string[] = ['not_found', 'invalid', 'unauthorized', 'forbidden'];

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
  for (const name of ['onReopen', 'onError'] as const) {
    const fn = options[name];
    if (fn !== undefined && typeof fn !== 'function') throw subscribeError(name, 'a function', fn);
  }
  checkOwnHeaders(options.headers, 'subscribe');
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
  readonly #host: SubscriptionsHost;

  constructor(host: SubscriptionsHost) {
    this.#host = host;
  }

  /**
   * Registers a subscription (options already checked) that opens `open` (its payload and
   * headers, captured by value), and opens it now when a connection is established.
   */
  add(open: SubscriptionOpen, options: SubscribeOptions): Subscription {
    const sub = new LiveSubscription(this.#live, this.#host, open, options);
    this.#live.add(sub);
    sub.attach();
    return sub;
  }

  /**
   * Opens every subscription on the connection just established, in registration order, each
   * re-open followed by its `onReopen`; stops as soon as the host has no connection to open on
   * (it was lost or drains).
   */
  reopen(): void {
    for (const sub of [...this.#live]) {
      if (!sub.attach()) break;
    }
  }

  /** The connection closed for good: every subscription closes, keeping nothing. */
  clear(): void {
    for (const sub of [...this.#live]) sub.end('closed', 'the connection closed');
    this.#live.clear();
  }
}

/** A standing subscription. */
class LiveSubscription implements Subscription {
  readonly ready: Promise<void>;
  readonly #registry: Set<LiveSubscription>;
  readonly #host: SubscriptionsHost;
  readonly #payload: unknown;
  readonly #headers: Record<string, unknown> | null;
  readonly #muxws: MuxwsOpen | undefined;
  readonly #options: SubscribeOptions;
  readonly #dedupe: { key: (message: unknown) => string; window: number } | undefined;
  readonly #keys = new Set<string>();
  #state: SubscriptionState = 'pending';
  /** `ready`, and the abort signal's listener. */
  readonly #ready: Ready;
  /** True once a stream was opened: the next open is a re-open. */
  #opened = false;
  #stream: Stream | undefined;
  /** The id of the last tracked message received: sent as `:last-event-id` when re-opened. */
  #lastEventId: string | undefined;

  constructor(
    registry: Set<LiveSubscription>,
    host: SubscriptionsHost,
    open: SubscriptionOpen,
    options: SubscribeOptions,
  ) {
    this.#registry = registry;
    this.#host = host;
    this.#payload = structuredClone(open.payload);
    this.#headers = structuredClone(open.headers ?? null);
    this.#muxws = open.muxws;
    this.#options = options;
    this.#dedupe = options.dedupe === undefined
      ? undefined
      : { key: options.dedupe.key, window: options.dedupe.window ?? 1024 };
    this.#ready = new Ready(options.signal, () => this.unsubscribe());
    this.ready = this.#ready.promise;
  }

  get active(): boolean {
    return this.#state === 'pending' || this.#state === 'active';
  }

  get state(): SubscriptionState {
    return this.#state;
  }

  /**
   * Opens the subscription's stream through the host (a fresh copy of its payload and headers)
   * and pumps it; after an earlier open, then calls `onReopen`. A failed open goes to the
   * report. Returns false when the host has no connection to open on.
   */
  attach(): boolean {
    let stream: Stream | undefined;
    try {
      stream = this.#host.open(structuredClone(this.#payload), {
        headers: structuredClone(this.#headers),
        end: true,
        [MUXWS]: this.#muxwsOpen(),
      });
    } catch (error) {
      this.#host.report(error);
      return true;
    }
    if (stream === undefined) return false;
    mapReads(stream, withId);
    this.#stream = stream;
    this.#state = 'pending';
    void this.#pump(stream);
    if (this.#opened) {
      callContained(this.#host.report, this.#options.onReopen, {
        resubscribed: true,
      } as ReopenInfo);
    }
    this.#opened = true;
    return true;
  }

  /** What muxws adds to the OPEN: the route, and the last event id once there is one. */
  #muxwsOpen(): MuxwsOpen | undefined {
    const last = this.#lastEventId;
    if (last === undefined) return this.#muxws;
    return { ...this.#muxws, headers: { ...this.#muxws?.headers, [LAST_EVENT_ID]: last } };
  }

  /**
   * Ends the subscription in `state` (final) and forgets its stream and keys; `ready`, if it has
   * not settled, rejects with `ClosedError` saying `why`, or with `error`.
   */
  end(state: 'refused' | 'closed', why: string, error?: StreamResetError): void {
    this.#state = state;
    this.#stream = undefined;
    this.#keys.clear();
    this.#ready.detach();
    this.#registry.delete(this);
    this.#ready.settle(
      error ?? new ClosedError(`The subscription closed before it opened: ${why}`),
    );
  }

  unsubscribe(): void {
    if (!this.active) return;
    const stream = this.#stream;
    this.end('closed', 'unsubscribe() was called');
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
      for await (let message of stream) {
        if (this.#stream !== stream) return;
        if (this.#state === 'pending') {
          this.#state = 'active';
          this.#ready.settle();
        }
        if (message instanceof Received) {
          if (message.id !== undefined) this.#lastEventId = message.id;
          message = message.value;
        }
        if (this.#dedupe !== undefined && this.#seen(message)) continue;
        callContained(this.#host.report, this.#options.onMessage, message);
      }
      // the acceptor ended it: nothing is open until the next establishment re-opens it
      if (this.#stream === stream && this.active) this.#state = 'pending';
    } catch (error) {
      if (this.#stream !== stream) return;
      this.#failed(error);
    }
  }

  /** The current stream failed with `error`: refused for good, or pending until re-opened. */
  #failed(error: unknown): void {
    if (!(error instanceof StreamResetError)) {
      this.#host.report(error);
      return;
    }
    this.#state = 'pending';
    // Lost with its connection (re-opened and reported by onReopen), or reset by this side on
    // the acceptor's bad input (the session reported that): re-opened at the next establishment.
    if (!error.remote) return;
    const first = this.#ready.pending;
    if (REFUSALS.includes(error.code)) {
      this.end('refused', 'it was refused', error);
      if (first) return;
    }
    const onError = this.#options.onError;
    if (onError === undefined) this.#host.report(error);
    else callContained(this.#host.report, onError, error);
  }

  #seen(message: unknown): boolean {
    const dedupe = this.#dedupe!;
    let key: string;
    try {
      key = dedupe.key(message);
    } catch (error) {
      this.#host.report(error);
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
