/**
 * Peers not yet accepted and the order around the hello, on real sockets: one suite, run by
 * tests/deno, tests/bun and tests/node against the project's `Acceptor` served on 127.0.0.1 on an
 * ephemeral port, dialled by the project's `connect()`. Real time with short delays; every wait is
 * bounded and everything is closed in `finally`.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { connect, type Connection, type DialerSocketConstructor, StreamError } from 'muxws';
import { Acceptor, type PeerCloseInfo } from 'muxws/acceptor';
import { waitFor, within } from './_wait.ts';

/** A running server: where to dial, and how to stop. */
export interface AdmissionServer {
  /** The `ws://127.0.0.1:<port>/<path>` URL dialers use. */
  url: string;
  /** Stops everything. */
  close(): Promise<void> | void;
}

/** `base` with every message its sockets receive recorded, as text, in `received`. */
function recording(base: DialerSocketConstructor, received: string[]): DialerSocketConstructor {
  const Base = base as unknown as new (url: string, protocols?: string[]) => WebSocket;
  return class extends Base {
    constructor(url: string, protocols?: string[]) {
      super(url, protocols);
      this.addEventListener('message', (event) => received.push(String(event.data)));
    }
  } as unknown as DialerSocketConstructor;
}

/**
 * An acceptor whose hello tags each peer `room` and answers `welcome <payload>`, and whose streams
 * broadcast their payload to `room`. The hello whose payload is `gate` waits: `helloStarted`
 * resolves when it has begun, and `release()` lets it finish.
 */
function gatedRoom(gate: string): {
  acceptor: Acceptor;
  helloStarted: Promise<void>;
  release: () => void;
} {
  let started!: () => void;
  const helloStarted = new Promise<void>((resolve) => started = resolve);
  let release!: () => void;
  const lookup = new Promise<void>((resolve) => release = resolve);
  const acceptor: Acceptor = new Acceptor({
    idleTimeoutMs: 60_000,
    onHello: async ({ payload }, peer) => {
      peer.tags.add('room');
      if (payload === gate) {
        started();
        await lookup;
      }
      return `welcome ${payload}`;
    },
    onStream: (stream) => acceptor.broadcast('room', stream.payload),
  });
  return { acceptor, helloStarted, release };
}

