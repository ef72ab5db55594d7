// Routes end to end (WSM-APP-003): a real `connect()` dialling a real `Acceptor` over in-memory
// sockets, each side serving routes and calling the other's with `call()`, `stream()` and the
// routed `subscribe()`, typed from one `Api`.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  connect,
  type Connection,
  type ConnectOptions,
  serve,
  type StandardSchemaV1,
  StreamResetError,
} from 'muxws';
import { Acceptor, type AcceptorOptions, type Peer } from 'muxws/acceptor';
import { FakeServer } from '../_socket_pair.ts';
import { settle } from '../_session_pair.ts';

type Api = {
  'chat.say': { input: { text: string }; output: { delivered: number } };
  'chat.strict': { input: { text: string }; output: { text: string } };
  ticker: { input: { symbol: string }; message: { n: number } };
  missing: { input: { symbol: string }; message: { n: number } };
  'client.locale': { input: { fallback: string }; output: string };
};
type PeerData = { user: string };

/** A schema over `{ text: string }`, written by hand as any Standard Schema library would. */
const textInput: StandardSchemaV1<unknown, { text: string }> = {
  '~standard': {
    version: 1,
    vendor: 'test',
    validate: (value) => {
      const text = (value as { text?: unknown } | null)?.text;
      return typeof text === 'string'
        ? { value: { text: text.trim() } }
        : { issues: [{ message: 'Expected string', path: ['text'] }, { message: 'Also wrong' }] };
    },
  },
};

/** An acceptor over a FakeServer, and a dialer connected to it; `close()` ends both. */
async function pair(
  acceptorOptions: AcceptorOptions<Api, PeerData>,
  dialerOptions: ConnectOptions<Api> = {},
) {
  // A route's StreamError is an outcome; collected here so none reaches console.error.
  const acceptorErrors: unknown[] = [];
  const acceptor = new Acceptor<Api, PeerData>({
    idleTimeoutMs: 0,
    onError: (error) => acceptorErrors.push(error),
    ...acceptorOptions,
  });
  const peers: Peer<Api, PeerData>[] = [];
  const server = new FakeServer({
    onConnection: (c) =>
      queueMicrotask(() => {
        c.accept();
        const peer = acceptor.accept(c.server);
        peer.data.user = 'ada';
        peers.push(peer);
      }),
  });
  const errors: unknown[] = [];
  const connection = await connect<Api>('ws://muxws.test/ws', {
    WebSocket: server.WebSocket,
    reconnect: false,
    heartbeat: false,
    onError: (error) => errors.push(error),
    ...dialerOptions,
  });
  const client = () => server.connections[0].client;
  return {
    acceptor,
    connection,
    peers,
    errors,
    client,
    async close() {
      await connection.close();
      await acceptor.close();
    },
  };
}

test('a call() with a route reaches its handler with the typed input and resolves with its output (WSM-APP-003)', async () => {
  const seen: Array<{ text: string; user: string; route: unknown; aborted: boolean }> = [];
  const p = await pair({
    routes: {
      'chat.say': ({ text }, { peer, headers, signal }) => {
        seen.push({
          text,
          user: peer.data.user,
          route: headers[':route'],
          aborted: signal.aborted,
        });
        return { delivered: text.length };
      },
    },
  });
  try {
    const { delivered } = await p.connection.call('chat.say', { text: 'hello' });
    assert.equal(delivered, 5);
    assert.deepEqual(seen, [{ text: 'hello', user: 'ada', route: 'chat.say', aborted: false }]);
  } finally {
    await p.close();
  }
});

test('a call() naming a route with no handler rejects with not_found (WSM-APP-003)', async () => {
  const p = await pair({ routes: { 'chat.say': () => ({ delivered: 0 }) } });
  try {
    const error = await p.connection.call('ticker', { symbol: 'ACME' }).catch((e) => e);
    assert(error instanceof StreamResetError, String(error));
    assert.equal(error.code, 'not_found');
    assert.equal(error.remote, true);
    assert.match(error.message, /No route "ticker"/);
  } finally {
    await p.close();
  }
});

