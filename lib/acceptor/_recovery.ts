/**
 * The acceptor's side of recovery (docs/recovery.md): with a `history` store, every broadcast to a
 * tag is appended and then sent with its sequence number in the reserved header `:seq`, one tag's
 * broadcasts in append order; a peer that gains a tag is told the tag's position (`:position`); a
 * peer whose hello carries `:resume` is replayed what it missed, paced by its socket, and then told
 * what recovery achieved (`:recovered`). While a peer's tag waits for its position or its replay,
 * live broadcasts of that tag to it are held, in order, and sent after. A {@linkcode Recovery}
 * knows nothing of the acceptor or the peer classes: it reads a peer through
 * {@linkcode RecoveringPeer}. Internal.
 *
 * What it holds is bounded per peer: the held broadcasts by `maxHeldBytes` (one more closes the
 * peer with 1013), a replay by `maxReplay` entries (then it ends with a gap), and the time a peer's
 * recovery waits for its socket by `stallTimeoutMs` (then 1013). Every peer that waits for its
 * socket is re-checked by one timer of the acceptor's, and at once when its socket reports a drain;
 * none has a timer of its own.
 *
 * @module
 */
import type { Codec } from '../wire/codec.ts';
import type { History } from '../broadcast/history.ts';
import type { Peer, RecoveryOptions } from './acceptor_types.ts';
import { isTag, PUBLISH } from '../wire/frame.ts';
import { MuxwsError } from '../errors.ts';
import { CloseCode } from '../wire/codes.ts';
import { mustBe } from '../util/describe.ts';
import { SOCKET_POLL_MS } from '../session/socket_wait.ts';
import {
  DIALER,
  EXCEPT,
  MAX_RESUMED_TAGS,
  POSITION,
  RECOVERED,
  RESUME,
  SEQ,
} from '../wire/reserved.ts';

/** The most entries a replay reads from the store at a time. */
const REPLAY_BATCH = 256;

/** How many entries a replay reads first, before it knows how large they are. */
const FIRST_BATCH = 32;

/** Bytes of live broadcasts one peer may have held for it unless told otherwise (4 MiB). */
const DEFAULT_MAX_HELD_BYTES: number = 4 * 1024 * 1024;

/** Entries one resume may replay, all its tags together, unless told otherwise. */
const DEFAULT_MAX_REPLAY: number = 10_000;

/** How long a peer's recovery may wait for its socket, unless told otherwise, in ms. */
const DEFAULT_STALL_TIMEOUT_MS: number = 30_000;

/** The longest dialer identity an acceptor takes from `:dialer`. */
const MAX_DIALER_ID = 64;

/** What recovery reads of a peer. */
interface RecoveringPeer extends Peer {
  readonly session: { congested(): boolean };
  /**
   * What the peer is sent goes through its admission (it waits for the hello); `counted` marks a
   * held broadcast, already counted as delivered.
   */
  readonly admission: { sendPublish(data: string | Uint8Array, counted?: boolean): boolean };
}

