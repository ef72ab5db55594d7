/**
 * The acceptor's presence: `track()`, `untrack()` and `list()`, this node's own table (the
 * presences of its peers, the truth it puts back after the store lost them), the grace of a closed
 * peer's presences, the batch of changes sent to the store once per `batchMs`, the heartbeat, and
 * the follows of its peers (a `:presence` OPEN). The store's table is mirrored by
 * {@linkcode PresenceReplica}, which also serves the followers; the batches, their repair after a
 * failure and the aliases of adoptions are {@linkcode PresenceBatches}'.
 *
 * Nothing runs until the first `track()` or follow: no store call, no timer. From then on at most
 * one batch timer (while changes wait), one heartbeat timer (a store with `beat`, every
 * `nodeTimeoutMs / 5`) and one timer per presence in grace; {@linkcode Presence.close} clears all.
 *
 * An adoption (a track of a tag and key in grace, on any node) arrives as a move: the node that
 * tracked maps its peer to the adopted ref, the node that lost it drops its entry and timer. A
 * store whose `apply()` resolves with its moves tells the tracking node before the echo: until the
 * echo, the fresh ref is an alias of the adopted one in every change the node sends, so a new meta
 * or an untrack in the next batch reaches the adopted entry (batches go one at a time, each taken
 * once the one before resolved).
 *
 * Private to `lib/acceptor/`.
 *
 * @module
 */
import { timerDelay } from '../util/delay.ts';
import type { Codec } from '../wire/codec.ts';
import { jsonCodec } from '../wire/codec.ts';
import { isTag } from '../wire/frame.ts';
import { isPresenceKey, MAX_PRESENCE_KEY_LENGTH } from '../wire/presence.ts';
import { PRESENCE } from '../wire/reserved.ts';
import { ResetCode } from '../wire/codes.ts';
import {
  memoryPresence,
  type PresenceMove,
  type PresenceOp,
  type PresenceSnapshot,
  type PresenceStore,
} from '../broadcast/presence.ts';
import type { AcceptorPresence, Peer } from './acceptor_types.ts';
import type { CheckedPresenceOptions } from './_acceptor_checks.ts';
import type { PeerImpl, PresenceFollows } from './_peer.ts';
import { control, type Stream } from '../session/stream.ts';
import { StreamError } from '../errors.ts';
import { checkTag } from './_tags.ts';
import { describe, mustBe } from '../util/describe.ts';
import { failsWith, unencodable } from '../util/value_path.ts';
import { PresenceReplica } from './_presence_replica.ts';
import { PresenceBatches } from './_presence_batches.ts';

/** The longest meta, in characters of its JSON text. */
export const MAX_PRESENCE_META_LENGTH = 4096;

/** The codec whose `encode` refuses what JSON would not carry as it is. */
const STRICT: Codec = /* @__PURE__ */ jsonCodec({ strict: true });
const TRACK = 'track a presence';

/** What the presence needs of its acceptor. */
export interface PresenceHost {
  /** The codec every peer speaks. */
  readonly codec: Codec;
  /** The live peers (a peer leaves the set when it ends). */
  readonly peers: ReadonlySet<PeerImpl>;
  /** Contains an error: to `onError`, else `console.error`. */
  report(error: unknown, peer?: Peer): void;
}

/** One presence of this node's peers. */
interface Own {
  readonly tag: string;
  readonly key: string;
  ref: string;
  meta: string;
  readonly peerId: string;
  /** When its grace ends (epoch ms); 0 while its peer is open. */
  untilMs: number;
  timer: ReturnType<typeof setTimeout> | undefined;
}

/** A fresh ref: random, web-standard. */
function newRef(): string {
  const ref = crypto.randomUUID();
  ref.charCodeAt(0); // flat, as a peer id (lib/acceptor/_peer.ts)
  return ref;
}

/**
 * The JSON text of `meta`.
 *
 * @throws {TypeError} When JSON does not carry it as it is, naming the path of what it refuses.
 * @throws {RangeError} When the text is longer than {@linkcode MAX_PRESENCE_META_LENGTH}.
 */
