// Routes declared with real Standard Schema libraries through route() (WSM-API-002): a real
// `connect()` dialling a real `Acceptor` over in-memory sockets, typed by `ApiOf` of the routes
// object alone, with zod and valibot checking input, output, messages and uploads.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { type ApiOf, connect, route, StreamResetError } from 'muxws';
import { Acceptor } from 'muxws/acceptor';
import { z } from 'zod';
import * as v from 'valibot';
import { FakeServer } from '../_socket_pair.ts';

const seen: unknown[] = [];
const routes = {
  'todo.add': route(
    { input: z.object({ title: z.string().min(1), done: z.boolean().default(false) }) },
    (todo) => {
      seen.push(todo);
      return { id: seen.length, title: todo.title, done: todo.done };
    },
  ),
  'log.since': route(
    { input: v.pipe(v.string(), v.isoDate(), v.transform((text) => new Date(text))) },
    (since) => since.getUTCFullYear(),
  ),
  'todo.count': route({ output: z.number().int() }, (_input, { headers }) => {
    // A handler that breaks its own schema: a fraction where an integer is promised.
    return headers.broken === true ? 1.5 : 2;
  }),
  'todo.feed': route(
    { input: z.number(), message: z.object({ id: z.number() }) },
    async function* (count) {
      for (let id = 1; id <= count; id++) {
        yield id === 3 ? { id: 'three' as unknown as number } : { id };
      }
    },
  ),
  'todo.import': route(
    { upload: z.string().transform((line) => line.length), output: z.number() },
    async (_input, { stream }) => {
      let total = 0;
      for await (const length of stream) total += length;
      return total;
    },
  ),
};
type Api = ApiOf<typeof routes>;

/** An acceptor serving `routes` over a FakeServer, and a dialer connected to it. */
async function pair() {
  const errors: unknown[] = [];
  const acceptor = new Acceptor<Api>({
    idleTimeoutMs: 0,
    routes,
    onError: (error) => errors.push(error),
  });
  const server = new FakeServer({
    onConnection: (c) =>
      queueMicrotask(() => {
        c.accept();
        acceptor.accept(c.server);
      }),
  });
  const connection = await connect<Api>('ws://muxws.test/ws', {
    WebSocket: server.WebSocket,
    reconnect: false,
    heartbeat: false,
  });
  return {
    connection,
    errors,
    async close() {
      await connection.close();
      await acceptor.close();
    },
  };
}

test('a route declared with a zod schema serves call() with the schema-typed input, its default applied (WSM-API-002)', async () => {
  seen.length = 0;
  const p = await pair();
  try {
    const added = await p.connection.call('todo.add', { title: 'milk' });
    assert.deepEqual(added, { id: 1, title: 'milk', done: false });
    assert.deepEqual(seen, [{ title: 'milk', done: false }]);
    assert.equal(await p.connection.call('log.since', '2026-03-04'), 2026);
  } finally {
    await p.close();
  }
});

test('an input the zod or valibot schema refuses is reset with invalid and never reaches the handler (WSM-API-002)', async () => {
  seen.length = 0;
  const p = await pair();
  try {
    const empty = await p.connection.call('todo.add', { title: '' }).catch((e) => e);
    assert(empty instanceof StreamResetError, String(empty));
    assert.equal(empty.code, 'invalid');
    assert.equal(empty.remote, true);
    assert.match(empty.message, /Invalid input at title: /);
    assert.deepEqual(empty.issues.map((issue: { path: unknown }) => issue.path), [['title']]);
    const date = await p.connection.call('log.since', 'yesterday').catch((e) => e);
    assert(date instanceof StreamResetError, String(date));
    assert.equal(date.code, 'invalid');
    assert.deepEqual(seen, []);
  } finally {
    await p.close();
  }
});

test('an output its schema refuses resets the call with internal and reports the route, the issue and the value found (WSM-API-002)', async () => {
  const p = await pair();
  try {
    assert.equal(await p.connection.call('todo.count', undefined), 2);
    const error = await p.connection.call('todo.count', undefined, { headers: { broken: true } })
      .catch((e) => e);
    assert(error instanceof StreamResetError, String(error));
    assert.equal(error.code, 'internal');
    assert.equal(p.errors.length, 1);
    const reported = p.errors[0] as Error;
    assert(reported instanceof TypeError, String(reported));
    assert.match(
      reported.message,
      /^Cannot answer route "todo\.count" as its "output" schema refuses the value returned: .+: current value is 1\.5$/,
    );
  } finally {
    await p.close();
  }
});

test('each message a route yields passes its message schema, and the first it refuses resets the stream with internal (WSM-API-002)', async () => {
  const p = await pair();
  try {
    const two: unknown[] = [];
    for await (const message of p.connection.stream('todo.feed', 2, { end: true })) {
      two.push(message);
    }
    assert.deepEqual(two, [{ id: 1 }, { id: 2 }]);
    const read: unknown[] = [];
    const error = await (async () => {
      for await (const message of p.connection.stream('todo.feed', 5, { end: true })) {
        read.push(message);
      }
    })().catch((e) => e);
    assert(error instanceof StreamResetError, String(error));
    assert.equal(error.code, 'internal');
    assert.deepEqual(read, [{ id: 1 }, { id: 2 }]);
    assert.match(
      String((p.errors[0] as Error).message),
      /^Cannot answer route "todo\.feed" as its "message" schema refuses a value yielded: id: .+: current value is \{"id":"three"\}$/,
    );
  } finally {
    await p.close();
  }
});

test("the handler reads each upload as its upload schema's output (WSM-API-002)", async () => {
  const p = await pair();
  try {
    const stream = p.connection.stream('todo.import', undefined);
    await stream.write('abc');
    await stream.write('de');
    await stream.end();
    const answers: unknown[] = [];
    for await (const answer of stream) answers.push(answer);
    assert.deepEqual(answers, [5]);
  } finally {
    await p.close();
  }
});

test('route() refuses what is not a Standard Schema and a handler that is not a function, naming the value found (WSM-API-002)', () => {
  assert.throws(() => route({ output: { parse: () => 1 } } as never, () => 1 as never), {
    name: 'TypeError',
    message:
      'Cannot create a route as "output" must be a Standard Schema (with "~standard".validate): current value is {}',
  });
  assert.throws(() => route({ input: z.string() }, 'handler' as never), {
    name: 'TypeError',
    message: 'Cannot create a route as its handler must be a function: current value is "handler"',
  });
  assert.throws(() => route(null as never, () => 1 as never), {
    name: 'TypeError',
    message:
      'Cannot create a route as its schemas must be an object { input?, upload?, output?, message? }: current value is null',
  });
});
