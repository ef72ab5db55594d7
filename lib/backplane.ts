/**
 * The backplane carries an acceptor's broadcasts to the other acceptor nodes (SPEC §7), so a
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
 * caller, the acceptor, reports them through its own `onError` and its local delivery goes on
 * (WSM-BP-004). Failures that no call is waiting for (an unreadable incoming message, a lost
 * connection, a gap in delivery) go to the backplane's `onError` option.
 *
 * @example Two nodes of one process
 * ```ts
 * import { type BackplaneMessage, broadcastChannelBackplane } from 'muxws/backplane';
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
import { ClosedError, MuxwsError, type MuxwsErrorOptions } from './errors.ts';

/**
 * One broadcast crossing the backplane (WSM-BP-001). `payload` is the whole PUBLISH frame
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
 * Carries broadcasts between acceptor nodes (WSM-BP-001). Give each acceptor its own backplane
 * object: a backplane never hands a message back to the object that published it.
 *
 * @example An in-memory backplane between two objects, for tests
 * ```ts
 * import type { Backplane, BackplaneMessage } from 'muxws/backplane';
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
 * import { BackplaneError } from 'muxws/backplane';
 * import { MuxwsError } from 'muxws';
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
 * import { BackplaneError, BackplaneGapError } from 'muxws/backplane';
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
 * import { isBackplaneMessage } from 'muxws/backplane';
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

/** Describes a value for an error message. */
function describeValue(value: unknown): string {
  if (typeof value === 'string') return JSON.stringify(value);
  if (typeof value === 'function') return 'a function';
  if (typeof value === 'bigint') return `${value}n`;
  if (Array.isArray(value)) return 'an array';
  if (value !== null && typeof value === 'object') return 'an object';
  return String(value);
}

/**
 * Calls `onError` with `error`, containing a throw (then `console.error`); with no `onError`,
 * `console.error`, so a user callback never breaks delivery.
 */
function reportBackplaneError(
  onError: ((error: BackplaneError) => void) | undefined,
  error: BackplaneError,
): void {
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

/**
 * Hands `message` to every handler in subscription order; a handler that throws is reported
 * and the others still run.
 */
function dispatchBackplaneMessage(
  handlers: Iterable<(message: BackplaneMessage) => void>,
  message: BackplaneMessage,
  onError: ((error: BackplaneError) => void) | undefined,
): void {
  for (const handler of handlers) {
    try {
      handler(message);
    } catch (cause) {
      reportBackplaneError(
        onError,
        new BackplaneError(`A backplane subscriber threw on a message for tag "${message.tag}"`, {
          cause,
        }),
      );
    }
  }
}

/** The envelope version the BroadcastChannel backplane posts and reads. */
const ENVELOPE_VERSION = 1;
/** Senders whose last sequence number is remembered, oldest forgotten first. */
const MAX_SENDERS = 1024;

/**
 * Records sequence number `seq` of `sender`: `null` for a repeat or an older one (drop it), the
 * gap when numbers were skipped, `undefined` otherwise.
 */
function track(
  seen: Map<string, { seq: number; at: number }>,
  sender: string,
  seq: number,
  origin: string,
): BackplaneGapErrorOptions | null | undefined {
  const now = Date.now();
  const last = seen.get(sender);
  let gap: BackplaneGapErrorOptions | undefined;
  if (last !== undefined) {
    if (seq <= last.seq) return null;
    if (seq > last.seq + 1) {
      gap = { startedAt: last.at, endedAt: now, missed: seq - last.seq - 1, origin };
    }
    seen.delete(sender);
  } else if (seen.size >= MAX_SENDERS) {
    seen.delete(seen.keys().next().value!);
  }
  seen.set(sender, { seq, at: now });
  return gap;
}

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
 * A backplane over the web-standard `BroadcastChannel` named `name` (WSM-BP-002): every other
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
 * import { type BackplaneMessage, broadcastChannelBackplane } from 'muxws/backplane';
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
      `${what} as "name" must be a non-empty string: current value is ${describeValue(name)}`,
    );
  }
  const onError = options.onError;
  if (onError !== undefined && typeof onError !== 'function') {
    throw new TypeError(
      `${what} as "onError" must be a function: current value is ${describeValue(onError)}`,
    );
  }
  if (typeof globalThis.BroadcastChannel !== 'function') {
    throw new TypeError(`${what} as this runtime has no BroadcastChannel`);
  }
  const channel = new BroadcastChannel(name);
  const handlers = new Set<(message: BackplaneMessage) => void>();
  let closed = false;

  /** This object's id in every envelope it posts; drawn at first use, not at load. */
  let sender: string | undefined;
  let lastSeq = 0;
  /** Each sender's last sequence number and when it arrived, oldest sender first. */
  const seen = new Map<string, { seq: number; at: number }>();

  channel.onmessage = (event: MessageEvent) => {
    if (closed) return;
    const envelope = event.data as Record<string, unknown> | null;
    const message = envelope?.message;
    if (
      envelope === null || typeof envelope !== 'object' || envelope.v !== ENVELOPE_VERSION ||
      typeof envelope.sender !== 'string' || !Number.isSafeInteger(envelope.seq) ||
      (envelope.seq as number) < 1 || !isBackplaneMessage(message)
    ) {
      reportBackplaneError(
        onError,
        new BackplaneError(
          `BroadcastChannel "${name}" received something that is not a backplane envelope: ${
            describeValue(envelope)
          }`,
        ),
      );
      return;
    }
    const gap = track(seen, envelope.sender, envelope.seq as number, message.origin);
    if (gap === null) return;
    if (gap) {
      reportBackplaneError(
        onError,
        new BackplaneGapError(
          `BroadcastChannel "${name}" lost ${gap.missed} message(s) from node "${message.origin}"`,
          gap,
        ),
      );
    }
    dispatchBackplaneMessage([...handlers], message, onError);
  };
  channel.onmessageerror = (event: MessageEvent) => {
    reportBackplaneError(
      onError,
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
              describeValue(message)
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
      if (typeof handler !== 'function') {
        throw new TypeError(
          `Cannot subscribe as "handler" must be a function: current value is ${
            describeValue(handler)
          }`,
        );
      }
      // A wrapper per call, so subscribing the same function twice gives two deliveries and
      // two independent unsubscribe functions.
      const entry = (message: BackplaneMessage) => handler(message);
      if (!closed) handlers.add(entry);
      return () => {
        handlers.delete(entry);
      };
    },
    close(): void {
      if (closed) return;
      closed = true;
      handlers.clear();
      channel.onmessage = null;
      channel.onmessageerror = null;
      channel.close();
    },
  };
}
