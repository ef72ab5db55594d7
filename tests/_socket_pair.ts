/**
 * In-memory WebSockets for tests: a connected pair of objects with the WHATWG `WebSocket`
 * surface muxws uses (`readyState`, `protocol`, `bufferedAmount`, `binaryType`, `send`, `close`,
 * `addEventListener`/`removeEventListener`, `onopen`/`onmessage`/`onclose`/`onerror`), and a
 * {@linkcode FakeServer} whose `WebSocket` constructor can be handed to `connect()`.
 *
 * Delivery is in order. With `delayMs` undefined a message is delivered on a microtask (no clock
 * needed); with a number it is delivered by `setTimeout(delayMs)`, so fake time controls it.
 * `pause()` holds outgoing messages (they count in `bufferedAmount`) until `resume()`.
 *
 * The `client` end behaves as a browser's: `close()` accepts only 1000 and 3000–4999 and a reason
 * of at most 123 UTF-8 bytes, throwing a `DOMException` otherwise.
 */

/** Ready states, as on `WebSocket`. */
export const CONNECTING = 0;
/** Ready states, as on `WebSocket`. */
export const OPEN = 1;
/** Ready states, as on `WebSocket`. */
export const CLOSING = 2;
/** Ready states, as on `WebSocket`. */
export const CLOSED = 3;

/** Options of {@linkcode socketPair}. */
export interface PairOptions {
  /** Delivery delay in ms through `setTimeout`; undefined delivers on a microtask. */
  delayMs?: number;
  /** The URL the client end reports. */
  url?: string;
}

type Listener = ((event: Event) => void) | { handleEvent(event: Event): void };

const encoder = new TextEncoder();

function byteLength(data: string | ArrayBufferLike | ArrayBufferView | Blob): number {
  if (typeof data === 'string') return encoder.encode(data).byteLength;
  if (data instanceof Blob) return data.size;
  return (data as ArrayBufferLike).byteLength;
}

/** A close event with the fields of WHATWG `CloseEvent`. */
export interface FakeCloseEvent extends Event {
  /** The close code (1006 for an abnormal closure). */
  readonly code: number;
  /** The close reason. */
  readonly reason: string;
  /** True when the closing handshake completed. */
  readonly wasClean: boolean;
}

/** A message event with the field of WHATWG `MessageEvent` muxws reads. */
export interface FakeMessageEvent extends Event {
  /** The message: a string, an `ArrayBuffer` or a `Blob`, by `binaryType`. */
  readonly data: unknown;
}

function makeEvent<T extends object>(type: string, fields: T): Event & T {
  return Object.assign(new Event(type), fields);
}

/** One end of an in-memory WebSocket connection. */
export class FakeSocket {
  /** `WebSocket.CONNECTING`. */
  static readonly CONNECTING = CONNECTING;
  /** `WebSocket.OPEN`. */
  static readonly OPEN = OPEN;
  /** `WebSocket.CLOSING`. */
  static readonly CLOSING = CLOSING;
  /** `WebSocket.CLOSED`. */
  static readonly CLOSED = CLOSED;
  /** `WebSocket.CONNECTING`. */
  readonly CONNECTING = CONNECTING;
  /** `WebSocket.OPEN`. */
  readonly OPEN = OPEN;
  /** `WebSocket.CLOSING`. */
  readonly CLOSING = CLOSING;
  /** `WebSocket.CLOSED`. */
  readonly CLOSED = CLOSED;

  /** The other end; set by {@linkcode socketPair}. */
  peer!: FakeSocket;
  /** The current ready state. */
  readyState: number = CONNECTING;
  /** The selected subprotocol ('' until opened). */
  protocol = '';
  /** Always ''. */
  readonly extensions = '';
  /** The URL (client end) or ''. */
  readonly url: string;
  /** How binary messages are delivered: 'arraybuffer' or 'blob'. */
  binaryType: 'arraybuffer' | 'blob' = 'blob';
  /** Every message this end sent, in order (a test log). */
  readonly sent: Array<string | Uint8Array> = [];
  /** The close code and reason this end's close event reported, once closed. */
  closeInfo: { code: number; reason: string; wasClean: boolean } | undefined;

  /** `onopen` handler. */
  onopen: ((event: Event) => void) | null = null;
  /** `onmessage` handler. */
  onmessage: ((event: FakeMessageEvent) => void) | null = null;
  /** `onclose` handler. */
  onclose: ((event: FakeCloseEvent) => void) | null = null;
  /** `onerror` handler. */
  onerror: ((event: Event) => void) | null = null;

  readonly #role: 'client' | 'server';
  readonly #delayMs: number | undefined;
  readonly #listeners = new Map<string, Set<Listener>>();
  readonly #outbox: Array<string | Uint8Array> = [];
  #paused = false;
  #inFlight = 0;

