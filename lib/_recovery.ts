/**
 * The acceptor's side of recovery (WSM-REC-001..004, docs/recovery.md): with a `history` store,
 * every broadcast to a tag is appended and then sent with its sequence number in the reserved
 * header `:seq`, one tag's broadcasts in append order; a peer that gains a tag is told the tag's
 * position (`:position`); a peer whose hello carries `:resume` is replayed what it missed, paced
 * by its socket, and then told what recovery achieved (`:recovered`). While a peer's tag waits
 * for its position or its replay, live broadcasts of that tag to it are held, in order, and sent
 * after. A {@linkcode Recovery} knows nothing of the acceptor or the peer classes: it reads a
 * peer through {@linkcode RecoveringPeer}. Internal.
 *
 * @module
 */
import type { Codec } from './codec.ts';
import type { History } from './history.ts';
import type { Peer } from './acceptor_types.ts';
import { isTag, PUBLISH } from './_frame.ts';
import { MuxwsError } from './errors.ts';
import { SOCKET_POLL_MS } from './_socket_wait.ts';
import { MAX_RESUMED_TAGS, POSITION, RECOVERED, RESUME, SEQ } from './_reserved.ts';

/** How many entries a replay reads from the store at a time. */
export const REPLAY_BATCH = 256;

/** What recovery reads of a peer. */
export interface RecoveringPeer extends Peer {
  readonly session: {
    sendEncoded(data: string | Uint8Array): boolean;
    congested(): boolean;
  };
}

/** What recovery needs of its acceptor. */
export interface RecoveryHost {
  /** The codec every peer speaks. */
  readonly codec: Codec;
  /** Contains an error: to `onError` with the peer, else `console.error`. */
  report(error: unknown, peer?: Peer): void;
}

/** A live broadcast held for a peer while its tag waits. */
interface Held {
  readonly data: string | Uint8Array;
  /** Its sequence number; undefined for a broadcast of a node without history. */
  readonly seq: number | undefined;
}

/** One peer's tag that waits: for its position, or for its replay. */
interface Hold {
  readonly frames: Held[];
  /** Who releases it: the position read, or the replay (which takes over a position's hold). */
  by: 'position' | 'replay';
}

/**
 * The `:resume` header of a hello, checked: tags and non-negative integers only, the first
 * {@linkcode MAX_RESUMED_TAGS} of them.
 */
export function resumeOf(headers: Readonly<Record<string, unknown>> | null): Map<string, number> {
  const resume = new Map<string, number>();
  const value = headers?.[RESUME];
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return resume;
  for (const tag in value) {
    if (resume.size === MAX_RESUMED_TAGS) break;
    const seq = (value as Record<string, unknown>)[tag];
    if (isTag(tag) && typeof seq === 'number' && Number.isSafeInteger(seq) && seq >= 0) {
      resume.set(tag, seq);
    }
  }
  return resume;
}

/** Waits one socket poll. */
function pause(): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, SOCKET_POLL_MS));
}

/** One acceptor's sequence numbers, positions, replays and held broadcasts. */
export class Recovery {
  readonly #host: RecoveryHost;
  readonly #history: History;
  /** Per tag, the end of the chain that sends this node's broadcasts in append order. */
  readonly #chains = new Map<string, Promise<unknown>>();
  /** Per peer, its tags that wait. */
  readonly #holds = new WeakMap<RecoveringPeer, Map<string, Hold>>();
  /** Per peer, the `:resume` of its hello, from its arrival to its acknowledgement. */
  readonly #resumes = new WeakMap<RecoveringPeer, Map<string, number>>();

  /** Told when a peer's first tag starts to wait and when its last one is released. */
  #held: ((peer: RecoveringPeer) => void) | undefined;
  #released: ((peer: RecoveringPeer) => void) | undefined;

  constructor(host: RecoveryHost, history: History) {
    this.#host = host;
    this.#history = history;
  }

  /**
   * Sets who is told when a peer starts to hold broadcasts (its first tag waits) and when it
   * holds none any more: the broadcaster takes the peer off the native path meanwhile, so every
   * live broadcast to it passes {@linkcode Recovery.hold}.
   */
  onHold(held: (peer: RecoveringPeer) => void, released: (peer: RecoveringPeer) => void): void {
    this.#held = held;
    this.#released = released;
  }

