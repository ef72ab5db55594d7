/**
 * The behavioural suite every acceptor runtime passes: raw Deno, Hono on Deno, raw
 * Bun, Hono on Bun, Hono on Node. {@linkcode acceptorSuite} registers the same `node:test` cases
 * for one runtime, given a factory that serves an {@linkcode Acceptor} on a real server on
 * 127.0.0.1 with an ephemeral port.
 *
 * The dialer is the project's `connect()`; on Node, which has no global `WebSocket`, the caller
 * passes the `ws` package's. Foreign origins and subprotocol selection are checked with a raw
 * HTTP upgrade over `node:net`, since a `WebSocket` cannot set `Origin` or read the response
 * headers. Every wait is bounded, and every dialer, acceptor and server is closed in `finally`.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { connect as tcpConnect } from 'node:net';
import { Acceptor, type AcceptorOptions, type Peer } from 'muxws/acceptor';
import {
  type CloseInfo,
  type Codec,
  connect,
  type Connection,
  type ConnectOptions,
  type DialContext,
  jsonCodec,
  NotConnectedError,
  type PublishMessage,
  type ReconnectingInfo,
  type Stream,
} from 'muxws';
import { msgpackCodec } from 'muxws/msgpack';

/** A running server for one acceptor. */
export interface SuiteServer {
  /** The port it listens on, on 127.0.0.1. */
  readonly port: number;
  /** The path of the WebSocket endpoint, e.g. `/ws`. */
  readonly path: string;
  /** Stops the server. */
  close(): Promise<void>;
}

/** Starts a server for `acceptor` on 127.0.0.1 and an ephemeral port. */
export type ServerFactory = (acceptor: Acceptor) => Promise<SuiteServer>;

/** Options of {@linkcode acceptorSuite}. */
export interface SuiteOptions {
  /** The dialer's `WebSocket` constructor (Node: the `ws` package's). */
  WebSocket?: ConnectOptions['WebSocket'];
}

