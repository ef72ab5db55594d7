/**
 * Presence, imported by name: {@linkcode presence} follows who is present in a tag the
 * connection holds. It opens a follow stream (reserved OPEN header `:presence`, payload `true`)
 * on every establishment, takes the acceptor's `:presence` PUBLISH frames (a snapshot, then
 * diffs) before anything else reads them, and keeps the state with the one diff rule of
 * `lib/wire/presence.ts`. It reaches the connection through the hook of
 * `lib/dialer/_extensions.ts`, so a bundle that never calls it carries none of it.
 *
 * @module
 */
import { Ready } from './_ready.ts';
import type {
  Connection,
  PresenceFollower,
  PresenceFollowOptions,
  PresenceState,
} from './dialer_types.ts';
import type { PresenceMetaOf } from '../routes/api.ts';
import type { PublishMessage, Stream } from '../session/stream.ts';
import { type ExtensionHost, hostOf } from './_extensions.ts';
import { closedNow } from './_dial_requests.ts';
import { ClosedError, ProtocolError, StreamResetError } from '../errors.ts';
import { MUXWS, PRESENCE } from '../wire/reserved.ts';
import { isTag } from '../wire/frame.ts';
import {
  applyPresenceDiff,
  isPresenceDiff,
  isPresenceSync,
  type PresenceChanges,
  presenceDiff,
  type PresenceEntries,
  type PresenceSyncPayload,
} from '../wire/presence.ts';
import { callContained } from '../util/contain.ts';
import { describe, mustBe } from '../util/describe.ts';

const WHAT = 'follow presence';
const EMPTY: PresenceState<never> = Object.freeze({});

/** Per connection (its extension host), the tags it follows. */
const REGISTRIES = /* @__PURE__ */ new WeakMap<ExtensionHost, Map<string, Followed>>();

/**
 * Follows the presence of `tag` on `connection`: who is present in it across every node of the
 * acceptor, as a state kept up to date by a snapshot and then diffs. The follow is sent now when
 * the connection is open, otherwise at the next establishment, and again on every new connection
 * (before `onOpen`), until `stop()`, the signal, a refusal or the connection's close for good.
 *
 * The first snapshot calls only `onSync`. After a redial the acceptor sends a fresh snapshot: the
 * follower calls `onLeave` and `onJoin` for what changed against the state it held (a presence it
 * already holds never joins twice), then `onSync`. Each diff calls `onLeave` for every key that
 * lost presences, then `onJoin` for every key that gained some (a changed meta is a leave and a
 * join). When the acceptor stops the follow because the connection lost the tag, `synced` turns
 * false and the state is kept; the follow is sent again on the next connection, which the
 * acceptor refuses unless that connection holds the tag. A malformed presence frame is dropped
 * and reported to `onError`. Several followers of one tag on one connection share one follow.
 *
 * @example Follow a room's presence (a stand-in acceptor sends the frames)
 * ```ts
 * import { connect, presence } from '@muxws/core';
 * import assert from 'node:assert/strict';
 *
 * // The frames an acceptor sends a follower: a snapshot, then the follow's END, then diffs.
 * const server = Deno.serve({ port: 0, hostname: '127.0.0.1', onListen() {} }, (request) => {
 *   const { socket, response } = Deno.upgradeWebSocket(request, { protocol: 'muxws.v1.json' });
 *   socket.onmessage = ({ data }) => {
 *     const [kind, id, , headers] = JSON.parse(data);
 *     const tag = headers?.[':presence'];
 *     if (kind !== 1 || tag === undefined) return;
 *     socket.send(JSON.stringify([9, tag, { ':presence': 'sync' }, { ada: { r1: { tab: 1 } } }]));
 *     socket.send(JSON.stringify([3, id]));
 *     const joins = { bob: { r2: { tab: 1 } } };
 *     socket.send(JSON.stringify([9, tag, { ':presence': 'diff' }, { leaves: {}, joins }]));
 *   };
 *   return response;
 * });
 * type Api = { ':presence': { tab: number } };
 * await using connection = await connect<Api>(`ws://127.0.0.1:${server.addr.port}/`);
 * const joined = Promise.withResolvers<string>();
 * const room = presence(connection, 'room:1', {
 *   onJoin: (key, metas) => joined.resolve(`${key} tab ${metas[0].tab}`),
 * });
 * await room.ready;
 * assert.equal(await joined.promise, 'bob tab 1');
 * assert.deepEqual(room.state, { ada: [{ tab: 1 }], bob: [{ tab: 1 }] });
 * room.stop();
 * await connection.close();
 * await server.shutdown();
 * ```
 *
 * @param connection A connection `connect()` made; `connect<Api>()` types the metas as
 * `Api[':presence']`.
 * @param tag The tag to follow: a string of 1 to 256 characters the connection holds.
 * @param options The callbacks and the signal of {@linkcode PresenceFollowOptions}.
 * @returns The follower.
 * @throws {TypeError} When `connection` is not a connection, `tag` is not a tag or an option
 * has the wrong type.
 * @throws {ClosedError} When the connection is closed.
 */
