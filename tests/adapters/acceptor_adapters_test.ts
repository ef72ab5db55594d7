// The Bun and Hono adapters driven by fakes of the runtime objects they touch, on every runtime:
// what each hands to the runtime, and how the runtime's events reach the acceptor. The real
// servers are exercised by tests/_acceptor_suite.ts.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Acceptor, type Peer } from 'muxws/acceptor';
import { bunHandlers, type BunServerWebSocket } from 'muxws/bun';
import { type HonoWSContext, type HonoWSEvents, muxws } from 'muxws/hono';

function upgradeRequest(protocols: string, origin?: string): Request {
  return new Request('http://api.example/ws', {
    headers: {
      upgrade: 'websocket',
      connection: 'Upgrade',
      'sec-websocket-protocol': protocols,
      ...(origin ? { origin } : {}),
    },
  });
}

async function settle(rounds = 20): Promise<void> {
  for (let i = 0; i < rounds; i++) await Promise.resolve();
}

/** A fake of Bun's ServerWebSocket: records sends; `send()` answers what `status` says. */
class FakeBunSocket implements BunServerWebSocket {
  readonly sent: Array<string | Uint8Array> = [];
  status = 1;
  closedWith: [number | undefined, string | undefined] | undefined;
  buffered: number | undefined;
  send(data: string | Uint8Array): number {
    this.sent.push(data);
    return this.status;
  }
  close(code?: number, reason?: string): void {
    this.closedWith = [code, reason];
  }
}

test('WSM-ACC-003 bunHandlers() refuses before upgrading and selects exactly the muxws token', async () => {
  const acceptor = new Acceptor({ idleTimeoutMs: 0 });
  const { fetch } = bunHandlers(acceptor);
  const upgrades: Array<{ headers?: Record<string, string> }> = [];
  const server = {
    upgrade: (_request: Request, options: { headers?: Record<string, string> }) => {
      upgrades.push(options);
      return true;
    },
  };
  assert.equal(
    (await fetch(upgradeRequest('muxws.v1.json', 'https://evil.example'), server))?.status,
    403,
  );
  assert.equal((await fetch(upgradeRequest('chat'), server))?.status, 400);
  assert.equal(upgrades.length, 0, 'a refused request is never upgraded');
  assert.equal(await fetch(upgradeRequest('token.abc, muxws.v1.json'), server), undefined);
  assert.deepEqual(upgrades[0].headers, { 'Sec-WebSocket-Protocol': 'muxws.v1.json' });
  const failing = { upgrade: () => false };
  const malformed = await fetch(upgradeRequest('muxws.v1.json'), failing);
  assert.equal(malformed?.status, 400);
  assert.equal(
    await malformed?.text(),
    'Bad WebSocket upgrade request: expected Connection: Upgrade, a Sec-WebSocket-Key and Sec-WebSocket-Version 13; found no Sec-WebSocket-Key',
  );
  assert.equal(acceptor.stats.peers, 0);
  await acceptor.close();
});

test("bunHandlers() gives Bun a maxPayloadLength of the acceptor's maxMessageBytes (WSM-LIM-004)", async () => {
  const defaults = new Acceptor({ idleTimeoutMs: 0 });
  const tight = new Acceptor({ idleTimeoutMs: 0, limits: { maxMessageBytes: 4096 } });
  try {
    assert.equal(bunHandlers(defaults).websocket.maxPayloadLength, 1024 * 1024);
    assert.equal(bunHandlers(tight).websocket.maxPayloadLength, 4096);
  } finally {
    await defaults.close();
    await tight.close();
  }
});

