import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Acceptor, type AcceptorOptions, type Peer } from 'muxws/acceptor';
import {
  type Codec,
  jsonCodec,
  ProtocolError,
  type PublishMessage,
  type Stream,
  StreamError,
  StreamResetError,
} from 'muxws';
import { type Backplane, BackplaneError, type BackplaneMessage } from 'muxws/backplane';
import { type GoAway, Session } from '../../lib/session/session.ts';
import { closingTerms } from '../../lib/wire/codes.ts';
import { type FakeSocket, socketPair } from '../_socket_pair.ts';
import { fakeTime } from '../_fake_time.ts';
import { watchUnhandled } from '../_unhandled.ts';

/** A dialer-side Session over the client end of a socket pair, accepted by `acceptor`. */
interface Dialed {
  client: FakeSocket;
  server: FakeSocket;
  peer: Peer;
  session: Session;
  published: PublishMessage[];
  goAways: GoAway[];
  closes: Array<{ code: number; reason: string }>;
}

function dial(
  acceptor: Acceptor,
  options: { onStream?: (stream: Stream) => unknown; codec?: Codec } = {},
): Dialed {
  const [client, server] = socketPair();
  client._open('muxws.v1.json');
  const peer = acceptor.accept(server);
  const published: PublishMessage[] = [];
  const goAways: GoAway[] = [];
  const closes: Array<{ code: number; reason: string }> = [];
  const session = new Session({
    send: (data) => client.send(data),
    close: (code, reason) => client.close(code, reason),
    get bufferedAmount() {
      return client.bufferedAmount;
    },
  }, {
    side: 'dialer',
    codec: options.codec ?? jsonCodec,
    onStream: options.onStream,
    onPublish: (message) => published.push(message),
    onGoAway: (goAway) => goAways.push(goAway),
    onClose: ({ code, reason }) => closes.push({ code, reason }),
  });
  client.addEventListener('message', (e) => session.receive((e as Event & { data: string }).data));
  client.addEventListener('close', (e) => {
    const { code, reason } = e as Event & { code: number; reason: string };
    session.closed(code, reason);
  });
  return { client, server, peer, session, published, goAways, closes };
}

/** Lets queued microtasks (socket-pair deliveries, handler continuations) run. */
async function settle(rounds = 20): Promise<void> {
  for (let i = 0; i < rounds; i++) await Promise.resolve();
}

function upgradeRequest(headers: Record<string, string>, url = 'http://api.example/ws'): Request {
  return new Request(url, {
    headers: {
      upgrade: 'websocket',
      connection: 'Upgrade',
      'sec-websocket-protocol': 'muxws.v1.json',
      ...headers,
    },
  });
}

function status(result: unknown): number | string {
  return result instanceof Response ? result.status : JSON.stringify(result);
}

test('WSM-ACC-001 protocol() selects exactly the muxws token, never an extra one', async () => {
  const acceptor = new Acceptor({ idleTimeoutMs: 0 });
  assert.equal(acceptor.protocol('muxws.v1.json'), 'muxws.v1.json');
  assert.equal(acceptor.protocol('muxws.v1.json, token.abc'), 'muxws.v1.json');
  assert.equal(acceptor.protocol(['muxws.v1.json', 'token.abc']), 'muxws.v1.json');
  assert.equal(acceptor.protocol(['token.abc', 'muxws.v1.json']), 'muxws.v1.json');
  assert.equal(acceptor.protocol(' token.abc ,muxws.v1.json '), 'muxws.v1.json');
  assert.equal(acceptor.protocol('muxws.v1.msgpack'), undefined);
  assert.equal(acceptor.protocol('muxws.v1.json2'), undefined);
  assert.equal(acceptor.protocol(''), undefined);
  assert.equal(acceptor.protocol(null), undefined);
  assert.equal(acceptor.protocol([]), undefined);
  const other = new Acceptor({ idleTimeoutMs: 0, codec: { ...jsonCodec, name: 'test' } });
  assert.equal(other.protocol('muxws.v1.json, muxws.v1.test'), 'muxws.v1.test');
  await acceptor.close();
  await other.close();
});

