/**
 * The types a session is made with and reports through: its sink, its options and a received
 * GOAWAY. They sit apart from the session's parts so that every part, and the file that composes
 * them (`session.ts`, which re-exports them), can import them without a circle.
 *
 * Private to `lib/session/`.
 *
 * @module
 */
import type { Codec } from '../wire/codec.ts';
import type { Limits } from './limits.ts';
import type { PublishMessage, Stream } from './stream.ts';

/** Where a session's messages go: a WebSocket, or an adapter's socket. */
export interface SessionSink {
  /** Sends one message. */
  send(data: string | Uint8Array): void;
  /** Closes the transport. */
  close(code: number, reason: string): void;
  /** Bytes queued but not yet sent; read whenever a write decides whether to wait. */
  readonly bufferedAmount?: number;
}

/** A GOAWAY frame as received. */
export interface GoAway {
  /** The highest stream id the sender accepted. */
  lastId: number;
  /** Why: `restart`, `shutdown`, `overload`, ... */
  code: string;
  /** A message for humans. */
  message: string;
  /** The receiving dialer redials after a delay drawn from `[0, spreadMs)`. */
  spreadMs: number;
}

/** Options of the session. */
export interface SessionOptions {
  /** Which side this is: the dialer opens odd ids, the acceptor even ones. */
  side: 'dialer' | 'acceptor';
  /** The connection's codec. */
  codec: Codec;
  /** Limits; the rest default. */
  limits?: Partial<Limits>;
  /**
   * Runs once per stream the other side opens; none set: RESET `refused`. A returned value other
   * than `undefined` is sent as the last message with END, `undefined` sends a bare END; a throw
   * resets the stream with `internal`, or with the code and message of a `StreamError`. The session
   * contains the handler; the caller wraps it to pass its own second argument (the Connection or
   * the Peer).
   */
  onStream?: (stream: Stream) => unknown;
  /**
   * Runs for the dialer's hello (the OPEN of stream 1 with the HELLO flag, acceptor side) in
   * place of `onStream`; not set: the hello goes to `onStream` with `stream.isHello`.
   */
  onHello?: (stream: Stream) => unknown;
  /**
   * Read at each OPEN other than the hello (acceptor side): true while a hello is required and
   * not yet acknowledged, and such an OPEN is then reset with `hello_required`.
   */
  readonly helloPending?: boolean;
  /** PUBLISH frames (dialer side). */
  onPublish?: (message: PublishMessage) => void;
  /** A GOAWAY arrived. */
  onGoAway?: (goAway: GoAway) => void;
  /** Contained errors: malformed frames (ProtocolError), handler failures, decode failures. */
  onError?: (error: unknown) => void;
  /** Called once when the session ends, for any reason, after every stream has failed. */
  onClose?: (info: { code: number; reason: string; local: boolean }) => void;
  /** The clock for `lastReceivedAt` and the reset-rate window. @default {Date.now} */
  now?: () => number;
  /**
   * The id of the first stream this side opens: a positive safe integer of this side's parity. A
   * session restored over a socket that outlived it (a Durable Object woken from hibernation)
   * continues where the old one stopped, since the other side rejects an OPEN whose id it has
   * already seen. @default {1 on the dialer, 2 on the acceptor}
   */
  firstStreamId?: number;
}