  /** Use {@linkcode socketPair}. */
  constructor(role: 'client' | 'server', options: PairOptions = {}) {
    this.#role = role;
    this.#delayMs = options.delayMs;
    this.url = role === 'client' ? options.url ?? 'ws://fake/' : '';
  }

  /** Bytes sent but not yet delivered (held by `pause()` or in flight). */
  get bufferedAmount(): number {
    let n = this.#inFlight;
    for (const m of this.#outbox) n += byteLength(m);
    return n;
  }

  /** Adds a listener. */
  addEventListener(type: string, listener: Listener, options?: { once?: boolean }): void {
    let set = this.#listeners.get(type);
    if (!set) this.#listeners.set(type, set = new Set());
    if (options?.once) {
      const wrapped: Listener = (event) => {
        this.removeEventListener(type, wrapped);
        call(listener, event);
      };
      set.add(wrapped);
    } else {
      set.add(listener);
    }
  }

  /** Removes a listener. */
  removeEventListener(type: string, listener: Listener): void {
    this.#listeners.get(type)?.delete(listener);
  }

  /** How many listeners are registered, over all types (for leak checks). */
  listenerCount(): number {
    let n = 0;
    for (const set of this.#listeners.values()) n += set.size;
    return n;
  }

  /** Sends a message to the other end. Throws while connecting, as `WebSocket` does. */
  send(data: string | ArrayBufferLike | ArrayBufferView | Blob): void {
    if (this.readyState === CONNECTING) {
      throw new DOMException('Cannot send while the socket is connecting', 'InvalidStateError');
    }
    if (this.readyState !== OPEN) return; // a closing or closed socket discards, as browsers do
    let copy: string | Uint8Array;
    if (typeof data === 'string') copy = data;
    else if (data instanceof Blob) throw new TypeError('FakeSocket does not send Blobs');
    else if (ArrayBuffer.isView(data)) {
      copy = new Uint8Array(data.buffer, data.byteOffset, data.byteLength).slice();
    } else copy = new Uint8Array(data as ArrayBuffer).slice();
    this.sent.push(copy);
    this.#outbox.push(copy);
    if (!this.#paused) this.#flush();
  }

  /** Starts the closing handshake; both ends get a clean close event. */
  close(code?: number, reason: string = ''): void {
    if (this.#role === 'client') {
      if (code !== undefined && code !== 1000 && (code < 3000 || code > 4999)) {
        throw new DOMException(`Invalid close code ${code}`, 'InvalidAccessError');
      }
      if (encoder.encode(reason).byteLength > 123) {
        throw new DOMException('Close reason longer than 123 bytes', 'SyntaxError');
      }
    }
    if (this.readyState === CLOSING || this.readyState === CLOSED) return;
    if (this.readyState === CONNECTING) {
      this.#finish(1006, '', false, true);
      this.peer.#finish(1006, '', false, false);
      return;
    }
    this.readyState = CLOSING;
    const finalCode = code ?? 1005;
    this.#schedule(() => {
      this.peer.#finish(finalCode, reason, true, false);
      this.#finish(finalCode, reason, true, false);
    });
  }

  /** Test control: holds outgoing messages until {@linkcode resume}. */
  pause(): void {
    this.#paused = true;
  }

  /** Test control: releases held messages. */
  resume(): void {
    this.#paused = false;
    this.#flush();
  }

  /** Test control: the connection drops abruptly; both ends see 1006, not clean. */
  drop(): void {
    if (this.readyState === CLOSED) return;
    this.#finish(1006, '', false, false);
    this.peer.#finish(1006, '', false, false);
  }

  /** Opens both ends with `protocol` selected; fires `open` on the client end. */
  _open(protocol: string): void {
    for (const end of [this, this.peer]) {
      end.readyState = OPEN;
      end.protocol = protocol;
    }
    const client = this.#role === 'client' ? this : this.peer;
    client.#dispatch(new Event('open'));
  }

  /** Fails the connection before it opened: `error` then close 1006 on the client end. */
  _fail(): void {
    const client = this.#role === 'client' ? this : this.peer;
    client.#dispatch(new Event('error'));
    client.#finish(1006, '', false, false);
    client.peer.readyState = CLOSED;
  }

  #flush(): void {
    while (this.#outbox.length > 0) {
      const message = this.#outbox.shift()!;
      const size = byteLength(message);
      this.#inFlight += size;
      this.#schedule(() => {
        this.#inFlight -= size;
        this.peer.#deliver(message);
      });
    }
  }

  #schedule(fn: () => void): void {
    if (this.#delayMs === undefined) queueMicrotask(fn);
    else setTimeout(fn, this.#delayMs);
  }

  #deliver(message: string | Uint8Array): void {
    if (this.readyState !== OPEN && this.readyState !== CLOSING) return;
    let data: unknown = message;
    if (typeof message !== 'string') {
      data = this.binaryType === 'arraybuffer'
        ? message.buffer.slice(message.byteOffset, message.byteOffset + message.byteLength)
        : new Blob([message as Uint8Array<ArrayBuffer>]);
    }
    this.#dispatch(makeEvent('message', { data }));
  }

  #finish(code: number, reason: string, wasClean: boolean, withError: boolean): void {
    if (this.readyState === CLOSED) return;
    this.readyState = CLOSED;
    this.#outbox.length = 0;
    this.closeInfo = { code, reason, wasClean };
    if (withError) this.#dispatch(new Event('error'));
    this.#dispatch(makeEvent('close', { code, reason, wasClean }));
  }

  #dispatch(event: Event): void {
    const handler = (this as unknown as Record<string, unknown>)[`on${event.type}`];
    if (typeof handler === 'function') handler.call(this, event);
    for (const listener of [...(this.#listeners.get(event.type) ?? [])]) call(listener, event);
  }
}

function call(listener: Listener, event: Event): void {
  if (typeof listener === 'function') listener(event);
  else listener.handleEvent(event);
}

/**
 * A connected pair, both ends `CONNECTING`. Call `client._open(protocol)` to open both (the
 * client gets `open`), or `client._fail()` to fail the connection.
 */
export function socketPair(options: PairOptions = {}): [client: FakeSocket, server: FakeSocket] {
  const client = new FakeSocket('client', options);
  const server = new FakeSocket('server', options);
  client.peer = server;
  server.peer = client;
  return [client, server];
}

/** One connection attempt seen by a {@linkcode FakeServer}. */
export interface FakeConnection {
  /** The URL the dialer asked for. */
  readonly url: string;
  /** The subprotocols the dialer offered, in order. */
  readonly protocols: string[];
  /** The dialer's end. */
  readonly client: FakeSocket;
  /** The server's end: feed it to an acceptor, or drive it by hand. */
  readonly server: FakeSocket;
  /** Opens the connection selecting `protocol` (default: the first offered). */
  accept(protocol?: string): void;
  /** Fails the connection: the dialer sees `error` and close 1006. */
  refuse(): void;
}

/** Options of {@linkcode FakeServer}. */
export interface FakeServerOptions extends PairOptions {
  /**
   * Called for every dial. When it returns without calling `accept` or `refuse`, nothing
   * happens until the test does (a hanging handshake). Default: accept on a microtask with the
   * first offered protocol.
   */
  onConnection?: (connection: FakeConnection) => void;
}

/**
 * A server of in-memory sockets. Its {@linkcode FakeServer.WebSocket} is a constructor with the
 * `WebSocket` signature, to hand to `connect({ WebSocket })`; each construction is a dial that
 * `onConnection` decides.
 */
export class FakeServer {
  /** Every dial so far, in order. */
  readonly connections: FakeConnection[] = [];
  /** Pass as `connect({ WebSocket: server.WebSocket })`. */
  readonly WebSocket: {
    new (url: string | URL, protocols?: string | string[]): FakeSocket;
    readonly CONNECTING: number;
    readonly OPEN: number;
    readonly CLOSING: number;
    readonly CLOSED: number;
  };
  /** Decides each dial; replaceable between dials. */
  onConnection: (connection: FakeConnection) => void;

  /** Creates the server. */
  constructor(options: FakeServerOptions = {}) {
    this.onConnection = options.onConnection ??
      ((c) => queueMicrotask(() => c.accept()));
    // deno-lint-ignore no-this-alias
    const server = this;
    this.WebSocket = class extends FakeSocket {
      constructor(url: string | URL, protocols?: string | string[]) {
        super('client', { ...options, url: String(url) });
        const [, serverEnd] = socketPair(options);
        this.peer = serverEnd;
        serverEnd.peer = this;
        const offered = protocols === undefined
          ? []
          : typeof protocols === 'string'
          ? [protocols]
          : [...protocols];
        const client = this as FakeSocket;
        let decided = false;
        const connection: FakeConnection = {
          url: String(url),
          protocols: offered,
          client,
          server: serverEnd,
          accept(protocol = offered[0] ?? '') {
            if (decided || client.readyState !== CONNECTING) return;
            decided = true;
            client._open(protocol);
          },
          refuse() {
            if (decided || client.readyState !== CONNECTING) return;
            decided = true;
            client._fail();
          },
        };
        server.connections.push(connection);
        server.onConnection(connection);
      }
    };
  }
}

/**
 * A {@linkcode FakeServer} that accepts every dial and acknowledges a JSON hello at once (the
 * welcome `null`), with no session of its own: a dialer's tests drive the rest by hand.
 */
export function acknowledging(): FakeServer {
  return new FakeServer({
    onConnection: (c) =>
      queueMicrotask(() => {
        c.accept();
        c.server.addEventListener('message', (event) => {
          const frame = JSON.parse(String((event as MessageEvent).data));
          if (frame[0] === 1 && frame[1] === 1) c.server.send(JSON.stringify([2, 1, 1, null]));
        });
      }),
  });
}
