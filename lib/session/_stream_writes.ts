/**
 * The writes of one stream that wait, oldest first: a `write()` or `end()` that finds the other
 * side's credit used up or the socket above `highWaterMark` queues here, and so does every write
 * after it, so a stream's writes leave in call order. The stream makes the queue when its first
 * write waits; a stream whose writes never wait holds none.
 *
 * The stream decides when the oldest write may go (credit, congestion) and hands it to the socket;
 * this part keeps the order and settles what is still waiting when the stream fails.
 *
 * Private to `lib/session/`.
 *
 * @module
 */
import { advance } from './_queue_head.ts';

/** One waiting write: its encoded message, and how its promise settles. */
export interface Write {
  /** The encoded frame: a DATA, a DATA with END, or a bare END. */
  readonly data: string | Uint8Array;
  /** True for DATA, which costs credit; false for a bare END, which never waits for the socket. */
  readonly costs: boolean;
  /** True when it ends this side's direction. */
  readonly end: boolean;
  /** Settles the `write()` or `end()` once the message was handed to the socket. */
  resolve(): void;
  /** Fails the `write()` or `end()`. */
  reject(error: unknown): void;
}

/** The waiting writes of one stream (see the module doc). */
export class WriteQueue {
  /** Oldest at `#head`: taken entries are cleared, not shifted (see {@linkcode advance}). */
  #writes: (Write | undefined)[] = [];
  #head = 0;

  /** True while a write waits: a new write queues behind it. */
  get waiting(): boolean {
    return this.#head < this.#writes.length;
  }

  /** Queues `write` behind the others. */
  push(write: Write): void {
    this.#writes.push(write);
  }

  /**
   * Takes the oldest write when `ready(write.costs)` says it may go now; undefined when none
   * waits or the oldest must wait longer (then so do the ones behind it).
   */
  take(ready: (costs: boolean) => boolean): Write | undefined {
    const writes = this.#writes;
    const head = this.#head;
    const write = writes[head];
    if (write === undefined || !ready(write.costs)) return undefined;
    writes[head] = undefined;
    this.#head = advance(writes, head + 1);
    return write;
  }

  /** Rejects every waiting write with `error`, oldest first, and empties the queue. */
  fail(error: unknown): void {
    const writes = this.#writes;
    for (let i = this.#head; i < writes.length; i++) writes[i]!.reject(error);
    writes.length = 0;
    this.#head = 0;
  }
}
