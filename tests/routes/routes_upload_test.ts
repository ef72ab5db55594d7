// A route's `upload` schema (WSM-LIM-005): every message the caller writes after the OPEN passes
// it as the handler reads it, on the acceptor's routes and the dialer's, over in-memory sockets.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  connect,
  type Connection,
  type ConnectOptions,
  serve,
  type StandardSchemaV1,
  StreamError,
  StreamResetError,
} from 'muxws';
import { Acceptor, type AcceptorOptions, type Peer } from 'muxws/acceptor';
import { checkRoutes } from '../../lib/routes/routes.ts';
import { FakeServer } from '../_socket_pair.ts';

type Api = {
  lines: { input: { name: string }; upload: string; output: string[] };
  'client.lines': { upload: string; output: string[] };
};

/** A schema over strings, trimming them, written by hand as any Standard Schema library would. */
function text(async = false): StandardSchemaV1<unknown, string> {
  const check = (value: unknown) =>
    typeof value === 'string' ? { value: value.trim() } : {
      issues: [{
        message: `Expected string, found ${Array.isArray(value) ? 'array' : typeof value}`,
      }],
    };
  return {
    '~standard': {
      version: 1,
      vendor: 'test',
      validate: (value) => async ? Promise.resolve(check(value)) : check(value),
    },
  };
}

/** What a `lines` handler saw: the uploads it read, and the error its reading ended with. */
interface Seen {
  read: unknown[];
  error?: unknown;
}

/**
 * A handler reading every upload until the caller ends, then answering with them; the first
 * stream it serves is recorded in `seen`.
 */
function collect(seen: Seen) {
  let served = 0;
  return async (_input: unknown, { stream }: { stream: AsyncIterable<string> }) => {
    const first = served++ === 0;
    const read: string[] = [];
    try {
      for await (const line of stream) {
        read.push(line);
        if (first) seen.read.push(line);
      }
    } catch (error) {
      if (first) seen.error = error;
      throw error;
    }
    return read;
  };
}

/** An acceptor over a FakeServer, and a dialer connected to it; `close()` ends both. */
async function pair(
  acceptorOptions: AcceptorOptions<Api>,
  dialerOptions: ConnectOptions<Api> = {},
) {
  const acceptorErrors: unknown[] = [];
  const acceptor = new Acceptor<Api>({
    idleTimeoutMs: 0,
    onError: (error) => acceptorErrors.push(error),
    ...acceptorOptions,
  });
  const peers: Peer<Api>[] = [];
  const server = new FakeServer({
    onConnection: (c) =>
      queueMicrotask(() => {
        c.accept();
        peers.push(acceptor.accept(c.server));
      }),
  });
  const errors: unknown[] = [];
  const connection: Connection<Api> = await connect<Api>('ws://muxws.test/ws', {
    WebSocket: server.WebSocket,
    reconnect: false,
    heartbeat: false,
    onError: (error) => errors.push(error),
    ...dialerOptions,
  });
  return {
    acceptor,
    connection,
    peers,
    errors,
    acceptorErrors,
    async close() {
      await connection.close();
      await acceptor.close();
    },
  };
}

for (const async of [false, true]) {
  const kind = async ? 'an async' : 'a synchronous';
  test(`${kind} upload schema passes good uploads to the handler as its output (WSM-LIM-005)`, async () => {
    const seen: Seen = { read: [] };
    const p = await pair({ routes: { lines: { upload: text(async), handler: collect(seen) } } });
    try {
      const up = p.connection.stream('lines', { name: 'a' });
      for (const line of [' one ', 'two ']) await up.write(line);
      await up.end(' three');
      const answers: unknown[] = [];
      for await (const answer of up) answers.push(answer);
      assert.deepEqual(answers, [['one', 'two', 'three']]);
      assert.equal(seen.error, undefined);
      assert.deepEqual(p.acceptorErrors, []);
    } finally {
      await p.close();
    }
  });

  test(`${kind} upload schema resets the stream with invalid at an upload it refuses, which the handler never reads (WSM-LIM-005)`, async () => {
    const seen: Seen = { read: [] };
    const p = await pair({ routes: { lines: { upload: text(async), handler: collect(seen) } } });
    try {
      const up = p.connection.stream('lines', { name: 'a' });
      await up.write('fine');
      await up.write({ not: 'a string' } as unknown as string);
      const error = await up.closed.catch((e) => e);
      assert(error instanceof StreamResetError, String(error));
      assert.equal(error.code, 'invalid');
      assert.equal(error.remote, true);
      assert.match(error.message, /with "invalid": Invalid upload: Expected string, found object$/);
      assert.deepEqual(error.issues, [{ path: [], message: 'Expected string, found object' }]);
      const read = await (async () => {
        for await (const _ of up) return 'a reply';
        return 'the end';
      })().catch((e) => e);
      assert(read instanceof StreamResetError && read.code === 'invalid', String(read));
      assert.deepEqual(seen.read, ['fine']);
      assert(seen.error instanceof StreamError, String(seen.error));
      assert.equal(seen.error.code, 'invalid');
      // The refusal is an outcome the caller drew, not a failure of the handler.
      assert.deepEqual(p.acceptorErrors, []);
      assert.deepEqual(await p.connection.call('lines', { name: 'b' }), []);
    } finally {
      await p.close();
    }
  });
}

