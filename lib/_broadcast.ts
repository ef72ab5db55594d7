/**
 * The acceptor's broadcast (WSM-ACC-005, WSM-APP-005, SPEC §7): the tag index of its peers, one
 * PUBLISH encoded once and handed to every live target that is not left out, the delivered and
 * dropped counters, and the backplane bridge both ways (a local broadcast published to the other
 * nodes; another node's broadcast delivered to this node's peers). A {@linkcode Broadcaster}
 * reads the acceptor's peers as a set and reports through a small {@linkcode BroadcastHost}, so
 * it knows nothing of the `Acceptor`. Internal.
 *
 * @module
 */
import type { Codec } from './codec.ts';
import type { BroadcastAllOptions, Peer } from './acceptor_types.ts';
import { type Backplane, BackplaneError, type BackplaneMessage } from './backplane.ts';
import { encodePublish } from './_session.ts';
import { checkTag } from './_tags.ts';
import type { PeerImpl } from './_peer.ts';
import { type Recovery, SEQ } from './_recovery.ts';

/** An empty `except` list, shared. */
const NO_TAGS: string[] = [];

/**
 * The tag a backplane message of `Acceptor.broadcastAll` carries (docs/backplane.md): it reaches
 * every peer of the receiving node. At 257 characters it is longer than any tag, so no peer can
 * hold it, and a node that does not know it delivers such a message to nobody.
 */
const BROADCAST_ALL_TAG = /* @__PURE__ */ '*'.repeat(257);

/** What a broadcast needs of its acceptor. */
export interface BroadcastHost {
  /** The codec every peer of the acceptor speaks. */
  readonly codec: Codec;
  /** Contains an error: to `onError` with the peer, else `console.error`. */
  report(error: unknown, peer?: Peer): void;
}

/** One acceptor's tag index, broadcasts and backplane bridge. */
export class Broadcaster {
  readonly #host: BroadcastHost;
  readonly #peers: ReadonlySet<PeerImpl>;
  readonly #backplane: Backplane | undefined;
  readonly #nodeId: string;
  /** Sequence numbers, positions and replays: only with a `history` store. */
  readonly #recovery: Recovery | undefined;
  readonly #byTag = new Map<string, Set<PeerImpl>>();
  #unsubscribe: (() => void) | undefined;
  #delivered = 0;
  #dropped = 0;

  /**
   * Subscribes to `backplane`, when there is one, to deliver the other nodes' broadcasts.
   *
   * @param host The acceptor's codec and error report.
   * @param peers The acceptor's live peers, read as they change (`broadcastAll` reaches them).
   * @param backplane Where broadcasts go to and come from the other nodes, if anywhere.
   * @param nodeId This node's id in backplane messages (its own come back and are skipped).
   * @param recovery The acceptor's recovery, when it has a `history` store.
   */
  constructor(
    host: BroadcastHost,
    peers: ReadonlySet<PeerImpl>,
    backplane: Backplane | undefined,
    nodeId: string,
    recovery?: Recovery,
  ) {
    this.#host = host;
    this.#recovery = recovery;
    this.#peers = peers;
    this.#backplane = backplane;
    this.#nodeId = nodeId;
    this.#unsubscribe = backplane?.subscribe((message) => this.#fromBackplane(message));
  }

  /** Broadcasts handed to a peer's socket. */
  get delivered(): number {
    return this.#delivered;
  }

  /** Broadcasts skipped because the peer's socket was over `highWaterMark`. */
  get dropped(): number {
    return this.#dropped;
  }

  /** The live peers holding `tag`, if any; the set itself, not a copy. */
  tagged(tag: string): ReadonlySet<PeerImpl> | undefined {
    return this.#byTag.get(tag);
  }

  /** `tag` was added to `peer` (or `peer` joined holding it). */
  index(peer: PeerImpl, tag: string): void {
    let set = this.#byTag.get(tag);
    if (!set) this.#byTag.set(tag, set = new Set());
    set.add(peer);
  }

  /** `tag` was deleted from `peer` (or `peer` ended holding it). */
  unindex(peer: PeerImpl, tag: string): void {
    const set = this.#byTag.get(tag);
    if (!set) return;
    set.delete(peer);
    if (set.size === 0) this.#byTag.delete(tag);
  }

  /** Ends the backplane subscription: other nodes' broadcasts no longer arrive here. */
  unsubscribe(): void {
    this.#unsubscribe?.();
    this.#unsubscribe = undefined;
  }