/** What recovery needs of its acceptor. */
interface RecoveryHost {
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

/** One peer's tags that wait, and the bytes of the broadcasts they hold. */
interface PeerHolds {
  readonly tags: Map<string, Hold>;
  bytes: number;
}

/** A peer whose recovery waits for its socket: since when, and who to wake. */
interface Stall {
  readonly since: number;
  readonly wake: Array<(ok: boolean) => void>;
}

/** The checked {@linkcode RecoveryOptions}. */
type Bounds = Required<RecoveryOptions>;

/** What an `:except` in a logged entry names: the tags and the dialers left out. */
interface LoggedExcept {
  readonly tags?: unknown;
  readonly dialers?: unknown;
}

/**
 * The `:resume` header of a hello, checked: tags and non-negative integers only, the first
 * {@linkcode MAX_RESUMED_TAGS} of them.
 */
function resumeOf(headers: Readonly<Record<string, unknown>> | null): Map<string, number> {
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

/**
 * The options of recovery, checked: each a positive integer, or its default.
 *
 * @throws {RangeError} For any other value, naming the option and the value.
 */
export function recoveryBounds(options: RecoveryOptions | undefined): Bounds {
  const bound = (name: keyof RecoveryOptions, fallback: number): number => {
    const value = options?.[name];
    if (value === undefined) return fallback;
    if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 1) {
      throw new RangeError(
        mustBe('create Acceptor', `recovery.${name}`, 'a positive integer', value),
      );
    }
    return value;
  };
  if (options !== undefined && (typeof options !== 'object' || options === null)) {
    throw new TypeError(mustBe('create Acceptor', 'recovery', 'an object', options));
  }
  return {
    maxHeldBytes: bound('maxHeldBytes', DEFAULT_MAX_HELD_BYTES),
    maxReplay: bound('maxReplay', DEFAULT_MAX_REPLAY),
    stallTimeoutMs: bound('stallTimeoutMs', DEFAULT_STALL_TIMEOUT_MS),
  };
}

/** The bytes a frame takes: a string's length (one byte a character for ASCII), or its bytes. */
function sizeOf(data: string | Uint8Array): number {
  return typeof data === 'string' ? data.length : data.byteLength;
}

/**
 * Whether a logged entry whose headers are `headers` is withheld from `peer` on replay: its
 * `:except` names a tag the peer holds, or the peer's dialer identity `id`.
 */
function withheld(
  headers: Record<string, unknown> | null,
  peer: Peer,
  id: string | undefined,
): boolean {
  const except = headers?.[EXCEPT] as LoggedExcept | undefined;
  if (typeof except !== 'object' || except === null) return false;
  const { tags, dialers } = except;
  if (Array.isArray(tags)) {
    for (const tag of tags) if (typeof tag === 'string' && peer.tags.has(tag)) return true;
  }
  return id !== undefined && Array.isArray(dialers) && dialers.includes(id);
}

/** A fresh dialer identity: 128 random bits, base64url. */
function drawDialerId(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(16));
  return btoa(String.fromCharCode(...bytes)).replace(/\+/g, '-').replace(/\//g, '_')
    .replace(/=+$/, '');
}

/** One acceptor's sequence numbers, positions, replays and held broadcasts. */
export class Recovery {
  readonly #host: RecoveryHost;
  readonly #history: History;
  readonly #bounds: Bounds;
  /** Per tag, the end of the chain that sends this node's broadcasts in append order. */
  readonly #chains = new Map<string, Promise<unknown>>();
  /** Per peer, its tags that wait. */
  readonly #holds = new WeakMap<RecoveringPeer, PeerHolds>();
  /** Per peer, the `:resume` of its hello, from its arrival to its acknowledgement. */
  readonly #resumes = new WeakMap<RecoveringPeer, Map<string, number>>();
  /** Per peer, its dialer's identity: drawn when first left out, or taken from `:dialer`. */
  readonly #ids = new WeakMap<RecoveringPeer, string>();
  /** The peers whose recovery waits for their socket. */
  readonly #stalled = new Map<RecoveringPeer, Stall>();
  /** The one timer that re-checks every stalled peer; set only while one is. */
  #timer: ReturnType<typeof setTimeout> | undefined;

  /** Told when a peer's first tag starts to wait and when its last one is released. */
  #held: ((peer: RecoveringPeer) => void) | undefined;
  #released: ((peer: RecoveringPeer) => void) | undefined;

