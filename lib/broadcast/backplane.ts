/**
 * The backplane carries an acceptor's broadcasts to the other acceptor nodes, so a
 * broadcast to a tag reaches the tagged peers on every node.
 *
 * A {@linkcode Backplane} is two functions: `publish(message)` hands one
 * {@linkcode BackplaneMessage} to the engine, and `subscribe(handler)` receives the messages
 * other nodes published. The message carries the PUBLISH frame already encoded by the
 * publishing node's codec, so a receiving node hands the same bytes to each of its peers: a
 * broadcast is encoded once, on the node that made it, never per peer or per node.
 *
 * {@linkcode broadcastChannelBackplane} is the zero-setup backplane of one host: the
 * web-standard `BroadcastChannel` between the workers and isolates of one process. It is not a
 * multi-machine backplane. Across machines use `redisBackplane` from the `./redis` entry point.
 *
 * Failures of a `publish` are reported by the promise it returns (it never throws), so the
 * caller, the acceptor, reports them through its own `onError` and its local delivery goes on. Failures that no call is waiting for (an unreadable incoming message, a lost
 * connection, a gap in delivery) go to the backplane's `onError` option.
 *
 * @example Two nodes of one process
 * ```ts
 * import { type BackplaneMessage, broadcastChannelBackplane } from '@muxws/core/backplane';
 * import assert from 'node:assert/strict';
 *
 * const nodeA = broadcastChannelBackplane('chat');
 * const nodeB = broadcastChannelBackplane('chat');
 * try {
 *   const received = new Promise<BackplaneMessage>((resolve) => nodeB.subscribe(resolve));
 *   await nodeA.publish({
 *     tag: 'room:1',
 *     headers: null,
 *     payload: '[9,"room:1",null,"hello"]',
 *     except: [],
 *     origin: 'node-a',
 *     codec: 'json',
 *   });
 *   const message = await received;
 *   assert.equal(message.origin, 'node-a');
 *   assert.equal(message.payload, '[9,"room:1",null,"hello"]');
 * } finally {
 *   nodeA.close();
 *   nodeB.close();
 * }
 * ```
 *
 * @module
 */
import { describe } from '../util/describe.ts';
import { ClosedError, MuxwsError, type MuxwsErrorOptions } from '../errors.ts';

/**
 * One broadcast crossing the backplane. `payload` is the whole PUBLISH frame
 * `[9, tag, headers, payload]` as the publishing node's codec encoded it (a string for a text
 * codec, bytes for a binary one): a receiving node sends it unchanged to every local peer that
 * holds `tag` and none of the `except` tags, and ignores messages whose `origin` is its own.
 */
export interface BackplaneMessage {
  /** The tag the broadcast reaches, 1 to 256 characters. */
  readonly tag: string;
  /**
   * The broadcast's headers, as given to `broadcast()`. Informational: the peers receive the
   * headers inside the encoded `payload`, which is authoritative.
   */
  readonly headers: Record<string, unknown> | null;
  /** The encoded PUBLISH frame, sent to the peers as it is. */
  readonly payload: string | Uint8Array;
  /** Peers holding any of these tags are skipped, on every node. */
  readonly except: readonly string[];
  /** The publishing node's id: a node skips the messages it published itself. */
  readonly origin: string;
  /**
   * The `name` of the codec that encoded `payload` (`json`, ...). A node whose codec differs
   * cannot send the bytes to its peers and reports the message instead.
   */
  readonly codec: string;
}

