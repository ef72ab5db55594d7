/**
 * The acceptor's broadcast (SPEC §7): the tag index of its peers, one PUBLISH encoded once and
 * handed to every live target that is not left out, the delivered and dropped counters, and the
 * backplane bridge both ways (a local broadcast published to the other nodes; another node's
 * broadcast delivered to this node's peers). A {@linkcode Broadcaster} reads the acceptor's peers
 * as a set and reports through a small {@linkcode BroadcastHost}, so it knows nothing of the
 * `Acceptor`. Internal.
 *
 * Delivery takes the runtime's native path where one exists (`lib/acceptor/_topics.ts`): a peer whose
 * sink offers topics (Bun) is subscribed to one topic per tag it holds, kept in step as tags are
 * added and deleted and as it ends, and a broadcast to a tag is one `publish` per server. A tag's
 * topic comes into use at its first broadcast, which subscribes its peers then, so a tag nothing
 * is broadcast to costs no subscription (a subscribed socket holds a few hundred bytes more). The
 * send loop (`#deliver`) takes every other case: `except` (tags or peers), `broadcastAll`, a peer
 * without topics or held off them ({@linkcode Broadcaster.hold}), and a broadcast that finds
 * any of its native peers over `highWaterMark`: a publish cannot leave one socket out, so the
 * whole broadcast then goes through the loop, which skips that peer and counts it dropped.
 *
 * @module
 */
import type { Codec } from '../wire/codec.ts';
import type { BroadcastAllOptions, Peer } from './acceptor_types.ts';
import { type Backplane, BackplaneError, type BackplaneMessage } from '../broadcast/backplane.ts';
import { encodePublish } from '../wire/publish.ts';
import { checkTag } from './_tags.ts';
import type { PeerImpl } from './_peer.ts';
import type { Recovery } from './_recovery.ts';
import { EVENT, SEQ } from '../wire/reserved.ts';
import { topicPrefix, type TopicPublisher, type TopicSink } from './_topics.ts';
import { type TextBytes, textBytes } from '../sockets/node_ws.ts';

/** An empty `except` list, shared. */
const NO_TAGS: string[] = [];

/**
 * The tag a backplane message of `Acceptor.broadcastAll` carries (docs/backplane.md): it reaches
 * every peer of the receiving node. At 257 characters it is longer than any tag, so no peer can
 * hold it, and a node that does not know it delivers such a message to nobody.
 */
const BROADCAST_ALL_TAG = /* @__PURE__ */ '*'.repeat(257);

/**
 * One broadcast as its per-peer step ({@linkcode Broadcaster}'s `#deliverTo`) reads it: made once
 * per broadcast and handed to every target, so the send loop allocates nothing per peer.
 */
