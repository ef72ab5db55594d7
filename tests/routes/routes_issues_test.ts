// Errors a program can read, end to end: a real `connect()` and a real `Acceptor` over in-memory
// sockets. A route's zod or valibot schema refusing an input resets the call with `invalid`
// carrying the issues (nested paths) in the RESET's `:issues` header, read back as
// `StreamResetError.issues`; a hello refused with issues gives `HelloRejectedError.issues`.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as z from 'zod';
import * as v from 'valibot';
import {
  connect,
  ConnectError,
  HelloRejectedError,
  type StandardSchemaV1,
  StreamError,
  StreamResetError,
} from 'muxws';
import { Acceptor, type AcceptorOptions } from 'muxws/acceptor';
import { FakeServer } from '../_socket_pair.ts';

const URL_ = 'ws://muxws.test/ws';

/** A real Acceptor behind a FakeServer; every frame the acceptor sends is decoded into `sent`. */
function serve(options: AcceptorOptions) {
  const errors: unknown[] = [];
  const acceptor = new Acceptor({ idleTimeoutMs: 0, onError: (e) => errors.push(e), ...options });
  const server = new FakeServer({
    onConnection: (c) =>
      queueMicrotask(() => {
        c.accept();
        acceptor.accept(c.server);
      }),
  });
  const sent = () =>
    server.connections.flatMap((c) => c.server.sent.map((m) => JSON.parse(String(m))));
  return { acceptor, server, errors, sent };
}

const Todo = {
  zod: z.object({ todo: z.object({ title: z.string(), tags: z.array(z.string()) }) }),
  valibot: v.object({ todo: v.object({ title: v.string(), tags: v.array(v.string()) }) }),
};

for (const [library, schema] of Object.entries(Todo)) {
  test(`a ${library} input schema's nested issues reach the caller as StreamResetError.issues, the message naming the first with its path (WSM-API-003)`, async () => {
    let handled = 0;
    const { acceptor, server, errors, sent } = serve({
      routes: {
        'todo.add': {
          input: schema as StandardSchemaV1<unknown, unknown>,
          handler: () => ++handled,
        },
      },
    });
    const connection = await connect(URL_, {
      WebSocket: server.WebSocket,
      heartbeat: false,
      reconnect: false,
    });
    try {
      const error = await connection.call('todo.add', { todo: { title: 5, tags: ['a', 7] } })
        .catch((e) => e);
      assert(error instanceof StreamResetError, String(error));
      assert.equal(error.code, 'invalid');
      assert.equal(error.remote, true);
      assert.deepEqual(error.issues.map((issue) => issue.path), [
        ['todo', 'title'],
        ['todo', 'tags', 1],
      ]);
      for (const issue of error.issues) assert.match(issue.message, /string/i);
      assert.match(
        error.message,
        /with "invalid": Invalid input at todo\.title: .*string.* \(and 1 more issue\)$/i,
      );
      const reset = sent().find((frame) => frame[0] === 4);
      assert.deepEqual(reset, [4, 1, 'invalid', reset[3], { ':issues': error.issues }]);
      assert.equal(handled, 0);
      assert.equal(await connection.call('todo.add', { todo: { title: 't', tags: [] } }), 1);
      assert.deepEqual(errors, []);
    } finally {
      await connection.close();
      await acceptor.close();
    }
  });
}

test("a hello refused with a schema's issues fails connect() with HelloRejectedError.issues (WSM-API-003)", async () => {
  const Hello = z.object({ user: z.object({ name: z.string() }) });
  const { acceptor, server, errors } = serve({
    onHello: async ({ payload }) => {
      const result = await Hello['~standard'].validate(payload);
      if (result.issues !== undefined) {
        throw new StreamError('invalid', 'Invalid hello at user.name', { issues: result.issues });
      }
      return 'welcome';
    },
  });
  const error = await connect(URL_, {
    WebSocket: server.WebSocket,
    heartbeat: false,
    reconnect: false,
    hello: { payload: { user: { name: 42 } } },
  }).catch((e) => e);
  try {
    assert(error instanceof ConnectError, String(error));
    const rejected = error.cause;
    assert(rejected instanceof HelloRejectedError, String(rejected));
    assert.equal(rejected.code, 'invalid');
    assert.equal(rejected.issues.length, 1);
    assert.deepEqual(rejected.issues[0].path, ['user', 'name']);
    assert.match(rejected.message, /"invalid".*Invalid hello at user\.name/);
    assert.deepEqual(errors, [], 'a StreamError is an outcome, not reported');
    const good = await connect(URL_, {
      WebSocket: server.WebSocket,
      heartbeat: false,
      reconnect: false,
      hello: { payload: { user: { name: 'ada' } } },
    });
    assert.equal(good.welcome, 'welcome');
    await good.close();
  } finally {
    await acceptor.close();
  }
});

test('a reset with no issues, or from a peer that sends none, has an empty issues array (WSM-API-003)', async () => {
  const { acceptor, server } = serve({
    routes: {
      nope: () => {
        throw new StreamError('forbidden', 'Not yours');
      },
    },
  });
  const connection = await connect(URL_, {
    WebSocket: server.WebSocket,
    heartbeat: false,
    reconnect: false,
  });
  try {
    const error = await connection.call('nope', null).catch((e) => e);
    assert(error instanceof StreamResetError, String(error));
    assert.equal(error.code, 'forbidden');
    assert.deepEqual(error.issues, []);
    assert.ok(Object.isFrozen(error.issues));
  } finally {
    await connection.close();
    await acceptor.close();
  }
});
