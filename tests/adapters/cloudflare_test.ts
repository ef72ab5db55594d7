// The Cloudflare adapter's logic without workerd: refusals, argument checks, the Durable Object
// form's restore from attachments, when peer state is saved, close replies and the PING
// auto-response, over fake Workers sockets and a fake DurableObjectState. The real runtime is
// exercised in tests/node/cloudflare_workerd_test.ts.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Acceptor } from 'muxws/acceptor';
import {
  DurableObjectAcceptor,
  durableObjectPresence,
  type DurableObjectStateLike,
  upgrade,
  type WorkersWebSocket,
} from 'muxws/cloudflare';
import { msgpackCodec } from 'muxws/msgpack';
import { watchUnhandled } from '../_unhandled.ts';
import { fakeStorage } from '../_durable_object_storage.ts';
import { fakeTime } from '../_fake_time.ts';

/** A Workers socket as the hibernation API hands it back. */
class FakeWorkersSocket implements WorkersWebSocket {
  readyState = 1;
  readonly sent: Array<string | ArrayBuffer | ArrayBufferView> = [];
  readonly closes: Array<[number | undefined, string | undefined]> = [];
  attachment: unknown = null;
  saves = 0;
  closeThrows = false;

  send(data: string | ArrayBuffer | ArrayBufferView): void {
    if (this.readyState !== 1) throw new Error('socket not open');
    this.sent.push(data);
  }
  close(code?: number, reason?: string): void {
    if (this.closeThrows) throw new TypeError('already closed');
    this.closes.push([code, reason]);
    this.readyState = 2;
  }
  accept(): void {}
  addEventListener(): void {}
  removeEventListener(): void {}
  serializeAttachment(value: unknown): void {
    this.saves++;
    this.attachment = structuredClone(value);
  }
  deserializeAttachment(): unknown {
    return structuredClone(this.attachment); // a copy each time, as the runtime gives
  }
  /** The frames sent, decoded as JSON. */
  frames(): unknown[] {
    return this.sent.map((data) => JSON.parse(String(data)));
  }
}

/** A DurableObjectState with the hibernation API. */
class FakeState implements DurableObjectStateLike {
  readonly accepted: Array<{ ws: WorkersWebSocket; tags: string[] | undefined }> = [];
  readonly autoResponses: unknown[] = [];
  constructor(readonly sockets: WorkersWebSocket[] = []) {}
  acceptWebSocket(ws: WorkersWebSocket, tags?: string[]): void {
    this.accepted.push({ ws, tags });
    this.sockets.push(ws);
  }
  getWebSockets(): WorkersWebSocket[] {
    return [...this.sockets];
  }
  setWebSocketAutoResponse(pair?: unknown): void {
    this.autoResponses.push(pair);
  }
}

/** Installs a global for the duration of `fn`. */
async function withGlobal(name: string, value: unknown, fn: () => Promise<void> | void) {
  const g = globalThis as Record<string, unknown>;
  const had = name in g;
  const before = g[name];
  g[name] = value;
  try {
    await fn();
  } finally {
    if (had) g[name] = before;
    else delete g[name];
  }
}

class FakeResponsePair {
  constructor(readonly request: string, readonly response: string) {}
}

const tick = () => new Promise((resolve) => setTimeout(resolve, 0));

function upgradeRequest(headers: Record<string, string>): Request {
  return new Request('https://rooms.example/room/a', {
    headers: { upgrade: 'websocket', host: 'rooms.example', ...headers },
  });
}

function attachment(
  id: string,
  tags: string[],
  data: Record<string, unknown> = {},
  next?: number,
) {
  return next === undefined ? { muxws: 1, id, tags, data } : { muxws: 1, id, tags, data, next };
}

