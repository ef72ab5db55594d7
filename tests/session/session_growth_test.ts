// The wire's growth rule on a live session: elements after the last one a receiver knows are
// ignored in every frame kind, DATA and RESET carry optional trailing headers, a RESET's
// `:issues` header reaches `StreamResetError.issues` bounded and never throwing, and the item
// limit still counts trailing elements. Over both codecs, with hand-made frames.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { StreamError, StreamResetError } from 'muxws';
import type { Stream } from 'muxws';
import { codecs } from '../_codecs.ts';
import { probe, sessionPair, settle } from '../_session_pair.ts';

for (const codec of codecs) {
  const c = `[${codec.name}]`;
  const feed = (session: { receive(d: string | ArrayBufferView): void }, frame: unknown[]) =>
    session.receive(codec.encode(frame) as string);

  test(`${c} a session handles every kind with unknown trailing elements as it does without them (WSM-API-008)`, async () => {
    const streams: Stream[] = [];
    using p = probe('acceptor', {
      codec,
      onStream: (s) => (streams.push(s), new Promise(() => {})),
    });
    feed(p.session, [1, 1, 0, { room: 'a' }, 'open', 'later', { x: [1] }]);
    assert.equal(streams.length, 1);
    assert.deepEqual(streams[0].headers, { room: 'a' });
    assert.equal(streams[0].payload, 'open');
    feed(p.session, [2, 1, 0, 'a', null, 'later']);
    feed(p.session, [2, 1, 0, 'b', { trace: 't' }]);
    feed(p.session, [2, 1, 0, 'c', null, 1, 2, 3]);
    feed(p.session, [5, 1, 10, 'later']);
    feed(p.session, [6, 'later', 'still later']);
    assert.deepEqual(p.sent.at(-1), [7]);
    feed(p.session, [7, 'later']);
    feed(p.session, [3, 1, 'later']);
    const read: unknown[] = [];
    for await (const message of streams[0]) read.push(message);
    assert.deepEqual(read, ['a', 'b', 'c']);
    feed(p.session, [1, 3, 0, null, 'second', 'later']);
    feed(p.session, [4, 3, 'cancel', 'bye', null, 'later']);
    const error = await streams[1].closed.catch((e) => e);
    assert(error instanceof StreamResetError, String(error));
    assert.equal(error.code, 'cancel');
    assert.deepEqual(error.issues, []);
    feed(p.session, [8, 0, 'shutdown', 'bye', 0, 'later']);
    assert.deepEqual(p.log.goAways, [{ lastId: 0, code: 'shutdown', message: 'bye', spreadMs: 0 }]);
    assert.equal(p.session.protocolErrors, 0);
    assert.deepEqual(p.log.errors, []);

    using d = probe('dialer', { codec });
    feed(d.session, [9, 'room:a', { h: 1 }, 'news', 'later', ['x']]);
    assert.deepEqual(
      d.log.publishes.map(({ tag, payload }) => ({ tag, payload })),
      [{ tag: 'room:a', payload: 'news' }],
    );
    assert.equal(d.session.protocolErrors, 0);
  });

  test(`${c} a known element mistyped is still malformed, trailing elements or not (WSM-API-008)`, () => {
    using p = probe('acceptor', { codec, onStream: () => new Promise(() => {}) });
    feed(p.session, [1, 1, 0, null, 'open']);
    feed(p.session, [2, 1, 0, 'a', 'not headers', 'later']);
    feed(p.session, [4, 1, 'cancel', '', ['not headers']]);
    feed(p.session, [5, 1, 'ten', 'later']);
    feed(p.session, [2, 1]);
    assert.equal(p.session.protocolErrors, 4);
  });

  test(`${c} the item limit counts trailing elements: one over closes the acceptor with 1009 (WSM-API-008, WSM-LIM-001)`, () => {
    {
      using p = probe('acceptor', { codec, limits: { maxMessageItems: 100 } });
      feed(p.session, [6, ...Array.from({ length: 99 }, (_, i) => i)]); // 100 items: passes
      assert.deepEqual(p.sent, [[7]]);
      assert.deepEqual(p.closes, []);
    }
    {
      using p = probe('acceptor', { codec, limits: { maxMessageItems: 100 } });
      feed(p.session, [6, ...Array.from({ length: 100 }, (_, i) => i)]); // 101 items
      assert.deepEqual(p.sent, []);
      assert.equal(p.closes.length, 1);
      assert.equal(p.closes[0].code, 1009);
      assert.match(p.closes[0].reason, /more than 100 items/);
    }
    {
      // Items inside a trailing element count as well.
      using p = probe('acceptor', { codec, limits: { maxMessageItems: 100 } });
      feed(p.session, [6, { later: Array.from({ length: 99 }, (_, i) => i) }]);
      assert.equal(p.closes[0]?.code, 1009);
    }
  });

  test(`${c} a sender leaves the headers element out when it has none: DATA and RESET are as short as before (WSM-API-008)`, async () => {
    using pair = sessionPair({
      codec,
      acceptor: { onStream: (s) => s.payload === 'x' ? 'x' : new Promise(() => {}) },
    });
    await pair.dialer.request('x');
    const stream = pair.dialer.open('y');
    stream.reset('cancel', 'why');
    await settle();
    const sent = [...pair.client.sent, ...pair.server.sent].map((m) => codec.decode(m));
    assert.deepEqual(sent.filter((f) => (f as unknown[])[0] === 2), [[2, 1, 1, 'x']]);
    assert.deepEqual(sent.filter((f) => (f as unknown[])[0] === 4), [[4, 3, 'cancel', 'why']]);
  });

  test(`${c} a handler's StreamError with issues sends them in the RESET's :issues header, read back as StreamResetError.issues (WSM-API-003, WSM-API-008)`, async () => {
    using pair = sessionPair({
      codec,
      acceptor: {
        onStream: () => {
          throw new StreamError('invalid', 'Invalid input at todo.title: Expected string', {
            issues: [
              { message: 'Expected string', path: ['todo', { key: 'title' }] },
              { message: 'Too small', path: ['items', 0] },
            ],
          });
        },
      },
    });
    const error = await pair.dialer.request({ todo: { title: 1 } }).catch((e) => e);
    assert(error instanceof StreamResetError, String(error));
    assert.equal(error.code, 'invalid');
    assert.equal(error.remote, true);
    const issues = [
      { path: ['todo', 'title'], message: 'Expected string' },
      { path: ['items', 0], message: 'Too small' },
    ];
    assert.deepEqual(error.issues, issues);
    assert.deepEqual(codec.decode(pair.server.sent.at(-1)!), [
      4,
      1,
      'invalid',
      'Invalid input at todo.title: Expected string',
      { ':issues': issues },
    ]);
    assert.deepEqual(pair.log.acceptor.errors, [], 'a chosen outcome is not reported');
  });

  test(`${c} a RESET's :issues of the wrong shape or size is dropped or cut, never thrown (WSM-API-003)`, async () => {
    using p = probe('dialer', { codec });
    const cases: [unknown, unknown[]][] = [
      ['not a list', []],
      [{ path: ['a'], message: 'm' }, []],
      [[{ message: 5 }, { path: 'a', message: 'm' }, { path: [{}], message: 'm' }, 7], []],
      [[null, { message: 'root' }], [{ path: [], message: 'root' }]],
      [[{ path: [{ key: 'a' }, 1], message: 'm', extra: true }], [{
        path: ['a', 1],
        message: 'm',
      }]],
      [
        Array.from({ length: 40 }, (_, i) => ({ path: [i], message: `m${i}` })),
        Array.from({ length: 16 }, (_, i) => ({ path: [i], message: `m${i}` })),
      ],
      [[{ path: [], message: 'x'.repeat(1000) }], [{ path: [], message: 'x'.repeat(256) }]],
      [
        [{ path: Array.from({ length: 100 }, (_, i) => i), message: 'deep' }],
        [{ path: Array.from({ length: 32 }, (_, i) => i), message: 'deep' }],
      ],
      [[{ path: ['k'.repeat(1000)], message: 'm' }], [{ path: ['k'.repeat(256)], message: 'm' }]],
    ];
    for (const [value, expected] of cases) {
      const stream = p.session.open(null);
      feed(p.session, [4, stream.id, 'invalid', 'Invalid input', { ':issues': value }]);
      const error = await stream.closed.catch((e) => e);
      assert(error instanceof StreamResetError, String(error));
      assert.deepEqual(error.issues, expected, JSON.stringify(value).slice(0, 80));
    }
    assert.equal(p.session.protocolErrors, 0);
    assert.deepEqual(p.log.errors, []);
  });
}
