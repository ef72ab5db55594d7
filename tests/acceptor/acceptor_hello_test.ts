// The acceptor's side of the hello (WSM-APP-001): onHello and its welcome, peer.hello,
// requireHello with hello_required and the hello timer, the hello without onHello, and the HELLO
// flag on the wire (WSM-WIRE-003). Raw frames go in through attach(); the dialer is the
// project's connect() over in-memory sockets.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Acceptor, type Peer } from 'muxws/acceptor';
import {
  connect,
  HelloRejectedError,
  jsonCodec,
  ProtocolError,
  type Stream,
  StreamError,
} from 'muxws';
import { Session } from '../../lib/session/session.ts';
import { raw, served } from '../_raw_peer.ts';
import { fakeTime } from '../_fake_time.ts';

/** Lets queued microtasks (handler continuations) run. */
async function settle(rounds = 20): Promise<void> {
  for (let i = 0; i < rounds; i++) await Promise.resolve();
}

/** The HelloRejectedError a failed first connect() carries (as itself or as its cause). */
function helloRejection(error: unknown): HelloRejectedError {
  const found = error instanceof HelloRejectedError ? error : (error as Error)?.cause;
  assert.ok(found instanceof HelloRejectedError, String(error));
  return found;
}

test('acceptor hands the hello to onHello, sends its return as the welcome and keeps a frozen peer.hello (WSM-APP-001)', async () => {
  const streams: Stream[] = [];
  const hellos: unknown[] = [];
  const { acceptor, WebSocket } = served({
    onHello: (hello, peer) => {
      hellos.push(hello);
      assert.equal(peer.hello, undefined, 'not accepted yet while onHello runs');
      peer.tags.add('lobby');
      return { motd: `welcome ${(hello.payload as { user: string }).user}` };
    },
    onStream: (stream) => {
      streams.push(stream);
      return 'ok';
    },
  });
  const connection = await connect('ws://test/ws', {
    WebSocket,
    reconnect: false,
    heartbeat: false,
    hello: { payload: { user: 'ada', rooms: ['a'] }, headers: { token: 't' } },
  });
  try {
    assert.deepEqual(connection.welcome, { motd: 'welcome ada' });
    const [peer] = acceptor.peers('lobby');
    assert.deepEqual(peer.hello, {
      payload: { user: 'ada', rooms: ['a'] },
      headers: { token: 't' },
    });
    assert.equal(hellos[0], peer.hello, 'onHello saw the same frozen object');
    assert.ok(Object.isFrozen(peer.hello));
    assert.ok(Object.isFrozen(peer.hello!.payload));
    assert.ok(Object.isFrozen((peer.hello!.payload as { rooms: string[] }).rooms));
    assert.ok(Object.isFrozen(peer.hello!.headers));
    assert.equal(await connection.request('next'), 'ok');
    assert.equal(streams.length, 1, 'the hello never reached onStream');
    assert.equal(streams[0].isHello, false);
  } finally {
    await connection.close();
    await acceptor.close({ drainMs: 0 });
  }
});

test('a StreamError from onHello reaches the dialer as HelloRejectedError with its code and is not reported to onError (WSM-APP-001, WSM-APP-005)', async () => {
  const errors: unknown[] = [];
  let fail: () => never = () => {
    throw new StreamError('unauthorized', 'Bad token');
  };
  const { acceptor, WebSocket } = served({
    onHello: async () => {
      await Promise.resolve();
      fail();
    },
    onError: (error) => errors.push(error),
  });
  try {
    const rejected = await connect('ws://test/ws', {
      WebSocket,
      reconnect: false,
      heartbeat: false,
      hello: { payload: 'token' },
    }).then(() => assert.fail('the hello must be rejected'), helloRejection);
    assert.equal(rejected.code, 'unauthorized');
    assert.match(rejected.message, /Bad token/);
    assert.deepEqual(errors, [], 'a deliberate StreamError is an outcome, not an error');

    fail = () => {
      throw new Error('database down');
    };
    const failed = await connect('ws://test/ws', {
      WebSocket,
      reconnect: false,
      heartbeat: false,
      hello: { payload: 'token' },
    }).then(() => assert.fail('the hello must be rejected'), helloRejection);
    assert.equal(failed.code, 'internal');
    assert.doesNotMatch(failed.message, /database/, 'no server detail reaches the dialer');
    assert.equal(errors.length, 1);
    assert.match((errors[0] as Error).message, /database down/);
  } finally {
    await acceptor.close({ drainMs: 0 });
  }
});