test('an input the route schema refuses resets invalid with the issues summarised, and never reaches the handler (WSM-APP-003)', async () => {
  const inputs: unknown[] = [];
  const p = await pair({
    routes: {
      'chat.strict': {
        input: textInput,
        handler: (input) => {
          inputs.push(input);
          return input;
        },
      },
    },
  });
  try {
    const bad = { text: 5 } as unknown as { text: string };
    const error = await p.connection.call('chat.strict', bad).catch((e) => e);
    assert(error instanceof StreamResetError, String(error));
    assert.equal(error.code, 'invalid');
    assert.match(error.message, /Invalid input at text: Expected string \(and 1 more issue\)$/);
    assert.deepEqual(error.issues, [
      { path: ['text'], message: 'Expected string' },
      { path: [], message: 'Also wrong' },
    ]);
    assert.deepEqual(inputs, []);
    assert.deepEqual(await p.connection.call('chat.strict', { text: ' hi ' }), { text: 'hi' });
    assert.deepEqual(inputs, [{ text: 'hi' }]);
  } finally {
    await p.close();
  }
});

/** A `ticker` route writing `count` messages (infinitely many when undefined). */
function ticker(count?: number, log: { stopped?: boolean; aborted?: boolean } = {}) {
  return async function* ({ symbol }: { symbol: string }, { signal }: { signal: AbortSignal }) {
    assert.equal(symbol, 'ACME');
    try {
      for (let n = 0; count === undefined || n < count; n++) yield { n };
    } finally {
      log.stopped = true;
      log.aborted = signal.aborted;
    }
  };
}

test('a message route written as an async generator is read in order through connection.stream() (WSM-APP-003)', async () => {
  const p = await pair({ routes: { ticker: ticker(3) } });
  try {
    const stream = p.connection.stream('ticker', { symbol: 'ACME' }, { end: true });
    const messages: unknown[] = [];
    for await (const message of stream) messages.push(message);
    assert.deepEqual(messages, [{ n: 0 }, { n: 1 }, { n: 2 }]);
    await stream.closed;
  } finally {
    await p.close();
  }
});

test('a routed subscribe() receives the messages of the route it names (WSM-APP-003, WSM-SUB-001)', async () => {
  const p = await pair({ routes: { ticker: ticker(2) } });
  try {
    const got: number[] = [];
    const subscription = p.connection.subscribe('ticker', { symbol: 'ACME' }, {
      onMessage: (message) => got.push(message.n),
    });
    await subscription.ready;
    assert.equal(subscription.state, 'active');
    await settle();
    assert.deepEqual(got, [0, 1]);
    subscription.unsubscribe();
  } finally {
    await p.close();
  }
});

test("aborting the dialer's routed stream stops the route's generator, whose signal is aborted (WSM-APP-003, WSM-STR-007)", async () => {
  const log: { stopped?: boolean; aborted?: boolean } = {};
  const p = await pair({ routes: { ticker: ticker(undefined, log) } });
  try {
    const controller = new AbortController();
    const stream = p.connection.stream('ticker', { symbol: 'ACME' }, {
      end: true,
      signal: controller.signal,
    });
    const reader = stream[Symbol.asyncIterator]();
    assert.deepEqual((await reader.next()).value, { n: 0 });
    await settle();
    assert.equal(log.stopped, undefined, 'the generator waits for credit meanwhile');
    controller.abort();
    await settle();
    assert.deepEqual(log, { stopped: true, aborted: true });
  } finally {
    await p.close();
  }
});

test('a routed subscribe() naming a route with no handler is refused with not_found at its first open (WSM-APP-003)', async () => {
  const p = await pair({ routes: { ticker: ticker(1) } });
  try {
    const got: unknown[] = [];
    const subscription = p.connection.subscribe('missing', { symbol: 'ACME' }, {
      onMessage: (message) => got.push(message),
    });
    const refusal = await subscription.ready.then(() => undefined, (error: unknown) => error);
    assert(refusal instanceof StreamResetError, String(refusal));
    assert.equal(refusal.code, 'not_found');
    assert.equal(subscription.state, 'refused');
    await settle();
    assert.deepEqual(got, []);
  } finally {
    await p.close();
  }
});

test("peer.call() reaches the dialer's routes handler, whose ctx.peer is the connection (WSM-APP-003)", async () => {
  let ctxPeer: unknown;
  const p = await pair({}, {
    routes: serve({
      'client.locale': ({ fallback }, { peer }) => {
        ctxPeer = peer;
        return `en-GB (${fallback})`;
      },
    }),
  });
  try {
    const locale: string = await p.peers[0].call('client.locale', { fallback: 'en' });
    assert.equal(locale, 'en-GB (en)');
    assert.equal(ctxPeer, p.connection);
    const error = await p.peers[0].call('chat.say', { text: 'x' }).catch((e) => e);
    assert(error instanceof StreamResetError);
    assert.equal(error.code, 'not_found');
  } finally {
    await p.close();
  }
});