function metaText(meta: unknown): string {
  let text: string;
  try {
    text = STRICT.encode([meta]) as string;
  } catch (cause) {
    const found = unencodable(meta, failsWith((frame) => STRICT.encode(frame)));
    throw new TypeError(`Cannot ${TRACK} as "meta" must be JSON: ${found}`, { cause });
  }
  text = text.slice(1, -1);
  if (text.length > MAX_PRESENCE_META_LENGTH) {
    throw new RangeError(
      `Cannot ${TRACK} as "meta" must be at most ${MAX_PRESENCE_META_LENGTH} characters once encoded as JSON: current length is ${text.length}`,
    );
  }
  return text;
}

/** Why a follow is refused when the peer does not hold the tag. */
function notHeld(tag: string): string {
  return `Cannot follow the presence of ${JSON.stringify(tag)}: the peer does not hold the tag`;
}

/** The acceptor's presence: see the module's documentation. */
export class Presence implements AcceptorPresence, PresenceFollows, HostedPresence {
  readonly #host: PresenceHost;
  readonly #options: CheckedPresenceOptions;
  readonly #store: PresenceStore;
  /** Whether to beat: a store given with `beat` (the acceptor's own store has no other node). */
  readonly #beats: boolean;
  readonly #replica: PresenceReplica;
  #node: string | undefined;
  /** ref → own presence. */
  readonly #byRef = new Map<string, Own>();
  /** peer id → tag → own presence, while it has one. */
  readonly #byPeer = new Map<string, Map<string, Own>>();
  /** The live peers that have presences. */
  readonly #live = new Set<PeerImpl>();
  readonly #batches: PresenceBatches;
  #beatTimer: ReturnType<typeof setTimeout> | undefined;
  /** A heartbeat is in flight: the next is armed when it ends. */
  #beating = false;
  #opening: Promise<void> | undefined;
  #started = false;
  #closed = false;
  /** Graces arm no timer: the store ends them (see {@linkcode HostedPresence}). */
  #graceInStore = false;
  /** Whether {@linkcode Presence.resume} ran. */
  #resumed = false;