export function presence<Api, Meta = PresenceMetaOf<Api>>(
  connection: Connection<Api>,
  tag: string,
  options: PresenceFollowOptions<NoInfer<Meta>>,
): PresenceFollower<Meta> {
  const host = hostOf(connection, WHAT);
  if (!isTag(tag)) throw new TypeError(mustBe(WHAT, 'tag', 'a string of 1 to 256 characters', tag));
  if (options === null || typeof options !== 'object') {
    throw new TypeError(mustBe(WHAT, 'options', 'an object', options));
  }
  for (const name of ['onSync', 'onJoin', 'onLeave', 'onRefused'] as const) {
    const fn = options[name];
    if (fn !== undefined && typeof fn !== 'function') {
      throw new TypeError(mustBe(WHAT, name, 'a function', fn));
    }
  }
  if (connection.state === 'closed') throw closedNow(WHAT);
  if (options.signal?.aborted) throw options.signal.reason;
  const tags = registryOf(host);
  let followed = tags.get(tag);
  if (followed === undefined) {
    tags.set(tag, followed = new Followed(host, tags, tag));
    followed.follow();
  }
  return followed.add(connection, options as PresenceFollowOptions) as PresenceFollower<Meta>;
}

/** The tags `host`'s connection follows; the first call hooks them to its life. */
function registryOf(host: ExtensionHost): Map<string, Followed> {
  let tags = REGISTRIES.get(host);
  if (tags === undefined) {
    const made = tags = new Map();
    REGISTRIES.set(host, made);
    host.extend({
      established: () => {
        for (const followed of [...made.values()]) followed.follow();
      },
      // Every presence frame is taken here, followed or not: none may reach onPublish.
      arrived: (message) => {
        const kind = message.headers?.[PRESENCE];
        if (kind === undefined) return false;
        made.get(message.tag)?.receive(kind, message);
        return true;
      },
      closed: () => {
        REGISTRIES.delete(host);
        for (const followed of [...made.values()]) {
          followed.end(new ClosedError(`${STOPPED}: the connection closed`));
        }
      },
    });
  }
  return tags;
}

const STOPPED = 'The presence follower stopped before its first snapshot';

/** One tag as one connection follows it: the state its followers share, and its follow. */
class Followed {
  readonly tag: string;
  readonly #host: ExtensionHost;
  readonly #tags: Map<string, Followed>;
  readonly followers = new Set<Follower>();
  /** key → ref → meta. */
  readonly entries: PresenceEntries = new Map();
  /** The state as followers see it; made on first read after a change. */
  #view: PresenceState | undefined;
  /** A snapshot came: the next one is reconciled with diffs. */
  #had = false;
  /** A snapshot came on the current follow and the acceptor still sends its changes. */
  synced = false;
  /** The follow stream opened last; a later one, or none, makes its outcome stale. */
  #stream: Stream | undefined;

  constructor(host: ExtensionHost, tags: Map<string, Followed>, tag: string) {
    this.#host = host;
    this.#tags = tags;
    this.tag = tag;
  }

  /** Where the followers' callback errors go: the connection's `onError`. */
  get report(): (error: unknown) => unknown {
    return this.#host.report;
  }