test('WSM-ACC-003 checkUpgrade() applies the origin policy, subprotocol and upgrade checks', async () => {
  const predicateCalls: Array<string | null> = [];
  const errors: unknown[] = [];
  const policies: Record<string, AcceptorOptions['origins']> = {
    default: undefined,
    any: '*',
    list: ['https://app.example', 'HTTP://Other.Example:80'],
    predicate: (origin) => {
      predicateCalls.push(origin);
      return origin === 'https://ok.example';
    },
    throwing: () => {
      throw new Error('policy failed');
    },
  };
  const cases: Array<[string, Record<string, string>, Record<string, number | string>]> = [
    // [what, headers, expected per policy]
    ['no Origin', {}, {
      default: '{"protocol":"muxws.v1.json"}',
      any: '{"protocol":"muxws.v1.json"}',
      list: '{"protocol":"muxws.v1.json"}',
      predicate: 403,
      throwing: 403,
    }],
    ['same host', { origin: 'https://api.example', host: 'api.example' }, {
      default: '{"protocol":"muxws.v1.json"}',
      any: '{"protocol":"muxws.v1.json"}',
      list: 403,
      predicate: 403,
      throwing: 403,
    }],
    ['same host and port', { origin: 'http://127.0.0.1:8080', host: '127.0.0.1:8080' }, {
      default: '{"protocol":"muxws.v1.json"}',
      list: 403,
    }],
    ['same host, other port', { origin: 'http://127.0.0.1:8081', host: '127.0.0.1:8080' }, {
      default: 403,
    }],
    ['foreign', { origin: 'https://evil.example', host: 'api.example' }, {
      default: 403,
      any: '{"protocol":"muxws.v1.json"}',
      list: 403,
      predicate: 403,
    }],
    ['listed', { origin: 'https://app.example' }, {
      default: 403,
      list: '{"protocol":"muxws.v1.json"}',
    }],
    ['listed, other case and default port', { origin: 'http://other.example' }, {
      list: '{"protocol":"muxws.v1.json"}',
    }],
    ['opaque', { origin: 'null' }, {
      default: 403,
      list: 403,
      any: '{"protocol":"muxws.v1.json"}',
    }],
    ['accepted by the predicate', { origin: 'https://ok.example' }, {
      predicate: '{"protocol":"muxws.v1.json"}',
    }],
    ['no muxws subprotocol', { 'sec-websocket-protocol': 'chat' }, {
      default: 400,
      any: 400,
    }],
    ['no subprotocol at all', { 'sec-websocket-protocol': '' }, { default: 400 }],
    ['a credential after the muxws token', {
      'sec-websocket-protocol': 'muxws.v1.json, token.abc',
    }, { default: '{"protocol":"muxws.v1.json"}' }],
    ['not an upgrade', { upgrade: '' }, { default: 426, any: 426 }],
    ['another upgrade', { upgrade: 'h2c' }, { default: 426 }],
  ];
  for (const [name, policy] of Object.entries(policies)) {
    const acceptor = new Acceptor({
      idleTimeoutMs: 0,
      origins: policy,
      onError: (e) => errors.push(e),
    });
    for (const [what, headers, expected] of cases) {
      if (!(name in expected)) continue;
      const result = await acceptor.checkUpgrade(upgradeRequest(headers));
      assert.equal(status(result), expected[name], `${what} under the ${name} policy`);
    }
    await acceptor.close();
  }
  const post = new Request('http://api.example/ws', {
    method: 'POST',
    headers: { upgrade: 'websocket' },
  });
  const acceptor = new Acceptor({ idleTimeoutMs: 0 });
  const refused = await acceptor.checkUpgrade(post);
  assert.equal(status(refused), 426);
  assert.equal((refused as Response).headers.get('upgrade'), 'websocket');
  assert.equal(acceptor.stats.refused, 1);
  assert.deepEqual(predicateCalls, [
    null,
    'https://api.example',
    'https://evil.example',
    'https://ok.example',
  ]);
  assert.equal(errors.length, 2, 'each throw of the policy is reported');
  assert.match(String((errors[0] as Error).message), /policy failed/);
  await acceptor.close();
});

test('WSM-ACC-003 checkUpgrade() answers 503 once close() began', async () => {
  const acceptor = new Acceptor({ idleTimeoutMs: 0 });
  await acceptor.close();
  assert.equal(status(await acceptor.checkUpgrade(upgradeRequest({}))), 503);
  assert.equal(acceptor.isClosing, true);
});

test('WSM-ACC-001 new Acceptor() rejects bad options with the field and the value found', () => {
  assert.throws(() => new Acceptor({ idleTimeoutMs: -1 }), {
    name: 'RangeError',
    message:
      'Cannot create Acceptor as "idleTimeoutMs" must be a finite number of at least 0: current value is -1',
  });
  assert.throws(() => new Acceptor({ idleTimeoutMs: NaN }), RangeError);
  assert.throws(() => new Acceptor({ origins: ['not a url'] }), {
    name: 'TypeError',
    message: /"origins" must list origins such as "https:\/\/app.example": found "not a url"/,
  });
  assert.throws(
    () => new Acceptor({ origins: 'any' as unknown as '*' }),
    /"origins" must be '\*', a list of origins or a function: current value is "any"/,
  );
  assert.throws(
    () => new Acceptor({ onPeer: 1 as unknown as () => void }),
    {
      name: 'TypeError',
      message: 'Cannot create Acceptor as "onPeer" must be a function: current value is 1',
    },
  );
  assert.throws(() => new Acceptor({ limits: { maxStreams: 0 } }), RangeError);
  const off = new Acceptor({ idleTimeoutMs: false });
  assert.equal(off.stats.peers, 0);
});

test('WSM-ACC-002 accept() serves a dialer: onPeer first, then onStream with the peer', async () => {
  const order: string[] = [];
  let streamPeer: Peer | undefined;
  const acceptor = new Acceptor({
    idleTimeoutMs: 0,
    onPeer: (peer) => order.push(`peer ${peer.id}`),
    onStream: (stream, peer) => {
      streamPeer = peer;
      order.push(`stream ${stream.id}`);
      return { echo: stream.payload, headers: stream.headers };
    },
  });
  const d = dial(acceptor);
  assert.deepEqual(order, [`peer ${d.peer.id}`]);
  const answer = await d.session.request('hi', { headers: { a: 1 } });
  assert.deepEqual(answer, { echo: 'hi', headers: { a: 1 } });
  assert.deepEqual(order, [`peer ${d.peer.id}`, 'stream 1']);
  assert.equal(streamPeer, d.peer);
  assert.deepEqual([...acceptor.peers()], [d.peer]);
  assert.equal(acceptor.stats.accepted, 1);
  await acceptor.close({ drainMs: 0 });
});

/** A server-side socket that starts connecting, as Deno's does until its 101 is sent. */
class ConnectingSocket extends EventTarget {
  readyState = 0;
  binaryType = 'blob';
  bufferedAmount = 0;
  readonly sent: Array<string | Uint8Array> = [];
  closedWith: [number | undefined, string | undefined] | undefined;
  send(data: string | Uint8Array): void {
    if (this.readyState !== 1) throw new Error('send() while not open');
    this.sent.push(data);
  }
  close(code?: number, reason?: string): void {
    this.closedWith = [code, reason];
    this.readyState = 3;
    this.dispatchEvent(Object.assign(new Event('close'), { code, reason }));
  }
  open(): void {
    this.readyState = 1;
    this.dispatchEvent(new Event('open'));
  }
}

