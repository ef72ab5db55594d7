/**
 * The dialer's transport seam: what one attempt needs to open a connection to the acceptor and
 * what the connection then needs of it (send, close, buffered bytes, the selected subprotocol,
 * messages in order and the close). The WebSocket transport is the only built-in one and the
 * only dialer code that knows `WebSocket`: the WHATWG socket and the `ws` package's (its
 * throwing `error` event; its refusal with `Retry-After` and its corked sends through the driver
 * its constructor carries when `wsDialer()` made it, never imported here), `binaryType`, and
 * Blob messages decoded in order. Another carrier (`WebSocketStream`, WebTransport) plugs in
 * here by implementing {@linkcode Transport}. Internal.
 *
 * @module
 */
import type { DialerSocket, DialerSocketConstructor } from './dialer_types.ts';
import { ProtocolError } from '../errors.ts';
import { closeCodeOf } from '../wire/codes.ts';
import { driverOf, type SocketDriver } from '../sockets/socket_driver.ts';

/** How a connection closed: its code (a missing or 0 code read as 1006), reason, cleanness. */
export interface CloseFields {
  code: number;
  reason: string;
  wasClean: boolean;
}

/** An HTTP refusal of the upgrade: its status and the wait its `Retry-After` asked for. */
export interface Refusal {
  status: number;
  retryAfterMs: number | undefined;
}

/**
 * What a dial learnt before it opened, filled in by the transport for the redial policy: how the
 * connection closed, and an HTTP refusal of the upgrade where the transport can see one.
 */
export interface OpenReport {
  close?: CloseFields;
  refusal?: Refusal;
}

/** What an open wire reports, from {@linkcode Wire.listen} on. */
export interface WireEvents {
  /** One message, in order. */
  message(data: string | ArrayBuffer | ArrayBufferView): void;
  /** The wire closed. */
  close(info: CloseFields): void;
  /** Something arrived that is not a message (contained, reported). */
  error(error: unknown): void;
}

/** An open connection to the acceptor. */
export interface Wire {
  /** The subprotocol the acceptor selected. */
  readonly protocol: string;
  /** Bytes queued but not yet sent. */
  readonly bufferedAmount: number;
  /** Sends one message. */
  send(data: string | Uint8Array): void;
  /** Closes; never throws. Without a code, closes with the carrier's default. */
  close(code?: number, reason?: string): void;
  /** Starts delivering events; returns the function that stops it. */
  listen(events: WireEvents): () => void;
}

/** Opens wires: the one thing the dialer needs of a carrier. */
export interface Transport {
  /**
   * Opens a wire to `url`, offering `protocols` (the muxws one first). Resolves once open;
   * rejects when it fails or closes first, or with the signal's reason once aborted (then it
   * closes what it opened). What it learns on the way goes in `report`.
   */
  open(
    url: string,
    protocols: readonly string[],
    signal: AbortSignal,
    report: OpenReport,
  ): Promise<Wire>;
}

/** The fields of a close event. */
function closeFields(event: Event): CloseFields {
  const e = event as Partial<CloseEvent>;
  return {
    code: closeCodeOf(e.code),
    reason: typeof e.reason === 'string' ? e.reason : '',
    wasClean: e.wasClean === true,
  };
}

/** See {@linkcode DialerSocket.onerror}. */
function ignoreSocketError(): void {}

function closeQuietly(socket: DialerSocket, code?: number, reason?: string): void {
  try {
    if (socket.readyState === 0 || code === undefined) socket.close();
    else socket.close(code, reason);
  } catch {
    try {
      socket.close();
    } catch {
      // nothing more can be done with this socket
    }
  }
}

/**
 * The WebSocket transport over `WebSocket` (a constructor with the WHATWG signature: the global
 * one, the `ws` package's, a test fake); `now` dates a `Retry-After` given as an HTTP date. A
 * constructor that carries a driver (`wsDialer()`'s) has its sockets sent on through it and
 * their refusals read by it.
 */
export function webSocketTransport(
  WebSocket: DialerSocketConstructor,
  now: () => number,
): Transport {
  const driver = driverOf(WebSocket);
  return {
    open(url, protocols, signal, report) {
      const socket = new WebSocket(url, protocols as string[]);
      socket.onerror = ignoreSocketError;
      // An HTTP refusal of the upgrade, where the driver sees one: its status and wait for the
      // redial policy.
      driver?.onRefusal?.(socket, now, (status, retryAfterMs) => {
        report.refusal = { status, retryAfterMs };
        closeQuietly(socket);
      });
      return opened(socket, url, signal, report, driver);
    },
  };
}

