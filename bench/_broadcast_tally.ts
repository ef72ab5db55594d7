/**
 * How a client process of the `scale` scenario (`bench/_scale_clients.ts`) tells when its peers
 * received a broadcast: each peer counts the broadcasts it received, and the k-th broadcast is
 * reported once every peer has received it, or `settleMs` after its first copy arrived (a peer
 * closed, a copy lost), with how many peers received it and when its last copy arrived.
 *
 * @module
 */
import { epochMs } from './_common.ts';

/** What is reported of the k-th broadcast. */
export type TallyReport = (k: number, lastCopyAt: number, received: number) => void;

/** Counts broadcasts per peer; see the module. */
export class BroadcastTally {
  /** Per broadcast k not yet reported: the peers that received it, its last copy, its timer. */
  readonly #open = new Map<
    number,
    { got: number; last: number; timer: ReturnType<typeof setTimeout> }
  >();
  /** The last broadcast reported: a late copy of it or of one before is not counted again. */
  #reported = 0;

  /**
   * @param peers How many peers there are now.
   * @param report Called once per broadcast.
   * @param settleMs How long after a broadcast's first copy it is reported even if some peer
   *   did not receive it.
   */
  constructor(
    readonly peers: () => number,
    readonly report: TallyReport,
    readonly settleMs = 5_000,
  ) {}

  /** A new peer's counter: call it for each broadcast that peer receives. */
  counter(): () => void {
    let received = 0;
    return () => this.#got(++received);
  }

  #got(k: number): void {
    if (k <= this.#reported) return;
    let entry = this.#open.get(k);
    if (entry === undefined) {
      entry = { got: 0, last: 0, timer: setTimeout(() => this.#close(k), this.settleMs) };
      this.#open.set(k, entry);
    }
    entry.got++;
    entry.last = epochMs();
    if (entry.got >= this.peers()) this.#close(k);
  }

  #close(k: number): void {
    const entry = this.#open.get(k);
    if (entry === undefined) return;
    clearTimeout(entry.timer);
    this.#open.delete(k);
    this.#reported = Math.max(this.#reported, k);
    this.report(k, entry.last, entry.got);
  }
}