/**
 * Carries broadcasts between acceptor nodes. Give each acceptor its own backplane
 * object: a backplane never hands a message back to the object that published it.
 *
 * @example An in-memory backplane between two objects, for tests
 * ```ts
 * import type { Backplane, BackplaneMessage } from '@muxws/core/backplane';
 * import assert from 'node:assert/strict';
 *
 * function memoryPair(): [Backplane, Backplane] {
 *   const handlers = [new Set<(m: BackplaneMessage) => void>(), new Set<(m: BackplaneMessage) => void>()];
 *   const side = (mine: number): Backplane => ({
 *     publish: (message) => handlers[1 - mine].forEach((handler) => handler(message)),
 *     subscribe: (handler) => {
 *       handlers[mine].add(handler);
 *       return () => handlers[mine].delete(handler);
 *     },
 *   });
 *   return [side(0), side(1)];
 * }
 *
 * const [a, b] = memoryPair();
 * const seen: string[] = [];
 * b.subscribe((message) => seen.push(message.tag));
 * a.publish({ tag: 't', headers: null, payload: '[9,"t",null,1]', except: [], origin: 'a', codec: 'json' });
 * assert.deepEqual(seen, ['t']);
 * ```
 */
export interface Backplane {
  /**
   * Hands one message to the engine for every other node. Failures should be reported through
   * the returned promise rather than thrown; callers guard against both.
   */
  publish(message: BackplaneMessage): void | Promise<void>;
  /**
   * Calls `handler` with each message other nodes publish, in the order each publisher
   * published them. Returns the function that stops it (idempotent).
   */
  subscribe(handler: (message: BackplaneMessage) => void): () => void;
}

/**
 * A backplane could not publish a message, received one it cannot read, or lost its engine.
 * `cause` holds the underlying error.
 *
 * @example
 * ```ts
 * import { BackplaneError } from '@muxws/core/backplane';
 * import { MuxwsError } from '@muxws/core';
 * import assert from 'node:assert/strict';
 *
 * const error = new BackplaneError('Cannot publish to Redis channel "muxws": not connected');
 * assert(error instanceof MuxwsError);
 * assert.equal(error.name, 'BackplaneError');
 * ```
 */
export class BackplaneError extends MuxwsError {
  /** `'BackplaneError'`. */
  override name: string = 'BackplaneError';
}

/** Options of {@linkcode BackplaneGapError}. */
export interface BackplaneGapErrorOptions extends MuxwsErrorOptions {
  /** Epoch milliseconds when the gap began: the connection was lost, or the last message came. */
  startedAt: number;
  /** Epoch milliseconds when delivery resumed. */
  endedAt: number;
  /** How many messages are known to be lost, when they could be counted. */
  missed?: number;
  /** The node whose messages were lost, when known. */
  origin?: string;
}

/**
 * Messages published between `startedAt` and `endedAt` may not have arrived (and never will):
 * the backplane lost its engine and is delivering again, or it saw a publisher's sequence jump.
 * An application that keeps state in sync through broadcasts resyncs on it.
 *
 * @example
 * ```ts
 * import { BackplaneError, BackplaneGapError } from '@muxws/core/backplane';
 * import assert from 'node:assert/strict';
 *
 * const gap = new BackplaneGapError('Redis subscriber was away for 3000 ms', {
 *   startedAt: 1_700_000_000_000,
 *   endedAt: 1_700_000_003_000,
 * });
 * assert(gap instanceof BackplaneError);
 * assert.equal(gap.endedAt - gap.startedAt, 3000);
 * assert.equal(gap.missed, undefined);
 * ```
 */
export class BackplaneGapError extends BackplaneError {
  /** `'BackplaneGapError'`. */
  override name: string = 'BackplaneGapError';
  /** Epoch milliseconds when the gap began. */
  readonly startedAt: number;
  /** Epoch milliseconds when delivery resumed. */
  readonly endedAt: number;
  /** How many messages are known to be lost, or `undefined` when unknown. */
  readonly missed: number | undefined;
  /** The node whose messages were lost, or `undefined` when the gap concerns every node. */
  readonly origin: string | undefined;

  /**
   * Creates the error.
   *
   * @param message What was lost and for how long.
   * @param options `startedAt`, `endedAt`, and when known `missed` and `origin`.
   */
  constructor(message: string, options: BackplaneGapErrorOptions) {
    super(message, options);
    this.startedAt = options.startedAt;
    this.endedAt = options.endedAt;
    this.missed = options.missed;
    this.origin = options.origin;
  }
}