/** Rejects when `promise` does not settle within `ms`. */
export async function within<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} did not happen within ${ms} ms`)), ms);
  });
  try {
    return await Promise.race([promise, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/** Polls `check` every 5 ms until it is true; fails after `ms`. */
export async function eventually(check: () => boolean, ms: number, what: string): Promise<void> {
  const deadline = Date.now() + ms;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`${what} did not happen within ${ms} ms`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

/**
 * The text of a WebSocket upgrade request for `path` on 127.0.0.1:`port` (a fixed key, version
 * 13), `headers` after the standard ones, ending with the blank line.
 */
export function upgradeRequest(
  port: number,
  path: string,
  headers: Record<string, string> = {},
): string {
  const lines = [
    `GET ${path} HTTP/1.1`,
    `Host: 127.0.0.1:${port}`,
    'Upgrade: websocket',
    'Connection: Upgrade',
    'Sec-WebSocket-Version: 13',
    'Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==',
    ...Object.entries(headers).map(([name, value]) => `${name}: ${value}`),
  ];
  return lines.join('\r\n') + '\r\n\r\n';
}

/** The answer to a raw HTTP upgrade request. */
export interface RawAnswer {
  /** The HTTP status. */
  status: number;
  /** The response headers, names in lower case. */
  headers: Record<string, string>;
}

/**
 * Sends a WebSocket upgrade request over a plain TCP socket and reads the response head, then
 * drops the connection.
 */
export function rawUpgrade(
  port: number,
  path: string,
  headers: Record<string, string>,
): Promise<RawAnswer> {
  return new Promise((resolve, reject) => {
    const socket = tcpConnect({ host: '127.0.0.1', port });
    let head = '';
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new Error('The raw upgrade got no answer within 5000 ms'));
    }, 5000);
    socket.on('connect', () => socket.write(upgradeRequest(port, path, headers)));
    socket.on('data', (chunk: Uint8Array) => {
      head += new TextDecoder('latin1').decode(chunk);
      const end = head.indexOf('\r\n\r\n');
      if (end === -1) return;
      clearTimeout(timer);
      socket.destroy();
      const [statusLine, ...rest] = head.slice(0, end).split('\r\n');
      const answer: RawAnswer = { status: Number(statusLine.split(' ')[1]), headers: {} };
      for (const line of rest) {
        const colon = line.indexOf(':');
        answer.headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
      }
      resolve(answer);
    });
    socket.on('error', (error: Error) => {
      clearTimeout(timer);
      reject(error);
    });
  });
}

/** Every message of a stream's readable side (Node 20 has no `Array.fromAsync`). */
async function collect(stream: Stream): Promise<unknown[]> {
  const out: unknown[] = [];
  for await (const value of stream) out.push(value);
  return out;
}

/** A gate a handler waits on until the test opens it. */
function gate(): { wait: Promise<void>; open: () => void } {
  let open!: () => void;
  const wait = new Promise<void>((resolve) => open = resolve);
  return { wait, open };
}

interface Harness {
  acceptor: Acceptor;
  server: SuiteServer;
  url: string;
  peers: Peer[];
  errors: unknown[];
  gates: Array<{ wait: Promise<void>; open: () => void }>;
  dial(options?: ConnectOptions & { target?: ConnectTarget }): Promise<Dialer>;
}

type ConnectTarget = Parameters<typeof connect>[0];

interface Dialer {
  connection: Connection;
  published: PublishMessage[];
  closes: CloseInfo[];
  reconnecting: ReconnectingInfo[];
}

/** The application every runtime serves: a hello that tags the peer, and a few stream kinds. */
function appOptions(peers: Peer[], errors: unknown[], gates: Harness['gates']) {
  return {
    onPeer: (peer: Peer) => peers.push(peer),
    onError: (error: unknown) => errors.push(error),
    onStream: async (stream: Stream, peer: Peer) => {
      const payload = stream.payload as Record<string, unknown>;
      if (stream.id === 1) {
        const { user, rooms } = payload as { user: string; rooms: string[] };
        peer.data.user = user;
        peer.tags.add(`user:${user}`).add('all');
        for (const room of rooms) peer.tags.add(`room:${room}`);
        return { welcome: user, peer: peer.id };
      }
      switch (payload.op) {
        case 'echo':
          return { echo: payload.value, headers: stream.headers };
        case 'count':
          for (let i = 1; i <= (payload.n as number); i++) await stream.write(i);
          return 'done';
        case 'sum': {
          let sum = 0;
          for await (const value of stream) sum += value as number;
          return sum;
        }
        case 'ask':
          return { dialerSaid: await peer.request({ question: payload.question }) };
        case 'wait': {
          const g = gate();
          gates.push(g);
          await g.wait;
          return 'released';
        }
      }
      return undefined;
    },
  };
}

/** The dialer's side of the application: answers questions and sums streams. */
async function dialerOnStream(stream: Stream): Promise<unknown> {
  const payload = stream.payload as Record<string, unknown>;
  if (typeof payload?.question === 'string') return `answer to ${payload.question}`;
  const got: unknown[] = [];
  for await (const value of stream) got.push(value);
  return { got };
}

async function withHarness(
  start: ServerFactory,
  suite: SuiteOptions,
  body: (h: Harness) => Promise<void>,
  codec: Codec = jsonCodec,
  extra: AcceptorOptions = {},
): Promise<void> {
  const peers: Peer[] = [];
  const errors: unknown[] = [];
  const gates: Harness['gates'] = [];
  const acceptor = new Acceptor({
    ...appOptions(peers, errors, gates),
    idleTimeoutMs: 30_000,
    codec,
    ...extra,
  });
  const dialers: Connection[] = [];
  let server: SuiteServer | undefined;
  try {
    server = await within(start(acceptor), 10_000, 'the server start');
    const url = `ws://127.0.0.1:${server.port}${server.path}`;
    const h: Harness = {
      acceptor,
      server,
      url,
      peers,
      errors,
      gates,
      async dial(options = {}) {
        const d: Dialer = { connection: undefined!, published: [], closes: [], reconnecting: [] };
        const { target = url, ...rest } = options;
        d.connection = await within(
          connect(target, {
            WebSocket: suite.WebSocket,
            codec,
            reconnect: false,
            heartbeat: false,
            onStream: dialerOnStream,
            onPublish: (message) => d.published.push(message),
            onClose: (info) => d.closes.push(info),
            onReconnecting: (info) => d.reconnecting.push(info),
            ...rest,
          }),
          5000,
          'connect()',
        );
        dialers.push(d.connection);
        return d;
      },
    };
    await body(h);
  } finally {
    for (const g of gates) g.open();
    await Promise.allSettled(dialers.map((c) => within(c.close(), 5000, 'a dialer close')));
    await within(acceptor.close({ drainMs: 0 }), 5000, 'acceptor.close()').catch(() => {});
    if (server) await within(server.close(), 5000, 'the server stop');
  }
}

