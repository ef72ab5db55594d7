/**
 * The acceptor's tests over raw frames and in-memory sockets: {@linkcode raw} attaches a peer the
 * test feeds JSON frames by hand, {@linkcode served} serves an acceptor to `connect()` over a
 * `FakeServer`.
 * @module
 */
import { Acceptor, type AcceptorOptions, type AttachedPeer } from 'muxws/acceptor';
import { FakeServer } from './_socket_pair.ts';

/** A peer attached with {@linkcode raw}. */
export interface RawPeer {
  handle: AttachedPeer;
  /** Every frame the acceptor sent, decoded. */
  sent: unknown[][];
  /** Every close the acceptor asked for, as [code, reason]. */
  closes: Array<[number, string]>;
  /** Feeds one frame to the acceptor, encoded as JSON. */
  send(frame: unknown[]): void;
}

/** A peer fed raw frames; what the acceptor sends is decoded into `sent`. */
export function raw(acceptor: Acceptor, tags?: string[]): RawPeer {
  const sent: unknown[][] = [];
  const closes: Array<[number, string]> = [];
  const handle = acceptor.attach({
    send: (data) => sent.push(JSON.parse(String(data))),
    close: (code, reason) => {
      closes.push([code, reason]);
      queueMicrotask(() => handle.closed(code, reason));
    },
  }, { tags });
  return { handle, sent, closes, send: (frame) => handle.message(JSON.stringify(frame)) };
}

/** An acceptor (no idle timeout unless `options` sets one) served to connect() over in-memory sockets. */
export function served(
  options: AcceptorOptions,
): { acceptor: Acceptor; server: FakeServer; WebSocket: never } {
  const acceptor = new Acceptor({ idleTimeoutMs: 0, ...options });
  const server = new FakeServer({
    onConnection: (c) =>
      queueMicrotask(() => {
        c.accept();
        acceptor.accept(c.server as never);
      }),
  });
  return { acceptor, server, WebSocket: server.WebSocket as never };
}
