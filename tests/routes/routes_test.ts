// Unit tests of lib/routes/routes.ts: serving a routed stream (lookup, Standard Schema validation, a
// returned value, an async generator's yields within credit, stopping on abort) over a real
// session pair or a hand-made stream, and the checks on headers, route names and `routes`.
import { MUXWS } from '../../lib/wire/reserved.ts';
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  type RouteContext,
  type Routes,
  type StandardSchemaV1,
  type StandardSchemaV1Issue,
  type StandardSchemaV1Result,
  StreamError,
  StreamResetError,
} from 'muxws';
import type { Stream } from 'muxws';
import {
  checkRouteName,
  checkRoutes,
  renderPath,
  ROUTE_HEADER,
  type ServedRoutes,
  serveRoute,
  summariseIssues,
} from '../../lib/routes/routes.ts';
import { probe, sessionPair, settle } from '../_session_pair.ts';
import { streamHandler } from '../../lib/routes/route_streams.ts';
import { checkOwnHeaders } from '../../lib/wire/reserved.ts';

type Api = {
  'chat.say': { input: { text: string }; output: { delivered: number } };
  ticker: { input: { symbol: string }; message: { n: number } };
};

/** A schema over `{ text: string }` that trims the text; `async` makes `validate` return a promise. */
function sayInput(async = false): StandardSchemaV1<unknown, { text: string }> {
  const check = (value: unknown): StandardSchemaV1Result<{ text: string }> => {
    const text = (value as { text?: unknown } | null)?.text;
    return typeof text === 'string'
      ? { value: { text: text.trim() } }
      : { issues: [{ message: 'Expected string', path: ['text'] }, { message: 'Also wrong' }] };
  };
  return {
    '~standard': {
      version: 1,
      vendor: 'test',
      validate: (value) => async ? Promise.resolve(check(value)) : check(value),
    },
  };
}

/** An acceptor that serves `routes`, and a dialer to call them; `controller` aborts ctx.signal. */
function serving(routes: ServedRoutes) {
  const controller = new AbortController();
  const served: Promise<unknown>[] = [];
  const pair = sessionPair({
    acceptor: {
      onStream: (stream) => {
        const result = serveRoute(routes, stream, {
          peer: 'peer',
          stream,
          headers: stream.headers ?? {},
          signal: controller.signal,
        });
        served.push(result.then((value) => ({ value }), (error: unknown) => ({ error })));
        return result;
      },
    },
  });
  // muxws sets the reserved header itself, through the internal option the routes use.
  const routed = (route: string) => ({ [MUXWS]: { headers: { [ROUTE_HEADER]: route } } });
  const call = (route: string, input: unknown) => pair.dialer.request(input, routed(route));
  const open = (route: string, input: unknown) =>
    pair.dialer.open(input, { ...routed(route), end: true });
  return { pair, controller, served, call, open };
}

/** A stream made by hand: records writes and the end, optionally holding each write. */
function fakeStream(route: unknown, payload: unknown) {
  const written: unknown[] = [];
  const log = { ended: 0, written };
  const stream = {
    id: 2,
    headers: { [ROUTE_HEADER]: route },
    payload,
    write(value: unknown) {
      written.push(value);
      return Promise.resolve();
    },
    end() {
      log.ended++;
      return Promise.resolve();
    },
    reset() {},
  } as unknown as Stream;
  return { stream, log };
}

function context(stream: Stream, signal: AbortSignal = new AbortController().signal) {
  return { peer: 'peer', stream, headers: stream.headers ?? {}, signal };
}

async function readAll(stream: Stream): Promise<unknown[]> {
  const out: unknown[] = [];
  for await (const message of stream) out.push(message);
  return out;
}

test('serveRoute() resets a route with no handler with not_found, inherited names included (WSM-APP-003)', async () => {
  const { pair, call } = serving({ 'chat.say': () => 1 });
  using _ = pair;
  await assert.rejects(call('nope', null), (error: unknown) => {
    assert.ok(error instanceof StreamResetError);
    assert.equal(error.code, 'not_found');
    assert.match(error.message, /No route "nope"$/);
    return true;
  });
  for (const name of ['toString', '__proto__', 'constructor', 5]) {
    const { stream } = fakeStream(name, null);
    await assert.rejects(
      serveRoute({ 'chat.say': () => 1 }, stream, context(stream)),
      (error: unknown) => error instanceof StreamError && error.code === 'not_found',
    );
  }
});

