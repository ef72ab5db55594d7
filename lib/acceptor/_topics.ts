/**
 * The native delivery seam of broadcasts: what a socket layer with publish/subscribe topics
 * (Bun's `ServerWebSocket.subscribe()` and `Server.publish()`) offers the acceptor's
 * {@linkcode Broadcaster}, so a broadcast to a tag is one `publish` of the encoded frame that the
 * runtime copies to every subscribed socket natively, instead of a send per peer from
 * JavaScript.
 *
 * An adapter's sink offers it under {@linkcode TOPIC_SINK} (a symbol, so no application sink is
 * mistaken for one). The broadcaster keeps each such peer subscribed to one topic per tag it
 * holds, from the tag's first broadcast on, named by {@linkcode topicPrefix}: a NUL character, `muxws`, the acceptor's own random
 * key and a NUL, then the tag. Application topics that start with a NUL are reserved; the key
 * keeps two acceptors served by one server (one replacing the other) off each other's topics.
 *
 * Private to `lib/acceptor/`; the adapter kit (`lib/acceptor/kit.ts`) re-exports what an
 * adapter offers: {@linkcode TOPIC_SINK} and the two interfaces.
 *
 * @module
 */

/** Where a socket's publish/subscribe topics are published: its server. */
export interface TopicPublisher {
  /** Sends `data` once to every socket subscribed to `topic` on this server. */
  publish(topic: string, data: string | Uint8Array): unknown;
}

/** A socket that can join its server's topics. */
export interface TopicSink {
  /** Joins `topic`. */
  subscribe(topic: string): void;
  /** Leaves `topic`; a socket that closed has left every topic already. */
  unsubscribe(topic: string): void;
  /** The socket's server, when known: without one, broadcasts reach it through the send loop. */
  readonly publisher: TopicPublisher | undefined;
}

/** The key under which a sink offers its {@linkcode TopicSink}. */
export const TOPIC_SINK: unique symbol = Symbol('muxws topic sink');

/** A sink that may offer a {@linkcode TopicSink}. */
export interface MaybeTopicSink {
  /** The sink's topics, when its socket has them. */
  readonly [TOPIC_SINK]?: TopicSink;
}

/** The topic sink `sink` offers, if any. */
export function topicSinkOf(sink: unknown): TopicSink | undefined {
  return typeof sink === 'object' && sink !== null
    ? (sink as MaybeTopicSink)[TOPIC_SINK]
    : undefined;
}

/** A fresh prefix of one acceptor's topics: the topic of tag `t` is the prefix followed by `t`. */
export function topicPrefix(): string {
  return `\0muxws ${crypto.randomUUID()}\0`;
}