test('WSM-ACC-003 upgrade() and DurableObjectAcceptor.upgrade() return the refusal and create no peer', async () => {
  let pairs = 0;
  await withGlobal(
    'WebSocketPair',
    class {
      constructor() {
        pairs++;
      }
    },
    async () => {
      const acceptor = new Acceptor({ idleTimeoutMs: 0 });
      const state = new FakeState();
      const room = new DurableObjectAcceptor(state, acceptor);
      const cases: Array<[Request, number]> = [
        [new Request('https://rooms.example/room/a'), 426],
        [
          upgradeRequest({
            origin: 'https://evil.example',
            'sec-websocket-protocol': 'muxws.v1.json',
          }),
          403,
        ],
        [upgradeRequest({ 'sec-websocket-protocol': 'token.abc' }), 400],
      ];
      for (const [request, status] of cases) {
        assert.equal((await upgrade(request.clone(), acceptor)).status, status);
        assert.equal((await room.upgrade(request.clone(), { tags: ['room'] })).status, status);
      }
      assert.equal(pairs, 0);
      assert.equal(state.accepted.length, 0);
      assert.equal(acceptor.stats.peers, 0);
    },
  );
});

test('WSM-ACC-003 upgrade() rejects with TypeError outside Workers, where WebSocketPair is missing', async () => {
  const acceptor = new Acceptor({ idleTimeoutMs: 0 });
  const request = upgradeRequest({ 'sec-websocket-protocol': 'muxws.v1.json' });
  assert.equal('WebSocketPair' in globalThis, false);
  await assert.rejects(() => upgrade(request, acceptor), {
    name: 'TypeError',
    message:
      'Cannot upgrade as WebSocketPair is not available: run on Cloudflare Workers (workerd)',
  });
  assert.equal(acceptor.stats.peers, 0);
});

test('WSM-ACC-003 DurableObjectAcceptor checks its state, options and upgrade tags', async () => {
  const acceptor = new Acceptor({ idleTimeoutMs: 0 });
  assert.throws(
    () => new DurableObjectAcceptor({} as DurableObjectStateLike, acceptor),
    {
      name: 'TypeError',
      message:
        'Cannot create DurableObjectAcceptor as "state" must have the hibernation API: current value has no acceptWebSocket()',
    },
  );
  assert.throws(
    () =>
      new DurableObjectAcceptor(new FakeState(), acceptor, {
        onError: 'log' as unknown as () => void,
      }),
    {
      name: 'TypeError',
      message:
        'Cannot create DurableObjectAcceptor as "onError" must be a function: current value is "log"',
    },
  );
  const room = new DurableObjectAcceptor(new FakeState(), acceptor);
  const request = upgradeRequest({ 'sec-websocket-protocol': 'muxws.v1.json' });
  const eleven = Array.from({ length: 11 }, (_, i) => `t${i}`);
  await assert.rejects(() => room.upgrade(request, { tags: eleven }), {
    name: 'RangeError',
    message: 'Cannot upgrade as "tags" must have at most 10 entries: current value has 11',
  });
  await assert.rejects(() => room.upgrade(request, { tags: [''] }), {
    name: 'TypeError',
    message:
      'Cannot upgrade as every tag must be a string of 1 to 256 characters: current value is ""',
  });
  assert.equal(acceptor.stats.peers, 0);
  await acceptor.close();
});

test('WSM-ACC-002 a woken Durable Object restores a peer per open socket from its attachment', async () => {
  const ada = new FakeWorkersSocket();
  ada.attachment = attachment('peer-ada', ['room', 'topic:x'], { user: 'ada' });
  const bob = new FakeWorkersSocket();
  bob.attachment = attachment('peer-bob', ['room'], { user: 'bob' });
  const stranger = new FakeWorkersSocket(); // no muxws attachment: a fresh peer
  stranger.attachment = { somethingElse: true };
  const gone = new FakeWorkersSocket();
  gone.readyState = 3;
  gone.attachment = attachment('peer-gone', ['room']);
  const announced: string[] = [];
  const acceptor = new Acceptor({ idleTimeoutMs: 0, onPeer: (peer) => announced.push(peer.id) });
  const room = new DurableObjectAcceptor(new FakeState([ada, bob, stranger, gone]), acceptor);

  assert.equal(room.restored, 3);
  assert.deepEqual([...acceptor.peers('room')].map((p) => p.id).sort(), ['peer-ada', 'peer-bob']);
  assert.deepEqual([...acceptor.peers('topic:x')].map((p) => p.data), [{ user: 'ada' }]);
  assert.equal(room.peer(stranger)?.tags.size, 0);
  assert.equal(room.peer(gone), undefined);
  assert.deepEqual(announced.slice(0, 2), ['peer-ada', 'peer-bob']);

  // A broadcast reaches the restored peers at once, before any of them sent anything.
  assert.equal(await acceptor.broadcast('room', 'good morning'), 2);
  assert.deepEqual(ada.frames(), [[9, 'room', null, 'good morning']]);
  assert.deepEqual(bob.frames(), [[9, 'room', null, 'good morning']]);
  await acceptor.close({ drainMs: 0 });
});

