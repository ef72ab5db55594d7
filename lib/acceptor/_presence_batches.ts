/**
 * The batches of the acceptor's presence: the changes that wait, sent to the store as one
 * `apply()` once per `batchMs` (in a microtask for 0), one batch at a time, each taken once the one
 * before resolved; the repair after a failed batch (the next puts this node's table back, with the
 * leaves the failed one lost); and the aliases of adoptions known from `apply()`'s answer.
 *
 * An alias maps the fresh ref of a track to the entry in grace it adopted, with the version of
 * that batch. From `apply()`'s answer until the echo (or a load) of that version, every change
 * pushed for the fresh ref names the adopted ref, and the changes of the same batch that followed
 * the track go again to it. The echo retires the alias ({@linkcode PresenceBatches.echoed}); a
 * load that covers the version drops it ({@linkcode PresenceBatches.covered}).
 *
 * At most one timer: the batch timer, while changes wait; {@linkcode PresenceBatches.stop}
 * clears it.
 *
 * Private to `lib/acceptor/`.
 *
 * @module
 */
import { timerDelay } from '../util/delay.ts';
import type {
  PresenceBatch,
  PresenceMove,
  PresenceOp,
  PresenceStore,
} from '../broadcast/presence.ts';

/** What the batches need of the acceptor's presence. */
export interface BatchesHost {
  /** The store the batches go to. */
  readonly store: PresenceStore;
  /** This node's id in the store. */
  node(): string;
  /** Whether the presence closed: no timer is armed and no table is put back. */
  closed(): boolean;
  /** The version of the last batch the replica applied (or loaded). */
  version(): number;
  /** Opens the store: resolves when it is open. */
  ready(): Promise<void>;
  /** Whether this node's table holds a presence by `ref`. */
  holds(ref: string): boolean;
  /** This node's table as ops that put it back, each named by the ref the store knows. */
  own(): PresenceOp[];
  /** Contains an error: to `onError`, else `console.error`. */
  report(error: unknown): void;
}

/** The batches of the acceptor's presence: see the module's documentation. */
export class PresenceBatches {
  readonly #host: BatchesHost;
  readonly #batchMs: number;
  #ops: PresenceOp[] = [];
  /** A batch failed: the next puts this node's table back as it is now, and the lost leaves. */
  #dirty = false;
  /** ref → tag of the leaves lost with a failed batch. */
  readonly #unleft = new Map<string, string>();
  /**
   * fresh ref → the ref its track adopted and the version of that batch, known from `apply()`'s
   * answer and not yet from the echo (or a load) of that version.
   */
  readonly #aliases = new Map<string, { readonly ref: string; readonly version: number }>();
  #timer: ReturnType<typeof setTimeout> | undefined;
  #queued = false;
  /** A batch waits for the one before it to resolve: it takes the changes once it may go. */
  #taking = false;
  /** The store calls of the batches, in order; never rejects. */
  #tail: Promise<void> = Promise.resolve();
  /** The changes of the batch whose `apply()` is pending. */
  #flying: readonly PresenceOp[] = [];

  constructor(host: BatchesHost, batchMs: number) {
    this.#host = host;
    this.#batchMs = batchMs;
  }

  /** Whether a batch failed and the table was not put back since. */
  get dirty(): boolean {
    return this.#dirty;
  }

