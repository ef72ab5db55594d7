/**
 * This node's replica of the presence store: the whole table as key → ref → meta per tag, kept from
 * the store's snapshot and its batches applied in version order; `list()` reads it. A skipped
 * version, or the store's `resync()`, reloads the table and turns the difference into changes
 * (`presenceDiff`), so the replica and its followers converge on what the store holds.
 *
 * The followers of a tag are this node's peers that asked for its presence (a `:presence` OPEN).
 * Each is sent the tag's snapshot once per connection, then every change to the tag as one diff
 * frame per batch, encoded once and sent to all of them (cut into diffs that fit a message when
 * it is over the message limits). Presence frames are never dropped at the
 * high-water mark (a lost diff would corrupt the follower's state): they go out as replies,
 * which a socket over `maxBufferedBytes` refuses by closing the peer. They carry no `:seq` and
 * no history or backplane sees them.
 *
 * Private to `lib/acceptor/`.
 *
 * @module
 */
import { acceptorPolicy } from './_policy.ts';
import type { Codec } from '../wire/codec.ts';
import { overLimit, PUBLISH, utf8Length } from '../wire/frame.ts';
import { PRESENCE } from '../wire/reserved.ts';
import {
  applyPresenceDiff,
  ownSlot,
  presenceDiff,
  type PresenceDiffPayload,
  type PresenceEntries,
  presenceSnapshot,
  type PresenceSyncPayload,
  setOwn,
  splitPresenceDiff,
} from '../wire/presence.ts';
import type { Limits } from '../session/limits.ts';
import type {
  PresenceBatch,
  PresenceMove,
  PresenceSnapshot,
  PresenceStore,
} from '../broadcast/presence.ts';
import type { Peer } from './acceptor_types.ts';
import type { PeerImpl } from './_peer.ts';
import { type TextBytes, textBytes } from '../sockets/node_ws.ts';

/** The reserved header of each kind of presence frame, shared. */
const SYNC = Object.freeze({ [PRESENCE]: 'sync' });
const DIFF = Object.freeze({ [PRESENCE]: 'diff' });
const END = Object.freeze({ [PRESENCE]: 'end' });

/** What the replica needs of the acceptor's presence. */
export interface ReplicaHost {
  /** The codec every peer speaks. */
  readonly codec: Codec;
  /** Contains an error: to `onError`, else `console.error`. */
  report(error: unknown, peer?: Peer): void;
  /** The batch of `version` moved entries to new owners (adoptions in grace). */
  moved(moves: readonly PresenceMove[], version: number): void;
  /**
   * The table was loaded: at the open (`again` false), or again after a skipped batch (whose
   * moves are in it).
   */
  loaded(snapshot: PresenceSnapshot, again: boolean): void;
}

/**
 * The snapshots one connection may be sent: at most this many messages of the largest size
 * (`maxMessageBytes`) per {@linkcode SNAPSHOT_WINDOW_MS}, refilled evenly over it. A follow costs
 * nothing to send but may draw a snapshot of a megabyte: the budget stops a peer that follows and
 * unfollows a large tag in a loop from turning the acceptor into an amplifier.
 */
const SNAPSHOT_MESSAGES = 8;
const SNAPSHOT_WINDOW_MS = 10_000;

/** What is left of a connection's snapshot budget, in bytes, as of `at` (ms). */
interface SnapshotBudget {
  units: number;
  at: number;
}

/** One encoded presence frame, with its UTF-8 bytes for `ws` sockets once asked for. */
interface Frame {
  readonly encoded: string | Uint8Array;
  bytes: TextBytes | undefined;
}

/** This node's replica of the store and its followers: see the module's documentation. */
export class PresenceReplica {
  readonly #host: ReplicaHost;
  /** tag → key → ref → meta (parsed). */
  readonly #tags = new Map<string, PresenceEntries>();
  #version = 0;
  #store: PresenceStore | undefined;
  /** Batches that arrived while the table loads (open, resync); undefined otherwise. */
  #held: PresenceBatch[] | undefined;
  #loaded = false;
  #closed = false;
  /** tag → the peers following it. */
  readonly #followers = new Map<string, Set<PeerImpl>>();
  /** peer → the tags it follows. */
  readonly #followed = new Map<PeerImpl, Set<string>>();
  /** peer → the tags whose follow waits for the store to open: an unfollow cancels it. */
  readonly #waiting = new Map<PeerImpl, Set<string>>();
  /** tag → its snapshot frame, until the tag changes. */
  readonly #synced = new Map<string, Frame>();
  /** peer → what is left of its snapshot budget. */
  readonly #budgets = new WeakMap<PeerImpl, SnapshotBudget>();

