/**
 * The presence store on Redis, as `redisPresence`: one table of presences shared by acceptor
 * nodes in any number of processes, changed by atomic Lua scripts that publish each batch's net
 * change once, and kept honest by heartbeats that remove what a dead node owned. The keys, the
 * channel and the heartbeat arithmetic are documented in `docs/backplane.md`.
 *
 * @module
 */
import { setOwn } from '../wire/presence.ts';
import type {
  PresenceBatch,
  PresenceChange,
  PresenceEntry,
  PresenceMove,
  PresenceOp,
  PresenceSink,
  PresenceSnapshot,
  PresenceStore,
} from '../broadcast/presence.ts';
import { describe } from '../util/describe.ts';
import { MuxwsError, TimeoutError } from '../errors.ts';
import {
  evalScript,
  messageOf,
  type RedisClientEvent,
  type RedisSubscriber,
} from './_redis_shared.ts';
import {
  APPLY_SCRIPT,
  BEAT_SCRIPT,
  CLOSE_SCRIPT,
  LOAD_SCRIPT,
  OPEN_SCRIPT,
} from './_redis_presence_scripts.ts';
import type { RedisScriptClient } from './redis_history.ts';

/**
 * Options of {@linkcode redisPresence}.
 *
 * @example Keys under a prefix of one's own, checked when the store is made
 * ```ts
 * import { redisPresence, type RedisPresenceOptions } from '@muxws/core/redis';
 * import assert from 'node:assert/strict';
 *
 * // Stand-ins for a node-redis client and its duplicate(): making the store sends no command.
 * const client = { eval: () => Promise.resolve(null) };
 * const subscriber = {
 *   on() {},
 *   subscribe: () => Promise.resolve(),
 *   unsubscribe: () => Promise.resolve(),
 * };
 * const options: RedisPresenceOptions = {
 *   client,
 *   subscriber,
 *   prefix: '{chat:presence}:', // one hash tag: every key lands in one cluster slot
 *   commandTimeoutMs: 2000,
 *   onError: (error) => console.warn(error.message),
 * };
 * assert.equal(redisPresence(options).channel, '{chat:presence}:diffs');
 * assert.throws(() => redisPresence({ ...options, commandTimeoutMs: 0 }), RangeError);
 * ```
 */
export interface RedisPresenceOptions {
  /** A connected client that runs the scripts (`eval`, and `evalSha` when it has it). */
  client: RedisScriptClient;
  /**
   * A connected client that only subscribes: it may be the backplane's own subscriber, which
   * then subscribes one more channel.
   */
  subscriber: RedisSubscriber;
  /**
   * The start of every key and of the channel. Keep a hash tag (`{…}`) in it, so every key
   * lands in one cluster slot.
   *
   * @default {'{muxws:presence}:'}
   */
  prefix?: string;
  /**
   * How long a call waits for Redis before it rejects with a `TimeoutError`.
   *
   * @default {5000}
   */
  commandTimeoutMs?: number;
  /**
   * Receives what no call waits for: a message on the channel that is not a batch, a subscribe
   * that failed, the subscriber losing its connection. Contained; absent, `console.error`.
   */
  onError?: (error: MuxwsError) => void;
}

/**
 * The store {@linkcode redisPresence} returns.
 *
 * @example Where it keeps its keys, and a call while the client is not connected
 * ```ts
 * import { redisPresence, type RedisPresence } from '@muxws/core/redis';
 * import assert from 'node:assert/strict';
 *
 * // A stand-in for a node-redis client that lost its connection (`isReady` false).
 * const client = { isReady: false, eval: () => new Promise<never>(() => {}) };
 * const subscriber = {
 *   on() {},
 *   subscribe: () => Promise.resolve(),
 *   unsubscribe: () => Promise.resolve(),
 * };
 * const store: RedisPresence = redisPresence({ client, subscriber });
 * assert.equal(store.prefix, '{muxws:presence}:');
 * assert.equal(store.channel, '{muxws:presence}:diffs');
 * // Rejects at once rather than waiting for Redis: the acceptor reports it and beats again later.
 * await assert.rejects(store.beat('node-a', 6000, () => []), /the client is not connected/);
 * ```
 */
