/**
 * Two sessions, a dialer and an acceptor, joined by the in-memory socket pair of
 * `_socket_pair.ts` (or, with `direct: true`, by a synchronous pipe with no socket at all).
 *
 * Everything each side reports is recorded (`errors`, `closes`, `publishes`, `goAways`), so tests
 * assert on outcomes. `using pair = sessionPair(...)` closes both ends when the test ends.
 */
import type { Codec, PublishMessage } from 'muxws';
import { jsonCodec } from 'muxws';
import { type GoAway, Session, type SessionOptions } from '../lib/session/session.ts';
import { acceptorPolicy } from '../lib/acceptor/_policy.ts';
import { type FakeSocket, socketPair } from './_socket_pair.ts';

/** What one side recorded. */
export interface SideLog {
  /** Every error passed to onError. */
  errors: unknown[];
  /** Every onClose call. */
  closes: { code: number; reason: string; local: boolean }[];
  /** Every PUBLISH received. */
  publishes: PublishMessage[];
  /** Every GOAWAY received. */
  goAways: GoAway[];
}

/** Options of {@linkcode sessionPair}. */
export interface SessionPairOptions {
  /** The codec of both sides. @default {jsonCodec} */
  codec?: Codec;
  /** Options of the dialer's session (side and codec are set). */
  dialer?: Partial<SessionOptions>;
  /** Options of the acceptor's session. */
  acceptor?: Partial<SessionOptions>;
  /** Socket delivery delay in ms (fake time); undefined: microtasks. */
  delayMs?: number;
}

/** The joined pair. */
export interface SessionPair extends Disposable {
  dialer: Session;
  acceptor: Session;
  client: FakeSocket;
  server: FakeSocket;
  log: { dialer: SideLog; acceptor: SideLog };
}

function newLog(): SideLog {
  return { errors: [], closes: [], publishes: [], goAways: [] };
}

function join(
  socket: FakeSocket,
  side: 'dialer' | 'acceptor',
  codec: Codec,
  options: Partial<SessionOptions> | undefined,
  log: SideLog,
): Session {
  socket.binaryType = 'arraybuffer';
  const session = new Session({
    send: (data) => socket.send(data),
    close: (code, reason) => socket.close(code, reason),
    get bufferedAmount() {
      return socket.bufferedAmount;
    },
  }, {
    ...options,
    side,
    codec,
    onError: (error) => {
      log.errors.push(error);
      options?.onError?.(error);
    },
    onClose: (info) => {
      log.closes.push(info);
      options?.onClose?.(info);
    },
    onPublish: (message) => {
      log.publishes.push(message);
      options?.onPublish?.(message);
    },
    onGoAway: (goAway) => {
      log.goAways.push(goAway);
      options?.onGoAway?.(goAway);
    },
  }, acceptorPolicy);
  socket.addEventListener('message', (event) => {
    session.receive((event as unknown as { data: string | ArrayBuffer }).data);
  });
  socket.addEventListener('close', (event) => {
    const close = event as unknown as { code: number; reason: string };
    session.closed(close.code, close.reason);
  });
  return session;
}

/** Two open sessions over a socket pair. */
export function sessionPair(options: SessionPairOptions = {}): SessionPair {
  const codec = options.codec ?? jsonCodec;
  const [client, server] = socketPair({ delayMs: options.delayMs });
  client._open('muxws.v1.' + codec.name);
  const log = { dialer: newLog(), acceptor: newLog() };
  const dialer = join(client, 'dialer', codec, options.dialer, log.dialer);
  const acceptor = join(server, 'acceptor', codec, options.acceptor, log.acceptor);
  return {
    dialer,
    acceptor,
    client,
    server,
    log,
    [Symbol.dispose]() {
      client.drop();
      dialer.closed(1006, '');
      acceptor.closed(1006, '');
    },
  };
}

/** A session whose sink records what it sends: for feeding hand-made frames to `receive`. */
export interface Probe extends Disposable {
  session: Session;
  /** Every message sent, decoded. */
  sent: unknown[];
  /** The sink's close calls. */
  closes: { code: number; reason: string }[];
  log: SideLog;
  /** Settable bufferedAmount of the sink. */
  buffered: { amount: number };
}

/** One session with a recording sink, for hand-made input. */
export function probe(
  side: 'dialer' | 'acceptor',
  options: Partial<SessionOptions> & { codec?: Codec } = {},
): Probe {
  const codec = options.codec ?? jsonCodec;
  const log = newLog();
  const sent: unknown[] = [];
  const closes: { code: number; reason: string }[] = [];
  const buffered = { amount: 0 };
  const session = new Session({
    send: (data) => sent.push(codec.decode(data)),
    close: (code, reason) => closes.push({ code, reason }),
    get bufferedAmount() {
      return buffered.amount;
    },
  }, {
    ...options,
    side,
    codec,
    onError: (error) => {
      log.errors.push(error);
      options.onError?.(error);
    },
    onClose: (info) => {
      log.closes.push(info);
      options.onClose?.(info);
    },
    onPublish: (message) => {
      log.publishes.push(message);
      options.onPublish?.(message);
    },
    onGoAway: (goAway) => {
      log.goAways.push(goAway);
      options.onGoAway?.(goAway);
    },
  }, acceptorPolicy);
  return {
    session,
    sent,
    closes,
    log,
    buffered,
    [Symbol.dispose]() {
      session.closed(1006, '');
    },
  };
}

/** Lets queued microtasks (socket delivery) run. */
export async function settle(rounds = 100): Promise<void> {
  for (let i = 0; i < rounds; i++) await Promise.resolve();
}