test('acceptor resets an OPEN before the hello with hello_required and never runs a handler (WSM-APP-001)', async () => {
  const handled: unknown[] = [];
  const errors: unknown[] = [];
  const acceptor = new Acceptor({
    idleTimeoutMs: 0,
    onHello: () => 'welcome',
    onStream: (stream) => handled.push(stream.payload),
    onError: (error) => errors.push(error),
  });
  const p = raw(acceptor);
  p.send([1, 1, 1, null, 'not a hello']); // no HELLO flag
  p.send([1, 3, 1, null, 'early']);
  await settle();
  assert.deepEqual(p.sent, [
    [4, 1, 'hello_required', 'The hello must be acknowledged first'],
    [4, 3, 'hello_required', 'The hello must be acknowledged first'],
  ]);
  p.send([1, 5, 3, null, 'late hello']); // HELLO on any id but 1 is malformed: dropped
  p.sent.length = 0;
  await settle();
  assert.deepEqual(p.sent, []);
  assert.equal(errors.length, 1, 'the late HELLO was malformed');
  assert.deepEqual(handled, []);
  assert.equal(p.handle.peer.hello, undefined);
  await acceptor.close({ drainMs: 0 });
});

test('requireHello: false lets OPENs before the hello through, and the hello still goes to onHello (WSM-APP-001)', async () => {
  const handled: unknown[] = [];
  const acceptor = new Acceptor({
    idleTimeoutMs: 0,
    requireHello: false,
    onHello: () => 'welcome',
    onStream: (stream) => handled.push(stream.payload),
  });
  const p = raw(acceptor);
  p.send([1, 3, 1, null, 'early']);
  await settle();
  assert.deepEqual(handled, ['early']);
  await acceptor.close({ drainMs: 0 });
});

test('a flood of OPENs before the hello meets the reset budget and closes the peer with 1008 (WSM-APP-001, WSM-ACC-006)', async () => {
  const acceptor = new Acceptor({
    idleTimeoutMs: 0,
    limits: { maxResetRate: 5 },
    onHello: () => 'welcome',
  });
  const p = raw(acceptor);
  for (let id = 3; id <= 15; id += 2) p.send([1, id, 1, null, 'flood']);
  await settle();
  assert.equal(p.sent.filter((f) => (f as unknown[])[2] === 'hello_required').length, 5);
  assert.deepEqual(p.closes, [[1008, 'more than 5 streams reset within one second']]);
  await acceptor.close({ drainMs: 0 });
});

test('a peer that sends no hello within helloTimeoutMs is closed with 1008 hello required, and no timer outlives a peer (WSM-APP-001)', async () => {
  using clock = fakeTime();
  const acceptor = new Acceptor({
    idleTimeoutMs: 0,
    helloTimeoutMs: 2000,
    onHello: () => 'welcome',
  });
  const silent = raw(acceptor);
  assert.equal(clock.countTimers(), 1);
  await clock.tickAsync(1999);
  assert.deepEqual(silent.closes, []);
  await clock.tickAsync(1);
  assert.deepEqual(silent.closes, [[1008, 'hello required']]);
  await settle();
  assert.equal(silent.handle.peer.isClosed, true);
  assert.equal(clock.countTimers(), 0);

  const greeting = raw(acceptor);
  greeting.send([1, 1, 3, null, 'hi']);
  await settle();
  assert.deepEqual(greeting.sent, [[2, 1, 1, 'welcome']]);
  assert.equal(clock.countTimers(), 0, 'the hello cleared its timer');
  await clock.tickAsync(5000);
  assert.deepEqual(greeting.closes, []);

  const leaving = raw(acceptor);
  assert.equal(clock.countTimers(), 1);
  leaving.handle.closed(1000, 'bye');
  assert.equal(clock.countTimers(), 0, "the peer's close cleared its timer");
  await acceptor.close({ drainMs: 0 });
  assert.equal(clock.countTimers(), 0);
});

test('without onHello a HELLO-flagged OPEN reaches onStream with stream.isHello, and no hello is required (WSM-APP-001)', async () => {
  const seen: Array<[unknown, boolean]> = [];
  let first: Peer | undefined;
  const acceptor = new Acceptor({
    idleTimeoutMs: 0,
    onStream: (stream, peer) => {
      first ??= peer;
      seen.push([stream.payload, stream.isHello]);
      return 'ok';
    },
  });
  const p = raw(acceptor);
  p.send([1, 1, 3, null, 'hello']);
  p.send([1, 3, 1, null, 'request']);
  await settle();
  assert.deepEqual(seen, [['hello', true], ['request', false]]);
  assert.equal(first?.hello, undefined, 'peer.hello is for onHello');
  await acceptor.close({ drainMs: 0 });
});

test('the hello stream is never counted against maxStreams (WSM-APP-001)', async () => {
  const acceptor = new Acceptor({
    idleTimeoutMs: 0,
    limits: { maxStreams: 1 },
    onStream: (stream) => stream.isHello ? new Promise(() => {}) : 'ok',
  });
  const p = raw(acceptor);
  p.send([1, 1, 2, null, 'hello, left open']);
  p.send([1, 3, 1, null, 'one']);
  await settle();
  assert.deepEqual(p.sent, [[2, 3, 1, 'ok']]);
  assert.equal(p.handle.peer.isClosed, false);
  await acceptor.close({ drainMs: 0 });
});

