/**
 * A minimal acceptor side for the dialer's tests: each accepted socket gets a `Session` of side
 * `acceptor`, and the test decides what its streams do. It is not the project's `Acceptor`; it
 * exists so the dialer can be driven precisely (any close code, a hello that never answers, a
 * GOAWAY at a chosen moment).
 *
 * - {@linkcode TestAcceptor.attach} takes a standard server-side `WebSocket` (the server end of
 *   a `FakeServer` dial, a `Deno.upgradeWebSocket` socket, a `ws` socket);
 * - {@linkcode TestAcceptor.attachSink} is the push form (Bun's `ServerWebSocket`);
 * - {@linkcode serveFake} wires a `FakeServer` so every dial is accepted and attached.
 */
import { type Codec, jsonCodec, type Stream } from 'muxws';
import { Session } from '../lib/session/session.ts';
import { acceptorPolicy } from '../lib/acceptor/_policy.ts';
import type { FakeConnection, FakeServer } from './_socket_pair.ts';

/** Decides what one peer's streams do. */
export interface TestAcceptorOptions {
  /** The codec (default JSON). */
  codec?: Codec;
  /**
   * Handles the dialer's first stream (id 1), the hello; its return value is the welcome. When
   * undefined, stream 1 goes to `onStream` like any other.
   */
  hello?: (stream: Stream, peer: TestPeer) => unknown;
  /** Handles every other dialer-opened stream (default: echo the payload back). */
  onStream?: (stream: Stream, peer: TestPeer) => unknown;
  /** Called when a peer is attached, before any message. */
  onPeer?: (peer: TestPeer) => void;
}

/** One accepted socket. */
export class TestPeer {
  /** The acceptor-side session. */
  readonly session: Session;
  /** Every stream the dialer opened, in order. */
  readonly streams: Stream[] = [];
  /** The hello's payload and headers, once received. */
  hello: { payload: unknown; headers: Record<string, unknown> | null } | undefined;
  /** How the session ended, once it did. */
  ended: { code: number; reason: string; local: boolean } | undefined;
  /** Resolves when the session ended. */
  readonly closed: Promise<{ code: number; reason: string; local: boolean }>;
  /** Errors the session reported. */
  readonly errors: unknown[] = [];

  constructor(
    sink: { send(data: string | Uint8Array): void; close(code: number, reason: string): void },
    options: TestAcceptorOptions,
  ) {
    let resolveClosed!: (info: { code: number; reason: string; local: boolean }) => void;
    this.closed = new Promise((resolve) => resolveClosed = resolve);
    this.session = new Session(sink, {
      side: 'acceptor',
      codec: options.codec ?? jsonCodec,
      onStream: (stream) => {
        this.streams.push(stream);
        if (stream.id === 1 && options.hello) {
          this.hello = { payload: stream.payload, headers: stream.headers };
          return options.hello(stream, this);
        }
        return (options.onStream ?? ((s: Stream) => s.payload))(stream, this);
      },
      onError: (error) => this.errors.push(error),
      onClose: (info) => {
        this.ended = info;
        resolveClosed(info);
      },
    }, acceptorPolicy);
  }

  /** Closes the socket from the acceptor's side with `code`. */
  close(code: number, reason: string = ''): void {
    this.session.close(code, reason);
  }
}

/** Accepts sockets into {@linkcode TestPeer}s. */
export class TestAcceptor {
  /** Every peer so far, in order. */
  readonly peers: TestPeer[] = [];
  /** What peers do; replaceable between dials. */
  options: TestAcceptorOptions;

  constructor(options: TestAcceptorOptions = {}) {
    this.options = options;
  }

  /** The most recent peer. */
  get last(): TestPeer {
    const peer = this.peers.at(-1);
    if (!peer) throw new Error('Expected a peer: none was accepted');
    return peer;
  }

  /** Attaches a standard server-side WebSocket. */
  attach(socket: {
    send(data: string | Uint8Array): void;
    close(code?: number, reason?: string): void;
    addEventListener(type: string, listener: (event: Event) => void): void;
    binaryType: string;
  }): TestPeer {
    try {
      socket.binaryType = 'arraybuffer';
    } catch {
      // Blob delivery is handled below
    }
    const peer = new TestPeer({
      send: (data) => socket.send(data),
      close: (code, reason) => socket.close(code, reason),
    }, this.options);
    let chain: Promise<void> = Promise.resolve();
    socket.addEventListener('message', (event) => {
      const data = (event as MessageEvent).data;
      if (data instanceof Blob) {
        chain = chain.then(async () => peer.session.receive(await data.arrayBuffer()));
      } else {
        chain = chain.then(() => peer.session.receive(data));
      }
    });
    socket.addEventListener('close', (event) => {
      const e = event as CloseEvent;
      void chain.then(() => peer.session.closed(e.code || 1006, e.reason ?? ''));
    });
    this.#added(peer);
    return peer;
  }

  /** The push form: returns the peer and the functions the server calls. */
  attachSink(
    sink: { send(data: string | Uint8Array): void; close(code: number, reason: string): void },
  ): {
    peer: TestPeer;
    message(data: string | ArrayBuffer | ArrayBufferView): void;
    closed(code: number, reason: string): void;
  } {
    const peer = new TestPeer(sink, this.options);
    this.#added(peer);
    return {
      peer,
      message: (data) => peer.session.receive(data),
      closed: (code, reason) => peer.session.closed(code || 1006, reason),
    };
  }

  #added(peer: TestPeer): void {
    this.peers.push(peer);
    this.options.onPeer?.(peer);
  }
}

/** How {@linkcode serveFake} treats one dial. */
export type DialDecision =
  | { kind: 'accept'; protocol?: string }
  | { kind: 'refuse' }
  | { kind: 'hang' };

/**
 * Makes `server` accept every dial (with the first offered protocol) into `acceptor`, unless
 * `decide` says otherwise for that dial.
 */
export function serveFake(
  server: FakeServer,
  acceptor: TestAcceptor,
  decide?: (connection: FakeConnection, index: number) => DialDecision,
): void {
  server.onConnection = (connection) => {
    const index = server.connections.length - 1;
    const decision = decide?.(connection, index) ?? { kind: 'accept' };
    if (decision.kind === 'hang') return;
    queueMicrotask(() => {
      if (decision.kind === 'refuse') {
        connection.refuse();
        return;
      }
      acceptor.attach(connection.server);
      connection.accept(decision.protocol);
    });
  };
}