test('WSM-ACC-002 bunHandlers() attaches on open, feeds messages, ends the peer on close', async () => {
  const peers: Peer[] = [];
  const closes: number[] = [];
  const acceptor = new Acceptor({
    idleTimeoutMs: 0,
    onPeer: (peer) => peers.push(peer),
    onPeerClose: (_peer, { code }) => closes.push(code),
    onStream: (stream) => ({ echo: stream.payload }),
  });
  const { websocket } = bunHandlers(acceptor);
  const ws = new FakeBunSocket();
  websocket.open(ws);
  assert.equal(peers.length, 1);
  websocket.message(ws, new TextEncoder().encode(JSON.stringify([1, 1, 1, null, 'bytes'])));
  websocket.message(ws, JSON.stringify([1, 3, 1, null, 'text']));
  await settle();
  assert.deepEqual(ws.sent.map((m) => JSON.parse(String(m))), [
    [2, 1, 1, { echo: 'bytes' }],
    [2, 3, 1, { echo: 'text' }],
  ]);
  peers[0].close(4000, 'bye');
  assert.deepEqual(ws.closedWith, [4000, 'bye']);
  websocket.close(ws, 4000, 'bye');
  websocket.message(ws, JSON.stringify([1, 5, 1, null, 'late']));
  assert.deepEqual(closes, [4000]);
  assert.equal(ws.sent.length, 2, 'nothing reaches a closed peer');
});

test('WSM-ACC-002 bunHandlers() keeps the sink in the socket data in place of the accepted upgrade, and serves a socket whose data is frozen', async () => {
  const closes: Array<[string, number]> = [];
  const acceptor = new Acceptor({
    idleTimeoutMs: 0,
    authorize: () => ({ data: { user: 'ada' }, tags: ['room'] }),
    onPeerClose: (peer, { code }) => closes.push([String(peer.data.user), code]),
    onStream: (stream, peer) => ({ echo: stream.payload, tags: [...peer.tags] }),
  });
  const { fetch, websocket } = bunHandlers(acceptor);
  const upgraded = async (ws: FakeBunSocket & { data?: unknown }, freeze: boolean) => {
    const server = {
      upgrade: (_request: Request, options: { data?: unknown }) => {
        ws.data = freeze ? Object.freeze({ ...options.data as object }) : options.data;
        return true;
      },
    };
    assert.equal(await fetch(upgradeRequest('muxws.v1.json'), server), undefined);
    websocket.open(ws);
    return ws;
  };
  const held = await upgraded(new FakeBunSocket(), false);
  const frozen = await upgraded(new FakeBunSocket(), true);
  const kept = (held.data as { muxws?: { protocol?: unknown } }).muxws;
  assert.ok(kept !== undefined && kept.protocol === undefined, 'the accepted upgrade is let go');
  for (const ws of [held, frozen]) {
    websocket.message(ws, JSON.stringify([1, 1, 1, null, 'hi']));
    await settle();
    assert.deepEqual(ws.sent.map((m) => JSON.parse(String(m))), [
      [2, 1, 1, { echo: 'hi', tags: ['room'] }],
    ]);
    websocket.close(ws, 4000, 'bye');
    websocket.close(ws, 4001, 'again');
    websocket.message(ws, JSON.stringify([1, 3, 1, null, 'late']));
    websocket.drain(ws);
  }
  assert.deepEqual(closes, [['ada', 4000], ['ada', 4000]]);
  assert.equal(held.sent.length + frozen.sent.length, 2, 'nothing reaches a closed peer');
  await acceptor.close();
});

test('WSM-ACC-005 bunHandlers() backpressure: getBufferedAmount, or send() -1 until drain', async () => {
  const acceptor = new Acceptor({ idleTimeoutMs: 0, limits: { highWaterMark: 1024 } });
  const { websocket } = bunHandlers(acceptor);
  const plain = new FakeBunSocket(); // a Bun without getBufferedAmount()
  const measured = Object.assign(new FakeBunSocket(), { getBufferedAmount: () => 5000 });
  websocket.open(plain);
  websocket.open(measured);
  for (const peer of acceptor.peers()) peer.tags.add('all');
  assert.equal(await acceptor.broadcast('all', 1), 1, 'the socket over highWaterMark is skipped');
  plain.status = -1; // Bun queued it behind backpressure
  assert.equal(await acceptor.broadcast('all', 2), 1);
  assert.equal(await acceptor.broadcast('all', 3), 0);
  websocket.drain(plain);
  assert.equal(await acceptor.broadcast('all', 4), 1, 'drain clears the backpressure');
  assert.equal(acceptor.stats.dropped, 5, 'four to the measured socket, one to the plain one');
  assert.deepEqual(plain.sent.map((m) => JSON.parse(String(m))[3]), [1, 2, 4]);
  assert.equal(measured.sent.length, 0);
  await acceptor.close({ drainMs: 0 });
});

