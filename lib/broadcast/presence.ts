/**
 * The presence store the acceptor keeps who is here in (`presence.store` of the acceptor's
 * options): one table of entries (tag, key, ref, meta) shared by every node that uses the same
 * store, and the batches of changes it echoes to each of them in order.
 *
 * A store is any object with the methods of {@linkcode PresenceStore}. `memoryPresence()` keeps
 * the table in memory, shared by the acceptors of one process that are given the same store;
 * `redisPresence()` (entry `./redis`) keeps it in Redis for nodes in many processes, and
 * `durableObjectPresence()` (entry `./cloudflare`) in a Durable Object's storage. The rules every
 * store follows are the same: see {@linkcode PresenceOp}.
 *
 * @module
 */
import {
  type PresenceBatch,
  type PresenceOp,
  type PresenceSnapshot,
  PresenceTable,
} from './presence_table.ts';

export type {
  PresenceBatch,
  PresenceChange,
  PresenceEntry,
  PresenceMove,
  PresenceOp,
  PresenceSnapshot,
} from './presence_table.ts';

/**
 * What a store tells a node it opened: each batch in version order, or that it must reload.
 *
 * @example Every node that opened the store gets each batch, the node that made it included
 * ```ts
 * import { memoryPresence, type PresenceSink } from '@muxws/core/acceptor';
 * import assert from 'node:assert/strict';
 *
 * const seen: string[] = [];
 * const sink = (node: string): PresenceSink => ({
 *   batch: (batch) => seen.push(`${node} got version ${batch.version}`),
 *   resync: () => seen.push(`${node} reloads`),
 * });
 * const store = memoryPresence();
 * await store.open('node-a', sink('node-a'));
 * await store.open('node-b', sink('node-b'));
 * await store.apply('node-a', [
 *   { op: 'track', tag: 'room:1', key: 'ada', ref: 'r1', meta: '{"tab":1}', peer: 'p1' },
 * ]);
 * assert.deepEqual(seen, ['node-a got version 1', 'node-b got version 1']);
 * ```
 */
export interface PresenceSink {
  /** A batch of changes, from any node (this one included), in version order. */
  batch(batch: PresenceBatch): void;
  /**
   * The store lost track (a skipped version, a reconnect of its engine): the node reloads the
   * whole table with {@linkcode PresenceStore.load} and turns the difference into changes.
   */
  resync(): void;
}

/**
 * A shared presence table. Every method may reject; the acceptor reports it and carries on.
 *
 * @example A store of one's own: the memory store, with each call the acceptor makes logged
 * ```ts
 * import { Acceptor, memoryPresence, type PresenceStore } from '@muxws/core/acceptor';
 * import assert from 'node:assert/strict';
 *
 * const inner = memoryPresence();
 * const calls: string[] = [];
 * const store: PresenceStore = {
 *   open: (node, sink) => (calls.push('open'), inner.open(node, sink)),
 *   apply: (node, ops) => (calls.push(`apply ${ops.map((op) => op.op)}`), inner.apply(node, ops)),
 *   load: () => (calls.push('load'), inner.load()),
 *   close: (node) => (calls.push('close'), inner.close(node)),
 * };
 * const acceptor = new Acceptor({ idleTimeoutMs: 0, presence: { store } });
 * const { peer } = acceptor.attach({ send() {}, close() {} });
 * acceptor.presence.track(peer, 'room:1', 'ada', { tab: 1 });
 * await acceptor.presence.flush();
 * assert.deepEqual(acceptor.presence.list('room:1'), { ada: [{ tab: 1 }] });
 * assert.deepEqual(calls.slice(0, 2), ['open', 'apply track']);
 * await acceptor.close();
 * ```
 */