  /**
   * A broadcast to `tag`'s peers, or to every peer when `tag` is undefined (`broadcastAll`),
   * then to the other nodes. `tag` is already checked; `options.tag` and `except` are checked
   * here.
   *
   * With recovery, a broadcast to a tag is appended to its log first and sent with its sequence
   * number once the store answered (a promise then; a store failure rejects it, and nothing is
   * sent).
   *
   * @returns How many local peers it was handed to.
   * @throws {TypeError} For an invalid `options.tag` or `except` tag, or an `except` entry that
   * is neither a tag nor a peer. An encode failure throws too, and nothing is sent anywhere.
   */
  broadcast(
    tag: string | undefined,
    payload: unknown,
    options: BroadcastAllOptions,
  ): number | Promise<number> {
    const what = 'Cannot broadcast';
    const shown = tag ?? checkTag(what, options.tag ?? '*');
    let except: string[] = NO_TAGS;
    let exceptPeers: Set<Peer> | undefined;
    for (const entry of options.except ?? []) {
      if (typeof entry === 'object' && entry !== null && this.#peers.has(entry as PeerImpl)) {
        (exceptPeers ??= new Set()).add(entry);
      } else if (typeof entry === 'object' && entry !== null && 'tags' in entry) {
        // a peer of another acceptor, or one that ended: nobody here to leave out
      } else {
        if (except === NO_TAGS) except = [];
        except.push(checkTag(what, entry));
      }
    }
    const recovery = this.#recovery;
    if (recovery !== undefined && tag !== undefined) {
      const headers = options.headers ?? null;
      const frame = encodePublish(this.#host.codec, tag, payload, headers, 'broadcast()');
      return recovery.broadcast(tag, frame, payload, headers, (encoded, seq, wire) => {
        const count = this.#deliver(this.#byTag.get(tag), encoded, except, exceptPeers, tag, seq);
        if (this.#backplane) {
          this.#publish({
            tag,
            headers: wire,
            payload: encoded,
            except,
            origin: this.#nodeId,
            codec: this.#host.codec.name,
          });
        }
        return count;
      });
    }
    const targets = tag === undefined ? this.#peers : this.#byTag.get(tag);
    // Other nodes may hold the tag, so only a node without a backplane may skip encoding.
    if (!this.#backplane && (!targets || targets.size === 0)) return 0;
    const headers = options.headers ?? null;
    const codec = this.#host.codec;
    // An encode failure throws here: broadcast() rejects and nothing is sent anywhere.
    const encoded = encodePublish(codec, shown, payload, headers, 'broadcast()');
    const count = this.#deliver(targets, encoded, except, exceptPeers);
    if (this.#backplane) {
      this.#publish({
        tag: tag ?? BROADCAST_ALL_TAG,
        headers,
        payload: encoded,
        except,
        origin: this.#nodeId,
        codec: codec.name,
      });
    }
    return count;
  }

  /** WSM-BP-004: a backplane failure is reported, never thrown into broadcast(). */
  #publish(message: BackplaneMessage): void {
    try {
      const result = this.#backplane!.publish(message);
      if (result !== undefined && typeof (result as Promise<void>).then === 'function') {
        (result as Promise<void>).then(undefined, (error) => this.#host.report(error));
      }
    } catch (error) {
      this.#host.report(error);
    }
  }

  /** A broadcast of another node: the same bytes to this node's tagged peers. */
  #fromBackplane(message: BackplaneMessage): void {
    if (message.origin === this.#nodeId) return;
    const codec = this.#host.codec;
    if (message.codec !== codec.name) {
      this.#host.report(
        new BackplaneError(
          `Cannot deliver a broadcast of node "${message.origin}" to tag "${message.tag}" as it is encoded with codec "${message.codec}": this acceptor uses "${codec.name}"`,
        ),
      );
      return;
    }
    if (message.tag === BROADCAST_ALL_TAG) {
      this.#deliver(this.#peers, message.payload, message.except ?? NO_TAGS, undefined);
      return;
    }
    const seq = message.headers?.[SEQ];
    this.#deliver(
      this.#byTag.get(message.tag),
      message.payload,
      message.except ?? NO_TAGS,
      undefined,
      message.tag,
      typeof seq === 'number' ? seq : undefined,
    );
  }

  /**
   * Hands one encoded PUBLISH to every live peer of `targets` that is not in `exceptPeers` and
   * holds no `except` tag. A peer whose `tag` waits for its position or replay (recovery) holds
   * it to send after, in order.
   */
  #deliver(
    targets: ReadonlySet<PeerImpl> | undefined,
    encoded: string | Uint8Array,
    except: readonly string[],
    exceptPeers: ReadonlySet<Peer> | undefined,
    tag?: string,
    seq?: number,
  ): number {
    if (!targets || targets.size === 0) return 0;
    const recovery = tag === undefined ? undefined : this.#recovery;
    let count = 0;
    for (const peer of [...targets]) {
      if (peer.isClosed || exceptPeers?.has(peer)) continue;
      if (except.length > 0 && except.some((t) => peer.tags.has(t))) continue;
      if (recovery !== undefined && recovery.hold(peer, tag!, encoded, seq)) {
        count++;
        this.#delivered++;
        continue;
      }
      let sent = false;
      try {
        sent = peer.session.sendEncoded(encoded);
      } catch (error) {
        this.#host.report(error, peer);
        continue;
      }
      if (sent) {
        count++;
        this.#delivered++;
      } else {
        this.#dropped++;
      }
    }
    return count;
  }
}