export interface RedisPresence extends PresenceStore {
  /** The start of every key. */
  readonly prefix: string;
  /** The channel the batches are published on: `<prefix>diffs`. */
  readonly channel: string;
  /**
   * The heartbeat of `node` (see {@linkcode redisPresence}): resolves once the node is marked
   * alive, the dead nodes reaped and, when Redis lost the data or reaped this node, `own()` put
   * back.
   */
  beat(node: string, deadAfterMs: number, own: () => readonly PresenceOp[]): Promise<void>;
}

/** Batches held for a node while it loads, at most; past it, the gap check makes it reload. */
const MAX_HELD = 10_000;

/** One node opened on this store. */
interface Opened {
  readonly sink: PresenceSink;
  /** The version of the last batch delivered (or loaded); undefined: the next batch sets it. */
  last: number | undefined;
  /** The batches held while the node loads, or undefined while delivering. */
  held: PresenceBatch[] | undefined;
  /** The count of loads started when the node began holding: a later load ends it. */
  heldSince: number;
  /** The beats since the hold began without a load ending it. */
  beatsHeld: number;
  /** The timer that delivers the held batches once the load's caller ran. */
  timer: ReturnType<typeof setTimeout> | undefined;
}

/**
 * A presence store on Redis, for acceptor nodes in many processes: pass it as the acceptor's
 * `presence.store`, one per node (each node's own client and subscriber).
 *
 * `apply` runs one script that applies the operations atomically and, when something changed,
 * increments the version and publishes the net change once on `<prefix>diffs`. Every node (the
 * origin included) delivers the batches of the channel in version order; a skipped version, or
 * the subscriber ready again after a disconnect, asks the node to reload (`sink.resync()`), and
 * the batches that arrive meanwhile are held until the node's next `load()` resolves (those it
 * already includes are dropped). Calls to `apply` run one after the other, in call order; each
 * resolves with its batch's version and moves, so the node knows what it adopted before the echo
 * comes back.
 *
 * `beat` is the heartbeat: the node is alive at Redis's time; every node silent longer than
 * `deadAfterMs` loses what it owns (the script removes the node with its entries, so exactly one
 * beat reaps it and its leaves are published once); entries whose grace ended and whose owner is
 * gone go too. When Redis lost its data (the epoch changed) or reaped this node, `beat` puts the
 * node's entries back with `own()`, and after a lost data set the node reloads.
 *
 * `close(node)` stops delivering to the node and marks it silent, so the next beat of any node
 * removes what it still owns. The clients stay open: they are the caller's.
 *
 * Every method rejects (never throws) with a `MuxwsError` saying what Redis said, a
 * `TimeoutError` after `commandTimeoutMs`, and at once when the client's `isReady` is false.
 * An `apply` that timed out is never applied later (a client sends what it queued once it
 * reconnects): each carries its deadline in Redis's clock, estimated from the previous answer, so
 * the first call of a store is not fenced. With node-redis, `disableOfflineQueue: true` makes
 * calls fail at once while the client knows it is disconnected.
 *
 * @param options The clients, the key prefix, the command timeout and `onError`.
 * @returns The store.
 * @throws {TypeError} When a client lacks a method the store needs, `prefix` is not a non-empty
 * string, or `onError` is not a function.
 * @throws {RangeError} When `commandTimeoutMs` is not a positive integer.
 *
 * @example One node tracks a presence and reads the table back (needs a Redis server)
 * ```ts ignore
 * import { createClient } from 'redis';
 * import { redisPresence } from '@muxws/core/redis';
 * import assert from 'node:assert/strict';
 *
 * const client = createClient({ url: 'redis://127.0.0.1:6379', disableOfflineQueue: true });
 * const subscriber = client.duplicate();
 * client.on('error', () => {});
 * subscriber.on('error', () => {});
 * await Promise.all([client.connect(), subscriber.connect()]);
 *
 * const store = redisPresence({ client, subscriber });
 * const versions: number[] = [];
 * await store.open('node-a', { batch: (batch) => versions.push(batch.version), resync() {} });
 * await store.apply('node-a', [
 *   { op: 'track', tag: 'room:1', key: 'ada', ref: 'r1', meta: '{"tab":1}', peer: 'p1' },
 * ]);
 * const { entries } = await store.load();
 * assert.equal(entries.find((entry) => entry.ref === 'r1')?.key, 'ada');
 * await store.close('node-a');
 * client.destroy();
 * subscriber.destroy();
 * // new Acceptor({ presence: { store }, ... }) on each node, each with its own clients
 * ```
 */