/** A fake of a runtime's `upgradeWebSocket`: keeps the events and returns a marker response. */
function fakeUpgrade() {
  const calls: Array<{ events: HonoWSEvents; options: unknown }> = [];
  const upgradeWebSocket =
    (createEvents: (c: unknown) => HonoWSEvents, options?: unknown) => (c: unknown) => {
      calls.push({ events: createEvents(c), options });
      return Promise.resolve(new Response('upgraded', { status: 200 }));
    };
  return { calls, upgradeWebSocket };
}

/** A Hono WSContext over a raw socket; Hono's Bun helper makes a new one per event. */
function context(raw: object, sent: unknown[]): HonoWSContext {
  return { raw, send: (data) => sent.push(data), close: (code) => sent.push(`close ${code}`) };
}

test('WSM-ACC-003 muxws() refuses before upgrading and passes the muxws token as protocol', async () => {
  const acceptor = new Acceptor({ idleTimeoutMs: 0 });
  const { calls, upgradeWebSocket } = fakeUpgrade();
  const handler = muxws(acceptor, { upgradeWebSocket });
  const next = () => Promise.resolve();
  const refused = await handler({
    req: { raw: upgradeRequest('muxws.v1.json', 'https://evil.example') },
  }, next);
  assert.equal(refused?.status, 403);
  assert.equal(calls.length, 0);
  const response = await handler(
    { req: { raw: upgradeRequest('muxws.v1.json, token.abc') } },
    next,
  );
  assert.equal(await response?.text(), 'upgraded');
  assert.deepEqual(calls[0].options, { protocol: 'muxws.v1.json' });
  assert.throws(
    () => muxws(acceptor, {} as never),
    /"upgradeWebSocket" must be a function: current value is undefined/,
  );
  await acceptor.close();
});

test('WSM-ACC-002 muxws() finds the peer by the raw socket when every event has a new context', async () => {
  const closes: Array<[string, number]> = [];
  const acceptor = new Acceptor({
    idleTimeoutMs: 0,
    onStream: (stream) => ({ echo: stream.payload }),
    onPeerClose: (peer, { code }) => closes.push([peer.id, code]),
  });
  const { calls, upgradeWebSocket } = fakeUpgrade();
  const handler = muxws(acceptor, { upgradeWebSocket });
  for (let i = 0; i < 2; i++) {
    await handler({ req: { raw: upgradeRequest('muxws.v1.json') } }, () => Promise.resolve());
  }
  const [a, b] = [{ name: 'raw a' }, { name: 'raw b' }];
  const sentA: unknown[] = [];
  const sentB: unknown[] = [];
  calls[0].events.onOpen(new Event('open'), context(a, sentA));
  calls[1].events.onOpen(new Event('open'), context(b, sentB));
  calls[0].events.onMessage({ data: JSON.stringify([1, 1, 1, null, 'to a']) }, context(a, sentA));
  calls[1].events.onMessage({ data: JSON.stringify([1, 1, 1, null, 'to b']) }, context(b, sentB));
  await settle();
  assert.deepEqual(sentA.map((m) => JSON.parse(String(m))), [[2, 1, 1, { echo: 'to a' }]]);
  assert.deepEqual(sentB.map((m) => JSON.parse(String(m))), [[2, 1, 1, { echo: 'to b' }]]);
  const [peerA] = [...acceptor.peers()];
  calls[0].events.onClose({ code: 1001, reason: 'away' }, context(a, sentA));
  assert.deepEqual(closes, [[peerA.id, 1001]]);
  assert.equal(acceptor.stats.peers, 1);
  await acceptor.close({ drainMs: 0 });
  assert.deepEqual(
    sentB.slice(1).map((m) =>
      typeof m === 'string' && m.startsWith('close') ? m : JSON.parse(String(m))
    ),
    [
      [8, 1, 'restart', 'The acceptor is closing', 1000],
      'close 1012',
    ],
  );
});
