/**
 * The adapter kit: what an adapter (`lib/adapters/`) may use of the acceptor beyond its public
 * API, and nothing else of the acceptor's private files.
 *
 * - The acceptor's own decision and message limit, for an adapter that decides upgrades over its
 *   runtime's request head or hands the runtime a limit: {@linkcode upgradeCheckOf} and
 *   {@linkcode messageLimitOf} read what each `Acceptor` registers for its adapters (one entry
 *   per acceptor, under a symbol private to `_upgrade.ts`); {@linkcode UpgradeHead} and
 *   {@linkcode requestOf} are the head such an adapter builds.
 * - {@linkcode attachSink}: `attach()` returning the peer's link itself, for an adapter that keeps
 *   the handle per socket and calls its methods on it (no closures per peer).
 * - {@linkcode malformedUpgrade}: the 400 answer to an upgrade the runtime could not complete.
 * - The native delivery of broadcasts: a sink whose socket has publish/subscribe topics offers a
 *   {@linkcode TopicSink} under {@linkcode TOPIC_SINK}.
 * - {@linkcode hostedPresence}: the presence's hooks for an adapter whose peers outlive the
 *   process (graces ended by the store, follows kept with each peer, a resume after a wake).
 *
 * Internal: no entry point re-exports it. Tags are checked with `isTag()` from the wire.
 *
 * @module
 */
export {
  attachSink,
  malformedUpgrade,
  messageLimitOf,
  requestOf,
  upgradeCheckOf,
  type UpgradeHead,
} from './_upgrade.ts';
export { TOPIC_SINK, type TopicPublisher, type TopicSink } from './_topics.ts';
export { type HostedPresence, hostedPresence } from './_presence.ts';
