/**
 * What a socket is, once, for both sides: the socket surface muxws uses
 * ({@linkcode DriverSocket}), what takes its events ({@linkcode SocketReceiver}), and the driver
 * that sends on it and listens to it ({@linkcode SocketDriver}). This file holds the WHATWG
 * `WebSocket`'s driver ({@linkcode webSocketDriver}) and how a dialer's socket constructor carries
 * a driver of its own ({@linkcode driverOf}); the `ws` package's driver lives in
 * `sockets/node_ws.ts`, which also chooses between the two for the acceptor. Nothing here imports
 * a side.
 *
 * Internal: imported from `lib/` only, never re-exported.
 *
 * @module
 */
import { CloseCode } from '../wire/codes.ts';

/** A message as a socket delivers it: `ws` hands over a `Buffer`, a runtime may hand a `Blob`. */
export type SocketData = string | ArrayBuffer | ArrayBufferView | Blob;

/**
 * A listener a driver registers: it reads `data` from message events and `code` and `reason`
 * from close events. Its event is `any` so that sockets whose event types differ from the DOM's
 * (the `ws` package's) fit {@linkcode DriverSocket}.
 */
// deno-lint-ignore no-explicit-any
export type DriverListener = (event: any) => void;

/** The WebSocket surface a driver uses: the WHATWG `WebSocket` or the `ws` package's. */
export interface DriverSocket {
  /** 0 connecting, 1 open, 2 closing, 3 closed. */
  readonly readyState: number;
  /** Bytes queued but not yet sent. */
  readonly bufferedAmount?: number;
  /** Sends one message. */
  send(data: string | Uint8Array): void;
  /** Closes the socket. */
  close(code?: number, reason?: string): void;
  /** Adds a listener for `open`, `message`, `close` or `error`. */
  addEventListener(type: 'open' | 'message' | 'close' | 'error', listener: DriverListener): void;
  /** Removes a listener. */
  removeEventListener(type: 'open' | 'message' | 'close' | 'error', listener: DriverListener): void;
}

/** What takes a socket's events from its driver. */
export interface SocketReceiver {
  /** A connecting socket opened. */
  opened(): void;
  /** One received message, in order. */
  message(data: SocketData): void;
  /** The socket closed (once); a missing code is read by the receiver. */
  closed(code?: number, reason?: string): void;
}

/**
 * How muxws sends on and listens to one kind of socket. A driver is shared by every socket of
 * its kind and keeps no state per socket beyond what its listeners need.
 */
export interface SocketDriver {
  /**
   * Whether {@linkcode SocketDriver.send} takes a text message as the bytes of `textBytes()`
   * (`sockets/node_ws.ts`), so a broadcast encodes its text once for every peer.
   */
  readonly takesTextBytes: boolean;
  /** Sends one message on an open socket. */
  send(socket: DriverSocket, data: string | Uint8Array): void;
  /**
   * Feeds `socket`'s open (when it is connecting), messages and close to `receiver` until it
   * closes; a socket already closing or closed is reported closed with 1006 at once.
   */
  listen(socket: DriverSocket, receiver: SocketReceiver): void;
  /**
   * Calls `refused` with the status of an HTTP refusal of a dialer's upgrade on `socket` and the
   * wait its `Retry-After` asks for (`now` dates an HTTP date), where the socket shows one
   * (`sockets/node_ws.ts`); `refused` must close the socket. Absent where a refusal is only a
   * failed dial, as on a WHATWG `WebSocket`.
   */
  readonly onRefusal?: (
    socket: DriverSocket,
    now: () => number,
    refused: (status: number, retryAfterMs: number | undefined) => void,
  ) => void;
}

/**
 * The static property through which a dialer's socket constructor names the driver of its
 * sockets: the class `wsDialer()` (`adapters/node.ts`) returns carries the `ws` one. The dialer
 * reads it ({@linkcode driverOf}) and so never imports the `ws` driver itself.
 */
export const SOCKET_DRIVER: unique symbol = /* @__PURE__ */ Symbol('muxws.socketDriver');

/**
 * The driver a dialer's socket constructor carries under {@linkcode SOCKET_DRIVER}; undefined for
 * any other constructor, whose sockets are WHATWG ones to send on as they are.
 */
export function driverOf(WebSocket: unknown): SocketDriver | undefined {
  return (WebSocket as { [SOCKET_DRIVER]?: SocketDriver } | undefined)?.[SOCKET_DRIVER];
}

/** The WHATWG `WebSocket`'s driver: `send()` as it is, listeners through `addEventListener`. */
export const webSocketDriver: SocketDriver = {
  takesTextBytes: false,
  send(socket, data) {
    socket.send(data);
  },
  listen(socket, receiver) {
    const onMessage: DriverListener = (event) => receiver.message(event.data);
    const onClose: DriverListener = (event) => {
      socket.removeEventListener('open', onOpen);
      socket.removeEventListener('message', onMessage);
      socket.removeEventListener('close', onClose);
      receiver.closed(event?.code, event?.reason);
    };
    const onOpen = () => {
      socket.removeEventListener('open', onOpen);
      receiver.opened();
    };
    socket.addEventListener('message', onMessage);
    socket.addEventListener('close', onClose);
    if (socket.readyState === 0) socket.addEventListener('open', onOpen);
    else if (socket.readyState !== 1) receiver.closed(CloseCode.Abnormal, '');
  },
};