test('an upload schema checks the last upload, sent with END, and an array is no string (WSM-LIM-005)', async () => {
  const seen: Seen = { read: [] };
  const p = await pair({ routes: { lines: { upload: text(), handler: collect(seen) } } });
  try {
    const up = p.connection.stream('lines', { name: 'a' });
    await up.end(['x'] as unknown as string);
    const error = await up.closed.catch((e) => e);
    assert(error instanceof StreamResetError, String(error));
    assert.equal(error.code, 'invalid');
    assert.match(error.message, /Invalid upload: Expected string, found array$/);
    assert.deepEqual(seen.read, []);
  } finally {
    await p.close();
  }
});

test('a handler that catches a refused upload finds its stream reset all the same (WSM-LIM-005)', async () => {
  const after: unknown[] = [];
  const p = await pair({
    routes: {
      lines: {
        upload: text(),
        handler: async (_input, { stream }) => {
          const reader = stream[Symbol.asyncIterator]();
          await reader.next().catch(() => {});
          after.push(await reader.next().catch((e) => e));
          return [];
        },
      },
    },
  });
  try {
    const up = p.connection.stream('lines', { name: 'a' });
    await up.write(5 as unknown as string);
    await up.write('late').catch(() => {});
    const error = await up.closed.catch((e) => e);
    assert(error instanceof StreamResetError && error.code === 'invalid', String(error));
    await p.connection.call('lines', { name: 'sync' }).catch(() => {});
    assert(after[0] instanceof StreamResetError, String(after[0]));
    assert.equal(after[0].code, 'invalid');
  } finally {
    await p.close();
  }
});

test("the dialer's served route checks the acceptor's uploads with its upload schema (WSM-LIM-005)", async () => {
  const seen: Seen = { read: [] };
  const p = await pair({}, {
    routes: serve({ 'client.lines': { upload: text(), handler: collect(seen) } }),
  });
  try {
    const good = p.peers[0].stream('client.lines', undefined);
    await good.end(' ok ');
    const answers: unknown[] = [];
    for await (const answer of good) answers.push(answer);
    assert.deepEqual(answers, [['ok']]);
    const bad = p.peers[0].stream('client.lines', undefined);
    await bad.end(7 as unknown as string);
    const error = await bad.closed.catch((e) => e);
    assert(error instanceof StreamResetError, String(error));
    assert.equal(error.code, 'invalid');
    assert.match(error.message, /Invalid upload: Expected string, found number$/);
    assert.deepEqual(p.errors, []);
  } finally {
    await p.close();
  }
});

test('checkRoutes() takes { upload, handler } and names an upload that is no Standard Schema (WSM-LIM-005)', () => {
  checkRoutes({ a: { upload: text(), handler: () => 1 } }, 'create Acceptor');
  assert.throws(
    () => checkRoutes({ a: { upload: 'string', handler: () => 1 } }, 'create Acceptor'),
    {
      name: 'TypeError',
      message:
        'Cannot create Acceptor as "routes["a"]".upload must be a Standard Schema (with "~standard".validate): current value is "string"',
    },
  );
});

test('an upload schema checks what the handler reads through ctx.stream.readable too (WSM-LIM-005)', async () => {
  const read: unknown[] = [];
  const p = await pair({
    routes: {
      lines: {
        upload: text(),
        handler: async (_input, { stream }) => {
          const reader = stream.readable.getReader();
          for (let next = await reader.read(); !next.done; next = await reader.read()) {
            read.push(next.value);
          }
          return [];
        },
      },
    },
  });
  try {
    const up = p.connection.stream('lines', { name: 'a' });
    await up.write(' a ');
    await up.write(false as unknown as string);
    const error = await up.closed.catch((e) => e);
    assert(error instanceof StreamResetError, String(error));
    assert.equal(error.code, 'invalid');
    assert.match(error.message, /Invalid upload: Expected string, found boolean$/);
    assert.deepEqual(read, ['a']);
  } finally {
    await p.close();
  }
});
