// lib/sockets/node_ws.ts: sends made in one tick on a `ws` socket are written together (its `_socket`
// stream corked from the second send until the microtask queue runs), a lone send is not corked,
// and nothing else is touched.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { cork } from '../../lib/sockets/node_ws.ts';

/** A stand-in for `ws`'s `net.Socket`, counting its cork depth as Node does. */
function stream(onUncork?: () => void) {
  const calls: string[] = [];
  let depth = 0;
  return {
    calls,
    get depth() {
      return depth;
    },
    cork() {
      depth++;
      calls.push('cork');
    },
    uncork() {
      depth--;
      calls.push('uncork');
      onUncork?.();
    },
  };
}

test('a burst of sends in one tick corks the socket at its second send and uncorks it when microtasks run', async () => {
  const a = stream();
  const b = stream();
  cork({ _socket: a });
  assert.deepEqual(a.calls, [], 'the first send of a tick goes out uncorked');
  for (let i = 0; i < 64; i++) {
    cork({ _socket: a });
    cork({ _socket: b });
  }
  assert.deepEqual(a.calls, ['cork']);
  assert.equal(a.depth, 1, 'still corked within the tick');
  await Promise.resolve();
  assert.deepEqual(a.calls, ['cork', 'uncork']);
  assert.deepEqual(b.calls, ['cork', 'uncork']);
  assert.equal(a.depth, 0);
  // The next tick starts over: a lone send is not corked, a second one is.
  cork({ _socket: a });
  await Promise.resolve();
  assert.deepEqual(a.calls, ['cork', 'uncork']);
  cork({ _socket: a });
  cork({ _socket: a });
  await Promise.resolve();
  assert.deepEqual(a.calls, ['cork', 'uncork', 'cork', 'uncork']);
});

test('a socket without a corkable stream (a browser, Deno or Bun WebSocket) is left alone', async () => {
  for (const socket of [{}, { _socket: null }, { _socket: { cork: 1 } }, null, 'x']) {
    assert.doesNotThrow(() => cork(socket));
  }
  await Promise.resolve();
});

test('a stream whose uncork throws (destroyed) does not keep the others corked', async () => {
  const broken = stream(() => {
    throw new Error('destroyed');
  });
  const fine = stream();
  for (let i = 0; i < 2; i++) {
    cork({ _socket: broken });
    cork({ _socket: fine });
  }
  await Promise.resolve();
  assert.equal(fine.depth, 0);
  assert.deepEqual(fine.calls, ['cork', 'uncork']);
});