export function redisPresence(options: RedisPresenceOptions): RedisPresence {
  const what = 'Cannot create redisPresence';
  if (options === null || typeof options !== 'object') {
    throw new TypeError(
      `${what} as "options" must be an object: current value is ${describe(options)}`,
    );
  }
  const {
    client,
    subscriber,
    prefix = '{muxws:presence}:',
    commandTimeoutMs = 5000,
    onError,
  } = options;
  const needs: [string, unknown, string[]][] = [
    ['client', client, ['eval']],
    ['subscriber', subscriber, ['subscribe', 'unsubscribe', 'on']],
  ];
  for (const [field, value, methods] of needs) {
    if (value === null || typeof value !== 'object') {
      throw new TypeError(
        `${what} as "${field}" must be a Redis client: current value is ${describe(value)}`,
      );
    }
    for (const method of methods) {
      const found = (value as Record<string, unknown>)[method];
      if (typeof found !== 'function') {
        throw new TypeError(
          `${what} as "${field}" must have a ${method}() method: current value is ${
            describe(found)
          }`,
        );
      }
    }
  }
  if (typeof prefix !== 'string' || prefix.length === 0) {
    throw new TypeError(
      `${what} as "prefix" must be a non-empty string: current value is ${describe(prefix)}`,
    );
  }
  if (typeof commandTimeoutMs !== 'number') {
    throw new TypeError(
      `${what} as "commandTimeoutMs" must be a number: current value is ${
        describe(commandTimeoutMs)
      }`,
    );
  }
  if (!Number.isSafeInteger(commandTimeoutMs) || commandTimeoutMs < 1) {
    throw new RangeError(
      `${what} as "commandTimeoutMs" must be a positive integer: current value is ${commandTimeoutMs}`,
    );
  }
  if (onError !== undefined && typeof onError !== 'function') {
    throw new TypeError(
      `${what} as "onError" must be a function: current value is ${describe(onError)}`,
    );
  }

  const channel = `${prefix}diffs`;
  const versionKey = `${prefix}v`;
  const loaded = new Set<string>();
  const opened = new Map<string, Opened>();
  /** The epoch of the data set each node read last (open, beat), opened or not. */
  const epochs = new Map<string, string>();
  /** The nodes whose entries must be put back, as a restore failed since Redis lost them. */
  const unrestored = new Set<string>();
  /** The applies, one after the other in call order (a NOSCRIPT re-send keeps its place). */
  let applying: Promise<unknown> = Promise.resolve();
  /**
   * Redis's clock minus `performance.now()`, from the last apply's answer as if Redis ran it when
   * the answer arrived: never above the true offset, so a deadline is never later than the true
   * one. Unknown until the first apply answers.
   */
  let redisOffsetMs: number | undefined;
  /** Loads started so far. */
  let loads = 0;
  /**
   * While Redis's data set was lost and the nodes put their entries back: loads wait for it, so
   * no node reloads a half-restored table (which its followers would see as every live presence
   * leaving and joining again). It ends at the second beat after the loss was seen: by then every
   * live node has beaten once since, and restored.
   */
  let settling: { done: Promise<void>; end: () => void; beatsLeft: number } | undefined;

  /** Starts the wait for the nodes' restores, unless one is under way. */
  function unsettled(): void {
    if (settling) return;
    let end!: () => void;
    const done = new Promise<void>((resolve) => end = resolve);
    settling = { done, end, beatsLeft: 2 };
  }

  /** Ends the wait for the restores, when `all` or its last beat came. */
  function settleBeat(all: boolean): void {
    if (!settling || (!all && --settling.beatsLeft > 0)) return;
    settling.end();
    settling = undefined;
  }
  /** The subscription under way or done; undefined when there is none. */
  let subscription: Promise<void> | undefined;
  let listening = false;
  let down = false;

  function report(error: MuxwsError): void {
    try {
      if (onError) onError(error);
      else console.error(error);
    } catch {
      // onError is contained.
    }
  }

  /** Runs one script, bounded by the timeout; rejections say `cannot`. */
  function run(cannot: string, script: string, args: string[]): Promise<unknown> {
    if (client.isReady === false) {
      return Promise.reject(new MuxwsError(`${cannot} in Redis: the client is not connected`));
    }
    let timer: ReturnType<typeof setTimeout> | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () =>
          reject(new TimeoutError(`${cannot} in Redis: no answer within ${commandTimeoutMs} ms`)),
        commandTimeoutMs,
      );
    });
    const answer = evalScript(client, loaded, script, {
      keys: [versionKey],
      arguments: [prefix, ...args],
    }).then((reply) => reply, (cause) => {
      throw new MuxwsError(`${cannot} in Redis: ${messageOf(cause)}`, { cause });
    });
    return Promise.race([answer, timeout]).finally(() => clearTimeout(timer));
  }

  function unexpected(cannot: string, reply: unknown): MuxwsError {
    return new MuxwsError(
      `${cannot} in Redis: expected the script's reply, found ${describe(reply)}`,
    );
  }

  /** Reads a snapshot reply: { epoch, version, tag, ref, row, ... }. */
  function snapshotOf(cannot: string, reply: unknown): PresenceSnapshot & { epoch: string } {
    if (
      !Array.isArray(reply) || reply.length < 2 || (reply.length - 2) % 3 !== 0 ||
      typeof reply[0] !== 'string'
    ) {
      throw unexpected(cannot, reply);
    }
    const entries: PresenceEntry[] = [];
    for (let i = 2; i < reply.length; i += 3) {
      const [tag, ref, raw] = [reply[i], reply[i + 1], reply[i + 2]];
      let row: { k?: unknown; m?: unknown; n?: unknown; p?: unknown; g?: unknown };
      try {
        row = JSON.parse(raw);
      } catch {
        throw unexpected(cannot, reply);
      }
      if (
        typeof tag !== 'string' || typeof ref !== 'string' || typeof row?.k !== 'string' ||
        typeof row.m !== 'string' || typeof row.n !== 'string' || typeof row.p !== 'string' ||
        typeof row.g !== 'number'
      ) {
        throw unexpected(cannot, reply);
      }
      entries.push({ tag, ref, key: row.k, meta: row.m, node: row.n, peer: row.p, untilMs: row.g });
    }
    return { epoch: reply[0], version: Number(reply[1]), entries };
  }

  /** A batch read off the channel, or an error saying why it is not one. */
  function decode(text: string): PresenceBatch {
    const wrong = (detail: string) =>
      new MuxwsError(
        `Redis channel "${channel}" carried a message that is not a presence batch: ${detail}`,
      );
    let message: { v?: unknown; c?: unknown; mv?: unknown };
    try {
      message = JSON.parse(text);
    } catch (cause) {
      throw wrong(messageOf(cause));
    }
    const version = typeof message?.v === 'string' ? Number(message.v) : NaN;
    if (!Number.isSafeInteger(version) || version < 1) throw wrong('expected a version "v"');
    const changes: PresenceChange[] = [];
    const isMap = (value: unknown): value is Record<string, unknown> =>
      value !== null && typeof value === 'object';
    if (!isMap(message.c)) throw wrong('expected the changes "c"');
    for (const [tag, change] of Object.entries(message.c)) {
      if (!isMap(change) || !isMap(change.j) || !isMap(change.l)) {
        throw wrong(`expected "j" and "l" of tag ${describe(tag)}`);
      }
      const joins: Record<string, Record<string, string>> = {};
      const leaves: Record<string, string[]> = {};
      for (const [key, refs] of Object.entries(change.j)) {
        if (!isMap(refs) || Object.values(refs).some((meta) => typeof meta !== 'string')) {
          throw wrong(`expected the joins of key ${describe(key)} to map refs to metas`);
        }
        setOwn(joins, key, refs as Record<string, string>);
      }
      for (const [key, refs] of Object.entries(change.l)) {
        if (!Array.isArray(refs) || refs.some((ref) => typeof ref !== 'string')) {
          throw wrong(`expected the leaves of key ${describe(key)} to list refs`);
        }
        setOwn(leaves, key, refs);
      }
      changes.push({ tag, joins, leaves });
    }
    const moved = movesOf(message.mv);
    if (moved === undefined) throw wrong('expected each move as [tag, ref, node, peer, key]');
    return { version, changes, moved };
  }

  /** The moves of a batch as the scripts write them (`mv`), or undefined when they are not. */
  function movesOf(list: unknown): PresenceMove[] | undefined {
    const moved: PresenceMove[] = [];
    for (const move of Array.isArray(list) ? list : []) {
      if (!Array.isArray(move) || move.length !== 5 || move.some((s) => typeof s !== 'string')) {
        return undefined;
      }
      const [tag, ref, node, peer, key] = move as string[];
      moved.push({ tag, ref, node, peer, key });
    }
    return moved;
  }

  /** Delivers `batch` to one node in version order, holding it while the node loads. */
  function deliver(node: Opened, batch: PresenceBatch): void {
    if (node.held) {
      if (node.held.length < MAX_HELD) node.held.push(batch);
      return;
    }
    if (node.last !== undefined && batch.version <= node.last) return;
    if (node.last !== undefined && batch.version !== node.last + 1) {
      resync(node);
      node.held!.push(batch);
      return;
    }
    node.last = batch.version;
    try {
      node.sink.batch(batch);
    } catch (cause) {
      report(new MuxwsError(`A presence sink threw on batch ${batch.version}`, { cause }));
    }
  }

  /** Holds the node's batches and asks it to reload; its next load ends the hold. */
  function resync(node: Opened): void {
    clearTimeout(node.timer);
    node.timer = undefined;
    node.held ??= [];
    node.heldSince = loads;
    node.beatsHeld = 0;
    node.last = undefined;
    try {
      node.sink.resync();
    } catch (cause) {
      report(new MuxwsError('A presence sink threw on resync', { cause }));
    }
  }

  /**
   * Ends a node's hold at `version` (the snapshot its caller now has): once the caller's
   * continuation ran, the held batches after it are delivered, in order.
   */
  function release(node: Opened, version: number): void {
    node.last = version;
    clearTimeout(node.timer);
    node.timer = setTimeout(() => {
      node.timer = undefined;
      const held = node.held ?? [];
      node.held = undefined;
      held.sort((a, b) => a.version - b.version);
      for (const batch of held) {
        if ([...opened.values()].includes(node)) deliver(node, batch);
      }
    }, 0);
  }

  function listener(text: string): void {
    let batch: PresenceBatch;
    try {
      batch = decode(text);
    } catch (error) {
      report(error as MuxwsError);
      return;
    }
    for (const node of [...opened.values()]) deliver(node, batch);
  }

  function subscribe(): Promise<void> {
    subscription ??= (async () => {
      try {
        await subscriber.subscribe(channel, listener);
      } catch (cause) {
        subscription = undefined;
        throw new MuxwsError(
          `Cannot subscribe to Redis channel "${channel}": ${messageOf(cause)}`,
          { cause },
        );
      }
    })();
    return subscription;
  }

  const events: [RedisClientEvent, (error?: unknown) => void][] = [
    ['ready', () => {
      if (!down) return;
      down = false;
      subscription = undefined;
      subscribe().then(() => {
        for (const node of [...opened.values()]) resync(node);
      }, report);
    }],
    ['reconnecting', () => lost()],
    ['end', () => lost()],
    ['error', (error) => {
      if (subscriber.isReady === false) lost(error);
    }],
  ];

  function lost(cause?: unknown): void {
    if (down) return;
    down = true;
    report(
      new MuxwsError(
        `The Redis subscriber of channel "${channel}" lost its connection${
          cause === undefined ? '' : `: ${messageOf(cause)}`
        }`,
        { cause },
      ),
    );
  }

  function listen(): void {
    if (listening) return;
    listening = true;
    for (const [event, fn] of events) subscriber.on(event, fn);
  }

  async function unlisten(): Promise<void> {
    if (!listening) return;
    listening = false;
    for (const [event, fn] of events) subscriber.off?.(event, fn);
    subscription = undefined;
    down = false;
    try {
      await subscriber.unsubscribe(channel, listener);
    } catch {
      // The subscriber is closed or disconnected: nothing is subscribed any more.
    }
  }

  function checkNode(cannot: string, node: unknown): asserts node is string {
    if (typeof node !== 'string' || node.length === 0) {
      throw new TypeError(
        `${cannot} as the node must be a non-empty string: current value is ${describe(node)}`,
      );
    }
  }

  /** The ops as the script reads them, or a TypeError naming the first bad one. */
  function opsJson(cannot: string, ops: unknown): string {
    if (!Array.isArray(ops)) {
      throw new TypeError(`${cannot} as "ops" must be an array: current value is ${describe(ops)}`);
    }
    const out = ops.map((op, i) => {
      const bad = (expected: string) =>
        new TypeError(
          `${cannot} as ops[${i}] must be ${expected}: current value is ${describe(op)}`,
        );
      if (op === null || typeof op !== 'object') throw bad('a presence operation');
      const strings = (names: string[]) => names.every((name) => typeof op[name] === 'string');
      if (op.op === 'track') {
        if (!strings(['tag', 'key', 'ref', 'meta', 'peer'])) {
          throw bad('a track with string tag, key, ref, meta and peer');
        }
        const { tag, key, ref, meta, peer } = op;
        return { op: 'track', tag, key, ref, meta, peer };
      }
      if (op.op === 'grace') {
        if (!strings(['tag', 'ref']) || !Number.isSafeInteger(op.untilMs) || op.untilMs < 0) {
          throw bad('a grace with string tag and ref and an integer untilMs of 0 or more');
        }
        return { op: 'grace', tag: op.tag, ref: op.ref, untilMs: op.untilMs, orphan: !!op.orphan };
      }
      if (op.op === 'leave') {
        if (!strings(['tag', 'ref'])) throw bad('a leave with string tag and ref');
        return { op: 'leave', tag: op.tag, ref: op.ref };
      }
      throw bad('a track, grace or leave');
    });
    return JSON.stringify(out);
  }

  /**
   * Applies ops in call order after every earlier apply; resolves with the version (0 when
   * nothing changed) and the batch's moves. Each
   * call carries its deadline in Redis's clock (once an answer gave its offset), so a call that
   * timed out here and reaches Redis later (sent again by the client after a reconnect) is not
   * applied after the calls that followed it.
   */
  function applyNow(node: string, json: string): Promise<Pick<PresenceBatch, 'version' | 'moved'>> {
    const cannot = `Cannot apply presence changes of node "${node}"`;
    const call = applying.then(() => {
      const expiresAt = redisOffsetMs === undefined
        ? 0
        : Math.floor(performance.now() + redisOffsetMs + commandTimeoutMs);
      return run(cannot, APPLY_SCRIPT, [node, json, String(expiresAt)]);
    });
    applying = call.catch(() => {});
    return call.then((reply) => {
      if (
        !Array.isArray(reply) || reply.length !== 3 || typeof reply[0] !== 'number' ||
        typeof reply[1] !== 'number' || typeof reply[2] !== 'string'
      ) {
        throw unexpected(cannot, reply);
      }
      redisOffsetMs = reply[1] - performance.now();
      if (reply[0] === -1) {
        throw new MuxwsError(
          `${cannot} in Redis: it was not applied as Redis ran it more than ${commandTimeoutMs} ms after it was sent`,
        );
      }
      let moved: PresenceMove[] | undefined = [];
      if (reply[2] !== '') {
        try {
          moved = movesOf(JSON.parse(reply[2]));
        } catch {
          moved = undefined;
        }
      }
      if (moved === undefined) throw unexpected(cannot, reply);
      return { version: reply[0], moved };
    });
  }

  return {
    prefix,
    channel,
    async open(node, sink) {
      const cannot = `Cannot open the presence of node "${node}"`;
      checkNode(cannot, node);
      if (
        sink === null || typeof sink !== 'object' || typeof sink.batch !== 'function' ||
        typeof sink.resync !== 'function'
      ) {
        throw new TypeError(
          `${cannot} as "sink" must have batch() and resync() methods: current value is ${
            describe(sink)
          }`,
        );
      }
      if (opened.has(node)) throw new MuxwsError(`${cannot}: it is already open`);
      const state: Opened = {
        sink,
        last: undefined,
        held: [],
        heldSince: Infinity, // its own snapshot ends the hold, not another load
        beatsHeld: 0,
        timer: undefined,
      };
      opened.set(node, state);
      try {
        listen();
        await subscribe();
        const snapshot = snapshotOf(
          cannot,
          await run(cannot, OPEN_SCRIPT, [node, crypto.randomUUID()]),
        );
        epochs.set(node, snapshot.epoch);
        if (opened.get(node) === state) release(state, snapshot.version);
        return { version: snapshot.version, entries: snapshot.entries };
      } catch (error) {
        if (opened.get(node) === state) opened.delete(node);
        if (opened.size === 0) await unlisten();
        throw error;
      }
    },
    async apply(node, ops) {
      const cannot = `Cannot apply presence changes of node "${node}"`;
      checkNode(cannot, node);
      const json = opsJson(cannot, ops);
      if (ops.length === 0) return;
      const applied = await applyNow(node, json);
      return applied.version > 0 ? applied : undefined;
    },
    async beat(node, deadAfterMs, own) {
      const cannot = `Cannot beat for node "${node}"`;
      checkNode(cannot, node);
      if (!Number.isSafeInteger(deadAfterMs) || deadAfterMs < 1) {
        throw new TypeError(
          `${cannot} as "deadAfterMs" must be a positive integer: current value is ${
            describe(deadAfterMs)
          }`,
        );
      }
      if (typeof own !== 'function') {
        throw new TypeError(
          `${cannot} as "own" must be a function: current value is ${describe(own)}`,
        );
      }
      const state = opened.get(node);
      const reply = await run(cannot, BEAT_SCRIPT, [
        node,
        String(deadAfterMs),
        epochs.get(node) ?? '',
        crypto.randomUUID(),
      ]);
      if (
        !Array.isArray(reply) || reply.length !== 3 || typeof reply[0] !== 'string' ||
        typeof reply[1] !== 'string'
      ) {
        throw unexpected(cannot, reply);
      }
      const [status, epoch] = reply as [string, string];
      epochs.set(node, epoch);
      if (status === 'RESET') unsettled();
      if (state && opened.get(node) === state) {
        if (state.held && !state.timer) {
          // Already waiting for a load, which includes the restore or holds its batch; when no
          // load came for a whole beat (the last one failed), ask again.
          // (A load waiting for the restores after a loss is not a missing one.)
          if (!settling && ++state.beatsHeld > 1) resync(state);
        } else if (status === 'RESET') {
          resync(state); // the versions of the lost data set are gone
        }
      }
      if (status !== 'OK' || unrestored.has(node)) {
        // Until a restore succeeds, every beat tries it again: the epoch and the heartbeat
        // are already written, so the next beat's status would not ask for it.
        unrestored.add(node);
        const restore = own();
        const json = opsJson(`Cannot restore the presences of node "${node}"`, restore);
        if (restore.length > 0) await applyNow(node, json);
        unrestored.delete(node);
      }
      settleBeat(false);
    },
    async load() {
      const cannot = 'Cannot load the presences';
      const started = ++loads;
      if (settling) await settling.done;
      let snapshot = snapshotOf(cannot, await run(cannot, LOAD_SCRIPT, []));
      if (
        [...opened.keys()].some((node) => epochs.has(node) && epochs.get(node) !== snapshot.epoch)
      ) {
        // The data set is not the one the nodes know: lost since their last beat. Wait until
        // they put their entries back, then read it again.
        unsettled();
        await settling!.done;
        snapshot = snapshotOf(cannot, await run(cannot, LOAD_SCRIPT, []));
      }
      for (const node of opened.values()) {
        if (node.held && !node.timer && node.heldSince < started) release(node, snapshot.version);
      }
      return { version: snapshot.version, entries: snapshot.entries };
    },
    async close(node) {
      const cannot = `Cannot close the presence of node "${node}"`;
      checkNode(cannot, node);
      const state = opened.get(node);
      epochs.delete(node);
      unrestored.delete(node);
      if (state) {
        clearTimeout(state.timer);
        opened.delete(node);
        if (opened.size === 0) {
          settleBeat(true); // no beat will come to end it
          await unlisten();
        }
      }
      await run(cannot, CLOSE_SCRIPT, [node]);
    },
  };
}