/**
 * What the runtime told of a socket that failed before it opened, as `: …` for a message (empty
 * when it told nothing, as browsers do): the HTTP status of a refused upgrade where the transport
 * saw it (`ws`: `Unexpected server response: 404`), else the error event's error code and
 * message (`ws`: `ECONNREFUSED`; Deno and Bun: their `ErrorEvent.message`).
 */
function failure(event: Event, report: OpenReport): string {
  const status = report.refusal?.status;
  if (status) return `: Unexpected server response: ${status}`;
  const { message, error } = event as Partial<ErrorEvent>;
  const code = (error as { code?: unknown } | undefined)?.code;
  const text = typeof message === 'string' && message !== ''
    ? message
    : error instanceof Error
    ? error.message
    : '';
  const coded = typeof code === 'string' && !text.includes(code)
    ? text === '' ? code : `${code}: ${text}`
    : text;
  return coded === '' ? '' : `: ${coded}`;
}

/** Adds `listeners` to `socket`, by event type; returns the function that removes them. */
function listen(
  socket: DialerSocket,
  listeners: Record<string, (event: Event) => void>,
): () => void {
  for (const type in listeners) socket.addEventListener(type, listeners[type]!);
  return () => {
    for (const type in listeners) socket.removeEventListener(type, listeners[type]!);
  };
}

/** Resolves with the wire once `socket` opens; `error`, `close` or an abort first reject. */
function opened(
  socket: DialerSocket,
  url: string,
  signal: AbortSignal,
  report: OpenReport,
  driver: SocketDriver | undefined,
): Promise<Wire> {
  try {
    socket.binaryType = 'arraybuffer';
  } catch {
    // a runtime that rejects it delivers Blobs, which are handled too
  }
  return new Promise<Wire>((resolve, reject) => {
    const onAbort = () => {
      reject(signal.reason);
      closeQuietly(socket);
    };
    const unlisten = listen(socket, {
      open: () => {
        detach();
        resolve(socketWire(socket, driver));
      },
      error: (event) => {
        const why = failure(event, report);
        reject(new Error(`The WebSocket to ${url} failed before it opened${why}`));
      },
      close: (event) => {
        const info = closeFields(event);
        report.close = info;
        detach();
        reject(
          new Error(
            `The WebSocket to ${url} closed with code ${info.code} before it opened${
              failure(event, report)
            }`,
          ),
        );
      },
    });
    const detach = () => {
      signal.removeEventListener('abort', onAbort);
      unlisten();
    };
    signal.addEventListener('abort', onAbort);
  });
}

/**
 * An open socket as a {@linkcode Wire} (its subprotocol is settled once open), sent on through
 * `driver` when its constructor carries one; binary messages are decoded in order, Blobs included.
 */
function socketWire(socket: DialerSocket, driver: SocketDriver | undefined): Wire {
  return {
    protocol: socket.protocol,
    get bufferedAmount(): number {
      return socket.bufferedAmount;
    },
    send(data) {
      if (driver === undefined) socket.send(data);
      else driver.send(socket, data);
    },
    close: (code, reason) => closeQuietly(socket, code, reason),
    listen(events) {
      /** Set by the first Blob: every later message waits for it, in order. */
      let chain: Promise<void> | undefined;
      const onMessage = (event: Event) => {
        const data = (event as MessageEvent).data as unknown;
        if (typeof data === 'string' || data instanceof ArrayBuffer || ArrayBuffer.isView(data)) {
          if (chain === undefined) events.message(data);
          else chain = chain.then(() => events.message(data));
        } else if (typeof Blob !== 'undefined' && data instanceof Blob) {
          chain = (chain ?? Promise.resolve())
            .then(() => data.arrayBuffer())
            .then((buffer) => events.message(buffer), events.error);
        } else {
          events.error(
            new ProtocolError(`Expected a string or binary message: found ${typeof data}`),
          );
        }
      };
      return listen(socket, {
        message: onMessage,
        close: (event) => events.close(closeFields(event)),
      });
    },
  };
}