test('WSM-ACC-002 accept() of a connecting socket queues sends and fires onPeer on open', async () => {
  const peers: Peer[] = [];
  const acceptor = new Acceptor({ idleTimeoutMs: 0, onPeer: (peer) => peers.push(peer) });
  const socket = new ConnectingSocket();
  const peer = acceptor.accept(socket);
  assert.equal(socket.binaryType, 'arraybuffer');
  assert.equal(peers.length, 0, 'onPeer waits for open');
  const stream = peer.open('early', { end: true });
  assert.equal(stream.id, 2);
  assert.equal(socket.sent.length, 0, 'nothing is sent on a connecting socket');
  socket.open();
  assert.deepEqual(peers, [peer]);
  assert.deepEqual(socket.sent.map((m) => JSON.parse(String(m))), [[1, 2, 1, null, 'early']]);
  peer.close(1000, 'done');
  assert.deepEqual(socket.closedWith, [1000, 'done']);
  assert.deepEqual(await peer.closed, { code: 1000, reason: 'done' });
  stream.reset('cancel');
  await acceptor.close();
});

test('WSM-ACC-002 accept() of a socket that closes while connecting, or was closed, ends its peer without onPeer', async () => {
  const events: string[] = [];
  const acceptor = new Acceptor({
    idleTimeoutMs: 0,
    onPeer: () => events.push('peer'),
    onPeerClose: () => events.push('close'),
  });
  const socket = new ConnectingSocket();
  const peer = acceptor.accept(socket);
  socket.readyState = 3;
  socket.dispatchEvent(new Event('close'));
  assert.deepEqual(await peer.closed, { code: 1006, reason: '' });
  const closed = new ConnectingSocket();
  closed.readyState = 3;
  const late = acceptor.accept(closed);
  assert.deepEqual(await late.closed, { code: 1006, reason: '' });
  assert.deepEqual(events, [], 'no callback for a socket that never opened');
  assert.equal(acceptor.stats.peers, 0);
});

test('WSM-ACC-003 attach() keeps message order across strings, buffers, views and Blobs', async () => {
  const received: unknown[] = [];
  let done!: () => void;
  const finished = new Promise<void>((resolve) => done = resolve);
  const acceptor = new Acceptor({
    idleTimeoutMs: 0,
    onStream: async (stream) => {
      received.push(stream.payload);
      for await (const message of stream) received.push(message);
      done();
    },
  });
  const sent: Array<string | Uint8Array> = [];
  const handle = acceptor.attach({ send: (data) => sent.push(data), close() {} });
  const bytes = (frame: unknown[]) => new TextEncoder().encode(JSON.stringify(frame));
  const view = new Uint8Array(64);
  const inner = bytes([2, 1, 0, 'view']);
  view.set(inner, 7);
  handle.message(JSON.stringify([1, 1, 0, null, 'open']));
  handle.message(new Blob([bytes([2, 1, 0, 'blob'])]));
  handle.message(bytes([2, 1, 0, 'buffer']).buffer);
  handle.message(new DataView(view.buffer, 7, inner.byteLength));
  handle.message(new Blob([bytes([2, 1, 0, 'blob2'])]));
  handle.message(JSON.stringify([2, 1, 1, 'last']));
  await finished;
  assert.deepEqual(received, ['open', 'blob', 'buffer', 'view', 'blob2', 'last']);
  await acceptor.close({ drainMs: 0 });
});

test('WSM-ACC-002 attach() restores id, tags and data, and a closed() without code reads 1006', async () => {
  const closes: Array<[string, number, string]> = [];
  const acceptor = new Acceptor({
    idleTimeoutMs: 0,
    onPeerClose: (peer, { code, reason }) => closes.push([peer.id, code, reason]),
  });
  const handle = acceptor.attach({ send() {}, close() {} }, {
    id: 'peer-1',
    tags: ['room:a', 'user:1'],
    data: { name: 'ada' },
  });
  assert.equal(handle.peer.id, 'peer-1');
  assert.deepEqual([...handle.peer.tags], ['room:a', 'user:1']);
  assert.deepEqual(handle.peer.data, { name: 'ada' });
  assert.deepEqual([...acceptor.peers('room:a')], [handle.peer]);
  assert.throws(() => acceptor.attach({ send() {}, close() {} }, { tags: [''] }), TypeError);
  assert.equal(acceptor.stats.peers, 1, 'a rejected attach leaves no peer');
  handle.closed(0, '');
  handle.closed(1000, 'again');
  assert.deepEqual(await handle.peer.closed, { code: 1006, reason: '' });
  assert.deepEqual(closes, [['peer-1', 1006, '']]);
  assert.equal(handle.peer.isClosed, true);
  assert.deepEqual([...acceptor.peers('room:a')], []);
});