test("WSM-ACC-004 a peer's tags and data are saved in its attachment once its hello's welcome is sent", async () => {
  const ws = new FakeWorkersSocket();
  ws.attachment = attachment('peer-1', ['room']);
  const acceptor = new Acceptor({
    idleTimeoutMs: 0,
    onStream: async (stream, peer) => {
      await tick(); // an asynchronous hello: tags are added after the message was handled
      const { user } = stream.payload as { user: string };
      peer.tags.add(`user:${user}`);
      peer.data.user = user;
      return { welcome: user };
    },
  });
  const room = new DurableObjectAcceptor(new FakeState([ws]), acceptor);
  room.webSocketMessage(ws, JSON.stringify([1, 1, 1, null, { user: 'ada' }]));
  for (let i = 0; i < 5 && ws.sent.length === 0; i++) await tick();
  assert.deepEqual(ws.frames(), [[2, 1, 1, { welcome: 'ada' }]]);
  await tick();
  assert.deepEqual(ws.attachment, attachment('peer-1', ['room', 'user:ada'], { user: 'ada' }, 2));

  // save() covers changes made elsewhere.
  const peer = room.peer(ws)!;
  peer.data.score = 3;
  room.save(peer);
  assert.deepEqual(
    ws.attachment,
    attachment('peer-1', ['room', 'user:ada'], { user: 'ada', score: 3 }, 2),
  );
  await acceptor.close({ drainMs: 0 });
});

test('WSM-WIRE-004 a restored peer opens its next stream above the saved id, and saves the new one', async () => {
  const ws = new FakeWorkersSocket();
  ws.attachment = attachment('peer-1', ['room'], {}, 6);
  const acceptor = new Acceptor({ idleTimeoutMs: 0 });
  const room = new DurableObjectAcceptor(new FakeState([ws]), acceptor);
  const peer = room.peer(ws)!;
  assert.equal(peer.nextStreamId, 6);
  assert.equal(peer.open('down').id, 6);
  await tick();
  assert.deepEqual(ws.frames(), [[1, 6, 0, null, 'down']]);
  assert.deepEqual(ws.attachment, attachment('peer-1', ['room'], {}, 8));
  await acceptor.close({ drainMs: 0 });
});

test('WSM-ACC-004 a peer state that cannot be saved is reported to onError and the peer keeps working', async () => {
  const ws = new FakeWorkersSocket();
  ws.attachment = attachment('peer-1', ['room']);
  const errors: unknown[] = [];
  const acceptor = new Acceptor({
    idleTimeoutMs: 0,
    onStream: (stream, peer) => {
      peer.data.callback = () => {}; // functions are not structured-clonable
      return stream.payload;
    },
  });
  const room = new DurableObjectAcceptor(new FakeState([ws]), acceptor, {
    onError: (error, peer) => errors.push([error, peer?.id]),
  });
  room.webSocketMessage(ws, JSON.stringify([1, 1, 1, null, 'hi']));
  await tick();
  await tick();
  assert.deepEqual(ws.frames(), [[2, 1, 1, 'hi']]);
  assert.ok(errors.length >= 1);
  assert.equal((errors[0] as [unknown, string])[1], 'peer-1');
  assert.deepEqual(ws.attachment, attachment('peer-1', ['room']));
  await acceptor.close({ drainMs: 0 });
});