interface Delivery {
  /** The PUBLISH frame, encoded once. */
  readonly encoded: string | Uint8Array;
  /** The tags whose holders are left out (`NO_TAGS` for none). */
  readonly except: readonly string[];
  /** The peers left out, if any. */
  readonly exceptPeers: ReadonlySet<Peer> | undefined;
  /** The tag broadcast to; undefined for `broadcastAll`, which recovery never holds. */
  readonly tag: string | undefined;
  /** The broadcast's sequence number, with recovery. */
  readonly seq: number | undefined;
  /** A text frame as UTF-8 bytes for `ws` sockets (Node), encoded at the first that takes them. */
  bytes: TextBytes | undefined;
}

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
  /** The start of this acceptor's topic names (`lib/acceptor/_topics.ts`). */
  #prefix: string | undefined;
  /** A peer with topics was indexed: broadcasts to a tag try the native path. */
  #topics = false;
  /** Peers held off the native path: off their topics, reached by the send loop. */
  readonly #held = new Set<PeerImpl>();
  /** The tags whose topic is in use: broadcast to natively since a peer last held them. */
  readonly #live = new Set<string>();

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
    // A peer recovery holds (its position or replay comes first) leaves the native path.
    recovery?.onHold(
      (peer) => this.hold(peer as PeerImpl),
      (peer) => this.release(peer as PeerImpl),
    );
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

  /** `tag` was added to `peer` (or `peer` joined holding it): it joins the tag's topic too. */
  index(peer: PeerImpl, tag: string): void {
    let set = this.#byTag.get(tag);
    if (!set) this.#byTag.set(tag, set = new Set());
    set.add(peer);
    const topics = this.#native(peer);
    if (topics !== undefined) {
      this.#topics = true;
      this.#join(peer, topics, tag, true);
    }
  }

  /** `tag` was deleted from `peer` (or `peer` ended holding it): it leaves the tag's topic. */
  unindex(peer: PeerImpl, tag: string): void {
    const set = this.#byTag.get(tag);
    if (!set) return;
    set.delete(peer);
    const topics = this.#native(peer);
    if (topics !== undefined) this.#join(peer, topics, tag, false);
    if (set.size > 0) return;
    this.#byTag.delete(tag);
    this.#live.delete(tag);
  }

  /**
   * Holds `peer` off the native path: it leaves its tags' topics and every broadcast reaches it
   * through the send loop, until {@linkcode Broadcaster.release}. For a peer whose live
   * broadcasts must wait (a replay of what it missed).
   */
  hold(peer: PeerImpl): void {
    if (peer.isClosed) return;
    const topics = this.#native(peer);
    this.#held.add(peer);
    if (topics === undefined) return;
    for (const tag of peer.tags) this.#join(peer, topics, tag, false);
  }

  /** `count` frames counted as delivered were not sent after all (`lib/acceptor/_peer.ts`). */
  discarded(count: number): void {
    this.#delivered -= count;
    this.#dropped += count;
  }

  /** `peer` was accepted: it joins its tags' topics, unless it is held. */
  admitted(peer: PeerImpl): void {
    const topics = this.#native(peer);
    if (topics === undefined || peer.isClosed) return;
    for (const tag of peer.tags) this.#join(peer, topics, tag, true);
  }

  /** Ends {@linkcode Broadcaster.hold}, and is called as `peer` ends: it rejoins its tags' topics. */
  release(peer: PeerImpl): void {
    if (!this.#held.delete(peer)) return;
    const topics = this.#native(peer);
    if (topics !== undefined && !peer.isClosed) {
      for (const tag of peer.tags) this.#join(peer, topics, tag, true);
    }
  }

  /**
   * The one predicate of the native path: `peer`'s topics when it may take it (its sink has
   * topics, it is accepted and it is not held), else `undefined`. A peer not yet accepted is on
   * no topic: what is sent to it waits in its session or skips it (`lib/acceptor/_peer.ts`).
   */
  #native(peer: PeerImpl): TopicSink | undefined {
    if (peer.admission.state !== 'open') return undefined;
    if (this.#held.size > 0 && this.#held.has(peer)) return undefined;
    const topics = peer.sink.topics;
    return topics?.publisher === undefined ? undefined : topics;
  }

  /**
   * The topic of `tag`. The acceptor's random part is drawn at first use, not at construction:
   * a Worker may build an acceptor at module load, where drawing random values is refused.
   */
  #topic(tag: string): string {
    return (this.#prefix ??= topicPrefix()) + tag;
  }

  /**
   * Subscribes `peer` to `tag`'s topic, or unsubscribes it, when the topic is in use; a failure is
   * reported.
   */
  #join(peer: PeerImpl, topics: TopicSink, tag: string, join: boolean): void {
    if (!this.#live.has(tag)) return;
    try {
      if (join) topics.subscribe(this.#topic(tag));
      else topics.unsubscribe(this.#topic(tag));
    } catch (error) {
      this.#host.report(error, peer);
    }
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
   * An event (`Acceptor.emit`) is a broadcast whose frame carries its name in `:event`: it is
   * logged, replayed, carried by the backplane and published natively as any other.
   *
   * @param event The event's name, already checked; undefined for a plain broadcast.
   * @returns How many local peers it was handed to.
   * @throws {TypeError} For an invalid `options.tag` or `except` tag, or an `except` entry that
   * is neither a tag nor a peer. An encode failure throws too, and nothing is sent anywhere.
   */
  broadcast(
    tag: string | undefined,
    payload: unknown,
    options: BroadcastAllOptions,
    event?: string,
  ): number | Promise<number> {
    const what = event === undefined ? 'Cannot broadcast' : 'Cannot emit';
    const operation = event === undefined ? 'broadcast()' : 'emit()';
    const shown = tag ?? checkTag(what, options.tag ?? '*');
    let except: string[] = NO_TAGS;
    let exceptPeers: Set<Peer> | undefined;
    let gone: Peer[] | undefined;
    for (const entry of options.except ?? []) {
      if (typeof entry === 'object' && entry !== null && this.#peers.has(entry as PeerImpl)) {
        (exceptPeers ??= new Set()).add(entry);
      } else if (typeof entry === 'object' && entry !== null && 'tags' in entry) {
        // a peer of another acceptor, or one that ended: nobody here to leave out, but recovery
        // logs the dialer of one that ended, so its redial is not replayed this broadcast
        if (this.#recovery !== undefined) (gone ??= []).push(entry as Peer);
      } else {
        if (except === NO_TAGS) except = [];
        except.push(checkTag(what, entry));
      }
    }
    const recovery = this.#recovery;
    if (recovery !== undefined && tag !== undefined) {
      const own = options.headers ?? null;
      const frame = encodePublish(this.#host.codec, tag, payload, own, operation, event);
      // What the log keeps and each replay sends: the event's name too.
      const headers = event === undefined ? own : { ...own, [EVENT]: event };
      const left = { tags: except, peers: exceptPeers, gone };
      return recovery.broadcast(tag, frame, payload, headers, left, (encoded, seq, wire) => {
        const targets = this.#byTag.get(tag);
        const delivery: Delivery = { encoded, except, exceptPeers, tag, seq, bytes: undefined };
        const count = except === NO_TAGS && exceptPeers === undefined
          ? this.#deliverToTag(targets, delivery)
          : this.#deliver(targets, delivery);
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
    const encoded = encodePublish(codec, shown, payload, headers, operation, event);
    const delivery: Delivery = {
      encoded,
      except,
      exceptPeers,
      tag,
      seq: undefined,
      bytes: undefined,
    };
    const count = tag !== undefined && except === NO_TAGS && exceptPeers === undefined
      ? this.#deliverToTag(targets, delivery)
      : this.#deliver(targets, delivery);
    if (this.#backplane) {
      this.#publish({
        tag: tag ?? BROADCAST_ALL_TAG,
        headers: event === undefined ? headers : { ...headers, [EVENT]: event },
        payload: encoded,
        except,
        origin: this.#nodeId,
        codec: codec.name,
      });
    }
    return count;
  }

  /** A backplane failure is reported, never thrown into broadcast(). */
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
    const all = message.tag === BROADCAST_ALL_TAG;
    const header = message.headers?.[SEQ];
    const delivery: Delivery = {
      encoded: message.payload,
      except: message.except ?? NO_TAGS,
      exceptPeers: undefined,
      tag: all ? undefined : message.tag,
      seq: !all && typeof header === 'number' ? header : undefined,
      bytes: undefined,
    };
    if (all) this.#deliver(this.#peers, delivery);
    else if (delivery.except.length > 0) this.#deliver(this.#byTag.get(message.tag), delivery);
    else this.#deliverToTag(this.#byTag.get(message.tag), delivery);
  }

  /**
   * Hands `delivery` to every live peer of `targets`, the peers of its tag, which it leaves none
   * of out: one publish to the tag's topic on each server for the peers that may take the native
   * path, the send loop for the others; the send loop for all when any native peer is over
   * `highWaterMark`. A peer that recovery holds is off the native path (see the constructor), so
   * the loop holds its frame.
   */
  #deliverToTag(targets: ReadonlySet<PeerImpl> | undefined, delivery: Delivery): number {
    if (!this.#topics || !targets || targets.size === 0) return this.#deliver(targets, delivery);
    const tag = delivery.tag!;
    let native = 0;
    let rest: PeerImpl[] | undefined;
    let first: TopicPublisher | undefined;
    let others: Set<TopicPublisher> | undefined;
    for (const peer of targets) {
      if (peer.isClosed) continue;
      const publisher = this.#native(peer)?.publisher;
      if (publisher === undefined || peer.session.isClosed) {
        (rest ??= []).push(peer);
        continue;
      }
      if (peer.session.congested()) return this.#deliver(targets, delivery);
      if (first === undefined) first = publisher;
      else if (publisher !== first) (others ??= new Set()).add(publisher);
      native++;
    }
    if (first !== undefined) {
      if (!this.#live.has(tag)) this.#goLive(tag, targets);
      const topic = this.#topic(tag);
      try {
        first.publish(topic, delivery.encoded);
        if (others !== undefined) {
          for (const publisher of others) publisher.publish(topic, delivery.encoded);
        }
        this.#delivered += native;
      } catch (error) {
        this.#host.report(error);
        this.#dropped += native;
        native = 0;
      }
    }
    return rest === undefined ? native : native + this.#deliver(rest, delivery);
  }

  /** Puts `tag`'s topic in use: subscribes its peers that may take the native path. */
  #goLive(tag: string, targets: ReadonlySet<PeerImpl>): void {
    this.#live.add(tag);
    for (const peer of targets) {
      const topics = this.#native(peer);
      if (topics !== undefined && !peer.isClosed) this.#join(peer, topics, tag, true);
    }
  }

  /** Hands `delivery` to every peer of `targets` ({@linkcode Broadcaster}'s `#deliverTo`). */
  #deliver(
    targets: ReadonlySet<PeerImpl> | readonly PeerImpl[] | undefined,
    delivery: Delivery,
  ): number {
    if (!targets || ('size' in targets ? targets.size : targets.length) === 0) return 0;
    let count = 0;
    for (const peer of [...targets]) {
      if (this.#deliverTo(peer, delivery)) count++;
    }
    return count;
  }

  /**
   * The per-peer step: hands `delivery` to `peer` unless it is closed, barred or left out (in
   * `exceptPeers`, or holding an `except` tag). A peer whose tag waits for its position or replay
   * (recovery) holds the frame to send after, in order. A text frame goes to a `ws` socket (Node)
   * as its UTF-8 bytes, encoded once per broadcast rather than by `ws` once per peer.
   *
   * @returns True when the frame was handed to the peer (sent, or held by recovery).
   */
  #deliverTo(peer: PeerImpl, delivery: Delivery): boolean {
    // A peer whose required hello has not arrived, or was refused, is sent nothing.
    if (peer.isClosed || peer.admission.barred || delivery.exceptPeers?.has(peer)) return false;
    const { encoded, except, tag } = delivery;
    for (let i = 0; i < except.length; i++) {
      if (peer.tags.has(except[i])) return false;
    }
    if (
      tag !== undefined && this.#recovery !== undefined &&
      this.#recovery.hold(peer, tag, encoded, delivery.seq)
    ) {
      this.#delivered++;
      return true;
    }
    let sent: boolean;
    try {
      const data = typeof encoded === 'string' && peer.sink.isWs
        ? delivery.bytes ??= textBytes(encoded)
        : encoded;
      sent = peer.admission.sendPublish(data, true);
    } catch (error) {
      this.#host.report(error, peer);
      return false;
    }
    if (sent) this.#delivered++;
    else this.#dropped++;
    return sent;
  }
}
