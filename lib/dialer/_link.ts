/**
 * One wire and its `Session` as the connection keeps them (the {@linkcode Link}): the session made
 * over an open wire ({@linkcode openLink}), its heartbeat once established, a protocol error during
 * the hello handed to the attempt, and the GOAWAY drain: after a GOAWAY the link closes with 1000
 * once the streams that matter (opened with `open()`/`request()` or by the acceptor, not the
 * subscriptions) are done. Internal.
 *
 * @module
 */
import type { Codec } from '../wire/codec.ts';
import { ProtocolError } from '../errors.ts';
import type { Limits } from '../session/limits.ts';
import type { PublishMessage, Stream } from '../session/stream.ts';
import { type GoAway, Session } from '../session/session.ts';
import { CloseCode } from '../wire/codes.ts';
import type { AttemptLink } from './_attempt.ts';
import { Heartbeat } from './_heartbeat.ts';
import type { Wire } from './_transport.ts';

/** One wire and its session, from the wire's opening to its close. */
export interface Link extends AttemptLink {
  heartbeat?: Heartbeat;
  /** Streams that keep the connection open after a GOAWAY (not the subscriptions). */
  inflight: number;
  /** The GOAWAY received: when (epoch ms) and its `spreadMs`. */
  goAway?: { at: number; spreadMs: number };
  /** Set before this side closes the session with an error of its own. */
  lossError?: unknown;
  /**
   * PUBLISH frames that arrived before the connection was established (an acceptor may send one
   * right behind the hello's acknowledgement, in the same read), kept for {@linkcode publishEarly}.
   */
  early?: PublishMessage[];
  /** The timer of {@linkcode publishEarly}, while it waits. */
  earlyTimer?: ReturnType<typeof setTimeout>;
}

/** What a link needs of its connection. */
export interface LinkHost {
  readonly codec: Codec;
  /** The limits a new session takes. */
  limits(): Partial<Limits> | undefined;
  now(): number;
  /** Handles an acceptor-opened stream; undefined: the session refuses them. */
  readonly onStream: ((stream: Stream) => unknown) | undefined;
  /** A PUBLISH frame arrived. */
  publish(message: PublishMessage): void;
  /** A contained error. */
  report(error: unknown): void;
  /** The link's session ended, for any reason. */
  lost(link: Link, info: { code: number; reason: string; local: boolean }): void;
}

/**
 * Makes the link over an open wire: a dialer `Session` whose sends feed the heartbeat, whose
 * streams count in flight, and whose end detaches the wire and tells the host. While the attempt
 * waits for the hello (`protocolError` set), a protocol error fails it instead of being reported.
 */
export function openLink(wire: Wire, host: LinkHost): Link {
  // The optional fields start absent; the session is set below, before any use.
  const link = { phase: 'hello', inflight: 0, early: [] } as unknown as Link;
  const onStream = host.onStream;
  const onError = (error: unknown) => {
    const fail = link.protocolError;
    if (fail !== undefined && error instanceof ProtocolError) fail(error);
    else host.report(error);
  };
  const session = new Session(
    {
      send: (data: string | Uint8Array) => {
        wire.send(data);
        link.heartbeat?.sent();
      },
      close: (code: number, reason: string) => wire.close(code, reason),
      get bufferedAmount(): number {
        return wire.bufferedAmount;
      },
    },
    {
      side: 'dialer',
      codec: host.codec,
      // Checked here once: later sessions take the first one's (frozen) limits as they are.
      limits: host.limits(),
      now: host.now,
      onStream: onStream === undefined ? undefined : (stream: Stream) => {
        track(link, stream.closed);
        return onStream(stream);
      },
      onPublish: (message: PublishMessage) =>
        link.early ? link.early.push(message) : host.publish(message),
      onGoAway: (goAway: GoAway) => goneAway(link, goAway, host.now()),
      onError,
      onClose: (info: { code: number; reason: string; local: boolean }) => {
        // An established link lost before its early frames went out delivers them first, so
        // they still follow onOpen and precede onClose; a link never established drops them.
        if (link.earlyTimer !== undefined) flushEarly(link, host);
        link.phase = 'done';
        link.endedWith = info;
        detach();
        host.lost(link, info);
      },
    },
  );
  (link as { session: Session }).session = session;
  const detach = wire.listen({
    message: (data) => {
      session.receive(data);
      link.heartbeat?.received();
    },
    close: (info) => {
      link.closeEvent = info;
      session.closed(info.code, info.reason);
    },
    error: onError,
  });
  return link;
}

/**
 * Delivers the PUBLISH frames that arrived before `link` was established, in order, on a timer
 * of 0 ms: after `onOpen` and after the `connect()` that made the connection has resolved (both
 * happen in the microtasks of the establishment), so the application sees no `onPublish` of a
 * connection before them. Frames that arrive meanwhile join them. A link that is never
 * established drops them: its attempt failed, and a redial's replay sends them again. One lost
 * before the timer fires delivers them as its session closes, before its loss is reported.
 */
export function publishEarly(link: Link, host: LinkHost): void {
  if (link.early!.length === 0) link.early = undefined;
  else link.earlyTimer = setTimeout(() => flushEarly(link, host), 0);
}

/** Delivers the frames {@linkcode publishEarly} keeps, now, and stops its timer. */
function flushEarly(link: Link, host: LinkHost): void {
  clearTimeout(link.earlyTimer);
  const early = link.early!;
  link.early = link.earlyTimer = undefined;
  for (const message of early) host.publish(message);
}

/**
 * Starts the heartbeat of a link as it is established: PINGs through its session, a loss closes
 * it with 4000 `heartbeat timeout`, and the establishment (now) counts as heard.
 */
export function startHeartbeat(
  link: Link,
  options: { intervalMs: number; timeoutMs: number },
  now: () => number,
): void {
  const session = link.session;
  const establishedAt = now();
  link.heartbeat = new Heartbeat(
    {
      ping: () => session.ping(),
      lost: (error) => {
        link.lossError = error;
        session.close(CloseCode.Heartbeat, 'heartbeat timeout');
      },
      lastHeard: () => Math.max(session.lastReceivedAt, establishedAt),
    },
    options,
    now,
  );
  link.heartbeat.check();
}

/** Counts `pending` in flight on `link` until it settles. */
export function track(link: Link, pending: Promise<unknown>): void {
  link.inflight++;
  const done = () => {
    link.inflight--;
    drain(link);
  };
  pending.then(done, done);
}

/** Records a GOAWAY received at `now` on `link`, and drains it if it is established. */
function goneAway(link: Link, goAway: GoAway, now: number): void {
  link.goAway = {
    at: now,
    spreadMs: Number.isFinite(goAway.spreadMs) ? Math.max(0, goAway.spreadMs) : 0,
  };
  drain(link);
}

/**
 * After a GOAWAY on an established link, closes it with 1000 once nothing is in flight (in a
 * microtask, so a stream opened in the same turn still counts).
 */
export function drain(link: Link): void {
  if (link.goAway === undefined || link.inflight > 0 || link.phase !== 'open') return;
  void Promise.resolve().then(() => {
    if (link.phase === 'open' && link.inflight === 0) {
      link.session.close(CloseCode.Normal, 'goaway');
    }
  });
}