test('WSM-WIRE-009 webSocketClose() ends the peer and answers the close frame; webSocketError() reports', () => {
  const closed: Array<[string, number]> = [];
  const errors: unknown[] = [];
  const acceptor = new Acceptor({
    idleTimeoutMs: 0,
    onPeerClose: (peer, info) => closed.push([peer.id, info.code]),
  });
  const a = new FakeWorkersSocket();
  a.attachment = attachment('a', []);
  const b = new FakeWorkersSocket();
  b.attachment = attachment('b', []);
  const c = new FakeWorkersSocket();
  c.attachment = attachment('c', []);
  c.closeThrows = true; // the runtime answered the close already
  const d = new FakeWorkersSocket();
  d.attachment = attachment('d', []);
  const room = new DurableObjectAcceptor(new FakeState([a, b, c, d]), acceptor, {
    onError: (error) => errors.push(error),
  });

  room.webSocketClose(a, 4001, 'bye', true);
  room.webSocketClose(b, 1005, '', false); // no status: answered with 1000
  room.webSocketClose(c, 1000, '', true);
  const failure = new Error('network gone');
  room.webSocketError(d, failure);
  assert.deepEqual(a.closes, [[4001, 'bye']]);
  assert.deepEqual(b.closes, [[1000, '']]);
  assert.deepEqual(c.closes, []);
  assert.deepEqual(closed, [['a', 4001], ['b', 1005], ['c', 1000], ['d', 1006]]);
  assert.deepEqual(errors, [failure]);
  assert.equal(acceptor.stats.peers, 0);
});

test("WSM-ACC-009 a Durable Object's async callbacks that reject are reported, never left unhandled", async () => {
  using unhandled = watchUnhandled();
  const reported: Array<[string, string | undefined]> = [];
  const acceptor = new Acceptor({
    idleTimeoutMs: 0,
    onPeer: async (peer) => {
      await Promise.resolve();
      throw new Error(`onPeer rejected for ${peer.id}`);
    },
    onPeerClose: (peer) => Promise.reject(new Error(`onPeerClose rejected for ${peer.id}`)),
    onError: (error, peer) => reported.push([(error as Error).message, peer?.id]),
  });
  const ws = new FakeWorkersSocket();
  ws.attachment = attachment('peer-1', ['room']);
  const room = new DurableObjectAcceptor(new FakeState([ws]), acceptor);
  assert.equal(room.restored, 1);
  room.webSocketClose(ws, 1000, '', true);
  await unhandled.settle();
  assert.deepEqual(reported.sort(), [
    ['onPeer rejected for peer-1', 'peer-1'],
    ['onPeerClose rejected for peer-1', 'peer-1'],
  ]);
  assert.deepEqual(unhandled.reasons, []);
});

test("WSM-ACC-009 a Durable Object's onError that rejects goes to console.error, never left unhandled", async () => {
  using unhandled = watchUnhandled();
  const logged: unknown[] = [];
  const original = console.error;
  console.error = (...args: unknown[]) => logged.push(args[0]);
  try {
    const acceptor = new Acceptor({ idleTimeoutMs: 0 });
    const ws = new FakeWorkersSocket();
    ws.attachment = attachment('peer-1', []);
    const room = new DurableObjectAcceptor(new FakeState([ws]), acceptor, {
      onError: async (error, peer) => {
        await Promise.resolve();
        throw new Error(`onError rejected on ${(error as Error).message} of ${peer?.id}`);
      },
    });
    room.webSocketError(ws, new Error('network gone'));
    await unhandled.settle();
    assert.deepEqual(logged.map((e) => (e as Error).message), [
      'onError rejected on network gone of peer-1',
    ]);
    assert.deepEqual(unhandled.reasons, []);
  } finally {
    console.error = original;
  }
});

test('WSM-WIRE-003 the PING auto-response (answering [6] with [7]) is set for the JSON codec only, and can be turned off', async () => {
  await withGlobal('WebSocketRequestResponsePair', FakeResponsePair, () => {
    const json = new FakeState();
    new DurableObjectAcceptor(json, new Acceptor({ idleTimeoutMs: 0 }));
    assert.deepEqual(json.autoResponses, [new FakeResponsePair('[6]', '[7]')]);

    const binary = new FakeState();
    new DurableObjectAcceptor(binary, new Acceptor({ idleTimeoutMs: 0, codec: msgpackCodec }));
    assert.deepEqual(binary.autoResponses, []);

    const off = new FakeState();
    new DurableObjectAcceptor(off, new Acceptor({ idleTimeoutMs: 0 }), { autoResponse: false });
    assert.deepEqual(off.autoResponses, []);
  });
  // Outside Workers (no WebSocketRequestResponsePair) nothing is set and nothing throws.
  const plain = new FakeState();
  new DurableObjectAcceptor(plain, new Acceptor({ idleTimeoutMs: 0 }));
  assert.deepEqual(plain.autoResponses, []);
});