test('the HELLO flag on another stream, on DATA or from an acceptor is malformed and dropped (WSM-WIRE-003)', async () => {
  const errors: unknown[] = [];
  const handled: unknown[] = [];
  const acceptor = new Acceptor({
    idleTimeoutMs: 0,
    onError: (error) => errors.push(error),
    onStream: (stream) => {
      handled.push(stream.payload);
      return new Promise(() => {});
    },
  });
  const p = raw(acceptor);
  p.send([1, 3, 2, null, 'HELLO on stream 3']);
  p.send([1, 5, 0, null, 'open']);
  p.send([2, 5, 2, 'HELLO on DATA']);
  await settle();
  assert.deepEqual(handled, ['open']);
  assert.equal(errors.length, 2);
  assert.match((errors[0] as Error).message, /HELLO on stream 1 only/);
  assert.match((errors[1] as Error).message, /no HELLO flag on DATA/);
  assert.ok(errors.every((e) => e instanceof ProtocolError));

  const dialerErrors: unknown[] = [];
  const dialer = new Session({ send() {}, close() {} }, {
    side: 'dialer',
    codec: jsonCodec,
    onStream: () => dialerErrors.push('a handler ran'),
    onError: (error) => dialerErrors.push(error),
  });
  dialer.receive(JSON.stringify([1, 2, 2, null, 'HELLO from an acceptor']));
  assert.equal(dialerErrors.length, 1);
  assert.ok(dialerErrors[0] instanceof ProtocolError);
  dialer.close(1000, '');
  await acceptor.close({ drainMs: 0 });
});

test('the dialer sends its hello as the OPEN of stream 1 with END and HELLO (WSM-WIRE-003, WSM-APP-001)', async () => {
  const frames: unknown[] = [];
  const { acceptor, WebSocket } = served({
    onHello: (hello) => {
      frames.push(hello.payload);
      return 'w';
    },
  });
  const sent: string[] = [];
  const Spy = class extends (WebSocket as unknown as new (u: string, p?: string[]) => WebSocket) {
    override send(data: string) {
      sent.push(data);
      super.send(data);
    }
  };
  const connection = await connect('ws://test/ws', {
    WebSocket: Spy as never,
    reconnect: false,
    heartbeat: false,
    hello: { payload: 'hi' },
  });
  try {
    assert.deepEqual(JSON.parse(sent[0]), [1, 1, 3, null, 'hi']);
    assert.equal(connection.welcome, 'w');
  } finally {
    await connection.close();
    await acceptor.close({ drainMs: 0 });
  }
});

test('new Acceptor() refuses requireHello without onHello and a helloTimeoutMs of 0 (WSM-APP-001)', () => {
  assert.throws(() => new Acceptor({ requireHello: true }), {
    name: 'TypeError',
    message:
      'Cannot create Acceptor as "requireHello" needs "onHello" to acknowledge the hello: current value of "onHello" is undefined',
  });
  assert.throws(() => new Acceptor({ onHello: () => 1, helloTimeoutMs: 0 }), {
    name: 'RangeError',
    message:
      'Cannot create Acceptor as "helloTimeoutMs" must be a finite number above 0: current value is 0',
  });
  assert.throws(() => new Acceptor({ onHello: 'x' as never }), { name: 'TypeError' });
});

test('peer.hello is the decoded hello itself, frozen in place: the acceptor keeps no second copy of it (WSM-LIM-001)', async () => {
  const decoded: unknown[] = [];
  const recording = {
    ...jsonCodec,
    decode(data: string | Uint8Array) {
      const value = jsonCodec.decode(data);
      decoded.push(value);
      return value;
    },
  };
  const acceptor = new Acceptor({ codec: recording, idleTimeoutMs: 0, onHello: () => 'hi' });
  const sent: unknown[] = [];
  const handle = acceptor.attach({
    send: (data) => sent.push(JSON.parse(String(data))),
    close() {},
  });
  try {
    const payload = { user: 'ada', rooms: ['a', { name: 'b' }], bytes: 1 };
    handle.message(JSON.stringify([1, 1, 3, { token: 't' }, payload]));
    await settle();
    const [frame] = decoded as [unknown[]];
    const hello = [...acceptor.peers()][0].hello!;
    assert.equal(hello.payload, frame[4]);
    assert.equal(hello.headers, frame[3]);
    assert.deepEqual(hello.payload, payload);
    const rooms = (hello.payload as typeof payload).rooms;
    for (const part of [hello, hello.payload, hello.headers, rooms, rooms[1]]) {
      assert.ok(Object.isFrozen(part));
    }
    assert.deepEqual(sent[0], [2, 1, 1, 'hi']);
  } finally {
    await acceptor.close({ drainMs: 0 });
  }
});
