/**
 * The dialer's side of recovery (WSM-REC-002, WSM-REC-004, docs/recovery.md): per tag, the last
 * sequence number handed to the application (or the position the acceptor told), the `:resume`
 * map a redial sends in its hello, at-most-once delivery of sequenced PUBLISH frames, and the
 * `:recovered` markers that end a tag's replay. Internal.
 *
 * @module
 */
import type { RecoveredInfo } from './dialer_types.ts';
import type { PublishMessage } from './stream.ts';

/** The reserved PUBLISH header carrying a broadcast's sequence number. */
const SEQ = ':seq';
/** The reserved PUBLISH header marking a frame that only tells a tag's position. */
const POSITION = ':position';
/** The reserved PUBLISH header marking the end of a tag's replay. */
const RECOVERED = ':recovered';
/** The reserved hello header of a redial. */
export const RESUME = ':resume';
/**
 * The most tags whose positions a connection keeps (the acceptor reads as many from `:resume`):
 * past it, the tag first seen longest ago is forgotten, and a later broadcast of it is delivered
 * as new.
 */
export const MAX_POSITIONS = 1024;

/** A sequenced broadcast that arrived ahead of its turn while its tag's replay runs. */
interface Early {
  readonly seq: number;
  readonly message: PublishMessage;
}

/** The headers of a PUBLISH without the reserved ones; null when none is left. */
function ownHeaders(headers: Record<string, unknown>): Record<string, unknown> | null {
  let own: Record<string, unknown> | null = null;
  for (const key in headers) {
    if (key.charCodeAt(0) !== 58 /* ':' */) (own ??= {})[key] = headers[key];
  }
  return own;
}

/** The positions of one connection, for its lifetime across redials. */
export class Positions {
  /** Per tag, the last sequence number delivered or told. */
  readonly #last = new Map<string, number>();
  /**
   * The tags the current wire's hello resumed whose `:recovered` has not come yet, with what
   * arrived ahead of its turn meanwhile.
   */
  #resuming: Map<string, Early[]> | undefined;
  /** The positions the current wire's hello resumed from. */
  readonly #from = new Map<string, number>();
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
   * A new wire's hello is about to be sent: the `:resume` map of a redial (undefined on the
   * first connect, or with no position known), whose tags then wait for their `:recovered`.
   */
  resume(redial: boolean): Record<string, number> | undefined {
    this.#resuming = undefined;
    this.#from.clear();
    if (!redial || this.#last.size === 0) return undefined;
    const resume: Record<string, number> = {};
    const resuming = new Map<string, Early[]>();
    for (const [tag, seq] of this.#last) {
      resume[tag] = seq;
      this.#from.set(tag, seq);
      resuming.set(tag, []);
    }
    this.#resuming = resuming;
    return resume;
  }

  /** A PUBLISH arrived: hand it on, or drop it as seen, or keep it for its turn. */
  receive(message: PublishMessage): void {
    const headers = message.headers;
    const seq = headers?.[SEQ];
    if (typeof seq !== 'number' || !Number.isSafeInteger(seq) || seq < 0) {
      this.#deliver(message);
      return;
    }
    const tag = message.tag;
    const resuming = this.#resuming;
    const early = resuming?.get(tag);
    if (headers![POSITION] === true) {
      // While a tag is resumed its replay tells the position; an earlier one is stale.
      if (early === undefined) this.#set(tag, seq);
      return;
    }
    if (RECOVERED in headers!) {
      if (early === undefined) return;
      resuming!.delete(tag);
      // What waited for its turn (a replay that began after a gap) goes first, in order.
      early.sort((a, b) => a.seq - b.seq);
      for (const item of early) this.#take(tag, item.seq, item.message);
      const info = headers![RECOVERED];
      if (typeof info === 'object' && info !== null) {
        // A marker below the position resumed from means the store lost its log and numbers
        // again from 1: it sets the position, so the broadcasts that follow are not dropped.
        const last = this.#last.get(tag) ?? 0;
        if (seq < this.#from.get(tag)! || seq > last) this.#set(tag, seq);
        const { replayed, gap } = info as { replayed?: unknown; gap?: unknown };
        this.#recovered({
          tag,
          replayed: typeof replayed === 'number' ? replayed : 0,
          gap: gap === true,
        });
      }
      return;
    }
    const delivered: PublishMessage = {
      tag,
      headers: ownHeaders(headers!),
      payload: message.payload,
      seq,
    };
    if (early !== undefined) {
      // The replay comes in order from the position: the next one is handed on at once, a
      // later one waits for its turn (it arrived before the replay reached it).
      const last = this.#last.get(tag) ?? 0;
      if (seq <= last) return;
      if (seq !== last + 1) {
        early.push({ seq, message: delivered });
        return;
      }
      this.#take(tag, seq, delivered);
      if (early.length > 1) early.sort((a, b) => a.seq - b.seq);
      while (early.length > 0 && early[0].seq <= this.#last.get(tag)! + 1) {
        const item = early.shift()!;
        this.#take(tag, item.seq, item.message);
      }
      return;
    }
    this.#take(tag, seq, delivered);
  }

  /** Hands on `message` unless its `seq` is at or below the tag's last; records it. */
  #take(tag: string, seq: number, message: PublishMessage): void {
    const last = this.#last.get(tag);
    if (last !== undefined && seq <= last) return;
    this.#set(tag, seq, last === undefined);
    this.#deliver(message);
  }

  /** Records the position of `tag`; a new tag past {@linkcode MAX_POSITIONS} evicts the oldest. */
  #set(tag: string, seq: number, isNew = !this.#last.has(tag)): void {
    if (isNew && this.#last.size >= MAX_POSITIONS) {
      this.#last.delete(this.#last.keys().next().value!);
    }
    this.#last.set(tag, seq);
  }
}
