/**
 * The production multi-node backplane: Redis pub/sub, as `redisBackplane`; and
 * the broadcast history on Redis Streams, as `redisHistory`, so a dialer whose
 * node died recovers what it missed on another node (it needs one client with `eval`, typed the
 * same way; see {@linkcode redisHistory}).
 *
 * It takes two connected clients of the `redis` npm package (node-redis) — one publishes, one
 * subscribes, since a subscribed connection cannot publish — and one Redis channel. The clients
 * are typed by the methods and events used (`publish`, `subscribe`, `unsubscribe`, `isReady`,
 * `on('ready' | 'error' | 'end' | 'reconnecting')`), so this entry point imports nothing from
 * `redis` and the core keeps no Redis dependency.
 *
 * Delivery is at most once, as Redis pub/sub's is: a message published while a node's
 * subscriber is disconnected is lost for that node, and a publish while the publisher is
 * disconnected fails at once (nothing is queued, so nothing arrives late or twice). After a
 * reconnect the backplane subscribes again by itself and reports the gap (a
 * {@linkcode BackplaneGapError} with its start and end) through `onError`, so an application can
 * resync. Each envelope carries its publisher's sequence number: a receiver drops a repeated or
 * older one, and reports a jump as a gap counting the messages missed.
 *
 * The message format on the channel is a JSON object, documented in `docs/backplane.md`; a text
 * codec's frame crosses as a string, a binary codec's as base64.
 *
 * @example Two nodes over Redis (needs a Redis server)
 * ```ts ignore
 * import { createClient } from 'redis';
 * import { redisBackplane } from '@muxws/core/redis';
 *
 * const publisher = createClient({ url: 'redis://127.0.0.1:6379' });
 * const subscriber = publisher.duplicate();
 * publisher.on('error', () => {}); // node-redis requires a listener; the backplane reports errors
 * subscriber.on('error', () => {});
 * await Promise.all([publisher.connect(), subscriber.connect()]);
 *
 * const backplane = redisBackplane({
 *   publisher,
 *   subscriber,
 *   channel: 'chat',
 *   onError: (error) => console.warn(error),
 * });
 * await backplane.ready();
 * // new Acceptor({ backplane, ... })
 * ```
 *
 * @module
 */
import {
  type Backplane,
  type BackplaneEnvelope,
  BackplaneError,
  BackplaneGapError,
  type BackplaneMessage,
  BackplaneReceiver,
  isBackplaneMessage,
} from '../broadcast/backplane.ts';
import { describe } from '../util/describe.ts';
import {
  fromBase64,
  messageOf,
  type RedisClientEvent,
  type RedisEventSource,
  type RedisSubscriber,
  toBase64,
} from './_redis_shared.ts';

export type { RedisClientEvent, RedisEventSource, RedisSubscriber } from './_redis_shared.ts';
import { ClosedError } from '../errors.ts';

/** The publishing client: node-redis's `publish(channel, message)`. */
export interface RedisPublisher extends RedisEventSource {
  /** Publishes `message` on `channel`; resolves with the number of receivers. */
  publish(channel: string, message: string): Promise<unknown>;
}

/** Options of {@linkcode redisBackplane}. */
export interface RedisBackplaneOptions {
  /** A connected client that publishes; not the subscriber (a subscribed client cannot). */
  publisher: RedisPublisher;
  /** A connected client that only subscribes, e.g. `publisher.duplicate()`. */
  subscriber: RedisSubscriber;
  /**
   * The Redis channel every node of the cluster uses.
   *
   * @default {'muxws'}
   */
  channel?: string;
  /**
   * Receives what no call waits for: a client that lost its connection (once per outage), a
   * {@linkcode BackplaneGapError} once delivery resumes, a message it cannot read, a
   * subscriber that threw. Contained; absent, `console.error`.
   */
  onError?: (error: BackplaneError) => void;
}