  constructor(host: PresenceHost, options: CheckedPresenceOptions) {
    this.#host = host;
    this.#options = options;
    this.#store = options.store ?? memoryPresence();
    this.#beats = options.store !== undefined && typeof options.store.beat === 'function';
    this.#replica = new PresenceReplica({
      codec: host.codec,
      report: (error, peer) => host.report(error, peer),
      moved: (moves, version) => {
        for (const move of moves) this.#moved(move, version);
      },
      loaded: (snapshot, again) => again ? this.#reloaded(snapshot) : this.#restored(snapshot),
    });
    this.#batches = new PresenceBatches({
      store: this.#store,
      node: () => this.#nodeId,
      closed: () => this.#closed,
      version: () => this.#replica.version,
      ready: () => this.ready(),
      holds: (ref) => this.#byRef.has(ref),
      own: () => this.#own(),
      report: (error) => host.report(error),
    }, options.batchMs);
  }

  /** This node's id in the store, drawn at first use (a Worker may not draw at module load). */
  get #nodeId(): string {
    return this.#node ??= crypto.randomUUID();
  }

  track(peer: Peer, tag: string, key: string, meta: unknown): void {
    checkTag(`Cannot ${TRACK}`, tag);
    if (!isPresenceKey(key)) {
      throw new TypeError(
        mustBe(TRACK, 'key', `a string of 1 to ${MAX_PRESENCE_KEY_LENGTH} characters`, key),
      );
    }
    const text = metaText(meta);
    const live = this.#livePeer(peer, TRACK);
    if (live === undefined || this.#closed) return;
    this.#start();
    const id = live.id;
    const was = this.#byPeer.get(id)?.get(tag);
    if (was !== undefined && was.key === key) {
      if (was.meta === text) return;
      was.meta = text;
      this.#push({ op: 'track', tag, key, ref: was.ref, meta: text, peer: id });
      return;
    }
    if (was !== undefined) this.#leave(was);
    this.#add(live, {
      tag,
      key,
      ref: newRef(),
      meta: text,
      peerId: id,
      untilMs: 0,
      timer: undefined,
    });
  }

  untrack(peer: Peer, tag: string): void {
    checkTag('Cannot untrack a presence', tag);
    if (typeof peer !== 'object' || peer === null || !('tags' in peer)) {
      throw new TypeError(mustBe('untrack a presence', 'peer', 'a Peer', peer));
    }
    if (this.#closed || (!this.#live.has(peer as PeerImpl) && !peer.isClosed)) return;
    const own = this.#byPeer.get(peer.id)?.get(tag);
    if (own !== undefined) this.#leave(own);
  }

  list(tag: string): Record<string, unknown[]> {
    checkTag('Cannot list the presences', tag);
    return this.#replica.list(tag);
  }

  async flush(): Promise<void> {
    await this.ready();
    await this.#batches.send();
    try {
      this.#replica.catchUp(await this.#store.load());
    } catch (error) {
      this.#host.report(error);
    }
  }

  ready(): Promise<void> {
    if (this.#closed && this.#opening === undefined) return Promise.resolve();
    return this.#opening ??= this.#replica.open(this.#store, this.#nodeId).catch((error) => {
      this.#opening = undefined;
      throw error;
    });
  }

  /**
   * A `:presence` OPEN of `peer`: payload `true` follows the tag its header names (the snapshot
   * goes out before the stream's END), `false` stops; refused when the peer does not hold the
   * tag or is barred.
   */
  follow(peer: PeerImpl, stream: Stream): unknown {
    const tag = stream.headers![PRESENCE];
    const payload = stream.payload;
    if (!isTag(tag) || typeof payload !== 'boolean') {
      control.fail(
        stream,
        ResetCode.Invalid,
        isTag(tag)
          ? `Cannot follow the presence of ${
            JSON.stringify(tag)
          }: the payload must be true or false`
          : `Cannot follow a presence as the tag must be a string of 1 to 256 characters: current value is ${
            describe(tag)
          }`,
      );
      return undefined;
    }
    if (!payload) {
      this.#replica.unfollow(peer, tag, false);
      return undefined;
    }
    if (this.#closed || peer.admission.barred || !peer.tags.has(tag)) {
      control.fail(stream, ResetCode.Refused, notHeld(tag));
      return undefined;
    }
    if (this.#replica.follows(peer, tag)) return undefined;
    this.#start();
    if (this.#replica.loaded) {
      const refused = this.#replica.follow(peer, tag);
      if (refused !== undefined) control.fail(stream, ResetCode.Refused, refused);
      return undefined;
    }
    this.#replica.wait(peer, tag);
    return this.ready().then(
      () => {
        if (!this.#replica.waited(peer, tag)) return; // unfollowed meanwhile
        // The tag may have gone while the store opened: a follow without a snapshot is none.
        if (!peer.tags.has(tag)) throw new StreamError(ResetCode.Refused, notHeld(tag));
        const refused = this.#replica.follow(peer, tag);
        if (refused !== undefined) throw new StreamError(ResetCode.Refused, refused);
      },
      () => {
        this.#replica.waited(peer, tag);
        throw new StreamError(ResetCode.Internal, 'The presence store could not be opened');
      },
    );
  }

  /** `peer` lost `tag`: it no longer follows it, and is told so. Its presence stays. */
  lost(peer: PeerImpl, tag: string): void {
    if (!peer.isClosed) this.#replica.unfollow(peer, tag, true);
  }

  /** `peer` ended: it follows nothing, and its presences go into grace. */
  ended(peer: PeerImpl): void {
    this.#replica.ended(peer);
    if (!this.#live.delete(peer)) return;
    const tags = this.#byPeer.get(peer.id);
    if (!tags) return;
    const graceMs = this.#options.graceMs;
    const untilMs = Math.ceil(Date.now() + graceMs);
    for (const own of tags.values()) {
      if (graceMs === 0) {
        this.#leave(own);
        continue;
      }
      if (this.#graceInStore) {
        this.#forget(own);
        this.#push({ op: 'grace', tag: own.tag, ref: own.ref, untilMs });
        continue;
      }
      own.untilMs = untilMs;
      own.timer = setTimeout(() => {
        own.timer = undefined;
        if (this.#byRef.get(own.ref) === own) this.#leave(own);
      }, timerDelay(graceMs));
      this.#push({ op: 'grace', tag: own.tag, ref: own.ref, untilMs });
    }
  }

  /**
   * The acceptor closes: every timer is cleared, this node's presences become orphans in grace
   * (a redial to another node adopts them; that node's sweep removes the rest), and the store
   * is closed for this node. Never rejects: failures are reported.
   */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    this.#clearTimers();
    if (this.#opening === undefined) return;
    const now = Date.now();
    for (const own of this.#byRef.values()) {
      const untilMs = own.untilMs || Math.ceil(now + this.#options.graceMs);
      this.#batches.push({ op: 'grace', tag: own.tag, ref: own.ref, untilMs, orphan: true });
    }
    this.#byRef.clear();
    this.#byPeer.clear();
    this.#live.clear();
    await this.#batches.send();
    this.#batches.forget();
    try {
      await this.#opening;
      await this.#store.close(this.#nodeId);
    } catch (error) {
      this.#host.report(error);
    }
    this.#replica.close();
  }

  /** The store. */
  get store(): PresenceStore {
    return this.#store;
  }

  graceInStore(): void {
    this.#graceInStore = true;
  }

  following(peer: Peer): string[] {
    return this.#replica.followed(peer as PeerImpl);
  }

  async resume(peers: ReadonlyMap<Peer, readonly string[]>): Promise<void> {
    if (this.#closed) return;
    // The store's first load gives the live peers their presences back (see #restored).
    await this.ready();
    const snapshot = await this.#store.load();
    if (this.#closed) return;
    if (!this.#resumed) {
      this.#resumed = true;
      // The presences of this node whose peer is not here go into grace from now, as if their
      // peer had just closed.
      const here = new Set<string>();
      for (const peer of this.#host.peers) if (!peer.isClosed) here.add(peer.id);
      const node = this.#nodeId;
      const graceMs = this.#options.graceMs;
      const untilMs = Math.ceil(Date.now() + graceMs);
      for (const { tag, ref, node: owner, peer, untilMs: grace } of snapshot.entries) {
        if (owner !== node || grace !== 0 || here.has(peer) || this.#byRef.has(ref)) continue;
        this.#push(graceMs === 0 ? { op: 'leave', tag, ref } : { op: 'grace', tag, ref, untilMs });
      }
    }
    for (const [peer, tags] of peers) {
      const impl = peer as PeerImpl;
      if (!this.#host.peers.has(impl) || impl.isClosed) continue;
      for (const tag of tags) if (impl.tags.has(tag)) this.#replica.follow(impl, tag, false);
    }
  }

  /** A live peer of this acceptor, `undefined` for a closed one. @throws {TypeError} Else. */
  #livePeer(peer: Peer, action: string): PeerImpl | undefined {
    const impl = peer as PeerImpl;
    if (this.#host.peers.has(impl)) return impl.isClosed ? undefined : impl;
    if (typeof peer === 'object' && peer !== null && peer.isClosed === true) return undefined;
    throw new TypeError(mustBe(action, 'peer', 'a live Peer of this acceptor', peer));
  }

  /** The first track or follow: the store is opened and the heartbeat armed. */
  #start(): void {
    if (this.#started) return;
    this.#started = true;
    // A store opened earlier (by ready() or flush()) may have counted this node dead since.
    const opened = this.#replica.loaded;
    this.ready().catch((error) => this.#host.report(error));
    if (opened && this.#beats) this.#beat();
    else this.#armBeat();
  }

  /** Adds `own`, a presence of `peer`, to this node's table and sends its track. */
  #add(peer: PeerImpl, own: Own): void {
    const { tag, key, ref, meta, peerId } = own;
    let tags = this.#byPeer.get(peerId);
    if (!tags) this.#byPeer.set(peerId, tags = new Map());
    tags.set(tag, own);
    this.#byRef.set(ref, own);
    this.#live.add(peer);
    this.#push({ op: 'track', tag, key, ref, meta, peer: peerId });
  }

  /** Removes `own` now and sends its leave. */
  #leave(own: Own): void {
    this.#forget(own);
    this.#push({ op: 'leave', tag: own.tag, ref: own.ref });
  }

  /** Removes `own` from this node's table, with its timer. */
  #forget(own: Own): void {
    if (own.timer !== undefined) clearTimeout(own.timer);
    own.timer = undefined;
    if (this.#byRef.get(own.ref) === own) this.#byRef.delete(own.ref);
    const tags = this.#byPeer.get(own.peerId);
    if (tags?.get(own.tag) !== own) return;
    tags.delete(own.tag);
    if (tags.size === 0) this.#byPeer.delete(own.peerId);
  }

  /**
   * An entry adopted in grace moved to `move.node`, in the batch of `version` (undefined: read
   * from a load): see the module's documentation.
   */
  #moved(move: PresenceMove, version?: number): void {
    if (this.#closed) return;
    const fresh = move.node === this.#nodeId ? this.#batches.echoed(move.ref, version) : undefined;
    if (fresh !== undefined) {
      // Known from apply()'s answer: every change since went to the adopted ref already.
      const own = this.#byRef.get(fresh);
      if (own !== undefined) this.#rename(own, move.ref);
      return;
    }
    const held = this.#byRef.get(move.ref);
    if (move.node !== this.#nodeId) {
      if (held !== undefined) this.#forget(held);
      return;
    }
    // The track whose batch is in flight, else the peer's presence of the tag, adopted.
    const sent = this.#batches.tracked(move);
    const own = sent !== undefined
      ? this.#byRef.get(sent)
      : this.#byPeer.get(move.peer)?.get(move.tag);
    if (held !== undefined && held !== own) this.#forget(held);
    if (own === undefined || own.key !== move.key) {
      // The peer untracked, or tracked another key, since: this node does not want the entry.
      this.#push({ op: 'leave', tag: move.tag, ref: move.ref });
      return;
    }
    if (own.ref === move.ref) return;
    // The changes that wait name the fresh ref, which has no entry.
    this.#batches.rename(own.ref, move.ref);
    this.#rename(own, move.ref);
    // The peer closed since: the grace sent for its fresh ref found nothing to mark.
    if (own.untilMs !== 0) {
      this.#push({ op: 'grace', tag: own.tag, ref: own.ref, untilMs: own.untilMs });
    }
  }

  /** `own` is known by `ref` from now on. */
  #rename(own: Own, ref: string): void {
    if (this.#byRef.get(own.ref) === own) this.#byRef.delete(own.ref);
    own.ref = ref;
    this.#byRef.set(ref, own);
  }

  /**
   * The first load: an entry whose peer is a live peer of this acceptor (a peer restored after a
   * Durable Object woke, with its id) is this node's again, so its close puts it in grace.
   */
  #restored(snapshot: PresenceSnapshot): void {
    if (snapshot.entries.length === 0 || this.#host.peers.size === 0 || this.#closed) return;
    const live = new Map<string, PeerImpl>();
    for (const peer of this.#host.peers) if (!peer.isClosed) live.set(peer.id, peer);
    for (const { tag, key, ref, meta, peer: peerId } of snapshot.entries) {
      const peer = live.get(peerId);
      if (peer === undefined || this.#byRef.has(ref) || this.#byPeer.get(peerId)?.has(tag)) {
        continue;
      }
      this.#start();
      this.#add(peer, { tag, key, ref, meta, peerId, untilMs: 0, timer: undefined });
    }
  }

  /** A reload: the moves of the batches it skipped, read from the owners in the table. */
  #reloaded(snapshot: PresenceSnapshot): void {
    const node = this.#nodeId;
    this.#batches.covered(snapshot.version);
    for (const entry of snapshot.entries) {
      const held = this.#byRef.get(entry.ref);
      if (entry.node === node) {
        const own = this.#byPeer.get(entry.peer)?.get(entry.tag);
        if (held === undefined && own !== undefined && own.key === entry.key) {
          this.#moved({ ...entry });
        }
      } else if (held !== undefined && entry.node !== '') this.#forget(held);
    }
  }

  #push(op: PresenceOp): void {
    this.#batches.push(op);
  }

  /** Arms the next heartbeat, `nodeTimeoutMs / 5` after the last one ended. */
  #armBeat(): void {
    if (!this.#beats || this.#closed || this.#beatTimer !== undefined || this.#beating) return;
    this.#beatTimer = setTimeout(() => {
      this.#beatTimer = undefined;
      this.#beat();
    }, timerDelay(this.#options.nodeTimeoutMs / 5));
  }

  /** One heartbeat: alive now, dead after 3/5 of `nodeTimeoutMs`; this node's table on demand. */
  #beat(): void {
    this.#beating = true;
    const node = this.#nodeId;
    const deadAfterMs = Math.ceil(this.#options.nodeTimeoutMs * 3 / 5);
    if (this.#batches.dirty) void this.#batches.send(); // a failed batch is made good at the latest here
    this.ready()
      // A node closing while its beat is in flight puts nothing back: its close made its
      // presences orphans in grace.
      .then(() => this.#store.beat!(node, deadAfterMs, () => this.#closed ? [] : this.#own()))
      .catch((error) => this.#host.report(error))
      .finally(() => {
        this.#beating = false;
        this.#armBeat();
      });
  }

  /** This node's table as ops that put it back: each presence, and its grace. */
  #own(): PresenceOp[] {
    const ops: PresenceOp[] = [];
    for (const own of this.#byRef.values()) {
      const { tag, key, meta, peerId: peer, untilMs } = own;
      const ref = this.#batches.storeRef(own.ref);
      ops.push({ op: 'track', tag, key, ref, meta, peer });
      if (untilMs !== 0) ops.push({ op: 'grace', tag, ref, untilMs });
    }
    return ops;
  }

  #clearTimers(): void {
    this.#batches.stop();
    if (this.#beatTimer !== undefined) clearTimeout(this.#beatTimer);
    this.#beatTimer = undefined;
    for (const own of this.#byRef.values()) {
      if (own.timer !== undefined) clearTimeout(own.timer);
      own.timer = undefined;
    }
  }
}

/**
 * What an adapter whose peers outlive the process uses of the presence (a Durable Object, whose
 * peers are restored from their sockets when it wakes, with `durableObjectPresence()`).
 */
export interface HostedPresence {
  /** The store the presence runs on. */
  readonly store: PresenceStore;
  /**
   * From now on a closed peer's presences go into grace with no timer: the store ends the grace
   * (the object's alarm), so nothing keeps the process awake meanwhile.
   */
  graceInStore(): void;
  /** The tags `peer` follows, for the adapter to keep with the peer. */
  following(peer: Peer): string[];
  /**
   * After a restart with `peers` restored (each with the tags it followed): opens and loads the
   * store (whose first load gives the live peers their presences back), puts in grace from now
   * this node's presences whose peer is no longer here (the first time only), and lets each peer
   * follow its tags again with no new snapshot, as it holds the state already. Rejects when the
   * store cannot be opened or loaded.
   */
  resume(peers: ReadonlyMap<Peer, readonly string[]>): Promise<void>;
}

/** The {@linkcode HostedPresence} of an acceptor's `presence`. */
export function hostedPresence(presence: AcceptorPresence): HostedPresence | undefined {
  return presence instanceof Presence ? presence : undefined;
}