export interface PresenceStore {
  /**
   * Starts echoing batches to `sink` for `node` and resolves with the table as it is; batches
   * after the snapshot's version follow through `sink`.
   */
  open(node: string, sink: PresenceSink): Promise<PresenceSnapshot>;
  /**
   * Applies `ops` of `node` in order, in one step; the net change is echoed to every open node
   * through its sink (this one included) before or soon after the promise resolves.
   *
   * It may resolve with the version and the moves of the batch it made (or nothing, when it made
   * none): a store that echoes after it resolves (over a network) should, so that the node's next
   * batch already names the entries this one adopted. Resolving with nothing is also correct; the
   * node then learns of its adoptions from the echo alone.
   */
  apply(
    node: string,
    ops: readonly PresenceOp[],
  ): Promise<void | Pick<PresenceBatch, 'version' | 'moved'>>;
  /**
   * The node's heartbeat, called every `nodeTimeoutMs / 5` by each node: marks `node` alive and
   * removes what nodes silent for `deadAfterMs` own. A store that found its data lost (or this
   * node declared dead) calls `own()` and puts the node's entries back. Optional: a store of one
   * node needs none.
   */
  beat?(node: string, deadAfterMs: number, own: () => readonly PresenceOp[]): Promise<void>;
  /** Resolves with the whole table. */
  load(): Promise<PresenceSnapshot>;
  /** Stops echoing to `node` and forgets its heartbeat. Its entries stay as they were left. */
  close(node: string): Promise<void>;
}

/**
 * Options of {@linkcode memoryPresence}.
 *
 * @example A clock of one's own: a node that stops beating loses its presences
 * ```ts
 * import { memoryPresence, type MemoryPresenceOptions } from '@muxws/core/acceptor';
 * import assert from 'node:assert/strict';
 *
 * let now = 0;
 * const options: MemoryPresenceOptions = { now: () => now };
 * const store = memoryPresence(options);
 * await store.open('node-a', { batch() {}, resync() {} });
 * await store.open('node-b', { batch() {}, resync() {} });
 * await store.apply('node-a', [
 *   { op: 'track', tag: 'room:1', key: 'ada', ref: 'r1', meta: '{"tab":1}', peer: 'p1' },
 * ]);
 * now = 10_000; // node-a has not beaten since 0
 * await store.beat?.('node-b', 6000, () => []);
 * assert.deepEqual((await store.load()).entries, []);
 * ```
 */
export interface MemoryPresenceOptions {
  /**
   * The clock the heartbeats and graces are read on, in epoch milliseconds.
   * @default {Date.now}
   */
  readonly now?: () => number;
}

/**
 * A presence store in memory: the acceptors of one process given the same store share it (each
 * is a node), which is what an acceptor without a `presence.store` uses on its own.
 *
 * @param options The clock.
 * @returns The store.
 * @throws {TypeError} When `now` is not a function.
 *
 * @example
 * ```ts
 * import { memoryPresence } from '@muxws/core/acceptor';
 * import assert from 'node:assert/strict';
 *
 * const store = memoryPresence();
 * const seen: number[] = [];
 * await store.open('node-a', { batch: (b) => seen.push(b.version), resync() {} });
 * const applied = await store.apply('node-a', [
 *   { op: 'track', tag: 'room:1', key: 'ada', ref: 'r1', meta: '{"tab":1}', peer: 'p1' },
 * ]);
 * assert.deepEqual(seen, [1]);
 * assert.equal(applied?.version, 1); // the batch it echoed, with its moves
 * assert.equal((await store.load()).entries[0].key, 'ada');
 * ```
 */
export function memoryPresence(options: MemoryPresenceOptions = {}): PresenceStore {
  const now = options.now ?? Date.now;
  if (typeof now !== 'function') {
    throw new TypeError(
      `Cannot create memoryPresence as "now" must be a function: current value is ${typeof now}`,
    );
  }
  const table = new PresenceTable();
  const sinks = new Map<string, PresenceSink>();
  const echo = (batch: PresenceBatch | undefined): void => {
    if (batch) { for (const sink of [...sinks.values()]) sink.batch(batch); }
  };
  return {
    open(node, sink) {
      sinks.set(node, sink);
      table.beat(node, now());
      return Promise.resolve(table.snapshot());
    },
    apply(node, ops) {
      const batch = table.apply(node, ops);
      echo(batch);
      return Promise.resolve(batch);
    },
    beat(node, deadAfterMs, own) {
      if (!table.alive(node)) echo(table.apply(node, own()));
      table.beat(node, now());
      echo(table.reap(now(), deadAfterMs));
      return Promise.resolve();
    },
    load() {
      return Promise.resolve(table.snapshot());
    },
    close(node) {
      sinks.delete(node);
      table.forget(node);
      return Promise.resolve();
    },
  };
}