/** The backplane {@linkcode redisBackplane} returns. */
export interface RedisBackplane extends Backplane {
  /** The Redis channel. */
  readonly channel: string;
  /**
   * Publishes the message on the channel. Resolves when Redis accepted it; rejects (never
   * throws) with a {@linkcode BackplaneError} when the publisher is not connected (at once,
   * nothing is queued), when Redis fails the command, or when the message cannot be serialized,
   * and with `ClosedError` after `close()`.
   */
  publish(message: BackplaneMessage): Promise<void>;
  /**
   * Resolves when the subscriber is subscribed (at once when it is): messages published after
   * that reach this node. Rejects with `ClosedError` once the backplane is closed.
   */
  ready(): Promise<void>;
  /**
   * Unsubscribes, removes its event listeners and drops every handler. The clients stay open:
   * they are the caller's to close, and keep the caller's own `error` listener (node-redis
   * throws an `error` event nobody listens to). Idempotent.
   */
  close(): Promise<void>;
}

/** The envelope version this code writes and reads. */
const ENVELOPE_VERSION = 1;

/**
 * A backplane over one Redis pub/sub channel, for acceptor nodes on any number of
 * machines. Every node publishes and subscribes on `channel`; a node never receives its own
 * messages back.
 *
 * Delivery is at most once and in order per publishing node. What a Redis outage loses: on a
 * node whose subscriber is disconnected, every message published meanwhile; on a node whose
 * publisher is disconnected, every message it publishes meanwhile (each `publish()` rejects at
 * once). Local delivery on each node is unaffected. When the subscriber is back (`ready`), the
 * backplane subscribes again by itself and reports a {@linkcode BackplaneGapError} with the
 * outage's `startedAt` and `endedAt`. How soon that happens is the client's reconnect strategy
 * (node-redis's default waits up to about 2.2 s between attempts; a constant 100–500 ms suits a
 * backplane).
 *
 * @param options The two clients, the channel and `onError`.
 * @returns The backplane; `close()` it before closing the clients.
 * @throws {TypeError} When a client lacks a method the backplane needs, `channel` is not a
 * non-empty string, or `onError` is not a function.
 *
 * @example Publish and receive with two in-memory stand-ins for Redis clients
 * ```ts
 * import { redisBackplane, type RedisPublisher, type RedisSubscriber } from '@muxws/core/redis';
 * import type { BackplaneMessage } from '@muxws/core/backplane';
 * import assert from 'node:assert/strict';
 *
 * // A tiny Redis: one channel map shared by every client.
 * const channels = new Map<string, Set<(message: string, channel: string) => void>>();
 * const client = (): RedisPublisher & RedisSubscriber => ({
 *   isReady: true,
 *   on: () => {},
 *   async publish(channel, message) {
 *     for (const listener of channels.get(channel) ?? []) listener(message, channel);
 *   },
 *   async subscribe(channel, listener) {
 *     if (!channels.has(channel)) channels.set(channel, new Set());
 *     channels.get(channel)!.add(listener);
 *   },
 *   async unsubscribe(channel, listener) {
 *     channels.get(channel)?.delete(listener);
 *   },
 * });
 *
 * const a = redisBackplane({ publisher: client(), subscriber: client(), channel: 'chat' });
 * const b = redisBackplane({ publisher: client(), subscriber: client(), channel: 'chat' });
 * await Promise.all([a.ready(), b.ready()]);
 * const atA: BackplaneMessage[] = [];
 * const atB: BackplaneMessage[] = [];
 * a.subscribe((message) => atA.push(message));
 * b.subscribe((message) => atB.push(message));
 *
 * await a.publish({ tag: 'room', headers: null, payload: '[9,"room",null,1]', except: [], origin: 'a', codec: 'json' });
 * assert.equal(atB.length, 1);
 * assert.equal(atB[0].payload, '[9,"room",null,1]');
 * assert.equal(atA.length, 0); // never its own
 * await Promise.all([a.close(), b.close()]);
 * ```
 */