/**
 * Registers the behavioural suite for one runtime.
 *
 * @param runtime The runtime's name, prefixed to each test name, e.g. `Hono on Bun`.
 * @param start Serves an acceptor on 127.0.0.1 and an ephemeral port.
 * @param suite The dialer's `WebSocket` where there is no global one.
 */
export function acceptorSuite(
  runtime: string,
  start: ServerFactory,
  suite: SuiteOptions = {},
): void {
  test(`${runtime}: WSM-ACC-002 a dialer's hello is acknowledged with a welcome, and requests and streams work both ways`, async () => {
    await withHarness(start, suite, async (h) => {
      const ada = await h.dial({ hello: { payload: { user: 'ada', rooms: ['a'] } } });
      const c = ada.connection;
      assert.equal(h.peers.length, 1);
      const peer = h.peers[0];
      assert.deepEqual(c.welcome, { welcome: 'ada', peer: peer.id });
      assert.deepEqual(peer.data, { user: 'ada' });
      assert.deepEqual([...peer.tags].sort(), ['all', 'room:a', 'user:ada']);

      // dialer -> acceptor: a request, a stream the acceptor writes to, one the dialer writes to
      assert.deepEqual(
        await within(
          c.request({ op: 'echo', value: 42 }, { headers: { trace: 't1' } }),
          5000,
          'echo',
        ),
        { echo: 42, headers: { trace: 't1' } },
      );
      const counted: unknown[] = [];
      for await (const value of c.open({ op: 'count', n: 3 }, { end: true })) counted.push(value);
      assert.deepEqual(counted, [1, 2, 3, 'done']);
      const upload = c.open({ op: 'sum' });
      for (const n of [1, 2, 3, 4]) await upload.write(n);
      await upload.end(5);
      const [sum] = await within(collect(upload), 5000, 'the sum');
      assert.equal(sum, 15);

      // acceptor -> dialer: a request, a stream the acceptor writes to, and a nested one
      assert.equal(
        await within(peer.request({ question: 'name' }), 5000, 'peer.request()'),
        'answer to name',
      );
      const down = peer.open({ op: 'push' });
      for (const word of ['x', 'y']) await down.write(word);
      await down.end('z');
      assert.deepEqual(await within(collect(down), 5000, 'the pushed stream'), [{
        got: ['x', 'y', 'z'],
      }]);
      assert.deepEqual(
        await within(c.request({ op: 'ask', question: 'age' }), 5000, 'a nested request'),
        { dialerSaid: 'answer to age' },
      );
      assert.deepEqual(h.errors, []);
    });
  });

  test(`${runtime}: WSM-ACC-005 tags and broadcast reach exactly the tagged peers`, async () => {
    await withHarness(start, suite, async (h) => {
      const ada = await h.dial({ hello: { payload: { user: 'ada', rooms: ['a'] } } });
      const bob = await h.dial({ hello: { payload: { user: 'bob', rooms: ['a', 'b'] } } });
      const cy = await h.dial({ hello: { payload: { user: 'cy', rooms: ['b'] } } });
      assert.equal([...h.acceptor.peers('room:a')].length, 2);
      assert.equal(await h.acceptor.broadcast('room:a', 'to a', { except: ['user:bob'] }), 1);
      assert.equal(await h.acceptor.broadcast('room:b', 'to b', { headers: { from: 'test' } }), 2);
      assert.equal(await h.acceptor.broadcast('room:none', 'to nobody'), 0);
      // A last broadcast to every peer: once it arrived, everything before it has (one socket
      // delivers in order), so what each dialer holds then is all it will ever get.
      assert.equal(await h.acceptor.broadcast('all', 'barrier'), 3);
      await eventually(
        () => [ada, bob, cy].every((d) => d.published.some((m) => m.payload === 'barrier')),
        5000,
        'the barrier broadcast',
      );
      assert.deepEqual(ada.published, [
        { tag: 'room:a', headers: null, payload: 'to a' },
        { tag: 'all', headers: null, payload: 'barrier' },
      ]);
      for (const d of [bob, cy]) {
        assert.deepEqual(d.published, [
          { tag: 'room:b', headers: { from: 'test' }, payload: 'to b' },
          { tag: 'all', headers: null, payload: 'barrier' },
        ]);
      }
      assert.equal(h.acceptor.stats.delivered, 6);
      assert.equal(h.acceptor.stats.dropped, 0);
    });
  });

  test(`${runtime}: WSM-ACC-008 close() drains with GOAWAY and the dialer takes the fast path`, async () => {
    await withHarness(start, suite, async (h) => {
      const contexts: DialContext[] = [];
      const d = await h.dial({
        target: (ctx) => {
          contexts.push(ctx);
          // The closed acceptor would answer a redial with 503; recording the redial's context
          // is enough, so it fails before a socket exists.
          if (ctx.reason === 'reconnect') throw new Error('redial observed');
          return h.url;
        },
        hello: { payload: { user: 'ada', rooms: [] } },
        // Backoff would wait 5 s or more: a redial within 1 s can only be the fast path.
        reconnect: { initialDelayMs: 5000, jitter: 0, maxAttempts: 3 },
        serviceRestartDelayMs: 50,
      });
      const inFlight = d.connection.request({ op: 'wait' });
      await eventually(() => h.gates.length === 1, 5000, 'the in-flight request');
      const startedAt = Date.now();
      const closing = h.acceptor.close({ drainMs: 5000, spreadMs: 200 });
      // After the GOAWAY the dialer refuses new streams itself (WSM-DIAL-006).
      for (let refused = false; !refused;) {
        assert.ok(Date.now() - startedAt < 5000, 'the GOAWAY reached the dialer within 5000 ms');
        refused = await d.connection.request({ op: 'echo' }).then(
          () => false,
          (error) => error instanceof NotConnectedError,
        );
      }
      assert.equal(d.closes.length, 0, 'the busy connection stays open while draining');
      h.gates[0].open();
      assert.equal(await within(inFlight, 5000, 'the drained request'), 'released');
      await within(closing, 5000, 'acceptor.close()');
      await eventually(() => d.closes.length === 1, 5000, 'the dialer noticing the close');
      const [closed] = d.closes;
      assert.ok([1000, 1012].includes(closed.code), `closed with ${closed.code}`);
      assert.equal(closed.willRetry, true);
      assert.ok(
        closed.delayMs! < 200,
        `the redial waits within the GOAWAY spread: ${closed.delayMs} ms`,
      );
      await eventually(() => contexts.length === 2, 2000, 'the fast redial');
      assert.equal(contexts[1].reason, 'reconnect');
      assert.equal(contexts[1].resumedFromServiceRestart, true);
      assert.ok(Date.now() - startedAt < 4000, 'well before the 5 s backoff');
      assert.equal(h.acceptor.stats.peers, 0);
    });
  });

  test(`${runtime}: WSM-ACC-003 a foreign Origin is refused with 403 and no Peer`, async () => {
    await withHarness(start, suite, async (h) => {
      const foreign = await rawUpgrade(h.server.port, h.server.path, {
        Origin: 'http://evil.example',
        'Sec-WebSocket-Protocol': 'muxws.v1.json',
      });
      assert.equal(foreign.status, 403);
      const noProtocol = await rawUpgrade(h.server.port, h.server.path, {
        'Sec-WebSocket-Protocol': 'chat',
      });
      assert.equal(noProtocol.status, 400);
      assert.equal(h.peers.length, 0);
      assert.equal(h.acceptor.stats.accepted, 0);
      const same = await rawUpgrade(h.server.port, h.server.path, {
        Origin: `http://127.0.0.1:${h.server.port}`,
        'Sec-WebSocket-Protocol': 'muxws.v1.json',
      });
      assert.equal(same.status, 101, 'an Origin of the same host is allowed');
      await eventually(() => h.peers.length === 1, 5000, 'the same-origin peer');
    });
  });

  test(`${runtime}: authorize refuses with 403, its Response or 500, and seeds the peer's data and tags when it accepts (WSM-APP-002)`, async () => {
    const seen: Array<readonly string[]> = [];
    const authorize: AcceptorOptions['authorize'] = (request, { protocols }) => {
      seen.push(protocols);
      switch (request.headers.get('x-auth')) {
        case 'no':
          return false;
        case 'teapot':
          return new Response('no tea', { status: 418 });
        case 'throw':
          throw new Error('the session store is down');
        case 'async':
          return Promise.resolve({ data: { user: 'bob' }, tags: ['late'] });
        case 'yes':
          return { data: { user: 'ada' }, tags: ['vip', 'room:1'] };
      }
      return true;
    };
    await withHarness(
      start,
      suite,
      async (h) => {
        const ask = (auth: string) =>
          rawUpgrade(h.server.port, h.server.path, {
            'Sec-WebSocket-Protocol': 'muxws.v1.json, token.abc',
            'X-Auth': auth,
          });
        assert.equal((await ask('no')).status, 403);
        assert.equal((await ask('teapot')).status, 418);
        assert.equal((await ask('throw')).status, 500);
        assert.equal(h.peers.length, 0, 'no peer for a refused upgrade');
        assert.equal(h.errors.length, 1, 'the throw reaches onError');
        assert.match((h.errors[0] as Error).message, /session store is down/);
        assert.deepEqual(seen[0], ['muxws.v1.json', 'token.abc']);
        const yes = await ask('yes');
        assert.equal(yes.status, 101);
        assert.equal(yes.headers['sec-websocket-protocol'], 'muxws.v1.json');
        await eventually(() => h.peers.length === 1, 5000, 'the authorized peer');
        assert.deepEqual(h.peers[0].data, { user: 'ada' });
        assert.deepEqual([...h.peers[0].tags], ['vip', 'room:1']);
        assert.equal((await ask('async')).status, 101);
        await eventually(() => h.peers.length === 2, 5000, 'the peer authorized asynchronously');
        assert.deepEqual(h.peers[1].data, { user: 'bob' });
        assert.deepEqual([...h.peers[1].tags], ['late']);
        assert.equal(h.acceptor.stats.refused, 3);
      },
      jsonCodec,
      { authorize },
    );
  });

  test(`${runtime}: WSM-WIRE-001 a credential token offered after the muxws token leaves the muxws token selected`, async () => {
    await withHarness(start, suite, async (h) => {
      const raw = await rawUpgrade(h.server.port, h.server.path, {
        'Sec-WebSocket-Protocol': 'muxws.v1.json, token.s3cr3t',
      });
      assert.equal(raw.status, 101);
      assert.equal(raw.headers['sec-websocket-protocol'], 'muxws.v1.json');
      const d = await h.dial({
        target: () => ({ url: h.url, protocols: ['token.s3cr3t'] }),
        hello: { payload: { user: 'ada', rooms: [] } },
      });
      assert.equal(d.connection.state, 'open');
      assert.deepEqual(
        await within(d.connection.request({ op: 'echo', value: 'ok' }), 5000, 'echo'),
        { echo: 'ok', headers: null },
      );
    });
  });

  test(`${runtime}: WSM-WIRE-002 a binary codec (msgpack) carries requests, bytes and broadcasts`, async () => {
    await withHarness(start, suite, async (h) => {
      const d = await h.dial({ hello: { payload: { user: 'ada', rooms: ['a'] } } });
      assert.deepEqual(d.connection.welcome, { welcome: 'ada', peer: h.peers[0].id });
      const bytes = new Uint8Array(300).map((_, i) => i % 251);
      const answer = await within(d.connection.request({ op: 'echo', value: bytes }), 5000, 'echo');
      assert.deepEqual((answer as { echo: Uint8Array }).echo, bytes);
      const upload = d.connection.open({ op: 'sum' });
      for (const n of [1, 2, 3]) await upload.write(n);
      await upload.end(4);
      assert.deepEqual(await within(collect(upload), 5000, 'the sum'), [10]);
      assert.equal(await h.acceptor.broadcast('room:a', { blob: bytes.subarray(7, 19) }), 1);
      await eventually(() => d.published.length === 1, 5000, 'the broadcast');
      assert.deepEqual(d.published[0].payload, { blob: bytes.slice(7, 19) });
      assert.deepEqual(h.errors, []);
    }, msgpackCodec);
  });
}