  constructor(host: RecoveryHost, history: History, bounds: Bounds = recoveryBounds(undefined)) {
    this.#host = host;
    this.#history = history;
    this.#bounds = bounds;
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
   * With `except`, the logged entry carries it in the reserved header `:except` (the tags, and
   * the dialer identities of the peers), so a replay withholds it from those it left out; each
   * left-out peer holding `tag` is sent a position frame instead, carrying its identity.
   *
   * @param frame The PUBLISH without a sequence number (what the log keeps), already checked.
   * @param except The tags and the local peers the broadcast leaves out, if any.
   * @param send Hands the frame on: to the local peers and the other nodes.
   * @returns What `send` returned; rejects when the store failed (nothing is sent then).
   */
  broadcast(
    tag: string,
    frame: string | Uint8Array,
    payload: unknown,
    headers: Record<string, unknown> | null,
    except: {
      tags: readonly string[];
      peers: ReadonlySet<Peer> | undefined;
      gone?: readonly Peer[] | undefined;
    } | undefined,
    send: (data: string | Uint8Array, seq: number, headers: Record<string, unknown>) => number,
  ): Promise<number> {
    let leftOut: RecoveringPeer[] | undefined;
    if (except !== undefined) {
      const dialers: string[] = [];
      if (except.peers !== undefined) {
        leftOut = [...except.peers] as RecoveringPeer[];
        for (const peer of leftOut) dialers.push(this.#idOf(peer));
      }
      // A peer that ended keeps the identity its dialer was told, if it was told one.
      for (const peer of except.gone ?? []) {
        const id = this.#ids.get(peer as RecoveringPeer);
        if (id !== undefined) dialers.push(id);
      }
      if (except.tags.length > 0 || dialers.length > 0) {
        const logged: { tags?: string[]; dialers?: string[] } = {};
        if (except.tags.length > 0) logged.tags = [...except.tags];
        if (dialers.length > 0) logged.dialers = dialers;
        frame = this.#host.codec.encode([PUBLISH, tag, { ...headers, [EXCEPT]: logged }, payload]);
      }
    }
    const appended = this.#history.append(tag, frame);
    const before = this.#chains.get(tag);
    const ready = before === undefined ? appended : before.then(() => appended);
    const sent = ready.then((seq) => {
      const wire = { [SEQ]: seq, ...headers };
      const count = send(this.#host.codec.encode([PUBLISH, tag, wire, payload]), seq, wire);
      if (leftOut !== undefined) this.#tellLeftOut(leftOut, tag, seq);
      return count;
    });
    const end = sent.then(undefined, () => {});
    this.#chains.set(tag, end);
    void end.then(() => {
      if (this.#chains.get(tag) === end) this.#chains.delete(tag);
    });
    return sent;
  }

  /**
   * The peers a broadcast numbered `seq` left out by name that hold `tag` are told its position
   * instead, with their dialer identity (`:dialer`), which their dialer sends back on a redial.
   */
  #tellLeftOut(peers: readonly RecoveringPeer[], tag: string, seq: number): void {
    for (const peer of peers) {
      if (peer.isClosed || !peer.tags.has(tag)) continue;
      const data = this.#marker(tag, { [SEQ]: seq, [POSITION]: true, [DIALER]: this.#idOf(peer) });
      if (this.hold(peer, tag, data, seq)) continue;
      try {
        peer.admission.sendPublish(data);
      } catch (error) {
        this.#host.report(error, peer);
      }
    }
  }

  /** The dialer identity of `peer`, drawn when it has none. */
  #idOf(peer: RecoveringPeer): string {
    let id = this.#ids.get(peer);
    if (id === undefined) this.#ids.set(peer, id = drawDialerId());
    return id;
  }

  /**
   * A live broadcast of `tag` for `peer`: held when the tag waits (true), else for the caller to
   * send (false). A broadcast that takes the peer's held bytes past `maxHeldBytes` closes the
   * peer instead (1013), dropping what it held (true: nothing is to be sent).
   */
  hold(
    peer: RecoveringPeer,
    tag: string,
    data: string | Uint8Array,
    seq: number | undefined,
  ): boolean {
    const holds = this.#holds.get(peer);
    const hold = holds?.tags.get(tag);
    if (hold === undefined) return false;
    holds!.bytes += sizeOf(data);
    if (holds!.bytes > this.#bounds.maxHeldBytes) {
      this.#close(peer, 'recovery held too much');
      return true;
    }
    hold.frames.push({ data, seq });
    return true;
  }

  /** True while a tag of `peer` waits, so its broadcasts must go through {@linkcode hold}. */
  holding(peer: RecoveringPeer): boolean {
    return this.#holds.has(peer);
  }

  /** The socket of `peer` drained: its recovery, if it waits, goes on at once. */
  drain(peer: RecoveringPeer): void {
    const stall = this.#stalled.get(peer);
    if (stall === undefined || peer.session.congested()) return;
    this.#stalled.delete(peer);
    this.#disarm();
    for (const wake of stall.wake) wake(true);
  }

  /** `peer` ended: what it held is dropped and its waits end. */
  ended(peer: RecoveringPeer): void {
    this.#drop(peer);
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
        const headers: Record<string, unknown> = { [SEQ]: position, [POSITION]: true };
        // The peer's first position tells its dialer the identity it is known by.
        if (!this.#ids.has(peer)) headers[DIALER] = this.#idOf(peer);
        void this.#release(peer, tag, hold, position, this.#marker(tag, headers));
      },
      (error) => {
        if (hold.by !== 'position') return;
        this.#host.report(error, peer);
        void this.#release(peer, tag, hold, -1);
      },
    );
  }

  /**
   * The hello of `peer` arrived (before `onHello` runs): its `:dialer` identity is taken, its
   * `:resume` is kept until it is acknowledged, and the broadcasts of the resumed tags the peer
   * holds wait from now on.
   */
  arrived(peer: RecoveringPeer, headers: Readonly<Record<string, unknown>> | null): void {
    const id = headers?.[DIALER];
    if (typeof id === 'string' && id.length > 0 && id.length <= MAX_DIALER_ID) {
      this.#ids.set(peer, id);
    }
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
   * holds is replayed, one after the other, at most `maxReplay` entries in all; each it does not
   * hold is told so with a `:recovered` of `null`.
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
    const budget = { left: this.#bounds.maxReplay };
    for (const [tag, after, hold] of replays) {
      if (peer.isClosed) return;
      await this.#replay(peer, tag, after, hold, budget);
    }
  }

  /**
   * Sends `peer` the entries of `tag` after `after`, in order and paced by its socket, but those
   * whose `:except` left it out, then the `:recovered` marker, then the broadcasts held meanwhile
   * that the replay did not send. A store failure ends the replay with a gap, reported, and so
   * does reaching the resume's `budget` while entries are left.
   */
  async #replay(
    peer: RecoveringPeer,
    tag: string,
    after: number,
    hold: Hold,
    budget: { left: number },
  ): Promise<void> {
    const codec = this.#host.codec;
    const id = this.#ids.get(peer);
    let last = after;
    let replayed = 0;
    let gap = false;
    let position = after;
    let batch = FIRST_BATCH;
    try {
      for (;;) {
        const from = last;
        const limit = Math.min(batch, budget.left + 1);
        const range = await this.#history.range(tag, last, limit);
        if (peer.isClosed) return;
        gap ||= range.gap;
        let bytes = 0;
        let capped = false;
        for (const entry of range.entries) {
          if (entry.seq <= last) continue;
          if (budget.left === 0) {
            capped = true;
            break;
          }
          budget.left--;
          bytes += sizeOf(entry.data);
          const [, , headers, payload] = codec.decode(entry.data) as [
            number,
            string,
            Record<string, unknown> | null,
            unknown,
          ];
          if (withheld(headers, peer, id)) {
            last = entry.seq;
            continue;
          }
          const wire: Record<string, unknown> = { [SEQ]: entry.seq, ...headers };
          if (headers !== null && EXCEPT in headers) delete wire[EXCEPT];
          const data = codec.encode([PUBLISH, tag, wire, payload]);
          if (peer.session.congested() && !await this.#room(peer)) return;
          if (peer.isClosed) return;
          peer.admission.sendPublish(data);
          last = entry.seq;
          replayed++;
        }
        // A store that lost its log starts again below `after`: its head is the position now.
        position = range.head < after ? range.head : last;
        if (capped) {
          gap = true;
          break;
        }
        if (range.entries.length < limit) break;
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
        // The next batch holds about `maxHeldBytes` of entries like these.
        const mean = bytes / range.entries.length;
        batch = Math.max(1, Math.min(REPLAY_BATCH, Math.floor(this.#bounds.maxHeldBytes / mean)));
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
      peer.admission.sendPublish(marker);
    }
    const frames = hold.frames;
    let i = 0;
    while (i < frames.length) {
      const held = frames[i++];
      const holds = this.#holds.get(peer);
      if (holds !== undefined) holds.bytes -= sizeOf(held.data);
      if (held.seq !== undefined && held.seq <= position) continue;
      if (peer.session.congested() && !await this.#room(peer)) return;
      if (peer.isClosed) return;
      peer.admission.sendPublish(held.data, true);
    }
    const holds = this.#holds.get(peer);
    if (holds?.tags.get(tag) !== hold) return;
    holds.tags.delete(tag);
    if (holds.tags.size > 0) return;
    this.#holds.delete(peer);
    this.#released?.(peer);
  }

  /**
   * Resolves once the socket of `peer` is at or below its high-water mark (true), or once the
   * peer closed (false). Meanwhile the peer is stalled: the shared timer re-checks it, its drain
   * wakes it, and past `stallTimeoutMs` it is closed.
   */
  #room(peer: RecoveringPeer): Promise<boolean> {
    if (peer.isClosed) return Promise.resolve(false);
    if (!peer.session.congested()) return Promise.resolve(true);
    return new Promise((resolve) => {
      const stall = this.#stalled.get(peer);
      if (stall !== undefined) stall.wake.push(resolve);
      else this.#stalled.set(peer, { since: Date.now(), wake: [resolve] });
      this.#timer ??= setTimeout(() => this.#recheck(), SOCKET_POLL_MS);
    });
  }

  /** The shared timer: wakes each stalled peer whose socket fell or that closed, closes those past their deadline. */
  #recheck(): void {
    this.#timer = undefined;
    const now = Date.now();
    for (const [peer, stall] of this.#stalled) {
      const closed = peer.isClosed;
      if (!closed && peer.session.congested()) {
        // Past its deadline the peer is closed, which ends its waits.
        if (now - stall.since >= this.#bounds.stallTimeoutMs) this.#close(peer, 'recovery stalled');
        continue;
      }
      this.#stalled.delete(peer);
      for (const wake of stall.wake) wake(!closed);
    }
    if (this.#stalled.size > 0) this.#timer = setTimeout(() => this.#recheck(), SOCKET_POLL_MS);
  }

  /** Closes `peer` (1013) for a bound of recovery it passed, dropping what it held. */
  #close(peer: RecoveringPeer, reason: string): void {
    try {
      peer.close(CloseCode.TryAgainLater, reason);
    } catch (error) {
      this.#host.report(error, peer);
    }
    this.#drop(peer);
  }

  /** Drops what `peer` holds and ends its waits: its replay and releases stop. */
  #drop(peer: RecoveringPeer): void {
    const holds = this.#holds.get(peer);
    if (holds !== undefined) {
      for (const hold of holds.tags.values()) hold.frames.length = 0;
      this.#holds.delete(peer);
      this.#released?.(peer);
    }
    const stall = this.#stalled.get(peer);
    if (stall !== undefined) {
      this.#stalled.delete(peer);
      for (const wake of stall.wake) wake(false);
    }
    this.#disarm();
  }

  /** Clears the shared timer once no peer is stalled. */
  #disarm(): void {
    if (this.#stalled.size === 0 && this.#timer !== undefined) {
      clearTimeout(this.#timer);
      this.#timer = undefined;
    }
  }

  #holdOf(peer: RecoveringPeer, tag: string): Hold | undefined {
    return this.#holds.get(peer)?.tags.get(tag);
  }

  #startHold(peer: RecoveringPeer, tag: string, by: Hold['by']): Hold {
    let holds = this.#holds.get(peer);
    if (holds === undefined) {
      this.#holds.set(peer, holds = { tags: new Map(), bytes: 0 });
      this.#held?.(peer);
    }
    const hold: Hold = { frames: [], by };
    holds.tags.set(tag, hold);
    return hold;
  }

  #marker(tag: string, headers: Record<string, unknown>): string | Uint8Array {
    return this.#host.codec.encode([PUBLISH, tag, headers, null]);
  }
}