  /**
   * Appends a broadcast to the log of `tag` and, once this node's earlier broadcasts to `tag`
   * have been handed on, calls `send` with the PUBLISH carrying its sequence number. The append
   * starts at once, so appends to one tag are pipelined; only the sending waits its turn.
   *
   * @param frame The PUBLISH without a sequence number (what the log keeps), already checked.
   * @param send Hands the frame on: to the local peers and the other nodes.
   * @returns What `send` returned; rejects when the store failed (nothing is sent then).
   */
  broadcast(
    tag: string,
    frame: string | Uint8Array,
    payload: unknown,
    headers: Record<string, unknown> | null,
    send: (data: string | Uint8Array, seq: number, headers: Record<string, unknown>) => number,
  ): Promise<number> {
    const appended = this.#history.append(tag, frame);
    const before = this.#chains.get(tag);
    const ready = before === undefined ? appended : before.then(() => appended);
    const sent = ready.then((seq) => {
      const wire = { [SEQ]: seq, ...headers };
      return send(this.#host.codec.encode([PUBLISH, tag, wire, payload]), seq, wire);
    });
    const end = sent.then(undefined, () => {});
    this.#chains.set(tag, end);
    void end.then(() => {
      if (this.#chains.get(tag) === end) this.#chains.delete(tag);
    });
    return sent;
  }

  /**
   * A live broadcast of `tag` for `peer`: held when the tag waits (true), else for the caller to
   * send (false).
   */
  hold(
    peer: RecoveringPeer,
    tag: string,
    data: string | Uint8Array,
    seq: number | undefined,
  ): boolean {
    const hold = this.#holds.get(peer)?.get(tag);
    if (hold === undefined) return false;
    hold.frames.push({ data, seq });
    return true;
  }

  /** True while a tag of `peer` waits, so its broadcasts must go through {@linkcode hold}. */
  holding(peer: RecoveringPeer): boolean {
    return this.#holds.has(peer);
  }

  /**
   * `peer` gained `tag`: its broadcasts wait while the tag's position is read and sent, unless
   * the peer's hello resumes the tag (its replay will tell the position instead).
   */
  gained(peer: RecoveringPeer, tag: string): void {
    if (this.#holdOf(peer, tag) !== undefined) return;
    const resumed = this.#resumes.get(peer)?.has(tag) === true;
    const hold = this.#startHold(peer, tag, resumed ? 'replay' : 'position');
    if (resumed) return;
    this.#history.head(tag).then(
      (head) => {
        if (hold.by !== 'position' || peer.isClosed) return;
        // Held broadcasts are after the position: a position below the first of them lets the
        // dialer deliver them.
        let position = head;
        for (const held of hold.frames) {
          if (held.seq !== undefined && held.seq <= position) position = held.seq - 1;
        }
        const marker = this.#marker(tag, { [SEQ]: position, [POSITION]: true });
        void this.#release(peer, tag, hold, position, marker);
      },
      (error) => {
        if (hold.by !== 'position') return;
        this.#host.report(error, peer);
        void this.#release(peer, tag, hold, -1);
      },
    );
  }

  /**
   * The hello of `peer` arrived (before `onHello` runs): its `:resume` is kept until it is
   * acknowledged, and the broadcasts of the resumed tags the peer holds wait from now on.
   */
  arrived(peer: RecoveringPeer, headers: Readonly<Record<string, unknown>> | null): void {
    const resume = resumeOf(headers);
    if (resume.size === 0) return;
    this.#resumes.set(peer, resume);
    for (const tag of resume.keys()) {
      if (!peer.tags.has(tag)) continue;
      const hold = this.#holdOf(peer, tag);
      if (hold !== undefined) hold.by = 'replay';
      else this.#startHold(peer, tag, 'replay');
    }
  }

  /**
   * The hello of `peer` was acknowledged (`onHello` restored its tags): each resumed tag it
   * holds is replayed, one after the other; each it does not hold is told so with a
   * `:recovered` of `null`.
   */
  acknowledged(peer: RecoveringPeer): void {
    const resume = this.#resumes.get(peer);
    if (resume === undefined) return;
    this.#resumes.delete(peer);
    const replays: Array<[string, number, Hold]> = [];
    for (const [tag, after] of resume) {
      const hold = this.#holdOf(peer, tag);
      if (peer.tags.has(tag)) {
        if (hold !== undefined) hold.by = 'replay';
        replays.push([tag, after, hold ?? this.#startHold(peer, tag, 'replay')]);
      } else {
        const marker = this.#marker(tag, { [SEQ]: after, [RECOVERED]: null });
        if (hold !== undefined && hold.by === 'replay') {
          void this.#release(peer, tag, hold, -1, marker);
        } else void this.#release(peer, tag, { frames: [], by: 'replay' }, -1, marker);
      }
    }
    void this.#replayAll(peer, replays);
  }

  /** The hello of `peer` was refused: nothing is replayed, held broadcasts go out. */
  refused(peer: RecoveringPeer): void {
    const resume = this.#resumes.get(peer);
    if (resume === undefined) return;
    this.#resumes.delete(peer);
    for (const tag of resume.keys()) {
      const hold = this.#holdOf(peer, tag);
      if (hold !== undefined && hold.by === 'replay') void this.#release(peer, tag, hold, -1);
    }
  }

  async #replayAll(peer: RecoveringPeer, replays: Array<[string, number, Hold]>): Promise<void> {
    for (const [tag, after, hold] of replays) {
      if (peer.isClosed) return;
      await this.#replay(peer, tag, after, hold);
    }
  }

  /**
   * Sends `peer` the entries of `tag` after `after`, in order and paced by its socket, then the
   * `:recovered` marker, then the broadcasts held meanwhile that the replay did not send. A store
   * failure ends the replay with a gap, reported.
   */
  async #replay(peer: RecoveringPeer, tag: string, after: number, hold: Hold): Promise<void> {
    const codec = this.#host.codec;
    let last = after;
    let replayed = 0;
    let gap = false;
    let position = after;
    try {
      for (;;) {
        const from = last;
        const range = await this.#history.range(tag, last, REPLAY_BATCH);
        if (peer.isClosed) return;
        gap ||= range.gap;
        for (const entry of range.entries) {
          if (entry.seq <= last) continue;
          const [, , headers, payload] = codec.decode(entry.data) as [
            number,
            string,
            Record<string, unknown> | null,
            unknown,
          ];
          const data = codec.encode([PUBLISH, tag, { [SEQ]: entry.seq, ...headers }, payload]);
          if (peer.session.congested() && !await this.#room(peer)) return;
          if (peer.isClosed) return;
          peer.session.sendEncoded(data);
          last = entry.seq;
          replayed++;
        }
        // A store that lost its log starts again below `after`: its head is the position now.
        position = range.head < after ? range.head : last;
        if (range.entries.length < REPLAY_BATCH) break;
        // A full batch with nothing after `from` would be asked for again and again: a store
        // that answers so is broken, and the replay ends there with a gap.
        if (last === from) {
          gap = true;
          this.#host.report(
            new MuxwsError(
              `Cannot replay tag "${tag}": the history store answered a range after ${from} with ${range.entries.length} entries, none after ${from}`,
            ),
            peer,
          );
          break;
        }
      }
    } catch (error) {
      this.#host.report(error, peer);
      gap = true;
      position = last;
    }
    const marker = this.#marker(tag, { [SEQ]: position, [RECOVERED]: { replayed, gap } });
    await this.#release(peer, tag, hold, position, marker);
  }

  /**
   * Sends `marker`, if any, then the broadcasts `hold` kept (skipping those at or below
   * `position`, which the dialer has), paced by the socket, until none is left; then the tag no
   * longer waits.
   */
  async #release(
    peer: RecoveringPeer,
    tag: string,
    hold: Hold,
    position: number,
    marker?: string | Uint8Array,
  ): Promise<void> {
    if (marker !== undefined) {
      if (peer.session.congested() && !await this.#room(peer)) return;
      if (peer.isClosed) return;
      peer.session.sendEncoded(marker);
    }
    const frames = hold.frames;
    let i = 0;
    while (i < frames.length) {
      const held = frames[i++];
      if (held.seq !== undefined && held.seq <= position) continue;
      if (peer.session.congested() && !await this.#room(peer)) return;
      if (peer.isClosed) return;
      peer.session.sendEncoded(held.data);
    }
    const holds = this.#holds.get(peer);
    if (holds?.get(tag) !== hold) return;
    holds.delete(tag);
    if (holds.size > 0) return;
    this.#holds.delete(peer);
    this.#released?.(peer);
  }

  /** Waits while the socket of `peer` is above its high-water mark; false once it closed. */
  async #room(peer: RecoveringPeer): Promise<boolean> {
    while (!peer.isClosed && peer.session.congested()) await pause();
    return !peer.isClosed;
  }

  #holdOf(peer: RecoveringPeer, tag: string): Hold | undefined {
    return this.#holds.get(peer)?.get(tag);
  }

  #startHold(peer: RecoveringPeer, tag: string, by: Hold['by']): Hold {
    let holds = this.#holds.get(peer);
    if (holds === undefined) {
      this.#holds.set(peer, holds = new Map());
      this.#held?.(peer);
    }
    const hold: Hold = { frames: [], by };
    holds.set(tag, hold);
    return hold;
  }

  #marker(tag: string, headers: Record<string, unknown>): string | Uint8Array {
    return this.#host.codec.encode([PUBLISH, tag, headers, null]);
  }
}