test('a Durable Object keeps the accepted hello in the attachment, so a restored peer is not asked for it again (WSM-APP-001)', async () => {
  const ws = new FakeWorkersSocket();
  ws.attachment = attachment('peer-ada', ['room'], {});
  const acceptor = new Acceptor({
    idleTimeoutMs: 0,
    onHello: (hello) => ({ motd: `hi ${hello.payload}` }),
    onStream: (stream) => `echo ${stream.payload}`,
  });
  const room = new DurableObjectAcceptor(new FakeState([ws]), acceptor);
  room.webSocketMessage(ws, JSON.stringify([1, 1, 3, null, 'ada']));
  await new Promise((resolve) => setTimeout(resolve, 0));
  assert.deepEqual(ws.frames(), [[2, 1, 1, { motd: 'hi ada' }]]);
  assert.deepEqual((ws.attachment as { hello: unknown }).hello, { payload: 'ada', headers: null });
  await acceptor.close({ drainMs: 0 });

  // The object wakes: a new acceptor restores the peer with its hello.
  ws.sent.length = 0;
  ws.readyState = 1;
  const woken = new Acceptor({
    idleTimeoutMs: 0,
    onHello: () => assert.fail('the hello was accepted before the object slept'),
    onStream: (stream) => `echo ${stream.payload}`,
  });
  const again = new DurableObjectAcceptor(new FakeState([ws]), woken);
  assert.deepEqual(again.peer(ws)?.hello, { payload: 'ada', headers: null });
  again.webSocketMessage(ws, JSON.stringify([1, 3, 1, null, 'after']));
  await new Promise((resolve) => setTimeout(resolve, 0));
  assert.deepEqual(ws.frames(), [[2, 3, 1, 'echo after']]);
  await woken.close({ drainMs: 0 });
});

test('a Durable Object peer restored with its hello refuses a second hello: onHello does not run again and its tags stay as they were (WSM-LIM-003)', async () => {
  const ws = new FakeWorkersSocket();
  ws.attachment = {
    ...attachment('peer-ada', ['room'], {}),
    hello: { payload: 'ada', headers: null },
  };
  const hellos: unknown[] = [];
  const acceptor = new Acceptor({
    idleTimeoutMs: 0,
    onHello: (hello, peer) => {
      hellos.push(hello.payload);
      peer.tags.add(`user:${hello.payload}`);
      return 'welcome';
    },
    onStream: (stream) => `echo ${stream.payload}`,
  });
  const room = new DurableObjectAcceptor(new FakeState([ws]), acceptor);
  room.webSocketMessage(ws, JSON.stringify([1, 1, 3, null, 'mallory']));
  await new Promise((resolve) => setTimeout(resolve, 0));
  assert.deepEqual(hellos, []);
  assert.deepEqual(ws.frames(), [[4, 1, 'refused', 'The hello was already accepted']]);
  const peer = room.peer(ws)!;
  assert.deepEqual([...peer.tags], ['room']);
  assert.deepEqual(peer.hello, { payload: 'ada', headers: null });
  assert.equal(peer.isClosed, false, 'the peer keeps working');
  room.webSocketMessage(ws, JSON.stringify([1, 3, 1, null, 'still here']));
  await new Promise((resolve) => setTimeout(resolve, 0));
  assert.deepEqual(ws.frames().at(-1), [2, 3, 1, 'echo still here']);
  await acceptor.close({ drainMs: 0 });
});

/** The ref of `key`'s stored presence. */
function refOf(map: Map<string, unknown>, key: string): string {
  for (const [name, value] of map) {
    if ((value as { k?: string }).k === key) return name.slice(name.lastIndexOf('\0') + 1);
  }
  throw new Error(`No stored presence of ${key}`);
}

/** The presence frames a fake socket was sent: [tag, kind, payload]. */
function presenceFrames(ws: FakeWorkersSocket): unknown[][] {
  return ws.frames().flatMap((frame) => {
    const [kind, tag, headers, payload] = frame as [
      number,
      string,
      Record<string, string>,
      unknown,
    ];
    return kind === 9 && headers?.[':presence'] ? [[tag, headers[':presence'], payload]] : [];
  });
}