test('serveRoute() resets an input the schema refuses with invalid and never calls the handler, sync or async validate (WSM-APP-003)', async () => {
  for (const async of [false, true]) {
    let called = 0;
    const { pair, call } = serving({
      'chat.say': { input: sayInput(async), handler: () => called++ },
    });
    using _ = pair;
    await assert.rejects(call('chat.say', { text: 5 }), (error: unknown) => {
      assert.ok(error instanceof StreamResetError);
      assert.equal(error.code, 'invalid');
      assert.match(error.message, /: Invalid input at text: Expected string \(and 1 more issue\)$/);
      assert.deepEqual(error.issues, [
        { path: ['text'], message: 'Expected string' },
        { path: [], message: 'Also wrong' },
      ]);
      return true;
    });
    assert.equal(called, 0);
  }
});

test("serveRoute() hands the handler the schema's output, not the raw input, and the context (WSM-APP-003)", async () => {
  for (const async of [false, true]) {
    const seen: unknown[] = [];
    const routes: Routes<Api, RouteContext<string>> = {
      'chat.say': {
        input: sayInput(async),
        handler: (input, ctx) => {
          seen.push(input, ctx.peer, ctx.headers[ROUTE_HEADER]);
          return { delivered: input.text.length };
        },
      },
    };
    const { pair, call } = serving(routes);
    using _ = pair;
    assert.deepEqual(await call('chat.say', { text: '  hi  ' }), { delivered: 2 });
    assert.deepEqual(seen, [{ text: 'hi' }, 'peer', 'chat.say']);
  }
});

test("serveRoute() returns an output route's value, which the session sends as the last message (WSM-APP-003, WSM-STR-003)", async () => {
  const { pair, call } = serving({
    'chat.say': (input: { text: string }) => Promise.resolve({ delivered: input.text.length }),
  });
  using _ = pair;
  assert.deepEqual(await call('chat.say', { text: 'abc' }), { delivered: 3 });
  const { stream } = fakeStream('chat.say', { text: 'abcd' });
  assert.deepEqual(
    await serveRoute(
      { 'chat.say': (input: { text: string }) => ({ delivered: input.text.length }) },
      stream,
      context(stream),
    ),
    { delivered: 4 },
  );
});

test("serveRoute() writes an async generator's yields in order within credit, then ends the stream (WSM-APP-003)", async () => {
  const big = 'x'.repeat(1024);
  const routes: Routes<Api, RouteContext<string>> = {
    ticker: async function* ({ symbol }) {
      for (let n = 0; n < 100; n++) yield { n, symbol, big } as { n: number };
    },
  };
  const { pair, open, served } = serving(routes);
  using _ = pair;
  const stream = open('ticker', { symbol: 'ACME' });
  const got = (await readAll(stream)) as { n: number; symbol: string }[];
  assert.deepEqual(got.map((m) => m.n), Array.from({ length: 100 }, (_, n) => n));
  assert.equal(got[99]!.symbol, 'ACME');
  await stream.closed;
  assert.deepEqual(await served[0], { value: undefined });
});

test('serveRoute() closes the generator with return() and ends the stream when ctx.signal aborts between yields (WSM-APP-004)', async () => {
  let closed = 0;
  const { pair, open, controller, served } = serving({
    ticker: async function* () {
      try {
        for (let n = 0;; n++) yield n;
      } finally {
        closed++;
      }
    },
  });
  using _ = pair;
  const stream = open('ticker', null);
  const iterator = stream[Symbol.asyncIterator]();
  assert.equal((await iterator.next()).value, 0);
  controller.abort();
  const rest: unknown[] = [];
  for (let step = await iterator.next(); !step.done; step = await iterator.next()) {
    rest.push(step.value);
  }
  assert.deepEqual(await served[0], { value: undefined });
  assert.equal(closed, 1);
  await stream.closed;
});

test('serveRoute() calls return() on an iterator whose next() is still running when ctx.signal aborts (WSM-APP-004)', async () => {
  const calls: string[] = [];
  let nextCalls = 0;
  const iterator: AsyncIterableIterator<number> = {
    next: () => {
      nextCalls++;
      calls.push('next');
      return nextCalls === 1
        ? Promise.resolve({ value: 1, done: false })
        : new Promise<IteratorResult<number>>(() => {}); // a feed with nothing new yet
    },
    return: () => {
      calls.push('return');
      return Promise.resolve({ value: undefined, done: true });
    },
    [Symbol.asyncIterator]: () => iterator,
  };
  const controller = new AbortController();
  const { stream, log } = fakeStream('ticker', null);
  const served = serveRoute({ ticker: () => iterator }, stream, context(stream, controller.signal));
  await settle();
  assert.deepEqual(log.written, [1]);
  controller.abort();
  assert.equal(await served, undefined);
  assert.deepEqual(calls, ['next', 'next', 'return']);
  assert.equal(log.ended, 1);
});