  /**
   * Adds `op` to the changes that wait, under the adopted ref when its ref is an alias, and arms
   * their send. A newer meta of the same presence replaces the waiting one.
   */
  push(op: PresenceOp): void {
    const ref = this.storeRef(op.ref);
    if (ref !== op.ref) op = { ...op, ref };
    if (op.op === 'track') {
      // Two tracks of a fresh ref in one batch would adopt an entry in grace with the first and
      // create a second entry with the other.
      const at = this.#ops.findIndex((o) =>
        o.op === 'track' && o.ref === op.ref && o.tag === op.tag
      );
      if (at !== -1) {
        this.#ops[at] = op;
        return;
      }
    }
    this.#ops.push(op);
    this.#schedule();
  }

  /** The ref the store knows `ref` by: itself, or the entry its track adopted. */
  storeRef(ref: string): string {
    return this.#aliases.get(ref)?.ref ?? ref;
  }

  /** The changes that wait and name `fresh` name `ref` from now on (an echoed adoption). */
  rename(fresh: string, ref: string): void {
    this.#ops = this.#ops.map((op) => op.ref === fresh ? { ...op, ref } : op);
  }

  /**
   * The echo of the batch of `version` moved `ref` to this node: the fresh ref whose alias it
   * retires (every change since went to `ref` already), or `undefined` when it is no alias's.
   */
  echoed(ref: string, version: number | undefined): string | undefined {
    for (const [fresh, alias] of this.#aliases) {
      if (alias.ref !== ref || alias.version !== version) continue;
      this.#aliases.delete(fresh);
      return fresh;
    }
    return undefined;
  }

  /**
   * The ref of the track that `move` (to this node) adopted under, when its batch is in flight (a
   * store that echoes inside `apply()`): the first track of its tag, peer and key in that batch.
   */
  tracked(move: PresenceMove): string | undefined {
    return this.#flying[adopter(this.#flying, move)]?.ref;
  }

  /** A load of `version` covers the aliases of batches up to it: its owners say the rest. */
  covered(version: number): void {
    for (const [fresh, alias] of this.#aliases) {
      if (alias.version <= version) this.#aliases.delete(fresh);
    }
  }

  /**
   * Sends the changes that wait as one `store.apply()`, after those before it: they are taken
   * once that one resolved, so they name the refs its answer said were adopted. Never rejects.
   */
  send(): Promise<void> {
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    this.#timer = undefined;
    if (this.#taking || (this.#ops.length === 0 && !this.#dirty)) return this.#tail;
    this.#taking = true;
    const host = this.#host;
    const node = host.node();
    let ops: PresenceOp[] = [];
    return this.#tail = this.#tail
      .then(() => host.ready())
      .then(() => {
        this.#taking = false;
        ops = this.#take();
        if (ops.length === 0) return undefined;
        this.#flying = ops;
        return host.store.apply(node, ops);
      })
      .then((applied) => {
        this.#flying = [];
        if (applied && Array.isArray(applied.moved) && typeof applied.version === 'number') {
          this.#adopted(ops, applied);
        }
      })
      .catch((error) => {
        this.#taking = false;
        this.#flying = [];
        this.#dirty = true;
        for (const op of ops) {
          if (op.op === 'leave' && !host.holds(op.ref)) this.#unleft.set(op.ref, op.tag);
        }
        host.report(error);
      });
  }

  /** The presence closed: the batch timer is cleared. */
  stop(): void {
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    this.#timer = undefined;
  }

  /** The presence closed and its last batch went: the aliases are forgotten. */
  forget(): void {
    this.#aliases.clear();
  }

  /** Arms the send of the changes that wait: after `batchMs`, or in a microtask for 0. */
  #schedule(): void {
    if (this.#host.closed()) return;
    if (this.#batchMs === 0) {
      if (this.#queued) return;
      this.#queued = true;
      queueMicrotask(() => {
        this.#queued = false;
        if (!this.#host.closed()) void this.send();
      });
    } else if (this.#timer === undefined) {
      this.#timer = setTimeout(() => {
        this.#timer = undefined;
        void this.send();
      }, timerDelay(this.#batchMs));
    }
  }

  /** The changes that wait, after this node's table and lost leaves when a batch failed. */
  #take(): PresenceOp[] {
    if (this.#dirty && !this.#host.closed()) {
      this.#dirty = false;
      const leaves = [...this.#unleft].map(([ref, tag]): PresenceOp => ({ op: 'leave', tag, ref }));
      this.#unleft.clear();
      const own = this.#host.own();
      // A waiting track of a presence the table puts back would go twice: once is enough (a
      // second track of a ref the first one adopted under would make a second entry).
      const tracked = new Set(own.map((op) => op.ref));
      const waiting = this.#ops.filter((op) => op.op !== 'track' || !tracked.has(op.ref));
      this.#ops = [...own, ...leaves, ...waiting];
    }
    const ops = this.#ops;
    this.#ops = [];
    return ops;
  }

  /**
   * The batch `ops` made `applied` (its version and moves), as `apply()` resolved: each ref this
   * node's tracks adopted becomes the alias of the fresh ref until the batch's echo, and the
   * changes after the track that named the fresh ref go again, to the adopted one.
   */
  #adopted(ops: readonly PresenceOp[], applied: Pick<PresenceBatch, 'version' | 'moved'>): void {
    const { version, moved } = applied;
    const host = this.#host;
    // The echo came first (a store that echoes inside apply()), or a load covered it; but a
    // presence that closed meanwhile let the echo pass, and its orphans' graces still wait.
    if (version <= host.version() && !host.closed()) return;
    const node = host.node();
    for (const move of moved) {
      if (move.node !== node) continue;
      const at = adopter(ops, move);
      const fresh = ops[at]?.ref;
      if (fresh === undefined || fresh === move.ref) continue;
      this.#aliases.set(fresh, { ref: move.ref, version });
      const again = ops.slice(at + 1).filter((op) => op.ref === fresh);
      this.#ops = [...again, ...this.#ops].map((op) =>
        op.ref === fresh ? { ...op, ref: move.ref } : op
      );
      if (again.length > 0) this.#schedule();
    }
  }
}

/** The index in `ops` of the track `move` answers: the first of its tag, peer and key. */
function adopter(ops: readonly PresenceOp[], move: PresenceMove): number {
  return ops.findIndex((op) =>
    op.op === 'track' && op.tag === move.tag && op.peer === move.peer && op.key === move.key
  );
}