test('a Durable Object room with durableObjectPresence() keeps its presences and follows across hibernation, and ends graces on its alarm (WSM-PRS-001)', async () => {
  using clock = fakeTime();
  const T0 = Date.now();
  const storage = fakeStorage();
  const settle = () => clock.tickAsync(0);
  const options = { store: durableObjectPresence(storage), graceMs: 5000, batchMs: 0 };
  const ada = new FakeWorkersSocket();
  ada.attachment = attachment('peer-ada', ['room']);
  const bob = new FakeWorkersSocket();
  bob.attachment = attachment('peer-bob', ['room']);
  const cy = new FakeWorkersSocket();
  cy.attachment = attachment('peer-cy', ['room']);
  const first = new Acceptor({ idleTimeoutMs: 0, presence: options });
  const room = new DurableObjectAcceptor(new FakeState([ada, bob, cy]), first);
  await settle();
  for (const [ws, key] of [[ada, 'ada'], [bob, 'bob'], [cy, 'cy']] as const) {
    first.presence.track(room.peer(ws)!, 'room', key, { tab: 1 });
  }
  await first.presence.flush();
  room.webSocketMessage(ada, JSON.stringify([1, 3, 1, { ':presence': 'room' }, true]));
  await settle();
  const everyone = { ada: [{ tab: 1 }], bob: [{ tab: 1 }], cy: [{ tab: 1 }] };
  assert.deepEqual(presenceFrames(ada).map(([, kind]) => kind), ['sync']);
  assert.deepEqual((ada.attachment as { follows?: string[] }).follows, ['room']);
  assert.equal(clock.countTimers(), 0, 'nothing keeps the object awake');

  // The object hibernates (its memory is gone); cy's socket closes meanwhile.
  cy.readyState = 3;
  ada.sent.length = 0;
  let blocked = 0;
  const state = Object.assign(new FakeState([ada, bob, cy]), {
    blockConcurrencyWhile<T>(callback: () => Promise<T>): Promise<T> {
      blocked++;
      return callback();
    },
  });
  const woken = new Acceptor({
    idleTimeoutMs: 0,
    presence: { ...options, store: durableObjectPresence(storage) },
  });
  const again = new DurableObjectAcceptor(state, woken);
  assert.equal(blocked, 1, 'the wake loads the store before any event runs');
  await settle();
  assert.deepEqual(woken.presence.list('room'), everyone, 'list() is unchanged after the wake');
  assert.deepEqual(presenceFrames(ada), [], 'no new snapshot for a restored follower');
  assert.equal(
    storage.alarm,
    T0 + 5000,
    "cy's presence, whose peer did not come back, is in grace",
  );

  // The restored presences are this node's again, and ada still follows.
  const bobRef = refOf(storage.map, 'bob');
  woken.presence.untrack(again.peer(bob)!, 'room');
  await woken.presence.flush();
  assert.deepEqual(presenceFrames(ada), [['room', 'diff', {
    leaves: { bob: [bobRef] },
    joins: {},
  }]]);

  // ada closes: its grace arms no timer, only the alarm (already earlier).
  await clock.tickAsync(1000);
  again.webSocketClose(ada, 1001, 'gone');
  await settle();
  assert.equal(clock.countTimers(), 0);
  assert.equal(storage.alarm, T0 + 5000);
  assert.deepEqual(woken.presence.list('room'), { ada: [{ tab: 1 }], cy: [{ tab: 1 }] });

  // The alarm goes off: cy leaves, and the alarm moves to the end of ada's grace.
  await clock.tickAsync(4000);
  await again.alarm();
  assert.deepEqual(woken.presence.list('room'), { ada: [{ tab: 1 }] });
  assert.equal(storage.alarm, T0 + 6000);
  await clock.tickAsync(1000);
  await again.alarm();
  assert.deepEqual(woken.presence.list('room'), {});
  assert.equal(storage.map.size, 0);
  await woken.close({ drainMs: 0 });
});

test('DurableObjectAcceptor.alarm() resolves with nothing to do when the presence store is not durableObjectPresence()', async () => {
  const room = new DurableObjectAcceptor(new FakeState(), new Acceptor({ idleTimeoutMs: 0 }));
  assert.equal(await room.alarm(), undefined);
});
