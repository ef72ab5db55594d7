/**
 * The dialer on real sockets: one suite, run by tests/deno, tests/bun and tests/node against the
 * project's `Acceptor` on a real server bound to 127.0.0.1 on an ephemeral port. Real time with
 * short delays; every wait is bounded and everything is closed in `finally`.
 *
 * Each runtime file passes a `start(acceptor)` that serves the acceptor and returns the port, a
 * `stopListening()` that refuses new connections while keeping the open ones, and `close()`.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  type CloseInfo,
  connect,
  ConnectError,
  type Connection,
  type ConnectOptions,
  type DialContext,
  type DialerSocketConstructor,
  type ReconnectingInfo,
  type StandardSchemaV1,
  StreamResetError,
} from 'muxws';
import { Acceptor, type Peer } from 'muxws/acceptor';

/** A running test server. */
export interface RealServer {
  /** The port on 127.0.0.1. */
  port: number;
  /** Refuses new connections; open sockets stay open. */
  stopListening(): Promise<void> | void;
  /** Stops everything. */
  close(): Promise<void> | void;
}

/** Resolves when `check()` is true, polling every 5 ms; rejects after `ms`. */
export async function until(check: () => boolean, ms: number, what: string): Promise<void> {
  const deadline = Date.now() + ms;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`Timed out after ${ms} ms waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

/** Rejects when `promise` takes longer than `ms`; clears its timer either way. */
async function within<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  try {
    return await Promise.race([
      promise,
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error(`Timed out after ${ms} ms: ${what}`)), ms);
      }),
    ]);
  } finally {
    clearTimeout(timer);
  }
}

/** Runs the real-socket dialer suite on one server flavour. */
export function dialerRealSuite(
  name: string,
  start: (acceptor: Acceptor) => Promise<RealServer> | RealServer,
  extra: { WebSocket?: DialerSocketConstructor } = {},
): void {
  /** One acceptor + server + dialer, with everything the dialer reported recorded. */
  async function setup(options: ConnectOptions = {}) {
    const peers: Peer[] = [];
    const acceptor = new Acceptor({
      onPeer: (peer) => peers.push(peer),
      onStream: (stream, peer) => {
        if (stream.id === 1 && peer.data.hello === undefined) {
          peer.data.hello = stream.payload;
          return { welcome: 'hello, ' + (stream.payload as { client: string }).client };
        }
        return { echo: stream.payload };
      },
    });
    const server = await start(acceptor);
    const contexts: DialContext[] = [];
    const dialedAt: number[] = [];
    const closes: CloseInfo[] = [];
    const reconnecting: Array<ReconnectingInfo & { at: number }> = [];
    const opens: boolean[] = [];
    let connection: Connection | undefined;
    const cleanup = async () => {
      try {
        await connection?.close();
      } finally {
        try {
          await within(acceptor.close({ drainMs: 0, spreadMs: 0 }), 2000, 'acceptor.close()');
        } finally {
          await within(Promise.resolve(server.close()), 2000, 'server close');
        }
      }
    };
    try {
      connection = await within(
        connect((ctx) => {
          contexts.push(ctx);
          dialedAt.push(Date.now());
          return `ws://127.0.0.1:${server.port}/ws`;
        }, {
          WebSocket: extra.WebSocket,
          hello: { payload: { client: name } },
          heartbeat: false,
          draw: () => 0,
          handshakeTimeoutMs: 2000,
          onStream: (stream) => ({ pong: stream.payload }),
          onOpen: (info) => opens.push(info.reconnected),
          onClose: (info) => closes.push(info),
          onReconnecting: (info) => reconnecting.push({ ...info, at: Date.now() }),
          ...options,
        }),
        5000,
        'connect()',
      );
    } catch (error) {
      await cleanup();
      throw error;
    }
    return {
      connection,
      acceptor,
      server,
      peers,
      contexts,
      dialedAt,
      closes,
      reconnecting,
      opens,
      cleanup,
    };
  }

  test(`WSM-DIAL-004 on real sockets (${name}): the hello is acknowledged with a welcome, requests are answered, and the acceptor opens a stream to the dialer`, async () => {
    const t = await setup();
    try {
      assert.equal(t.connection.state, 'open');
      assert.deepEqual(t.connection.welcome, { welcome: `hello, ${name}` });
      assert.deepEqual(t.peers[0].data.hello, { client: name });
      assert.deepEqual(await within(t.connection.request({ n: 1 }), 2000, 'request'), {
        echo: { n: 1 },
      });
      assert.deepEqual(await within(t.peers[0].request('hi'), 2000, 'server request'), {
        pong: 'hi',
      });
      const stream = t.connection.open('streamed', { end: true });
      const got: unknown[] = [];
      for await (const message of stream) got.push(message);
      assert.deepEqual(got, [{ echo: 'streamed' }]);
    } finally {
      await t.cleanup();
    }
  });

  test(`WSM-RCN-020 on real sockets (${name}): close 1012 takes the fast path with resumedFromServiceRestart`, async () => {
    const t = await setup({
      serviceRestartDelayMs: 20,
      reconnect: { initialDelayMs: 1000, jitter: 0 },
    });
    try {
      const lostAt = Date.now();
      t.peers[0].close(1012, 'restart');
      await until(() => t.opens.length === 2, 3000, 'the redial');
      assert.deepEqual(t.opens, [false, true]);
      assert.equal(t.closes[0].code, 1012);
      assert.equal(t.closes[0].willRetry, true);
      assert.equal(t.closes[0].delayMs, 20);
      assert.equal(t.reconnecting[0].delayMs, 20);
      assert.equal(t.contexts[1].resumedFromServiceRestart, true);
      assert.equal(t.contexts[1].attempt, 0);
      const gap = t.dialedAt[1] - lostAt;
      assert(
        gap >= 15 && gap < 900,
        `redialled ${gap} ms after the loss, not on the 1000 ms backoff`,
      );
      assert.deepEqual(await within(t.connection.request('again'), 2000, 'request'), {
        echo: 'again',
      });
      assert.equal(t.peers.length, 2);
    } finally {
      await t.cleanup();
    }
  });

  test(`WSM-RCN-020 on real sockets (${name}): close 4401 is terminal`, async () => {
    const t = await setup({ reconnect: { initialDelayMs: 20 } });
    try {
      t.peers[0].close(4401, 'unauthorized');
      await until(() => t.closes.length === 1, 3000, 'onClose');
      assert.equal(t.closes[0].code, 4401);
      assert.equal(t.closes[0].willRetry, false);
      assert.equal(t.connection.state, 'closed');
      await new Promise((resolve) => setTimeout(resolve, 100));
      assert.equal(t.contexts.length, 1);
      assert.equal(t.reconnecting.length, 0);
    } finally {
      await t.cleanup();
    }
  });

  test(`WSM-RCN-002 on real sockets (${name}): a server that stops listening is redialled on the backoff schedule until maxAttempts`, async () => {
    const t = await setup({
      reconnect: { initialDelayMs: 40, factor: 2, maxDelayMs: 1000, jitter: 0, maxAttempts: 4 },
    });
    try {
      await t.server.stopListening();
      t.peers[0].close(1011, 'backend down');
      await until(() => t.closes.length === 2, 5000, 'giving up');
      assert.deepEqual(t.closes.map((c) => c.willRetry), [true, false]);
      // 1011 from the peer, or 1001 where stopping the server also ends open sockets (Deno)
      assert([1011, 1001].includes(t.closes[0].code), `closed with ${t.closes[0].code}`);
      assert.equal(t.closes[1].attempts, 4);
      assert.deepEqual(t.reconnecting.map((r) => r.delayMs), [40, 80, 160, 320]);
      assert.deepEqual(t.contexts.slice(1).map((c) => c.attempt), [0, 1, 2, 3]);
      // each redial started no earlier than its announced delay (and not much later)
      for (let k = 0; k < 4; k++) {
        const gap = t.dialedAt[k + 1] - t.reconnecting[k].at;
        const delay = t.reconnecting[k].delayMs;
        assert(gap >= delay - 2 && gap < delay + 500, `redial ${k}: ${gap} ms for ${delay} ms`);
      }
      assert.equal(t.connection.state, 'closed');
      await new Promise((resolve) => setTimeout(resolve, 100));
      assert.equal(t.contexts.length, 5);
    } finally {
      await t.cleanup();
    }
  });

  test(`a route's upload schema passes good uploads and resets the stream with invalid at a bad one, on real sockets (${name}) (WSM-LIM-005)`, async () => {
    const text: StandardSchemaV1<unknown, string> = {
      '~standard': {
        version: 1,
        vendor: 'test',
        validate: (value) =>
          typeof value === 'string' ? { value } : { issues: [{ message: 'Expected string' }] },
      },
    };
    type LinesApi = { lines: { upload: string; output: number } };
    const acceptor = new Acceptor<LinesApi>({
      routes: {
        lines: {
          upload: text,
          handler: async (_input, { stream }) => {
            let count = 0;
            for await (const line of stream) count += line.length;
            return count;
          },
        },
      },
    });
    const server = await start(acceptor as unknown as Acceptor);
    let connection: Connection<LinesApi> | undefined;
    try {
      connection = await within(
        connect<LinesApi>(`ws://127.0.0.1:${server.port}/ws`, {
          WebSocket: extra.WebSocket,
          reconnect: false,
          heartbeat: false,
          handshakeTimeoutMs: 2000,
        }),
        5000,
        'connect()',
      );
      const good = connection.stream('lines', undefined);
      await good.write('ab');
      await good.end('c');
      const answers: unknown[] = [];
      for await (const answer of good) answers.push(answer);
      assert.deepEqual(answers, [3]);
      const bad = connection.stream('lines', undefined);
      await bad.write({ text: 'ab' } as unknown as string);
      const error = await within(bad.closed.catch((e) => e), 2000, 'the reset');
      assert(error instanceof StreamResetError, String(error));
      assert.equal(error.code, 'invalid');
      assert.match(error.message, /Invalid upload: Expected string$/);
    } finally {
      await connection?.close();
      await within(acceptor.close({ drainMs: 0, spreadMs: 0 }), 2000, 'acceptor.close()');
      await within(Promise.resolve(server.close()), 2000, 'server close');
    }
  });
}