test('serveRoute() stops a generator quietly when the other side resets the stream (WSM-APP-004)', async () => {
  let closed = 0;
  const { pair, open, served } = serving({
    ticker: async function* () {
      try {
        for (let n = 0;; n++) yield 'y'.repeat(1024);
      } finally {
        closed++;
      }
    },
  });
  using _ = pair;
  const stream = open('ticker', null);
  const iterator = stream[Symbol.asyncIterator]();
  await iterator.next();
  stream.reset('cancel', 'Enough');
  await settle();
  assert.deepEqual(await served[0], { value: undefined }, 'a reset is an outcome, not a failure');
  assert.equal(closed, 1);
});

test('serveRoute() writes nothing more once ctx.signal aborts while next() runs (WSM-APP-004)', async () => {
  const controller = new AbortController();
  let returned = 0;
  const iterator: AsyncIterableIterator<number> = {
    next: () => {
      controller.abort(); // the feed's own work noticed the abort first
      return Promise.resolve({ value: 1, done: false });
    },
    return: () => {
      returned++;
      return Promise.resolve({ value: undefined, done: true });
    },
    [Symbol.asyncIterator]: () => iterator,
  };
  const { stream, log } = fakeStream('ticker', null);
  await serveRoute({ ticker: () => iterator }, stream, context(stream, controller.signal));
  assert.deepEqual(log.written, []);
  assert.equal(returned, 1);
  assert.equal(log.ended, 1);
});

test('serveRoute() rejects with what a generator throws, so a StreamError resets with its code (WSM-APP-005)', async () => {
  const { pair, open } = serving({
    ticker: async function* () {
      yield 1;
      throw new StreamError('gone', 'The symbol was delisted');
    },
  });
  using _ = pair;
  const stream = open('ticker', null);
  await assert.rejects(readAll(stream), (error: unknown) => {
    assert.ok(error instanceof StreamResetError);
    assert.equal(error.code, 'gone');
    return true;
  });
});

test('serveRoute() lets a handler that returns nothing write through ctx.stream (WSM-APP-003)', async () => {
  const { pair, open } = serving({
    ticker: async (_input: unknown, ctx: RouteContext) => {
      await ctx.stream.write(1);
      await ctx.stream.write(2);
    },
  });
  using _ = pair;
  assert.deepEqual(await readAll(open('ticker', null)), [1, 2]);
});

test('checkOwnHeaders() refuses a reserved key or headers that are not a plain object, naming them, and accepts the rest', () => {
  assert.throws(() => checkOwnHeaders({ room: 'a', ':route': 'x' }, 'open a stream'), {
    name: 'TypeError',
    message:
      'Cannot open a stream as "headers" must not use the reserved key ":route": keys starting with ":" are muxws\'s',
  });
  assert.throws(
    () => checkOwnHeaders({ ':resume': 1 }, 'call "chat.say"'),
    /reserved key ":resume"/,
  );
  assert.throws(() => checkOwnHeaders('a', () => 'subscribe'), {
    name: 'TypeError',
    message: 'Cannot subscribe as "headers" must be a plain object or null: current value is "a"',
  });
  assert.throws(() => checkOwnHeaders(new Map(), 'subscribe'), /must be a plain object or null/);
  for (const headers of [undefined, null, {}, { room: 'a', 'a:b': 1 }, Object.create(null)]) {
    checkOwnHeaders(headers, () => assert.fail('the message is built only for a failure'));
  }
});

test('checkRouteName() accepts 1 to 256 characters not starting with ":" and names any other value', () => {
  for (const name of ['a', 'chat.say', 'x'.repeat(256), 'a:b']) checkRouteName(name);
  const cases: [unknown, string][] = [
    ['', '""'],
    [':hello', '":hello"'],
    ['x'.repeat(257), `"${'x'.repeat(60)}…" (257 characters)`],
    [5, '5'],
    [undefined, 'undefined'],
  ];
  for (const [name, shown] of cases) {
    assert.throws(() => checkRouteName(name, 'call a route'), {
      name: 'TypeError',
      message:
        `Cannot call a route as the route name must be a non-empty string of at most 256 characters not starting with ":": current value is ${shown}`,
    });
  }
});

test('checkRoutes() accepts handlers and { input, handler } and names a wrong entry', () => {
  checkRoutes(undefined, 'create Acceptor');
  checkRoutes({ a: () => 1, b: { input: sayInput(), handler: () => 1 }, c: undefined }, 'connect');
  const cases: [unknown, RegExp][] = [
    [5, /"routes" must be an object of route handlers: current value is 5$/],
    [[], /"routes" must be an object/],
    [{ ':x': () => 1 }, /route name must be .*: current value is ":x"$/],
    [{ a: 5 }, /"routes\["a"\]" must be a function or \{ input\?, upload\?, handler \}: current/],
    [{ a: { input: sayInput() } }, /"routes\["a"\]".handler must be a function/],
    [{ a: { input: {}, handler: () => 1 } }, /"routes\["a"\]".input must be a Standard Schema/],
  ];
  for (const [routes, message] of cases) {
    assert.throws(() => checkRoutes(routes, 'create Acceptor'), (error: unknown) => {
      assert.ok(error instanceof TypeError);
      assert.match(error.message, /^Cannot create Acceptor/);
      assert.match(error.message, message);
      return true;
    });
  }
});