test('WSM-ACC-004 Peer has a UUID id, empty tags and data, and validates tags', async () => {
  const acceptor = new Acceptor({ idleTimeoutMs: 0 });
  const a = dial(acceptor).peer;
  const b = dial(acceptor).peer;
  assert.match(a.id, /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
  assert.notEqual(a.id, b.id);
  assert.equal(a.tags.size, 0);
  assert.deepEqual(a.data, {});
  assert.notEqual(a.data, b.data);
  assert.throws(() => a.tags.add(''), {
    name: 'TypeError',
    message:
      'Cannot add a tag to a Peer as the tag must be a string of 1 to 256 characters: current value is ""',
  });
  assert.throws(() => a.tags.add('x'.repeat(257)), TypeError);
  assert.throws(() => a.tags.add(7 as unknown as string), /current value is 7/);
  a.tags.add('x'.repeat(256)).add('room:a');
  b.tags.add('room:a');
  assert.equal(a.tags.size, 2);
  assert.deepEqual(new Set(acceptor.peers('room:a')), new Set([a, b]));
  assert.deepEqual([...acceptor.peers('x'.repeat(256))], [a]);
  a.tags.delete('room:a');
  assert.deepEqual([...acceptor.peers('room:a')], [b]);
  b.tags.clear();
  assert.deepEqual([...acceptor.peers('room:a')], []);
  assert.deepEqual([...acceptor.peers('nobody')], []);
  await acceptor.close({ drainMs: 0 });
});

test('WSM-ACC-004 peer.closed is one promise whether read before or after the end, and data can be replaced', async () => {
  const acceptor = new Acceptor({ idleTimeoutMs: 0 });
  const early = dial(acceptor);
  const late = dial(acceptor);
  const before = early.peer.closed;
  assert.equal(early.peer.closed, before);
  early.peer.close(4000, 'early');
  late.peer.close(4001, 'late');
  assert.deepEqual(await before, { code: 4000, reason: 'early' });
  const after = late.peer.closed;
  assert.equal(late.peer.closed, after);
  assert.deepEqual(await after, { code: 4001, reason: 'late' });
  const data = early.peer.data;
  data.seen = true;
  assert.deepEqual(early.peer.data, { seen: true });
  early.peer.data = { replaced: 1 };
  assert.deepEqual(early.peer.data, { replaced: 1 });
  await acceptor.close({ drainMs: 0 });
});

test('WSM-ACC-004 peer.request() and peer.open() reach the dialer, streams both ways', async () => {
  const acceptor = new Acceptor({ idleTimeoutMs: 0 });
  const d = dial(acceptor, {
    onStream: async (stream) => {
      if (stream.payload === 'count') {
        for (let i = 1; i <= 3; i++) await stream.write(i);
        return 'done';
      }
      return { got: stream.payload };
    },
  });
  assert.deepEqual(await d.peer.request('ping'), { got: 'ping' });
  const stream = d.peer.open('count', { end: true });
  const messages: unknown[] = [];
  for await (const message of stream) messages.push(message);
  assert.deepEqual(messages, [1, 2, 3, 'done']);
  await stream.closed;
  await acceptor.close({ drainMs: 0 });
});

test('WSM-ACC-004 peer.close() validates, reaches the dialer, settles closed once', async () => {
  const closes: Array<[Peer, number, string]> = [];
  const acceptor = new Acceptor({
    idleTimeoutMs: 0,
    onPeerClose: (peer, { code, reason }) => closes.push([peer, code, reason]),
  });
  const d = dial(acceptor);
  for (const code of [999, 1004, 1005, 1006, 1015, 2000, 5000, 1000.5]) {
    assert.throws(() => d.peer.close(code), {
      name: 'RangeError',
      message: new RegExp(
        `"code" must be 1000–1003, 1007–1014 or 3000–4999: current value is ${code}`,
      ),
    });
  }
  assert.throws(
    () => d.peer.close(1000, 'é'.repeat(62)),
    /"reason" must be a string of at most 123 UTF-8 bytes/,
  );
  assert.equal(d.server.sent.length, 0, 'nothing was sent by the rejected calls');
  d.peer.close(4403, 'forbidden');
  d.peer.close(1000, 'again');
  assert.deepEqual(await d.peer.closed, { code: 4403, reason: 'forbidden' });
  await settle();
  assert.deepEqual(d.client.closeInfo, { code: 4403, reason: 'forbidden', wasClean: true });
  assert.deepEqual(closes, [[d.peer, 4403, 'forbidden']]);
  assert.equal(acceptor.stats.peers, 0);
  assert.throws(() => d.peer.open('late'), { name: 'NotConnectedError' });
});

test('WSM-ACC-004 a dialer closing its socket ends the peer and fails its streams', async () => {
  const closes: number[] = [];
  let stream!: Stream;
  const acceptor = new Acceptor({
    idleTimeoutMs: 0,
    onPeerClose: (_peer, { code }) => closes.push(code),
    onStream: (s) => {
      stream = s;
      return new Promise(() => {});
    },
  });
  const d = dial(acceptor);
  d.session.open('hang');
  await settle();
  d.client.close(1000, 'bye');
  assert.deepEqual(await d.peer.closed, { code: 1000, reason: 'bye' });
  await assert.rejects(
    stream.closed,
    (e) => e instanceof StreamResetError && e.code === 'connection_lost',
  );
  assert.deepEqual(closes, [1000]);
});

/** A JSON codec that counts how often it encodes each frame kind. */
function countingCodec(): Codec & { counts: Map<number, number> } {
  const counts = new Map<number, number>();
  return {
    ...jsonCodec,
    counts,
    encode(frame: readonly unknown[]) {
      counts.set(frame[0] as number, (counts.get(frame[0] as number) ?? 0) + 1);
      return jsonCodec.encode(frame);
    },
  };
}

test('WSM-ACC-005 broadcast() encodes PUBLISH once and reaches exactly the tagged peers minus except', async () => {
  const codec = countingCodec();
  const acceptor = new Acceptor({ idleTimeoutMs: 0, codec });
  const alice = dial(acceptor);
  const bob = dial(acceptor);
  const carol = dial(acceptor);
  const muted = dial(acceptor);
  const outsider = dial(acceptor);
  for (const d of [alice, bob, carol, muted]) d.peer.tags.add('room:a');
  muted.peer.tags.add('muted');
  outsider.peer.tags.add('room:b');
  carol.peer.tags.add('user:carol');

  const n = await acceptor.broadcast('room:a', { text: 'hi' }, {
    headers: { from: 'carol' },
    except: ['muted', 'user:carol'],
  });
  assert.equal(n, 2);
  assert.equal(codec.counts.get(9), 1, 'one PUBLISH encoding for every peer');
  await settle();
  for (const d of [alice, bob]) {
    assert.deepEqual(d.published, [{
      tag: 'room:a',
      headers: { from: 'carol' },
      payload: { text: 'hi' },
    }]);
  }
  for (const d of [carol, muted, outsider]) assert.deepEqual(d.published, []);

  assert.equal(await acceptor.broadcast('room:b', 1), 1);
  assert.equal(await acceptor.broadcast('room:none', 1), 0);
  assert.equal(codec.counts.get(9), 2, 'no encoding when no peer holds the tag');
  await settle();
  assert.deepEqual(outsider.published, [{ tag: 'room:b', headers: null, payload: 1 }]);

  alice.peer.close(1000);
  assert.equal(await acceptor.broadcast('room:a', 2), 3, 'a closed peer is not reached');
  assert.equal(acceptor.stats.delivered, 6);
  assert.equal(acceptor.stats.dropped, 0);
  await acceptor.close({ drainMs: 0 });
});

test('WSM-ACC-005 broadcast() skips a peer over highWaterMark and counts it in stats.dropped', async () => {
  const acceptor = new Acceptor({ idleTimeoutMs: 0, limits: { highWaterMark: 1024 } });
  const slow = dial(acceptor);
  const fast = dial(acceptor);
  slow.peer.tags.add('all');
  fast.peer.tags.add('all');
  slow.server.pause(); // the slow peer's socket holds what is sent to it
  assert.equal(await acceptor.broadcast('all', 'x'.repeat(2000)), 2);
  assert.ok(slow.server.bufferedAmount > 1024);
  assert.equal(await acceptor.broadcast('all', 'second'), 1);
  assert.equal(await acceptor.broadcast('all', 'third'), 1);
  assert.equal(acceptor.stats.dropped, 2);
  slow.server.resume();
  await settle();
  assert.deepEqual(slow.published.map((m) => String(m.payload).length), [2000]);
  assert.deepEqual(fast.published.map((m) => m.payload), ['x'.repeat(2000), 'second', 'third']);
  assert.equal(await acceptor.broadcast('all', 'fourth'), 2, 'a drained peer is reached again');
  await acceptor.close({ drainMs: 0 });
});

test('WSM-ACC-005 broadcast() rejects a bad tag or except tag with TypeError', async () => {
  const acceptor = new Acceptor({ idleTimeoutMs: 0 });
  await assert.rejects(acceptor.broadcast('', 1), {
    name: 'TypeError',
    message:
      'Cannot broadcast as the tag must be a string of 1 to 256 characters: current value is ""',
  });
  await assert.rejects(acceptor.broadcast('a', 1, { except: [5 as unknown as string] }), TypeError);
  await acceptor.close();
});

test('WSM-ACC-008 close() sends GOAWAY, closes idle peers at once, busy ones when done, the rest at drainMs', async () => {
  using clock = fakeTime();
  const releases: Array<() => void> = [];
  const acceptor = new Acceptor({
    idleTimeoutMs: 0,
    onStream: (stream) => {
      if (stream.payload === 'forever') return new Promise(() => {});
      return new Promise((resolve) => releases.push(() => resolve('finished')));
    },
  });
  const idle = dial(acceptor);
  const busy = dial(acceptor);
  const stuck = dial(acceptor);
  const answer = busy.session.request('work');
  const hung = stuck.session.request('forever').catch((e: unknown) => e);
  await settle();
  assert.equal(releases.length, 1);

  let resolved = false;
  const closing = acceptor.close({ drainMs: 3000, spreadMs: 500 }).then(() => resolved = true);
  await settle();
  for (const d of [idle, busy, stuck]) {
    assert.deepEqual(d.goAways, [{
      lastId: 1 - (d === idle ? 1 : 0),
      code: 'restart',
      message: 'The acceptor is closing',
      spreadMs: 500,
    }]);
  }
  assert.deepEqual(
    idle.closes,
    [{ code: 1012, reason: 'service restart' }],
    'an idle peer closes at once',
  );
  assert.equal(busy.closes.length, 0);
  assert.equal(status(await acceptor.checkUpgrade(upgradeRequest({}))), 503);

  // A stream opened after the GOAWAY is refused.
  const late = busy.session.request('late').catch((e) => e);
  await settle();
  const lateError = await late;
  assert.ok(
    lateError instanceof Error &&
      ('code' in lateError ? lateError.code === 'refused' : lateError.name === 'NotConnectedError'),
    `a new stream after GOAWAY is refused, got ${lateError}`,
  );

  await clock.tickAsync(1000);
  releases[0]();
  assert.equal(await answer, 'finished');
  await settle();
  assert.deepEqual(
    busy.closes,
    [{ code: 1012, reason: 'service restart' }],
    'a busy peer closes once done',
  );
  assert.equal(stuck.closes.length, 0);
  assert.equal(resolved, false);

  await clock.tickAsync(1999);
  assert.equal(stuck.closes.length, 0);
  await clock.tickAsync(1);
  await settle();
  assert.deepEqual(
    stuck.closes,
    [{ code: 1012, reason: 'service restart' }],
    'the rest close at drainMs',
  );
  const lost = await hung;
  assert.ok(lost instanceof StreamResetError && lost.code === 'connection_lost');
  await closing;
  assert.equal(resolved, true);
  assert.equal(acceptor.stats.peers, 0);
  assert.equal(clock.countTimers(), 0, 'no timer outlives close()');
  assert.equal(acceptor.close(), acceptor.close(), 'close() is idempotent');
});

test('WSM-ACC-008 close() drains 100 peers per turn of the event loop, so accepts can interleave', async () => {
  using clock = fakeTime();
  const acceptor = new Acceptor({ idleTimeoutMs: 0 });
  const sent: number[] = [];
  for (let i = 0; i < 250; i++) {
    let goAways = 0;
    const index = sent.push(0) - 1;
    acceptor.attach({
      send: (data) => {
        if ((JSON.parse(String(data)) as unknown[])[0] === 8) sent[index] = ++goAways;
      },
      close() {},
    });
  }
  const closing = acceptor.close({ drainMs: 1000, spreadMs: 500 });
  const reached = () => sent.filter((n) => n === 1).length;
  assert.equal(reached(), 100, 'the first slice, at once');
  await clock.nextAsync(); // the next turn of the event loop: the one timer due first
  assert.equal(reached(), 200, 'the next slice, one turn later');
  await clock.nextAsync();
  assert.equal(reached(), 250);
  await clock.tickAsync(1000); // the sinks never report a close: drainMs ends the wait
  await closing;
  assert.equal(acceptor.stats.peers, 0);
  assert.equal(clock.countTimers(), 0, 'no timer outlives close()');
});

test('WSM-ACC-008 an Acceptor is async-disposable: leaving its scope closes it', async () => {
  let peer: Peer;
  {
    await using acceptor = new Acceptor({ idleTimeoutMs: 0 });
    peer = dial(acceptor).peer;
  }
  assert.deepEqual(await peer.closed, { code: 1012, reason: 'service restart' });
});

test('WSM-ACC-008 close() validates its options and closes a late socket at once without onPeer', async () => {
  const peers: Peer[] = [];
  const closes: Peer[] = [];
  const acceptor = new Acceptor({
    idleTimeoutMs: 0,
    onPeer: (p) => peers.push(p),
    onPeerClose: (p) => closes.push(p),
  });
  await assert.rejects(acceptor.close({ code: 1005 }), RangeError);
  await assert.rejects(
    acceptor.close({ drainMs: -1 }),
    /"drainMs" must be a finite number of at least 0: current value is -1/,
  );
  await assert.rejects(acceptor.close({ spreadMs: Infinity }), RangeError);
  assert.equal(acceptor.isClosing, false, 'a rejected close() leaves the acceptor open');
  await acceptor.close({ code: 4000, spreadMs: 300 });
  const late = dial(acceptor);
  await settle();
  assert.equal(late.peer.isClosed, true);
  assert.deepEqual(late.closes, [{ code: 4000, reason: 'shutdown' }]);
  assert.deepEqual(late.goAways, [{
    lastId: 0,
    code: 'shutdown',
    message: 'The acceptor is closing',
    spreadMs: 300,
  }]);
  assert.deepEqual(peers, []);
  assert.deepEqual(closes, []);
});

test('closingTerms() maps 1012 to GOAWAY restart and reason service restart, any other code to shutdown (WSM-ACC-008)', () => {
  const cases: Array<[number, string, string]> = [
    [1012, 'restart', 'service restart'],
    [1000, 'shutdown', 'shutdown'],
    [1001, 'shutdown', 'shutdown'],
    [1011, 'shutdown', 'shutdown'],
    [4000, 'shutdown', 'shutdown'],
  ];
  for (const [code, goAway, reason] of cases) {
    assert.deepEqual(closingTerms(code), { goAway, reason }, `code ${code}`);
  }
});

test('close() with a code other than 1012 sends GOAWAY shutdown and closes each peer with the reason shutdown (WSM-ACC-008)', async () => {
  const acceptor = new Acceptor({ idleTimeoutMs: 0 });
  const peer = dial(acceptor);
  await settle();
  await acceptor.close({ code: 1001, spreadMs: 200 });
  await settle();
  assert.deepEqual(peer.goAways, [{
    lastId: 0,
    code: 'shutdown',
    message: 'The acceptor is closing',
    spreadMs: 200,
  }]);
  assert.deepEqual(peer.closes, [{ code: 1001, reason: 'shutdown' }]);
  assert.deepEqual(await peer.peer.closed, { code: 1001, reason: 'shutdown' });
});

test('WSM-ACC-007 the idle sweep closes a silent peer with 1001 after idleTimeoutMs, one timer, none when empty', async () => {
  using clock = fakeTime();
  const acceptor = new Acceptor({ idleTimeoutMs: 60_000 });
  assert.equal(clock.countTimers(), 0, 'no timer without peers');
  const silent = dial(acceptor);
  await clock.tickAsync(10_000);
  const chatty = dial(acceptor);
  assert.equal(clock.countTimers(), 1, 'one sweep timer for every peer');
  for (let t = 0; t < 6; t++) {
    await clock.tickAsync(15_000);
    chatty.session.ping();
  }
  // silent: accepted at 0, chatty: at 10 s with a PING every 15 s.
  assert.deepEqual(silent.closes, [{ code: 1001, reason: 'idle timeout' }]);
  assert.deepEqual(await silent.peer.closed, { code: 1001, reason: 'idle timeout' });
  assert.equal(chatty.peer.isClosed, false);
  assert.equal(acceptor.stats.idleClosed, 1);
  const closedAt = Date.now();
  await clock.tickAsync(60_000);
  assert.deepEqual(chatty.closes, [{ code: 1001, reason: 'idle timeout' }]);
  assert.ok(Date.now() - closedAt <= 60_000);
  assert.equal(acceptor.stats.peers, 0);
  assert.equal(clock.countTimers(), 0, 'the sweep disarms when the last peer leaves');
  await acceptor.close();
});

test('WSM-ACC-007 a silent peer is closed exactly idleTimeoutMs after its last message', async () => {
  using clock = fakeTime();
  const acceptor = new Acceptor({ idleTimeoutMs: 1000 });
  const d = dial(acceptor);
  await clock.tickAsync(400);
  d.session.ping();
  await clock.tickAsync(999);
  assert.equal(d.peer.isClosed, false);
  await clock.tickAsync(1);
  assert.equal(d.peer.isClosed, true);
  assert.equal(clock.countTimers(), 0);
  await acceptor.close();
});

test('WSM-DIAL-009 the acceptor answers PING with PONG and never pings on its own', async () => {
  using clock = fakeTime();
  const acceptor = new Acceptor({ idleTimeoutMs: 60_000 });
  const d = dial(acceptor);
  for (let i = 0; i < 3; i++) {
    await clock.tickAsync(50_000);
    d.session.ping();
    await clock.tickAsync(0);
  }
  await clock.tickAsync(59_999);
  const frames = d.server.sent.map((m) => JSON.parse(String(m)));
  assert.deepEqual(frames, [[7], [7], [7]], 'one PONG per PING, nothing else');
  assert.equal(d.peer.isClosed, false);
  await acceptor.close({ drainMs: 0 });
});

test('WSM-ACC-007 idleTimeoutMs 0 or false arms no timer at all, so a Durable Object can hibernate', async () => {
  using clock = fakeTime();
  for (const idleTimeoutMs of [0, false] as const) {
    const acceptor = new Acceptor({ idleTimeoutMs });
    const d = dial(acceptor);
    await clock.tickAsync(10 * 60_000);
    assert.equal(d.peer.isClosed, false);
    assert.equal(clock.countTimers(), 0);
    await acceptor.close({ drainMs: 0 });
  }
});

test('WSM-ACC-009 throwing callbacks are contained and reported with the peer', async () => {
  const reported: Array<[string, Peer | undefined]> = [];
  const acceptor = new Acceptor({
    idleTimeoutMs: 0,
    onPeer: () => {
      throw new Error('onPeer failed');
    },
    onPeerClose: () => {
      throw new Error('onPeerClose failed');
    },
    onStream: (stream) => {
      if (stream.payload === 'refuse') throw new StreamError('nope', 'not today');
      throw new Error('handler failed with a secret');
    },
    onError: (error, peer) => reported.push([(error as Error).message, peer]),
  });
  const d = dial(acceptor);
  await assert.rejects(d.session.request('x'), (e) => {
    assert.ok(e instanceof StreamResetError);
    assert.equal(e.code, 'internal');
    assert.doesNotMatch(e.message, /secret/);
    return true;
  });
  await assert.rejects(d.session.request('refuse'), { code: 'nope', message: /not today/ });
  d.peer.close(1000);
  assert.deepEqual(reported.map(([m]) => m), [
    'onPeer failed',
    'handler failed with a secret',
    'onPeerClose failed',
  ]);
  assert.ok(reported.every(([, peer]) => peer === d.peer));
});

test('WSM-ACC-009 a throwing onError goes to console.error and the peer keeps working', async () => {
  const logged: unknown[] = [];
  const original = console.error;
  console.error = (...args: unknown[]) => logged.push(args[0]);
  try {
    const acceptor = new Acceptor({
      idleTimeoutMs: 0,
      onPeer: () => {
        throw new Error('first');
      },
      onError: () => {
        throw new Error('second');
      },
      onStream: () => 'still here',
    });
    const d = dial(acceptor);
    assert.equal(await d.session.request('x'), 'still here');
    assert.deepEqual(logged.map((e) => (e as Error).message), ['second']);
    await acceptor.close({ drainMs: 0 });
  } finally {
    console.error = original;
  }
});

test('WSM-ACC-009 async callbacks that reject are reported with the peer, never left unhandled', async () => {
  using unhandled = watchUnhandled();
  const reported: Array<[string, Peer | undefined]> = [];
  const acceptor = new Acceptor({
    idleTimeoutMs: 0,
    onPeer: async () => {
      await Promise.resolve();
      throw new Error('onPeer rejected');
    },
    onPeerClose: () => Promise.reject(new Error('onPeerClose rejected')),
    onStream: () => 'served',
    onError: (error, peer) => reported.push([(error as Error).message, peer]),
  });
  const d = dial(acceptor);
  assert.equal(await d.session.request('x'), 'served');
  d.peer.close(1000);
  await unhandled.settle();
  assert.deepEqual(reported, [['onPeer rejected', d.peer], ['onPeerClose rejected', d.peer]]);
  assert.deepEqual(unhandled.reasons, []);
});

test('WSM-ACC-009 an onError that rejects goes to console.error, never left unhandled', async () => {
  using unhandled = watchUnhandled();
  const logged: unknown[] = [];
  const original = console.error;
  console.error = (...args: unknown[]) => logged.push(args[0]);
  try {
    const acceptor = new Acceptor({
      idleTimeoutMs: 0,
      onPeer: async () => {
        await Promise.resolve();
        throw new Error('first');
      },
      onError: async (error) => {
        await Promise.resolve();
        throw new Error(`onError rejected on ${(error as Error).message}`);
      },
      onStream: () => 'still here',
    });
    const d = dial(acceptor);
    assert.equal(await d.session.request('x'), 'still here');
    d.client.send('[99]'); // a malformed frame: reported by the session through onError
    await unhandled.settle();
    const [first, malformed, ...rest] = logged.map((e) => (e as Error).message);
    assert.equal(first, 'onError rejected on first');
    assert.match(malformed, /^onError rejected on Malformed frame/);
    assert.deepEqual(rest, []);
    assert.deepEqual(unhandled.reasons, []);
    await acceptor.close({ drainMs: 0 });
  } finally {
    console.error = original;
  }
});

test('WSM-ACC-009 a malformed frame is reported through onError and the peer stays open', async () => {
  const reported: unknown[] = [];
  const acceptor = new Acceptor({
    idleTimeoutMs: 0,
    onError: (e) => reported.push(e),
    onStream: () => 'ok',
  });
  const d = dial(acceptor);
  d.client.send('[99]');
  await settle();
  assert.equal(reported.length, 1);
  assert.ok(reported[0] instanceof ProtocolError);
  assert.equal(await d.session.request('x'), 'ok');
  await acceptor.close({ drainMs: 0 });
});

/** Two in-memory backplanes: what one publishes, the other's subscribers receive. */
function memoryBackplanes(): [Backplane, Backplane, { subscribers: () => number }] {
  const handlers = [
    new Set<(m: BackplaneMessage) => void>(),
    new Set<(m: BackplaneMessage) => void>(),
  ];
  const side = (mine: number): Backplane => ({
    publish: (message) => handlers[1 - mine].forEach((handler) => handler(message)),
    subscribe: (handler) => {
      handlers[mine].add(handler);
      return () => handlers[mine].delete(handler);
    },
  });
  return [side(0), side(1), { subscribers: () => handlers[0].size + handlers[1].size }];
}

test('WSM-BP-001 broadcast() reaches the tagged peers of another node with the same bytes, except included', async () => {
  const [bpA, bpB, probe] = memoryBackplanes();
  const codecA = countingCodec();
  const codecB = countingCodec();
  const nodeA = new Acceptor({ idleTimeoutMs: 0, codec: codecA, backplane: bpA, nodeId: 'a' });
  const nodeB = new Acceptor({ idleTimeoutMs: 0, codec: codecB, backplane: bpB });
  assert.equal(probe.subscribers(), 2);
  const onA = dial(nodeA);
  const onB = dial(nodeB);
  const mutedOnB = dial(nodeB);
  const elsewhere = dial(nodeB);
  onA.peer.tags.add('room');
  onB.peer.tags.add('room');
  mutedOnB.peer.tags.add('room').add('muted');
  elsewhere.peer.tags.add('other');

  assert.equal(await nodeA.broadcast('room', 'hi', { except: ['muted'] }), 1, 'the local count');
  assert.equal(codecA.counts.get(9), 1);
  assert.equal(codecB.counts.get(9), undefined, 'the receiving node sends the bytes as they are');
  assert.equal(
    await nodeB.broadcast('nobody-here', 'x'),
    0,
    'a node with a backplane still publishes',
  );
  await settle();
  assert.deepEqual(onA.published, [{ tag: 'room', headers: null, payload: 'hi' }]);
  assert.deepEqual(onB.published, [{ tag: 'room', headers: null, payload: 'hi' }]);
  assert.deepEqual(mutedOnB.published, []);
  assert.deepEqual(elsewhere.published, []);
  assert.equal(nodeB.stats.delivered, 1);

  await nodeA.close({ drainMs: 0 });
  await nodeB.close({ drainMs: 0 });
  assert.equal(probe.subscribers(), 0, 'close() ends the subscriptions');
});

test('WSM-BP-004 a failing backplane is reported and local delivery goes on', async () => {
  const reported: unknown[] = [];
  for (
    const publish of [
      () => {
        throw new Error('publish threw');
      },
      () => Promise.reject(new Error('publish rejected')),
    ]
  ) {
    const acceptor = new Acceptor({
      idleTimeoutMs: 0,
      backplane: { publish, subscribe: () => () => {} },
      onError: (error) => reported.push(error),
    });
    const d = dial(acceptor);
    d.peer.tags.add('t');
    assert.equal(await acceptor.broadcast('t', 1), 1);
    await settle();
    assert.deepEqual(d.published.map((m) => m.payload), [1]);
    await acceptor.close({ drainMs: 0 });
  }
  assert.deepEqual(reported.map((e) => (e as Error).message), [
    'publish threw',
    'publish rejected',
  ]);
});

test('WSM-BP-001 a broadcast encoded by another codec is reported, its own messages ignored', async () => {
  const reported: unknown[] = [];
  let handler!: (message: BackplaneMessage) => void;
  const acceptor = new Acceptor({
    idleTimeoutMs: 0,
    nodeId: 'me',
    backplane: { publish() {}, subscribe: (h) => (handler = h, () => {}) },
    onError: (error) => reported.push(error),
  });
  const d = dial(acceptor);
  d.peer.tags.add('t');
  const message = { tag: 't', headers: null, except: [], payload: '[9,"t",null,1]' };
  handler({ ...message, origin: 'me', codec: 'json' });
  handler({ ...message, origin: 'other', codec: 'msgpack' });
  handler({ ...message, origin: 'other', codec: 'json' });
  await settle();
  assert.deepEqual(d.published, [{ tag: 't', headers: null, payload: 1 }]);
  assert.equal(reported.length, 1);
  assert.ok(reported[0] instanceof BackplaneError);
  assert.match((reported[0] as Error).message, /codec "msgpack": this acceptor uses "json"/);
  assert.throws(
    () => new Acceptor({ backplane: {} as Backplane }),
    /"backplane" must have publish\(\) and subscribe\(\): current value is \{\}/,
  );
  assert.throws(() => new Acceptor({ nodeId: '' }), /"nodeId" must be a non-empty string/);
  await acceptor.close({ drainMs: 0 });
});

test('WSM-BP-002 the acceptor entry re-exports the backplane, so a server imports both from one place', async () => {
  const entry = await import('../../lib/acceptor/acceptor.ts');
  const backplane = await import('../../lib/broadcast/backplane.ts');
  for (const name of ['broadcastChannelBackplane', 'BackplaneError', 'BackplaneGapError']) {
    assert.equal(
      (entry as Record<string, unknown>)[name],
      (backplane as Record<string, unknown>)[name],
      name,
    );
  }
});