export function redisBackplane(options: RedisBackplaneOptions): RedisBackplane {
  const what = 'Cannot create redisBackplane';
  if (options === null || typeof options !== 'object') {
    throw new TypeError(
      `${what} as "options" must be an object: current value is ${describe(options)}`,
    );
  }
  const { publisher, subscriber, channel = 'muxws', onError } = options;
  const needs: [string, unknown, string[]][] = [
    ['publisher', publisher, ['publish', 'on']],
    ['subscriber', subscriber, ['subscribe', 'unsubscribe', 'on']],
  ];
  for (const [field, client, methods] of needs) {
    if (client === null || typeof client !== 'object') {
      throw new TypeError(
        `${what} as "${field}" must be a Redis client: current value is ${describe(client)}`,
      );
    }
    for (const method of methods) {
      if (typeof (client as Record<string, unknown>)[method] !== 'function') {
        throw new TypeError(
          `${what} as "${field}" must have a ${method}() method: current value is ${
            describe((client as Record<string, unknown>)[method])
          }`,
        );
      }
    }
  }
  if (typeof channel !== 'string' || channel.length === 0) {
    throw new TypeError(
      `${what} as "channel" must be a non-empty string: current value is ${describe(channel)}`,
    );
  }
  if (onError !== undefined && typeof onError !== 'function') {
    throw new TypeError(
      `${what} as "onError" must be a function: current value is ${describe(onError)}`,
    );
  }

  /** This object's id in every envelope it publishes; drawn at first use, not at load. */
  let sender: string | undefined;
  let lastSeq = 0;
  const receiver = new BackplaneReceiver<string>(`Redis channel "${channel}"`, {
    decode,
    onError,
  });
  let closed = false;
  let subscribed = false;
  /** Bumped by every subscribe call, so only the latest one's outcome counts. */
  let generation = 0;
  let waiters: { resolve: () => void; reject: (error: unknown) => void }[] = [];
  /** When each client's current outage began; undefined while connected. */
  let publisherDownSince: number | undefined;
  let subscriberDownSince: number | undefined;

  function settleWaiters(error?: unknown): void {
    const list = waiters;
    waiters = [];
    for (const waiter of list) error === undefined ? waiter.resolve() : waiter.reject(error);
  }

  function subscribe(): void {
    if (closed) return;
    const mine = ++generation;
    let pending: Promise<unknown>;
    try {
      pending = Promise.resolve(subscriber.subscribe(channel, listener));
    } catch (error) {
      pending = Promise.reject(error);
    }
    pending.then(() => {
      if (closed || mine !== generation) return;
      subscribed = true;
      if (subscriberDownSince !== undefined) {
        const startedAt = subscriberDownSince;
        const endedAt = Date.now();
        subscriberDownSince = undefined;
        receiver.report(
          new BackplaneGapError(
            `Redis channel "${channel}" was not received for ${
              endedAt - startedAt
            } ms: messages published meanwhile are lost`,
            { startedAt, endedAt },
          ),
        );
      }
      settleWaiters();
    }, (cause) => {
      if (closed || mine !== generation) return;
      // Retried at the subscriber's next `ready`.
      receiver.report(
        new BackplaneError(`Cannot subscribe to Redis channel "${channel}": ${messageOf(cause)}`, {
          cause,
        }),
      );
    });
  }

  /** Marks a client as down (once per outage) and reports why. */
  function down(role: 'publisher' | 'subscriber', cause: unknown): void {
    if (closed) return;
    const now = Date.now();
    if (role === 'publisher') {
      if (publisherDownSince !== undefined) return;
      publisherDownSince = now;
    } else {
      subscribed = false;
      if (subscriberDownSince !== undefined) return;
      subscriberDownSince = now;
    }
    receiver.report(
      new BackplaneError(
        `The Redis ${role} of channel "${channel}" lost its connection${
          cause === undefined ? '' : `: ${messageOf(cause)}`
        }`,
        { cause },
      ),
    );
  }

  function onClientError(role: 'publisher' | 'subscriber', client: RedisEventSource) {
    return (error?: unknown) => {
      if (closed) return;
      if (client.isReady === false) {
        down(role, error);
        return;
      }
      const since = role === 'publisher' ? publisherDownSince : subscriberDownSince;
      if (since !== undefined) return; // already reported for this outage
      receiver.report(
        new BackplaneError(
          `The Redis ${role} of channel "${channel}" failed: ${messageOf(error)}`,
          {
            cause: error,
          },
        ),
      );
    };
  }

  const listeners: [RedisEventSource, RedisClientEvent, (error?: unknown) => void][] = [
    [publisher, 'ready', () => {
      publisherDownSince = undefined;
    }],
    [publisher, 'error', onClientError('publisher', publisher)],
    [publisher, 'reconnecting', () => down('publisher', undefined)],
    [publisher, 'end', () => down('publisher', undefined)],
    [subscriber, 'ready', () => subscribe()],
    [subscriber, 'error', onClientError('subscriber', subscriber)],
    [subscriber, 'reconnecting', () => down('subscriber', undefined)],
    [subscriber, 'end', () => down('subscriber', undefined)],
  ];

  /** Reads one envelope off the channel; `undefined` for the ones this object published. */
  function decode(text: string): BackplaneEnvelope | undefined {
    let message: BackplaneMessage;
    let from: string;
    let seq: number;
    try {
      const envelope = JSON.parse(text);
      if (envelope === null || typeof envelope !== 'object' || envelope.v !== ENVELOPE_VERSION) {
        throw new TypeError(`expected an envelope of version ${ENVELOPE_VERSION}`);
      }
      from = envelope.sender;
      seq = envelope.seq;
      if (typeof from !== 'string' || !Number.isSafeInteger(seq) || seq < 1) {
        throw new TypeError('expected "sender" and a positive integer "seq"');
      }
      const payload = typeof envelope.frame64 === 'string'
        ? fromBase64(envelope.frame64)
        : envelope.frame;
      message = {
        tag: envelope.tag,
        headers: envelope.headers,
        payload,
        except: envelope.except,
        origin: envelope.origin,
        codec: envelope.codec,
      };
      if (!isBackplaneMessage(message)) {
        throw new TypeError('a field is missing or of a wrong type');
      }
    } catch (cause) {
      throw new BackplaneError(
        `Redis channel "${channel}" carried a message that is not a muxws backplane envelope: ${
          messageOf(cause)
        }`,
        { cause },
      );
    }
    return from === sender ? undefined : { sender: from, seq, message };
  }

  function listener(text: string): void {
    receiver.receive(text);
  }

  for (const [client, event, fn] of listeners) client.on(event, fn);
  if (subscriber.isReady !== false) subscribe();

  return {
    channel,
    publish(message: BackplaneMessage): Promise<void> {
      const cannot = `Cannot publish to Redis channel "${channel}"`;
      if (closed) return Promise.reject(new ClosedError(`${cannot}: the backplane is closed`));
      if (!isBackplaneMessage(message)) {
        return Promise.reject(
          new BackplaneError(
            `${cannot} as the message is not a backplane message: current value is ${
              describe(message)
            }`,
          ),
        );
      }
      sender ??= crypto.randomUUID();
      // Counted before the readiness check, so receivers see the jump and report the loss.
      const seq = ++lastSeq;
      const ready = publisher.isReady ?? publisherDownSince === undefined;
      if (!ready) {
        return Promise.reject(
          new BackplaneError(
            `${cannot} as the publisher is not connected: the broadcast to tag "${message.tag}" did not reach other nodes`,
          ),
        );
      }
      try {
        const binary = typeof message.payload !== 'string';
        const text = JSON.stringify({
          v: ENVELOPE_VERSION,
          sender,
          seq,
          origin: message.origin,
          tag: message.tag,
          except: message.except,
          codec: message.codec,
          headers: message.headers,
          [binary ? 'frame64' : 'frame']: binary
            ? toBase64(message.payload as Uint8Array)
            : message.payload,
        });
        return Promise.resolve(publisher.publish(channel, text)).then(() => {}, (cause) => {
          throw new BackplaneError(`${cannot}: ${messageOf(cause)}`, { cause });
        });
      } catch (cause) {
        return Promise.reject(new BackplaneError(`${cannot}: ${messageOf(cause)}`, { cause }));
      }
    },
    subscribe(handler: (message: BackplaneMessage) => void): () => void {
      return receiver.subscribe(handler);
    },
    ready(): Promise<void> {
      if (closed) {
        return Promise.reject(
          new ClosedError(`Redis channel "${channel}": the backplane is closed`),
        );
      }
      if (subscribed) return Promise.resolve();
      return new Promise((resolve, reject) => waiters.push({ resolve, reject }));
    },
    async close(): Promise<void> {
      if (closed) return;
      closed = true;
      subscribed = false;
      receiver.close();
      for (const [client, event, fn] of listeners) client.off?.(event, fn);
      settleWaiters(new ClosedError(`Redis channel "${channel}": the backplane is closed`));
      try {
        await subscriber.unsubscribe(channel, listener);
      } catch {
        // The subscriber is closed or disconnected: nothing is subscribed any more.
      }
    },
  };
}

export {
  type RedisHistory,
  redisHistory,
  type RedisHistoryOptions,
  type RedisHistoryRange,
  type RedisScriptClient,
} from './redis_history.ts';
export { type RedisPresence, redisPresence, type RedisPresenceOptions } from './redis_presence.ts';