/**
 * Tells whether `value` has the shape of a {@linkcode BackplaneMessage}. Backplanes check what
 * they receive with it before handing it on.
 *
 * @param value Anything received from an engine.
 * @returns True when every field has its type.
 *
 * @example
 * ```ts
 * import { isBackplaneMessage } from '@muxws/core/backplane';
 * import assert from 'node:assert/strict';
 *
 * const message = { tag: 't', headers: null, payload: 'x', except: [], origin: 'a', codec: 'json' };
 * assert(isBackplaneMessage(message));
 * assert(!isBackplaneMessage({ ...message, except: [1] }));
 * ```
 */
export function isBackplaneMessage(value: unknown): value is BackplaneMessage {
  if (value === null || typeof value !== 'object') return false;
  const m = value as Record<string, unknown>;
  return typeof m.tag === 'string' && m.tag.length > 0 &&
    (m.headers === null || (typeof m.headers === 'object' && !Array.isArray(m.headers))) &&
    (typeof m.payload === 'string' || m.payload instanceof Uint8Array) &&
    Array.isArray(m.except) && m.except.every((t) => typeof t === 'string') &&
    typeof m.origin === 'string' && typeof m.codec === 'string';
}

/** Senders whose last sequence number a {@linkcode BackplaneReceiver} remembers. */
const MAX_SENDERS = 1024;

/**
 * One incoming message as a backplane's wire format carries it: who published it, its place in
 * that publisher's sequence, and the message.
 */
export interface BackplaneEnvelope {
  /** The id of the backplane object that published it, drawn once per object. */
  readonly sender: string;
  /** The publisher's sequence number of the message: 1 for its first, then one more each. */
  readonly seq: number;
  /** The message. */
  readonly message: BackplaneMessage;
}

/** Options of {@linkcode BackplaneReceiver}. */
export interface BackplaneReceiverOptions<T> {
  /**
   * Turns what the engine delivered into an envelope. Returns `undefined` to ignore it (a
   * message this node published itself, say); throws a {@linkcode BackplaneError} saying why
   * it cannot be read, which the receiver reports.
   */
  decode: (data: T) => BackplaneEnvelope | undefined;
  /**
   * Receives a {@linkcode BackplaneGapError} when a sender's sequence numbers were skipped, what
   * `decode` could not read, a subscriber that threw or rejected, and whatever is given to
   * `report()`. Contained; absent, `console.error`.
   */
  onError?: (error: BackplaneError) => void;
  /**
   * The clock, in epoch milliseconds, that dates each sender's last message and the gaps.
   *
   * @default {Date.now}
   */
  now?: () => number;
}

/**
 * The receiving half every backplane in this package shares: it decodes what the engine
 * delivered, drops a repeated or older sequence number, reports skipped ones as a
 * {@linkcode BackplaneGapError} counting the missed messages, and hands each message to every
 * subscribed handler in subscription order, containing and reporting a handler that throws or
 * rejects. A backplane over another engine can build on it: it supplies the wire format
 * (`decode`) and the publishing half.
 *
 * Up to 1024 senders are remembered; past that the one heard from least recently is forgotten,
 * and its next message is taken as a first one.
 *
 * @example A receiver fed by hand, on a fake clock
 * ```ts
 * import {
 *   type BackplaneEnvelope,
 *   type BackplaneError,
 *   BackplaneGapError,
 *   BackplaneReceiver,
 * } from '@muxws/core/backplane';
 * import assert from 'node:assert/strict';
 *
 * let now = 1_000;
 * const errors: BackplaneError[] = [];
 * const receiver = new BackplaneReceiver<BackplaneEnvelope>('Example channel', {
 *   decode: (envelope) => envelope,
 *   onError: (error) => errors.push(error),
 *   now: () => now,
 * });
 * const tags: string[] = [];
 * receiver.subscribe((message) => tags.push(message.tag));
 * const message = (tag: string) =>
 *   ({ tag, headers: null, payload: '[9]', except: [], origin: 'node-a', codec: 'json' });
 *
 * receiver.receive({ sender: 's', seq: 1, message: message('one') });
 * receiver.receive({ sender: 's', seq: 1, message: message('again') }); // a repeat: dropped
 * now = 1_500;
 * receiver.receive({ sender: 's', seq: 4, message: message('four') }); // 2 and 3 are lost
 * assert.deepEqual(tags, ['one', 'four']);
 * assert(errors[0] instanceof BackplaneGapError);
 * assert.equal(errors[0].message, 'Example channel lost 2 message(s) from node "node-a"');
 * assert.equal(errors[0].endedAt - errors[0].startedAt, 500);
 * receiver.close();
 * ```
 */