  get view(): PresenceState {
    return this.#view ??= Object.freeze(Object.fromEntries(
      [...this.entries].map(([key, refs]) => [key, Object.freeze([...refs.values()])]),
    ));
  }

  add(connection: Stated, options: PresenceFollowOptions): Follower {
    const follower = new Follower(this, connection, options);
    this.followers.add(follower);
    // A tag synced on the open connection gives a new follower its first snapshot from the
    // state held; while the connection redials, the next snapshot is its first.
    const live = () => this.synced && connection.state === 'open';
    if (live()) queueMicrotask(() => live() && follower.sync(this.view, true));
    return follower;
  }

  /** Sends the follow on the established connection; nothing while there is none. */
  follow(): void {
    this.synced = false;
    const stream = this.#stream = this.#open(true);
    stream?.closed.catch((error) => {
      // A loss with the connection is re-followed at the next establishment.
      if (this.#stream !== stream || !(error instanceof StreamResetError) || !error.remote) return;
      // Only a refusal ends the follow; another reset (the acceptor's store failed) is reported,
      // and the tag is followed again at the next establishment.
      if (error.code === 'refused') this.end(error, true);
      else {
        this.#stream = undefined;
        this.#host.report(error);
      }
    });
  }

  /** Opens the follow (`true`) or the unfollow (`false`); undefined while not established. */
  #open(payload: boolean): Stream | undefined {
    try {
      return this.#host.open(payload, {
        end: true,
        [MUXWS]: { headers: { [PRESENCE]: this.tag }, operation: WHAT },
      });
    } catch (error) {
      this.#host.report(error);
      return undefined;
    }
  }

  /** A `:presence` PUBLISH of this tag: a snapshot, a diff or the end of the follow. */
  receive(kind: unknown, message: PublishMessage): void {
    const payload = message.payload;
    if (kind === 'sync' && isPresenceSync(payload)) this.#sync(payload);
    else if (kind === 'diff' && isPresenceDiff(payload)) {
      // A diff before the snapshot of the current follow is stale: the snapshot holds it.
      if (this.synced) this.#changed(applyPresenceDiff(this.entries, payload));
    } else if (kind === 'end' && payload === null) {
      this.synced = false;
      this.#stream = undefined;
    } else {
      this.#host.report(
        new ProtocolError(
          `Dropped a presence frame of "${this.tag}" as it is no "sync", "diff" or "end" of the right shape: found ${
            describe(kind)
          } with ${describe(payload)}`,
        ),
      );
    }
  }

  #sync(snapshot: PresenceSyncPayload): void {
    let changes: PresenceChanges | undefined;
    if (this.#had) changes = applyPresenceDiff(this.entries, presenceDiff(this.entries, snapshot));
    else {
      for (const key in snapshot) {
        const refs = new Map(Object.entries(snapshot[key]));
        if (refs.size > 0) this.entries.set(key, refs);
      }
    }
    this.#had = this.synced = true;
    this.#view = undefined;
    if (changes) this.#changed(changes);
    const view = this.view;
    for (const follower of [...this.followers]) follower.sync(view);
  }

  #changed(changes: PresenceChanges): void {
    this.#view = undefined;
    const current = (key: string) => [...this.entries.get(key)?.values() ?? []];
    for (const follower of [...this.followers]) {
      for (const [key, left] of changes.left) follower.changed('onLeave', key, left, current(key));
      for (const [key, joined] of changes.joined) {
        follower.changed('onJoin', key, joined, current(key));
      }
    }
  }

  /** `follower` stopped: the last one forgets the tag and, with `unfollow`, tells the acceptor. */
  remove(follower: Follower, unfollow: boolean): void {
    this.followers.delete(follower);
    if (this.followers.size > 0 || this.#tags.get(this.tag) !== this) return;
    this.#tags.delete(this.tag);
    const following = this.#stream !== undefined;
    this.#stream = undefined;
    this.synced = false;
    if (unfollow && following) this.#open(false);
  }

  /** Every follower ends with `error`: a refusal (told to `onRefused`) or the close for good. */
  end(error: Error, refused = false): void {
    for (const follower of [...this.followers]) follower.end(error, refused);
  }
}

/** What a follower reads of its connection. */
interface Stated {
  readonly state: string;
}

/** One follower of a {@linkcode Followed} tag. */
class Follower implements PresenceFollower {
  readonly tag: string;
  readonly ready: Promise<void>;
  #followed: Followed | undefined;
  /** Its first snapshot came: changes are told to it from then on. */
  #seen = false;
  readonly #connection: Stated;
  readonly #options: PresenceFollowOptions;
  readonly #report: (error: unknown) => unknown;
  /** `ready`, and the abort signal's listener. */
  readonly #ready: Ready;

  constructor(followed: Followed, connection: Stated, options: PresenceFollowOptions) {
    this.tag = followed.tag;
    this.#followed = followed;
    this.#connection = connection;
    this.#options = options;
    this.#report = followed.report;
    this.#ready = new Ready(options.signal, () => this.stop());
    this.ready = this.#ready.promise;
  }

  get state(): PresenceState {
    return this.#followed?.view ?? EMPTY;
  }

  get synced(): boolean {
    return this.#seen && this.#followed?.synced === true && this.#connection.state === 'open';
  }

  /** A snapshot: its whole state; with `first`, only as the follower's first. */
  sync(view: PresenceState, first?: boolean): void {
    if (this.#followed === undefined || (first && this.#seen)) return;
    this.#seen = true;
    this.#ready.settle();
    callContained(this.#report, this.#options.onSync, view);
  }

  /** Presences of `key` left or joined; told only after the follower's first snapshot. */
  changed(
    name: 'onLeave' | 'onJoin',
    key: string,
    metas: unknown[],
    current: unknown[],
  ): void {
    const fn = this.#options[name];
    if (this.#followed === undefined || !this.#seen || fn === undefined) return;
    callContained(this.#report, () => fn(key, metas, current), undefined);
  }

  stop(): void {
    this.#stop(true, new ClosedError(`${STOPPED}: stop() was called`));
  }

  /** Ends the follower with `error`; a refusal is told to `onRefused` too. */
  end(error: Error, refused: boolean): void {
    this.#stop(false, error);
    if (refused) callContained(this.#report, this.#options.onRefused, error as StreamResetError);
  }

  #stop(unfollow: boolean, error: Error): void {
    const followed = this.#followed;
    if (followed === undefined) return;
    this.#followed = undefined;
    this.#ready.detach();
    followed.remove(this, unfollow);
    this.#ready.settle(error);
  }
}