/**
 * The first-connection errors a developer can act on (WSM-APP-007), on one runtime's own
 * WebSocket: `start404()` serves every request with HTTP 404 on 127.0.0.1 (a wrong path).
 */
export function dialerRefusalSuite(
  name: string,
  start404: () => Promise<RealServer> | RealServer,
): void {
  test(`a first connection refused with 404 says so and names the usual causes on ${name} (WSM-APP-007)`, async () => {
    const server = await start404();
    try {
      const error = await within(
        connect(`ws://127.0.0.1:${server.port}/wrong`, {
          reconnect: false,
          handshakeTimeoutMs: 2000,
        })
          .catch((e) => e),
        5000,
        'connect()',
      );
      assert(error instanceof ConnectError, `rejected with ${error}`);
      assert.match(error.message, /before it opened: .*404/);
      assert.match(error.message, /the usual causes are nothing listening at the URL/);
    } finally {
      await within(Promise.resolve(server.close()), 2000, 'server close');
    }
  });

  test(`a first connection to a port nothing listens on says why the runtime gave on ${name} (WSM-APP-007)`, async () => {
    const server = await start404();
    const port = server.port;
    await within(Promise.resolve(server.close()), 2000, 'server close');
    const error = await within(
      connect(`ws://127.0.0.1:${port}/`, { reconnect: false, handshakeTimeoutMs: 2000 })
        .catch((e) => e),
      5000,
      'connect()',
    );
    assert(error instanceof ConnectError, `rejected with ${error}`);
    assert.match(error.message, /before it opened: \S/);
    assert.match(error.message, /the usual causes are nothing listening at the URL/);
  });

  test(`a first connection with wss:// to a server without TLS names TLS among the usual causes on ${name}`, async () => {
    const server = await start404();
    try {
      const error = await within(
        connect(`wss://127.0.0.1:${server.port}/ws`, { reconnect: false, handshakeTimeoutMs: 2000 })
          .catch((e) => e),
        5000,
        'connect()',
      );
      assert(error instanceof ConnectError, `rejected with ${error}`);
      assert.match(error.message, /^Cannot connect to wss:\/\/127\.0\.0\.1:\d+\/ws: /);
      assert.match(error.message, /, wss:\/\/ to a server without TLS, /);
    } finally {
      await within(Promise.resolve(server.close()), 2000, 'server close');
    }
  });
}