export class BackplaneReceiver<T> {
  readonly #where: string;
  readonly #decode: (data: T) => BackplaneEnvelope | undefined;
  readonly #onError: ((error: BackplaneError) => void) | undefined;
  readonly #now: () => number;
  readonly #handlers = new Set<(message: BackplaneMessage) => void>();
  /** Each sender's last sequence number and when it arrived, least recent sender first. */
  readonly #seen = new Map<string, { seq: number; at: number }>();
  #closed = false;

  /**
   * Creates the receiver.
   *
   * @param where Names the channel at the start of its error messages, e.g.
   * `Redis channel "chat"`.
   * @param options `decode`, and optionally `onError` and `now`.
   */
  constructor(where: string, options: BackplaneReceiverOptions<T>) {
    this.#where = where;
    this.#decode = options.decode;
    this.#onError = options.onError;
    this.#now = options.now ?? Date.now;
  }

  /**
   * Takes one delivery from the engine: decodes it, checks its sequence number and hands its
   * message to the handlers. Never throws; does nothing after `close()`.
   *
   * @param data What the engine delivered.
   */
  receive(data: T): void {
    if (this.#closed) return;
    let envelope: BackplaneEnvelope | undefined;
    try {
      envelope = this.#decode(data);
    } catch (cause) {
      this.report(
        cause instanceof BackplaneError ? cause : new BackplaneError(
          `${this.#where} received a message it cannot read: ${
            cause instanceof Error ? cause.message : describe(cause)
          }`,
          { cause },
        ),
      );
      return;
    }
    if (envelope === undefined || !this.#track(envelope)) return;
    const message = envelope.message;
    for (const handler of [...this.#handlers]) {
      let result: unknown;
      try {
        result = handler(message);
      } catch (cause) {
        this.#subscriberFailed('threw on', message, cause);
        continue;
      }
      if (typeof (result as PromiseLike<unknown> | null)?.then === 'function') {
        (result as PromiseLike<unknown>).then(undefined, (cause) => {
          this.#subscriberFailed('rejected a promise on', message, cause);
        });
      }
    }
  }

  /**
   * Calls `handler` with each message received, in order, until the returned function is
   * called (idempotent). Subscribing the same function twice gives two deliveries and two
   * independent stop functions. After `close()` the handler is never called.
   *
   * @param handler Called with each message.
   * @returns The function that stops it.
   * @throws {TypeError} When `handler` is not a function.
   */
  subscribe(handler: (message: BackplaneMessage) => void): () => void {
    if (typeof handler !== 'function') {
      throw new TypeError(
        `Cannot subscribe as "handler" must be a function: current value is ${describe(handler)}`,
      );
    }
    const entry = (message: BackplaneMessage) => handler(message);
    if (!this.#closed) this.#handlers.add(entry);
    return () => {
      this.#handlers.delete(entry);
    };
  }

  /**
   * Hands `error` to `onError`, containing a throw (then `console.error`); with no `onError`,
   * `console.error`. The backplane reports through it what no call waits for, such as a lost
   * connection.
   *
   * @param error What went wrong.
   */
  report(error: BackplaneError): void {
    const onError = this.#onError;
    if (!onError) {
      console.error(error);
      return;
    }
    try {
      onError(error);
    } catch (thrown) {
      console.error(thrown);
    }
  }

  /** Drops every handler and ignores what is received from now on. Idempotent. */
  close(): void {
    this.#closed = true;
    this.#handlers.clear();
  }

  /**
   * Records the envelope's sequence number: false for a repeat or an older one (drop it);
   * reports the gap when numbers were skipped.
   */
  #track({ sender, seq, message }: BackplaneEnvelope): boolean {
    const now = this.#now();
    const seen = this.#seen;
    const last = seen.get(sender);
    if (last !== undefined) {
      if (seq <= last.seq) return false;
      if (seq > last.seq + 1) {
        const missed = seq - last.seq - 1;
        this.report(
          new BackplaneGapError(
            `${this.#where} lost ${missed} message(s) from node "${message.origin}"`,
            { startedAt: last.at, endedAt: now, missed, origin: message.origin },
          ),
        );
      }
      seen.delete(sender);
    } else if (seen.size >= MAX_SENDERS) {
      seen.delete(seen.keys().next().value!);
    }
    seen.set(sender, { seq, at: now });
    return true;
  }

  #subscriberFailed(what: string, message: BackplaneMessage, cause: unknown): void {
    this.report(
      new BackplaneError(`A backplane subscriber ${what} a message for tag "${message.tag}"`, {
        cause,
      }),
    );
  }
}

/** The envelope version the BroadcastChannel backplane posts and reads. */
const ENVELOPE_VERSION = 1;

/** Options of {@linkcode broadcastChannelBackplane}. */
export interface BroadcastChannelBackplaneOptions {
  /**
   * Receives what no call waits for: a {@linkcode BackplaneGapError} when a sender's sequence
   * numbers were skipped (messages lost), a message that is not a backplane envelope (or that
   * could not be deserialized), and a subscriber that threw. Contained; absent, `console.error`.
   */
  onError?: (error: BackplaneError) => void;
}

/** The backplane {@linkcode broadcastChannelBackplane} returns. */
export interface BroadcastChannelBackplane extends Backplane {
  /** The channel name. */
  readonly name: string;
  /**
   * Posts the message on the channel. Resolves once posted; rejects (never throws) with a
   * {@linkcode BackplaneError} when the message cannot be structured-cloned (its `cause` the
   * `DataCloneError`), is not a {@linkcode BackplaneMessage}, or the backplane is closed.
   */
  publish(message: BackplaneMessage): Promise<void>;
  /** Closes the channel and drops every subscriber. Idempotent. */
  close(): void;
}

/**
 * A backplane over the web-standard `BroadcastChannel` named `name`: every other
 * `BroadcastChannel` of that name in the same process (other isolates, workers, or objects of
 * this one) receives each message once, in the order it was posted. It is the zero-setup
 * backplane of ONE host; it does not cross machines (nor, on Node and Bun, processes). Use
 * `redisBackplane` from `./redis` for several machines.
 *
 * Messages are structured-cloned, so `payload` crosses as bytes or a string, unchanged. Each
 * carries its publisher's sequence number: a receiver drops a repeat and reports skipped numbers
 * as a {@linkcode BackplaneGapError} counting the missed messages. That matters on Deno, whose
 * channel between isolates holds 256 messages for the whole process and silently drops what a
 * lagging isolate has not read yet (a burst of 1,000 to a busy worker loses some); between Bun
 * workers, and within one isolate on every runtime, nothing is lost. An open channel keeps the
 * process alive: call `close()` when done.
 *
 * @param name The channel name, shared by every node.
 * @param options `onError` for messages it cannot read and subscribers that throw.
 * @returns The backplane; `close()` it when done.
 * @throws {TypeError} When `name` is not a non-empty string, `onError` is not a function, or
 * the runtime has no `BroadcastChannel`.
 *
 * @example A message published by one node reaches the other, never the publisher
 * ```ts
 * import { type BackplaneMessage, broadcastChannelBackplane } from '@muxws/core/backplane';
 * import assert from 'node:assert/strict';
 *
 * const a = broadcastChannelBackplane('example');
 * const b = broadcastChannelBackplane('example');
 * try {
 *   const ownCopies: BackplaneMessage[] = [];
 *   a.subscribe((message) => ownCopies.push(message));
 *   const atB = new Promise<BackplaneMessage>((resolve) => b.subscribe(resolve));
 *   const frame = new Uint8Array([0x94, 0x09, 0xa1, 0x74, 0xc0, 0x01]);
 *   await a.publish({ tag: 't', headers: null, payload: frame, except: ['muted'], origin: 'a', codec: 'msgpack' });
 *   const message = await atB;
 *   assert.deepEqual(message.payload, frame);
 *   assert.deepEqual(message.except, ['muted']);
 *   assert.equal(ownCopies.length, 0);
 * } finally {
 *   a.close();
 *   b.close();
 * }
 * ```
 */
export function broadcastChannelBackplane(
  name: string,
  options: BroadcastChannelBackplaneOptions = {},
): BroadcastChannelBackplane {
  const what = 'Cannot create broadcastChannelBackplane';
  if (typeof name !== 'string' || name.length === 0) {
    throw new TypeError(
      `${what} as "name" must be a non-empty string: current value is ${describe(name)}`,
    );
  }
  const onError = options.onError;
  if (onError !== undefined && typeof onError !== 'function') {
    throw new TypeError(
      `${what} as "onError" must be a function: current value is ${describe(onError)}`,
    );
  }
  if (typeof globalThis.BroadcastChannel !== 'function') {
    throw new TypeError(`${what} as this runtime has no BroadcastChannel`);
  }
  const channel = new BroadcastChannel(name);
  let closed = false;

  /** This object's id in every envelope it posts; drawn at first use, not at load. */
  let sender: string | undefined;
  let lastSeq = 0;
  const receiver = new BackplaneReceiver<unknown>(`BroadcastChannel "${name}"`, {
    decode(data) {
      const envelope = data as Record<string, unknown> | null;
      if (
        envelope === null || typeof envelope !== 'object' || envelope.v !== ENVELOPE_VERSION ||
        typeof envelope.sender !== 'string' || !Number.isSafeInteger(envelope.seq) ||
        (envelope.seq as number) < 1 || !isBackplaneMessage(envelope.message)
      ) {
        throw new BackplaneError(
          `BroadcastChannel "${name}" received something that is not a backplane envelope: ${
            describe(envelope)
          }`,
        );
      }
      return envelope as unknown as BackplaneEnvelope;
    },
    onError,
  });

  channel.onmessage = (event: MessageEvent) => receiver.receive(event.data);
  channel.onmessageerror = (event: MessageEvent) => {
    receiver.report(
      new BackplaneError(`BroadcastChannel "${name}" received a message it cannot deserialize`, {
        cause: event.data,
      }),
    );
  };

  return {
    name,
    publish(message: BackplaneMessage): Promise<void> {
      if (closed) {
        return Promise.reject(
          new ClosedError(`Cannot publish on BroadcastChannel "${name}": the backplane is closed`),
        );
      }
      if (!isBackplaneMessage(message)) {
        return Promise.reject(
          new BackplaneError(
            `Cannot publish on BroadcastChannel "${name}" as the message is not a backplane message: current value is ${
              describe(message)
            }`,
          ),
        );
      }
      sender ??= crypto.randomUUID();
      // Counted before posting, so receivers see a failed post as a missed message.
      const seq = ++lastSeq;
      try {
        channel.postMessage({ v: ENVELOPE_VERSION, sender, seq, message });
      } catch (cause) {
        return Promise.reject(
          new BackplaneError(
            `Cannot publish on BroadcastChannel "${name}" as the message cannot be structured-cloned: ${
              (cause as Error)?.message ?? String(cause)
            }`,
            { cause },
          ),
        );
      }
      return Promise.resolve();
    },
    subscribe(handler: (message: BackplaneMessage) => void): () => void {
      return receiver.subscribe(handler);
    },
    close(): void {
      if (closed) return;
      closed = true;
      receiver.close();
      channel.onmessage = null;
      channel.onmessageerror = null;
      channel.close();
    },
  };
}
