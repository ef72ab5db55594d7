/**
 * The dialer's side of recovery (docs/recovery.md): per tag, the last sequence number handed to the
 * application (or the position the acceptor told), the `:resume` map a redial sends in its hello,
 * at-most-once delivery of sequenced PUBLISH frames, and the `:recovered` markers that end a tag's
 * replay. Internal.
 *
 * @module
 */
import type { RecoveredInfo } from './dialer_types.ts';
import type { PublishMessage } from '../session/stream.ts';
import { DIALER, MAX_RESUMED_TAGS, POSITION, RECOVERED, RESUME } from '../wire/reserved.ts';
import { ownMessage, seqOf } from './_broadcasts.ts';

/** The positions of one connection, for its lifetime across redials. */
export class Positions {
  /** Per tag, the last sequence number delivered or told. */
  readonly #last = new Map<string, number>();
  /**
   * The tags the current wire's hello resumed whose `:recovered` has not come yet, each with the
   * broadcasts that arrived ahead of their turn meanwhile.
   */
  #resuming: Map<string, PublishMessage[]> | undefined;
  /** The positions the current wire's hello resumed from, by tag. */
  #from: Record<string, number> = {};
  /** The first identity an acceptor gave this dialer (`:dialer`), sent back in a redial's hello. */
  #id: unknown;
  readonly #deliver: (message: PublishMessage) => void;
  readonly #recovered: (info: RecoveredInfo) => void;

  /**
   * @param deliver Hands a broadcast to the application (contained by the caller).
   * @param recovered Tells the application a tag's replay ended (contained by the caller).
   */
  constructor(
    deliver: (message: PublishMessage) => void,
    recovered: (info: RecoveredInfo) => void,
  ) {
    this.#deliver = deliver;
    this.#recovered = recovered;
  }

  /**
   * A new wire's hello is about to be sent: the reserved headers of a redial (`:resume`, and
   * `:dialer` once an acceptor gave one), undefined on the first connect or with no position
   * known. The resumed tags then wait for their `:recovered`.
   */
  resume(redial: boolean): Record<string, unknown> | undefined {
    this.#resuming = undefined;
    if (!redial || this.#last.size === 0) return undefined;
    const from = this.#from = Object.fromEntries(this.#last);
    const resuming = this.#resuming = new Map();
    for (const tag of this.#last.keys()) resuming.set(tag, []);
    // Without an identity `:dialer` is undefined, which every codec leaves out.
    return { [RESUME]: from, [DIALER]: this.#id };
  }

  /** A PUBLISH arrived: hand it on, or drop it as seen, or keep it for its turn. */
  receive(message: PublishMessage): void {
    const headers = message.headers;
    const seq = seqOf(message);
    if (seq === undefined) {
      this.#deliver(ownMessage(message));
      return;
    }
    const tag = message.tag;
    const early = this.#resuming?.get(tag);
    if (headers![POSITION] === true) {
      // The first identity it was told (the acceptor reads only a string back); a redial's new
      // peer may be told another before the acceptor took this one from the hello.
      this.#id ??= headers![DIALER];
      // While a tag is resumed its replay tells the position; an earlier one is stale.
      if (early === undefined) this.#set(tag, seq);
      return;
    }
    if (RECOVERED in headers!) {
      if (early === undefined) return;
      this.#resuming!.delete(tag);
      // What waited for its turn (a replay that began after a gap) goes first, in order.
      for (const item of early) this.#take(item);
      const info = headers![RECOVERED];
      if (typeof info === 'object' && info !== null) {
        // A marker below the position resumed from means the store lost its log and numbers
        // again lower (its clock stepped back, or nothing was logged since): it sets the
        // position, so the broadcasts that follow are not dropped.
        if (seq < this.#from[tag] || seq > (this.#last.get(tag) ?? 0)) this.#set(tag, seq);
        const { replayed, gap } = info as { replayed?: unknown; gap?: unknown };
        this.#recovered({
          tag,
          replayed: typeof replayed === 'number' ? replayed : 0,
          gap: gap === true,
        });
      }
      return;
    }
    const delivered = ownMessage(message, seq);
    if (early === undefined) {
      this.#take(delivered);
      return;
    }
    // The replay comes in order from the position: the next one is handed on at once, a later
    // one waits for its turn (it arrived before the replay reached it), one seen is dropped.
    // The list stays in order: frames arrive in order but for a lower one a node sent late, so
    // each is inserted in place rather than the whole list sorted again for every frame.
    let i = early.length;
    while (i > 0 && early[i - 1].seq! > seq) i--;
    early.splice(i, 0, delivered);
    while (early.length > 0 && early[0].seq! <= (this.#last.get(tag) ?? 0) + 1) {
      this.#take(early.shift()!);
    }
  }

  /** Hands on `message` unless its `seq` is at or below its tag's last; records it. */
  #take(message: PublishMessage): void {
    const tag = message.tag;
    const seq = message.seq!;
    const last = this.#last.get(tag);
    if (last !== undefined && seq <= last) return;
    this.#set(tag, seq, last === undefined);
    this.#deliver(message);
  }

  /** Records the position of `tag`; a new tag past {@linkcode MAX_RESUMED_TAGS} evicts the oldest. */
  #set(tag: string, seq: number, isNew = !this.#last.has(tag)): void {
    if (isNew && this.#last.size >= MAX_RESUMED_TAGS) {
      this.#last.delete(this.#last.keys().next().value!);
    }
    this.#last.set(tag, seq);
  }
}