  constructor(host: ReplicaHost) {
    this.#host = host;
  }

  /** True once the store's table was loaded here. */
  get loaded(): boolean {
    return this.#loaded;
  }

  /** The version of the last batch applied. */
  get version(): number {
    return this.#version;
  }

  /**
   * Opens `store` for `node` and loads its table; batches that arrive meanwhile wait and are
   * applied after it (those the snapshot holds are skipped).
   */
  async open(store: PresenceStore, node: string): Promise<void> {
    this.#store = store;
    this.#held = [];
    let snapshot: PresenceSnapshot;
    try {
      snapshot = await store.open(node, {
        batch: (batch) => this.batch(batch),
        resync: () => this.resync(),
      });
    } catch (error) {
      this.#held = undefined;
      throw error;
    }
    this.#load(snapshot, false);
  }

  /** Stops applying batches; the followers are forgotten. */
  close(): void {
    this.#closed = true;
    this.#held = undefined;
    this.#followers.clear();
    this.#followed.clear();
  }

  /** One batch of the store, in version order; a skipped version reloads the table. */
  batch(batch: PresenceBatch): void {
    if (this.#closed) return;
    if (this.#held !== undefined) {
      this.#held.push(batch);
      return;
    }
    if (batch.version <= this.#version) return;
    if (batch.version !== this.#version + 1) {
      this.#held = [batch];
      this.#reload();
      return;
    }
    this.#version = batch.version;
    for (const change of batch.changes) {
      const joins: Record<string, Record<string, unknown>> = {};
      for (const key in change.joins) {
        const refs = change.joins[key];
        const parsed: Record<string, unknown> = {};
        for (const ref in refs) {
          const meta = this.#parse(refs[ref]);
          if (meta !== NOT_JSON) setOwn(parsed, ref, meta);
        }
        setOwn(joins, key, parsed);
      }
      this.#change(change.tag, { leaves: change.leaves, joins });
    }
    if (batch.moved.length > 0) this.#host.moved(batch.moved, batch.version);
  }

  /** The store lost track: the table is reloaded, and batches wait meanwhile. */
  resync(): void {
    if (this.#closed || this.#held !== undefined || !this.#loaded) return;
    this.#held = [];
    this.#reload();
  }

  /** Brings the replica up to `snapshot` when it is newer (a load after a batch was applied). */
  catchUp(snapshot: PresenceSnapshot): void {
    if (this.#closed || this.#held !== undefined || snapshot.version <= this.#version) return;
    this.#held = [];
    this.#load(snapshot, true);
  }

  /** Per key, the metas of `tag`'s presences. */
  list(tag: string): Record<string, unknown[]> {
    const state = this.#tags.get(tag);
    return Object.fromEntries([...state ?? []].map(([key, refs]) => [key, [...refs.values()]]));
  }

  /** Whether `peer` follows `tag`. */
  follows(peer: PeerImpl, tag: string): boolean {
    return this.#followed.get(peer)?.has(tag) === true;
  }

  /** The tags `peer` follows. */
  followed(peer: PeerImpl): string[] {
    const tags = this.#followed.get(peer);
    return tags ? [...tags] : [];
  }

  /**
   * `peer` follows `tag` from now on: it is sent the tag's snapshot (unless `sync` is false: it
   * holds the state already, as a peer restored after a restart does), then its diffs.
   */
  follow(peer: PeerImpl, tag: string, sync = true): string | undefined {
    if (this.#closed || peer.isClosed) return undefined;
    let tags = this.#followed.get(peer);
    if (tags?.has(tag)) return undefined;
    let frame: Frame | undefined;
    if (sync) {
      frame = this.#synced.get(tag);
      if (frame === undefined) {
        const state = this.#tags.get(tag);
        const payload: PresenceSyncPayload = state ? presenceSnapshot(state) : {};
        frame = this.#encode(tag, SYNC, payload);
        if (frame === undefined) return undefined;
        this.#synced.set(tag, frame);
      }
      const over = this.#overLimits(peer, frame.encoded);
      if (over !== undefined) {
        return `Cannot follow the presence of ${JSON.stringify(tag)}: its snapshot has ${over}`;
      }
      const spent = this.#spend(peer, frame.bytes?.length ?? byteSize(frame.encoded));
      if (spent !== undefined) {
        return `Cannot follow the presence of ${JSON.stringify(tag)}: ${spent}`;
      }
    }
    if (!tags) this.#followed.set(peer, tags = new Set());
    tags.add(tag);
    let followers = this.#followers.get(tag);
    if (!followers) this.#followers.set(tag, followers = new Set());
    followers.add(peer);
    if (frame !== undefined) this.#send(peer, frame);
    return undefined;
  }

  /**
   * Takes `units` bytes from `peer`'s snapshot budget (see {@linkcode SNAPSHOT_MESSAGES}); what was
   * exceeded when the budget cannot pay, and then takes nothing.
   */
  #spend(peer: PeerImpl, units: number): string | undefined {
    const full = SNAPSHOT_MESSAGES * peer.sink.limits.maxMessageBytes;
    const now = Date.now();
    const budget = this.#budgets.get(peer) ?? { units: full, at: now };
    // A clock set back refills nothing; forward, at most the whole budget.
    budget.units = Math.min(
      full,
      budget.units + Math.max(0, now - budget.at) * full / SNAPSHOT_WINDOW_MS,
    );
    budget.at = now;
    this.#budgets.set(peer, budget);
    if (units > budget.units) {
      return `the snapshots sent to this connection would exceed ${full} bytes in ${
        SNAPSHOT_WINDOW_MS / 1000
      } s (${SNAPSHOT_MESSAGES} × maxMessageBytes): follow again in ${
        Math.ceil((units - budget.units) * SNAPSHOT_WINDOW_MS / full)
      } ms`;
    }
    budget.units -= units;
    return undefined;
  }

  /**
   * What of `encoded` is over the message limits of `peer`'s connection, which a dialer's default
   * to the same figures: a snapshot over them would close the dialer's connection, and its
   * redial would follow again, and again. Undefined when it fits.
   */
  #overLimits(peer: PeerImpl, encoded: string | Uint8Array): string | undefined {
    const { maxMessageBytes, maxMessageItems } = peer.sink.limits;
    if (overLimit(encoded, maxMessageBytes)) {
      return `more than the ${maxMessageBytes} bytes a message may have (maxMessageBytes, on both sides)`;
    }
    if (acceptorPolicy.exceedsItems(peer.session, encoded, maxMessageItems)) {
      return `more than the ${maxMessageItems} items a message may have (maxMessageItems, on both sides)`;
    }
    return undefined;
  }

  /** `peer`'s follow of `tag` waits for the store to open. */
  wait(peer: PeerImpl, tag: string): void {
    let tags = this.#waiting.get(peer);
    if (!tags) this.#waiting.set(peer, tags = new Set());
    tags.add(tag);
  }

  /** Whether `peer`'s follow of `tag` was waiting (and was not cancelled); it waits no more. */
  waited(peer: PeerImpl, tag: string): boolean {
    const tags = this.#waiting.get(peer);
    if (!tags?.delete(tag)) return false;
    if (tags.size === 0) this.#waiting.delete(peer);
    return true;
  }

  /** `peer` no longer follows `tag`; with `end`, it is told so (it lost the tag). */
  unfollow(peer: PeerImpl, tag: string, end: boolean): void {
    this.waited(peer, tag);
    const tags = this.#followed.get(peer);
    if (!tags?.delete(tag)) return;
    if (tags.size === 0) this.#followed.delete(peer);
    const followers = this.#followers.get(tag);
    followers?.delete(peer);
    if (followers?.size === 0) {
      this.#followers.delete(tag);
      this.#synced.delete(tag);
    }
    if (!end || peer.isClosed) return;
    const frame = this.#encode(tag, END, null);
    if (frame !== undefined) this.#send(peer, frame);
  }

  /** `peer` ended: it follows nothing. */
  ended(peer: PeerImpl): void {
    this.#waiting.delete(peer);
    const tags = this.#followed.get(peer);
    if (!tags) return;
    for (const tag of [...tags]) this.unfollow(peer, tag, false);
  }

  #reload(): void {
    const store = this.#store!;
    store.load().then(
      (snapshot) => this.#load(snapshot, true),
      (error) => {
        // The batches held have a gap before them: the next batch (or resync) reloads again.
        this.#held = undefined;
        this.#host.report(error);
      },
    );
  }

  /**
   * Replaces the table with `snapshot`, sending each tag's difference to its followers as a diff,
   * then applies the batches that waited.
   */
  #load(snapshot: PresenceSnapshot, again: boolean): void {
    if (this.#closed) return;
    const next = new Map<string, Record<string, Record<string, unknown>>>();
    for (const entry of snapshot.entries) {
      const meta = this.#parse(entry.meta);
      if (meta === NOT_JSON) continue;
      let keys = next.get(entry.tag);
      if (!keys) next.set(entry.tag, keys = {});
      setOwn(ownSlot(keys, entry.key, () => ({})), entry.ref, meta);
    }
    for (const tag of [...this.#tags.keys()]) if (!next.has(tag)) next.set(tag, {});
    for (const [tag, payload] of next) {
      const diff = presenceDiff(this.#tags.get(tag) ?? new Map(), payload);
      if (!isEmpty(diff.leaves) || !isEmpty(diff.joins)) this.#change(tag, diff);
    }
    this.#version = snapshot.version;
    this.#loaded = true;
    const held = this.#held ?? [];
    this.#held = undefined;
    this.#host.loaded(snapshot, again);
    for (const batch of held) this.batch(batch);
  }

  /**
   * Applies `diff` to `tag` and sends it, encoded once, to the tag's followers: in pieces that fit
   * a message when it does not (see {@linkcode splitPresenceDiff}), as a large reload's may not.
   */
  #change(tag: string, diff: PresenceDiffPayload): void {
    let state = this.#tags.get(tag);
    if (!state) this.#tags.set(tag, state = new Map());
    const { left, joined } = applyPresenceDiff(state, diff);
    if (state.size === 0) this.#tags.delete(tag);
    if (left.size === 0 && joined.size === 0) return;
    this.#synced.delete(tag);
    const followers = this.#followers.get(tag);
    if (followers === undefined) return;
    const frame = this.#encode(tag, DIFF, diff);
    if (frame === undefined) return;
    // Every peer of an acceptor has the same limits: the pieces are cut once per limits.
    const cut = new Map<Readonly<Limits>, Frame[]>();
    for (const peer of followers) {
      let frames = cut.get(peer.sink.limits);
      if (frames === undefined) {
        cut.set(peer.sink.limits, frames = this.#pieces(peer, tag, diff, frame));
      }
      for (const piece of frames) this.#send(peer, piece);
    }
  }

  /**
   * The frames of `diff` (encoded whole as `frame`) that fit `peer`'s message limits: `[frame]`
   * when it does; a piece that cannot fit (a single ref over them) is sent as it is, which closes
   * the follower's connection, and reported.
   */
  #pieces(peer: PeerImpl, tag: string, diff: PresenceDiffPayload, frame: Frame): Frame[] {
    if (this.#overLimits(peer, frame.encoded) === undefined) return [frame];
    const encoded = new Map<PresenceDiffPayload, Frame | undefined>();
    const fits = (piece: PresenceDiffPayload) => {
      const pieceFrame = this.#encode(tag, DIFF, piece);
      encoded.set(piece, pieceFrame);
      return pieceFrame === undefined || this.#overLimits(peer, pieceFrame.encoded) === undefined;
    };
    const frames: Frame[] = [];
    for (const piece of splitPresenceDiff(diff, fits)) {
      const pieceFrame = encoded.get(piece) ?? this.#encode(tag, DIFF, piece);
      if (pieceFrame === undefined) continue;
      const over = this.#overLimits(peer, pieceFrame.encoded);
      if (over !== undefined) {
        this.#host.report(
          new RangeError(
            `A presence change of ${
              JSON.stringify(tag)
            } cannot be cut to fit a message: one presence in it has ${over}`,
          ),
        );
      }
      frames.push(pieceFrame);
    }
    return frames;
  }

  #encode(
    tag: string,
    kind: Readonly<Record<string, string>>,
    payload: unknown,
  ): Frame | undefined {
    try {
      return { encoded: this.#host.codec.encode([PUBLISH, tag, kind, payload]), bytes: undefined };
    } catch (error) {
      this.#host.report(error);
      return undefined;
    }
  }

  /**
   * Sends `frame` to `peer`: never dropped at the high-water mark, and waiting with the other
   * frames while the peer's hello is handled.
   */
  #send(peer: PeerImpl, frame: Frame): void {
    if (peer.isClosed) return;
    const encoded = frame.encoded;
    try {
      const data = typeof encoded === 'string' && peer.sink.isWs
        ? frame.bytes ??= textBytes(encoded)
        : encoded;
      if (peer.admission.state === 'open') peer.session.reply(data);
      else peer.admission.sendPublish(data);
    } catch (error) {
      this.#host.report(error, peer);
    }
  }

  /** A meta's JSON text, parsed; {@linkcode NOT_JSON} (reported) for text that is not JSON. */
  #parse(text: string): unknown {
    try {
      return JSON.parse(text);
    } catch (error) {
      this.#host.report(error);
      return NOT_JSON;
    }
  }
}

/** What {@linkcode PresenceReplica}'s parse returns for a meta that is not JSON. */
const NOT_JSON: unique symbol = Symbol('not JSON');

/** The size of an encoded frame in bytes (UTF-8 for text). */
function byteSize(encoded: string | Uint8Array): number {
  return typeof encoded === 'string' ? utf8Length(encoded) : encoded.byteLength;
}

function isEmpty(record: Record<string, unknown>): boolean {
  for (const _ in record) return false;
  return true;
}