/** Runs the suite on one server flavour. */
export function admissionRealSuite(
  name: string,
  serve: (acceptor: Acceptor) => Promise<AdmissionServer> | AdmissionServer,
  extra: { WebSocket?: DialerSocketConstructor } = {},
): void {
  test(`a refused hello closes its socket at once with 1000, and the redial with fresh credentials succeeds (${name}, WSM-LIM-003)`, async () => {
    const opened = new Map<unknown, number>();
    const ended: Array<PeerCloseInfo & { afterMs: number }> = [];
    const acceptor = new Acceptor({
      idleTimeoutMs: 60_000,
      onPeer: (peer) => void opened.set(peer, Date.now()),
      onHello: ({ payload }, peer) => {
        if (payload === 'expired') throw new StreamError('unauthorized', 'Token expired');
        peer.tags.add('room');
        return `hi ${payload}`;
      },
      onPeerClose: (peer, info) =>
        void ended.push({ ...info, afterMs: Date.now() - (opened.get(peer) ?? 0) }),
    });
    const server = await serve(acceptor);
    const tokens = ['first', 'expired', 'fresh'];
    let asked = 0;
    const events: string[] = [];
    let connection: Connection | undefined;
    try {
      connection = await within(
        connect(server.url, {
          ...extra,
          heartbeat: false,
          draw: () => 0,
          reconnect: { initialDelayMs: 20, maxDelayMs: 50 },
          hello: () => ({ payload: tokens[Math.min(asked++, tokens.length - 1)] }),
          onOpen: (info) => events.push(`open ${info.welcome}`),
          onReconnecting: (info) => events.push(`reconnecting ${(info.error as Error).name}`),
        }),
        5000,
        'the first connection',
      );
      const [first] = acceptor.peers();
      first.close(1000, 'bye');
      await waitFor(() => events.length >= 4, 5000, 'the redial with fresh credentials');
      assert.deepEqual(events, [
        'open hi first',
        'reconnecting Error',
        'reconnecting HelloRejectedError',
        'open hi fresh',
      ]);
      assert.equal(connection.state, 'open');
      assert.equal(connection.welcome, 'hi fresh');
      const refused = ended[1];
      assert.deepEqual([refused.code, refused.reason], [1000, 'hello rejected']);
      assert.ok(refused.afterMs < 1000, `the refused peer closed after ${refused.afterMs} ms`);
      assert.equal(acceptor.stats.peers, 1);
      assert.equal(await acceptor.broadcast('room', 'still here'), 1);
    } finally {
      await connection?.close();
      await acceptor.close({ drainMs: 0 });
      await server.close();
    }
  });

  test(`broadcasts to a tag onHello adds before it awaits reach the dialer after onOpen and after connect() resolved, in order (${name}, WSM-API-004)`, async () => {
    const { acceptor, helloStarted, release } = gatedRoom('late');
    const server = await serve(acceptor);
    const events: string[] = [];
    const received: string[] = [];
    let speaker: Connection | undefined;
    let late: Connection | undefined;
    let pending: Promise<Connection> | undefined;
    try {
      speaker = await within(
        connect(server.url, { ...extra, heartbeat: false, hello: { payload: 'speaker' } }),
        5000,
        'the speaker',
      );
      const base = extra.WebSocket ??
        (globalThis as { WebSocket?: DialerSocketConstructor }).WebSocket!;
      pending = connect(server.url, {
        ...extra,
        WebSocket: recording(base, received),
        heartbeat: false,
        reconnect: false,
        hello: { payload: 'late' },
        onOpen: () => events.push('open'),
        onPublish: ({ payload }) => events.push(`publish ${payload}`),
      });
      // What follows `await connect()` in an application runs before the first onPublish.
      void (async () => {
        await pending;
        events.push('connect resolved');
      })().catch(() => {});
      await within(helloStarted, 5000, 'the late hello');
      for (const said of [1, 2, 3]) {
        assert.equal(await within(speaker.request(said), 5000, `say ${said}`), 2);
      }
      assert.deepEqual(events, [], 'nothing reaches a dialer before its hello is acknowledged');
      release();
      late = await within(pending, 5000, 'the late connection');
      await waitFor(() => events.length >= 5, 5000, 'the three broadcasts');
      assert.deepEqual(events, [
        'open',
        'connect resolved',
        'publish 1',
        'publish 2',
        'publish 3',
      ]);
      // On the wire: the welcome (DATA with END on stream 1) first, then the broadcasts.
      assert.deepEqual(received.slice(0, 4), [
        '[2,1,1,"welcome late"]',
        '[9,"room",null,1]',
        '[9,"room",null,2]',
        '[9,"room",null,3]',
      ]);
      assert.equal(await within(speaker.request(4), 5000, 'say 4'), 2);
      await waitFor(() => events.length >= 6, 5000, 'the broadcast after the welcome');
      assert.equal(events[5], 'publish 4');
    } finally {
      release();
      await pending?.catch(() => {});
      await late?.close();
      await speaker?.close();
      await acceptor.close({ drainMs: 0 });
      await server.close();
    }
  });

  test(`on a redial, broadcasts sent while the new hello is handled reach the dialer after its onOpen, in order (${name}, WSM-API-004)`, async () => {
    const { acceptor, helloStarted, release } = gatedRoom('again');
    const server = await serve(acceptor);
    const events: string[] = [];
    const hellos = ['first', 'again'];
    let dialled = 0;
    let speaker: Connection | undefined;
    let redialler: Connection | undefined;
    try {
      speaker = await within(
        connect(server.url, { ...extra, heartbeat: false, hello: { payload: 'speaker' } }),
        5000,
        'the speaker',
      );
      redialler = await within(
        connect(server.url, {
          ...extra,
          heartbeat: false,
          draw: () => 0,
          reconnect: { initialDelayMs: 10, maxDelayMs: 10 },
          hello: () => ({ payload: hellos[Math.min(dialled++, hellos.length - 1)] }),
          onOpen: (info) => events.push(`open ${info.welcome} reconnected=${info.reconnected}`),
          onPublish: ({ payload }) => events.push(`publish ${payload}`),
        }),
        5000,
        'the first connection',
      );
      events.push('connect resolved');
      const first = [...acceptor.peers()].find((peer) => peer.hello?.payload === 'first')!;
      first.close(1000, 'bye');
      await within(helloStarted, 5000, 'the hello of the redial');
      for (const said of [1, 2, 3]) {
        await within(speaker.request(said), 5000, `say ${said}`);
      }
      assert.deepEqual(events, ['open welcome first reconnected=false', 'connect resolved']);
      release();
      await waitFor(() => events.length >= 6, 5000, 'the three broadcasts after the redial');
      assert.deepEqual(events, [
        'open welcome first reconnected=false',
        'connect resolved',
        'open welcome again reconnected=true',
        'publish 1',
        'publish 2',
        'publish 3',
      ]);
    } finally {
      release();
      await redialler?.close();
      await speaker?.close();
      await acceptor.close({ drainMs: 0 });
      await server.close();
    }
  });
}