test('summariseIssues() names the first issue with its path and counts the rest, within 200 characters (WSM-API-003)', () => {
  const cases: [StandardSchemaV1Issue[], string][] = [
    [[], 'Invalid input'],
    [[{ message: 'Expected object' }], 'Invalid input: Expected object'],
    [[{ message: 'Expected object', path: [] }], 'Invalid input: Expected object'],
    [
      [{ message: 'Expected string', path: ['a', { key: 'b' }, 0, { key: 1 }] }],
      'Invalid input at a.b[0][1]: Expected string',
    ],
    [
      [{ message: 'Bad', path: ['a b', Symbol('s'), '$ok'] }],
      'Invalid input at ["a b"][Symbol(s)].$ok: Bad',
    ],
    [
      [{ message: 'Expected string', path: ['text'] }, { message: 'x' }],
      'Invalid input at text: Expected string (and 1 more issue)',
    ],
    [
      [{ message: 'Expected string', path: ['text'] }, { message: 'x' }, { message: 'y' }],
      'Invalid input at text: Expected string (and 2 more issues)',
    ],
  ];
  for (const [issues, summary] of cases) assert.equal(summariseIssues(issues), summary);
  const long = summariseIssues([{ message: 'm'.repeat(500) }, { message: 'x' }]);
  assert.equal(long.length, 200);
  assert.match(long, /^Invalid input: m+… \(and 1 more issue\)$/);
  const emoji = summariseIssues([{ message: '😀'.repeat(150) }]);
  assert.ok(emoji.length <= 200);
  assert.doesNotMatch(emoji, /[\ud800-\udbff]…/, 'no surrogate pair is split');
  assert.equal(renderPath(undefined), '');
});

test('a route returning a plain value answers within the receive of its OPEN, with the context of the unrouted form (WSM-APP-003)', () => {
  const contexts: RouteContext<string>[] = [];
  using p = probe('acceptor', {
    onStream: streamHandler(
      {
        echo: (input: unknown, ctx: RouteContext<string>) => {
          contexts.push(ctx);
          return input;
        },
      },
      undefined,
      'peer',
    ),
  });
  p.session.receive(JSON.stringify([1, 1, 1, { [ROUTE_HEADER]: 'echo' }, 'hi']));
  assert.deepEqual(p.sent, [[2, 1, 1, 'hi']]);
  const ctx = contexts[0];
  assert.deepEqual(Object.keys(ctx), ['peer', 'stream', 'headers', 'lastEventId', 'signal']);
  assert.equal(Object.getPrototypeOf(ctx), Object.prototype);
  assert.equal(ctx.peer, 'peer');
  assert.deepEqual(ctx.headers, { [ROUTE_HEADER]: 'echo' });
  assert.equal(ctx.signal, ctx.stream.signal);
  assert.equal({ ...ctx }.signal, ctx.stream.signal);
});

test('a route that throws not_found or invalid at once resets its stream counted toward the reset budget, and any other throw resets with internal (WSM-APP-003, WSM-STR-004)', () => {
  using p = probe('acceptor', {
    limits: { maxResetRate: 1 },
    onStream: streamHandler(
      {
        invalid: () => {
          throw new StreamError('invalid', 'Invalid input');
        },
        broken: () => {
          throw new Error('secret detail');
        },
      },
      undefined,
      'peer',
    ),
  });
  p.session.receive(JSON.stringify([1, 1, 1, { [ROUTE_HEADER]: 'broken' }, null]));
  assert.deepEqual(p.sent, [[4, 1, 'internal', 'The stream handler failed']]);
  assert.equal((p.log.errors[0] as Error).message, 'secret detail');
  p.session.receive(JSON.stringify([1, 3, 1, { [ROUTE_HEADER]: 'invalid' }, null]));
  assert.deepEqual(p.sent.at(-1), [4, 3, 'invalid', 'Invalid input']);
  p.session.receive(JSON.stringify([1, 5, 1, { [ROUTE_HEADER]: 'nope' }, null]));
  assert.deepEqual(p.sent.at(-1), [4, 5, 'not_found', 'No route "nope"']);
  assert.equal(p.closes.length, 1, 'the second counted reset within a second closes');
});