test('an unrouted request() still reaches onStream beside routes, and is refused without onStream (WSM-APP-003)', async () => {
  const withOnStream = await pair({
    routes: { 'chat.say': () => ({ delivered: 1 }) },
    onStream: (stream, peer) => ({ echoed: stream.payload, user: peer.data.user }),
  });
  try {
    assert.deepEqual(await withOnStream.connection.request('ping'), {
      echoed: 'ping',
      user: 'ada',
    });
    assert.deepEqual(await withOnStream.connection.call('chat.say', { text: 'x' }), {
      delivered: 1,
    });
  } finally {
    await withOnStream.close();
  }
  const routesOnly = await pair({ routes: { 'chat.say': () => ({ delivered: 1 }) } });
  try {
    const error = await routesOnly.connection.request('ping').catch((e) => e);
    assert(error instanceof StreamResetError);
    assert.equal(error.code, 'refused');
    assert.match(
      error.message,
      /with "refused": Only routes are served here and the stream names none: use a route, call\(route, input\) or stream\(route, input\), not request\(\) or open\(\)$/,
    );
  } finally {
    await routesOnly.close();
  }
});

test('a reserved header or a bad route name passed by the application is a TypeError before anything is sent (WSM-APP-003)', async () => {
  let calls = 0;
  const p = await pair({
    routes: {
      'chat.say': () => {
        calls++;
        return { delivered: 0 };
      },
    },
  });
  try {
    const sentBefore = p.client().sent.length;
    const reserved = { headers: { ':route': 'other' } };
    await assert.rejects(p.connection.call('chat.say', { text: 'x' }, reserved), {
      name: 'TypeError',
      message: /reserved key ":route"/,
    });
    assert.throws(() => p.connection.stream('chat.say', { text: 'x' }, reserved), TypeError);
    assert.throws(
      () => p.connection.subscribe('ticker', { symbol: 'ACME' }, { onMessage() {}, ...reserved }),
      TypeError,
    );
    await assert.rejects(p.peers[0].call('client.locale', { fallback: 'x' }, reserved), TypeError);
    const unknownRoute = ':hello' as 'chat.say';
    await assert.rejects(p.connection.call(unknownRoute, { text: 'x' }), {
      name: 'TypeError',
      message: /route name must be a non-empty string/,
    });
    await assert.rejects(p.connection.call('' as 'chat.say', { text: 'x' }), TypeError);
    assert.equal(p.client().sent.length, sentBefore);
    assert.equal(calls, 0);
  } finally {
    await p.close();
  }
});

test('the routes option is checked when the acceptor is created, and the dialer routes when serve() is called (WSM-APP-003)', () => {
  assert.throws(
    () => new Acceptor({ routes: { 'chat.say': 5 } as never }),
    { name: 'TypeError', message: /routes\["chat\.say"\]/ },
  );
  assert.throws(() => serve({ ':x': () => 1 } as never), {
    name: 'TypeError',
    message: /^Cannot serve routes with route ":x" as the route name must be/,
  });
  assert.throws(() => serve(5 as never), {
    name: 'TypeError',
    message:
      'Cannot serve routes as "routes" must be an object of route handlers: current value is 5',
  });
});

test("connect() refuses a routes option that is not serve()'s value, before any dial (WSM-APP-003)", async () => {
  const server = new FakeServer();
  await assert.rejects(
    connect('ws://muxws.test/ws', {
      WebSocket: server.WebSocket,
      routes: { 'client.locale': () => 'en' } as never,
    }),
    {
      name: 'TypeError',
      message:
        'Cannot connect as "routes" must be what serve() returns (routes: serve({ ... })): current value is {}',
    },
  );
  assert.equal(server.connections.length, 0);
});

// Type-level use, checked by `deno check` with the rest of tests/: nothing here runs.
export function typedUse(connection: Connection<Api>): void {
  void connection.call('chat.say', { text: 'hi' }).then(({ delivered }) => delivered.toFixed());
}
