// The dialer over both of its transports: every case below runs once over the WebSocket
// transport (the in-memory socket pair's fake WebSocket) and once over an in-memory transport
// that implements the dialer's transport interface directly, so the state machine, the attempt
// and the redial loop are shown not to depend on WebSocket (WSM-DIAL-*, WSM-RCN-*, WSM-SUB-*).
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import {
  ClosedError,
  type CloseInfo,
  connect,
  ConnectError,
  type Connection,
  type ConnectOptions,
  type DialContext,
  type DialTargetInput,
  HelloRejectedError,
  NotConnectedError,
  ProtocolError,
  type Stream,
  StreamError,
  StreamResetError,
  subscribe,
  TimeoutError,
  waitWhileReconnecting,
} from 'muxws';
import { connectOver } from '../../lib/dialer/_connection.ts';
import { fakeTime } from '../_fake_time.ts';
import { FakeServer } from '../_socket_pair.ts';
import { MemoryServer } from '../_memory_transport.ts';
import { type DialDecision, serveFake, TestAcceptor } from '../_test_acceptor.ts';
import { goAway } from '../../lib/session/acceptor_api.ts';

const URL_ = 'ws://fake/ws';
const never = () => new Promise<never>(() => {});

/** One carrier under test: how to connect over it and how to disturb its dials. */
interface Rig {
  readonly acceptor: TestAcceptor;
  /** Decides each dial (default: accept). */
  decide(fn: (index: number) => DialDecision): void;
  connect(target: DialTargetInput, options: ConnectOptions): Promise<Connection>;
  /** How many dials so far. */
  dials(): number;
  /** The subprotocols offered on dial `index`. */
  offered(index: number): readonly string[];
  /** Messages the dialer sent on dial `index`. */
  sent(index: number): ReadonlyArray<string | Uint8Array>;
  /** The latest dial's connection drops abruptly (1006). */
  drop(): void;
  /** The acceptor's messages on the latest dial stop arriving. */
  pause(): void;
}

function webSocketRig(): Rig {
  const server = new FakeServer();
  const acceptor = new TestAcceptor();
  let decide: (index: number) => DialDecision = () => ({ kind: 'accept' });
  serveFake(server, acceptor, (_c, index) => decide(index));
  return {
    acceptor,
    decide: (fn) => decide = fn,
    connect: (target, options) => connect(target, { ...options, WebSocket: server.WebSocket }),
    dials: () => server.connections.length,
    offered: (index) => server.connections[index].protocols,
    sent: (index) => server.connections[index].client.sent,
    drop: () => server.connections.at(-1)!.client.drop(),
    pause: () => server.connections.at(-1)!.server.pause(),
  };
}

function memoryRig(): Rig {
  const acceptor = new TestAcceptor();
  const server = new MemoryServer(acceptor);
  return {
    acceptor,
    decide: (fn) => server.decide = (_dial, index) => fn(index),
    connect: (target, options) => connectOver(server.transport, target, options),
    dials: () => server.dials.length,
    offered: (index) => server.dials[index].protocols,
    sent: (index) => server.dials[index].sent,
    drop: () => server.dials.at(-1)!.wire!.drop(),
    pause: () => server.dials.at(-1)!.wire!.pause(),
  };
}

/** Records what the dialer reports, for assertions. */
function recorder() {
  const events: string[] = [];
  const closes: CloseInfo[] = [];
  const contexts: DialContext[] = [];
  const dialedAt: number[] = [];
  const options = (extra: ConnectOptions = {}): ConnectOptions => ({
    heartbeat: false,
    draw: () => 0,
    onOpen: (info) => events.push(`open:${info.reconnected}:${info.attempts}`),
    onClose: (info) => {
      closes.push(info);
      events.push(`close:${info.code}:${info.willRetry}`);
    },
    onReconnecting: (info) => events.push(`reconnecting:${info.attempt}:${info.delayMs}`),
    ...extra,
  });
  const target = (ctx: DialContext) => {
    contexts.push(ctx);
    dialedAt.push(Date.now());
    return { url: URL_, protocols: ['extra.token'] };
  };
  return { events, closes, contexts, dialedAt, options, target };
}

for (const [name, makeRig] of [['WebSocket', webSocketRig], ['in-memory', memoryRig]] as const) {
  describe(`the dialer over the ${name} transport`, () => {
    test('connect() offers the muxws subprotocol first, then the target protocols, and answers a request (WSM-DIAL-001)', async () => {
      const rig = makeRig();
      const r = recorder();
      const connection = await rig.connect(r.target, r.options());
      assert.deepEqual(rig.offered(0), ['muxws.v1.json', 'extra.token']);
      assert.equal(connection.state, 'open');
      assert.deepEqual(await connection.request({ sum: [1, 2] }), { sum: [1, 2] });
      assert.deepEqual(r.events, ['open:false:0']);
      await connection.close();
    });

    test('a hello is acknowledged at END and its last message is the welcome (WSM-DIAL-004)', async () => {
      const rig = makeRig();
      rig.acceptor.options = { hello: (stream) => `hi ${stream.payload}` };
      const r = recorder();
      const connection = await rig.connect(URL_, r.options({ hello: { payload: 'ann' } }));
      assert.equal(connection.welcome, 'hi ann');
      assert.deepEqual(rig.acceptor.last.hello, { payload: 'ann', headers: null });
      await connection.close();
    });

    test('a reset hello rejects connect() with HelloRejectedError and nothing is redialled (WSM-DIAL-003, WSM-DIAL-004)', async () => {
      using clock = fakeTime();
      const rig = makeRig();
      rig.acceptor.options = {
        hello: () => {
          throw new StreamError('unauthorized', 'bad token');
        },
      };
      const r = recorder();
      const error = await rig.connect(URL_, r.options({ hello: { payload: 'x' } })).catch((e) => e);
      assert(error instanceof ConnectError);
      assert(error.cause instanceof HelloRejectedError);
      assert.equal(error.cause.code, 'unauthorized');
      await clock.tickAsync(60_000);
      assert.equal(rig.dials(), 1);
    });

    test('a wrong subprotocol closes with 4002 and rejects with ProtocolError (WSM-WIRE-001)', async () => {
      const rig = makeRig();
      rig.decide(() => ({ kind: 'accept', protocol: 'other' }));
      const r = recorder();
      const error = await rig.connect(URL_, r.options()).catch((e) => e);
      assert(error instanceof ConnectError);
      assert(error.cause instanceof ProtocolError);
      assert.equal(r.closes.length, 0);
      assert.equal(
        error.cause.message,
        'Expected the acceptor to select subprotocol "muxws.v1.json": found "other"',
      );
    });

    test('a refused first dial rejects with a ConnectError naming the usual causes and is not redialled (WSM-DIAL-003, WSM-APP-007)', async () => {
      using clock = fakeTime();
      const rig = makeRig();
      rig.decide(() => ({ kind: 'refuse' }));
      const r = recorder();
      const error = await rig.connect(URL_, r.options()).catch((e) => e);
      assert(error instanceof ConnectError);
      assert.match(
        error.message,
        /^Cannot connect to ws:\/\/fake\/ws: .+; the usual causes are nothing listening at the URL, a wrong path \(404\), an origin or credentials the acceptor refuses \(403, or 401 from authorize\), wss:\/\/ to a server without TLS, or a subprotocol\/codec it does not offer \(400\)$/,
      );
      await clock.tickAsync(60_000);
      assert.equal(rig.dials(), 1);
      assert.equal(clock.countTimers(), 0);
    });

    test('a hanging dial fails at handshakeTimeoutMs with a TimeoutError (WSM-DIAL-002)', async () => {
      using clock = fakeTime();
      const rig = makeRig();
      rig.decide(() => ({ kind: 'hang' }));
      const r = recorder();
      const pending = rig.connect(r.target, r.options({ handshakeTimeoutMs: 1000 }))
        .catch((e) => e);
      await clock.tickAsync(999);
      assert.equal(r.contexts[0].signal.aborted, false);
      await clock.tickAsync(1);
      const error = await pending;
      assert(error instanceof ConnectError);
      assert(error.cause instanceof TimeoutError);
      assert.doesNotMatch(error.message, /usual causes/); // the socket never failed
      assert.equal(r.contexts[0].signal.aborted, true);
      assert.equal(clock.countTimers(), 0);
    });

    test('a stream opened on the connection carries its payload and the answer (WSM-STR-001)', async () => {
      const rig = makeRig();
      rig.acceptor.options = {
        onStream: async (stream: Stream) => {
          const parts: unknown[] = [];
          for await (const part of stream) parts.push(part);
          return { got: parts };
        },
      };
      const r = recorder();
      const connection = await rig.connect(URL_, r.options());
      const stream = connection.open('upload');
      await stream.write('a');
      await stream.write('b');
      await stream.end();
      const answers: unknown[] = [];
      for await (const answer of stream) answers.push(answer);
      assert.deepEqual(answers, [{ got: ['a', 'b'] }]);
      await connection.close();
    });

    test('a lost connection is redialled on the backoff schedule and failed redials back off further (WSM-RCN-002)', async () => {
      using clock = fakeTime();
      const rig = makeRig();
      const r = recorder();
      const connection = await rig.connect(r.target, r.options());
      rig.decide((index) => index < 3 ? { kind: 'refuse' } : { kind: 'accept' });
      const lostAt = Date.now();
      rig.drop();
      await clock.tickAsync(10_000);
      const gaps = r.dialedAt.slice(1).map((t, k) => t - (k === 0 ? lostAt : r.dialedAt[k]));
      assert.deepEqual(gaps, [250, 500, 1000]);
      assert.deepEqual(r.events, [
        'open:false:0',
        'close:1006:true',
        'reconnecting:0:250',
        'reconnecting:1:500',
        'reconnecting:2:1000',
        'open:true:2',
      ]);
      assert.deepEqual(r.contexts.map((c) => c.attempt), [0, 0, 1, 2]);
      await connection.close();
      assert.equal(clock.countTimers(), 0);
    });

    test('1012 redials fast after serviceRestartDelayMs without consuming an attempt (WSM-RCN-020)', async () => {
      using clock = fakeTime();
      const rig = makeRig();
      const r = recorder();
      const connection = await rig.connect(
        r.target,
        r.options({ serviceRestartDelayMs: 100 }),
      );
      rig.acceptor.last.close(1012);
      await clock.tickAsync(99);
      assert.equal(rig.dials(), 1);
      await clock.tickAsync(1);
      assert.equal(rig.dials(), 2);
      assert.equal(r.contexts[1].resumedFromServiceRestart, true);
      await connection.opened();
      assert.deepEqual(r.events, [
        'open:false:0',
        'close:1012:true',
        'reconnecting:0:100',
        'open:true:0',
      ]);
      await connection.close();
    });

    test('after GOAWAY the dialer refuses new streams, closes with 1000 once its streams finish, and redials fast (WSM-WIRE-003)', async () => {
      using clock = fakeTime();
      const rig = makeRig();
      let finish!: (value: unknown) => void;
      rig.acceptor.options = { onStream: () => new Promise((resolve) => finish = resolve) };
      const r = recorder();
      const connection = await rig.connect(r.target, r.options());
      const pending = connection.request('slow');
      await clock.tickAsync(0);
      goAway(rig.acceptor.last.session, 'restart', 'deploy', 0);
      await clock.tickAsync(0);
      assert.equal(connection.state, 'open');
      assert.throws(() => connection.open('x'), NotConnectedError);
      finish('answer');
      assert.equal(await pending, 'answer');
      await clock.tickAsync(0);
      assert.equal(rig.acceptor.peers[0].ended?.code, 1000);
      assert.equal(r.closes[0].delayMs, 250);
      await clock.tickAsync(250);
      assert.equal(r.contexts[1].resumedFromServiceRestart, true);
      await connection.opened();
      await connection.close();
      assert.equal(clock.countTimers(), 0);
    });

    test('a terminal close code stops for good with one onClose (WSM-RCN-020)', async () => {
      using clock = fakeTime();
      const rig = makeRig();
      const r = recorder();
      const connection = await rig.connect(r.target, r.options());
      rig.acceptor.last.close(4401, 'who are you');
      await clock.tickAsync(60_000);
      assert.equal(rig.dials(), 1);
      assert.deepEqual(r.events, ['open:false:0', 'close:4401:false']);
      assert.equal(connection.state, 'closed');
      assert.equal((await connection.closed).reason, 'who are you');
      assert.equal(clock.countTimers(), 0);
    });

    test('a terminal close during a redial hello stops the redial loop (WSM-RCN-020)', async () => {
      using clock = fakeTime();
      const rig = makeRig();
      rig.acceptor.options = { hello: () => 'ok' };
      const r = recorder();
      const connection = await rig.connect(r.target, r.options({ hello: { payload: 't' } }));
      rig.acceptor.options = {
        hello: (_stream, peer) => {
          peer.close(4403, 'banned');
          return never();
        },
      };
      rig.acceptor.last.close(1011);
      await clock.tickAsync(60_000);
      assert.equal(rig.dials(), 2);
      assert.deepEqual(r.events, [
        'open:false:0',
        'close:1011:true',
        'reconnecting:0:250',
        'close:4403:false',
      ]);
      assert.equal(connection.state, 'closed');
      assert.equal(clock.countTimers(), 0);
    });

    test('unauthorized twice in a row during redials is terminal (WSM-DIAL-004)', async () => {
      using clock = fakeTime();
      const rig = makeRig();
      rig.acceptor.options = { hello: () => 'ok' };
      const r = recorder();
      const connection = await rig.connect(r.target, r.options({ hello: { payload: 't' } }));
      rig.acceptor.options = {
        hello: () => {
          throw new StreamError('unauthorized', 'expired');
        },
      };
      rig.drop();
      await clock.tickAsync(60_000);
      assert.equal(rig.dials(), 3);
      assert.equal(connection.state, 'closed');
      assert(r.closes.at(-1)?.error instanceof HelloRejectedError);
      assert.equal(clock.countTimers(), 0);
    });

    test('no answer within timeoutMs of a PING loses the connection with 4000 and redials (WSM-DIAL-009)', async () => {
      using clock = fakeTime();
      const rig = makeRig();
      const r = recorder();
      const connection = await rig.connect(
        r.target,
        r.options({ heartbeat: { intervalMs: 1000, timeoutMs: 500 } }),
      );
      rig.pause();
      await clock.tickAsync(1000);
      assert.equal(rig.sent(0).filter((m) => m === '[6]').length, 1);
      await clock.tickAsync(499);
      assert.equal(connection.state, 'open');
      await clock.tickAsync(1);
      assert.equal(connection.state, 'reconnecting');
      assert.equal(r.closes[0].code, 4000);
      assert.equal(r.closes[0].reason, 'heartbeat timeout');
      assert(r.closes[0].error instanceof TimeoutError);
      await clock.tickAsync(250);
      await connection.opened();
      await connection.close();
      assert.equal(clock.countTimers(), 0);
    });

    test('an answered PING keeps the connection open (WSM-DIAL-009)', async () => {
      using clock = fakeTime();
      const rig = makeRig();
      const r = recorder();
      const connection = await rig.connect(
        r.target,
        r.options({ heartbeat: { intervalMs: 1000, timeoutMs: 500 } }),
      );
      await clock.tickAsync(10_000);
      assert.equal(rig.sent(0).filter((m) => m === '[6]').length, 10);
      assert.equal(connection.state, 'open');
      assert.equal(r.closes.length, 0);
      await connection.close();
      assert.equal(clock.countTimers(), 0);
    });

    test('subscriptions are re-opened in registration order on a redial, before onOpen (WSM-SUB-001)', async () => {
      using clock = fakeTime();
      const rig = makeRig();
      const feeds: Stream[][] = [];
      rig.acceptor.options = {
        onPeer: () => feeds.push([]),
        onStream: (stream) => {
          feeds.at(-1)!.push(stream);
          return never();
        },
      };
      const r = recorder();
      const connection = await rig.connect(r.target, r.options());
      const got: string[] = [];
      for (const room of ['a', 'b']) {
        subscribe(connection, { room }, {
          onMessage: (m) => got.push(`${room}:${m}`),
          onReopen: () => r.events.push(`reopen:${room}`),
        });
      }
      rig.drop();
      await clock.tickAsync(250);
      assert.deepEqual(r.events.slice(-3), ['reopen:a', 'reopen:b', 'open:true:0']);
      assert.deepEqual(feeds[1].map((s) => s.payload), [{ room: 'a' }, { room: 'b' }]);
      await feeds[1][1].write('x');
      await clock.tickAsync(0);
      assert.deepEqual(got, ['b:x']);
      await connection.close();
    });

    test('with waitWhileReconnecting(), a request made while reconnecting is sent at the next establishment (WSM-APP-006)', async () => {
      using clock = fakeTime();
      const rig = makeRig();
      const r = recorder();
      const connection = await rig.connect(
        r.target,
        r.options({ whileReconnecting: waitWhileReconnecting() }),
      );
      rig.drop();
      await clock.tickAsync(0);
      assert.equal(connection.state, 'reconnecting');
      const answer = connection.request({ n: 1 });
      await clock.tickAsync(249);
      assert.equal(rig.dials(), 1);
      await clock.tickAsync(1);
      assert.deepEqual(await answer, { n: 1 });
      assert.deepEqual(rig.sent(1).map((m) => JSON.parse(m as string)[4]), [{ n: 1 }]);
      await connection.close();
      assert.equal(clock.countTimers(), 0);
    });

    test('a waiting request counts the wait toward its timeout and is never sent once it expired (WSM-APP-006)', async () => {
      using clock = fakeTime();
      const rig = makeRig();
      const r = recorder();
      const connection = await rig.connect(
        r.target,
        r.options({ whileReconnecting: waitWhileReconnecting() }),
      );
      rig.decide(() => ({ kind: 'hang' }));
      rig.drop();
      await clock.tickAsync(0);
      const started = Date.now();
      const expired = connection.request('late', { timeoutMs: 100 }).catch((e) => e);
      await clock.tickAsync(99);
      assert.equal(Date.now() - started, 99);
      await clock.tickAsync(1);
      const error = await expired;
      assert(error instanceof TimeoutError);
      assert.equal(Date.now() - started, 100);
      assert.match(error.message, /never sent/);
      rig.decide(() => ({ kind: 'accept' }));
      rig.acceptor.options = { onStream: () => never() };
      await clock.tickAsync(15_000); // the hanging redial times out; the next one succeeds
      await connection.opened();
      // sent after waiting 250 ms of its 400: it times out 150 ms after it was sent
      rig.drop();
      await clock.tickAsync(0);
      const sentAt = Date.now() + 250;
      const slow = connection.request('slow', { timeoutMs: 400 }).catch((e) => e);
      await clock.tickAsync(399);
      assert.equal(Date.now() - sentAt, 149);
      await clock.tickAsync(1);
      const late = await slow;
      assert(late instanceof TimeoutError);
      assert.equal(Date.now() - sentAt, 150);
      const payloads = rig.sent(rig.dials() - 1).map((m) => JSON.parse(m as string)).filter((f) =>
        f[0] === 1
      ).map((f) => f[4]);
      assert.deepEqual(payloads, ['slow']);
      assert.equal((await connection.close()).code, 1000);
      assert.equal(clock.countTimers(), 0);
    });

    test('beyond maxWaiting a request rejects with NotConnectedError at once; an aborted one is removed unsent (WSM-APP-006)', async () => {
      using clock = fakeTime();
      const rig = makeRig();
      const r = recorder();
      const connection = await rig.connect(
        r.target,
        r.options({ whileReconnecting: waitWhileReconnecting({ maxWaiting: 2 }) }),
      );
      rig.drop();
      await clock.tickAsync(0);
      await assert.rejects(connection.request('bad', { timeoutMs: -1 }), RangeError);
      const controller = new AbortController();
      const first = connection.request('first', { signal: controller.signal }).catch((e) => e);
      const second = connection.request('second');
      const third = await connection.request('third').catch((e) => e);
      assert(third instanceof NotConnectedError);
      assert.equal(
        third.message,
        'Cannot send a request: the connection is reconnecting and 2 requests already wait for it (maxWaiting)',
      );
      controller.abort();
      const aborted = await first;
      assert(aborted instanceof StreamResetError);
      assert.equal(aborted.code, 'cancel');
      await clock.tickAsync(250);
      assert.equal(await second, 'second');
      const sent = rig.sent(1).map((m) => JSON.parse(m as string)[4]);
      assert.deepEqual(sent, ['second']);
      await connection.close();
      assert.equal(clock.countTimers(), 0);
    });

    test('a request sent and lost with its connection rejects connection_lost saying it may have been processed, and is not sent again (WSM-APP-006)', async () => {
      using clock = fakeTime();
      const rig = makeRig();
      rig.acceptor.options = { onStream: () => never() };
      const r = recorder();
      const connection = await rig.connect(
        r.target,
        r.options({ whileReconnecting: waitWhileReconnecting() }),
      );
      const pending = connection.request('once').catch((e) => e);
      await clock.tickAsync(0);
      rig.drop();
      const error = await pending;
      assert(error instanceof StreamResetError);
      assert.equal(error.code, 'connection_lost');
      assert.equal(error.remote, false);
      assert.match(error.message, /may have processed it/);
      await clock.tickAsync(250);
      await connection.opened();
      await clock.tickAsync(0);
      assert.equal(rig.sent(1).length, 0);
      await connection.close();
      assert.equal(clock.countTimers(), 0);
    });

    test('after a GOAWAY a waiting request is sent on the redial, not on the draining connection (WSM-APP-006)', async () => {
      using clock = fakeTime();
      const rig = makeRig();
      const r = recorder();
      const connection = await rig.connect(
        r.target,
        r.options({ whileReconnecting: waitWhileReconnecting() }),
      );
      goAway(rig.acceptor.last.session, 'restart', 'deploy', 0);
      await clock.tickAsync(0);
      const answer = connection.request('after');
      await clock.tickAsync(250);
      assert.equal(await answer, 'after');
      assert.equal(rig.sent(0).filter((m) => JSON.parse(m as string)[0] === 1).length, 0);
      await connection.close();
      assert.equal(clock.countTimers(), 0);
    });

    test('close() rejects every waiting request with ClosedError, unsent (WSM-APP-006)', async () => {
      using clock = fakeTime();
      const rig = makeRig();
      const r = recorder();
      const connection = await rig.connect(
        r.target,
        r.options({ whileReconnecting: waitWhileReconnecting() }),
      );
      rig.drop();
      await clock.tickAsync(0);
      const waiting = connection.request('x').catch((e) => e);
      await connection.close();
      const error = await waiting;
      assert(error instanceof ClosedError);
      assert.equal(error.message, 'The request was never sent: the connection closed for good');
      await assert.rejects(connection.request('y'), ClosedError);
      assert.equal(rig.dials(), 1);
      assert.equal(clock.countTimers(), 0);
    });

    test('requestTimeoutMs applies to a request that sets no timeoutMs, and 0 means none (WSM-APP-006)', async () => {
      using clock = fakeTime();
      const rig = makeRig();
      rig.acceptor.options = { onStream: () => never() };
      const r = recorder();
      const connection = await rig.connect(r.target, r.options());
      const started = Date.now();
      const pending = connection.request('x').catch((e) => e);
      await clock.tickAsync(30_000);
      const defaulted = await pending;
      assert(defaulted instanceof TimeoutError);
      assert.equal(Date.now() - started, 30_000);
      await connection.close();
      const quick = await rig.connect(r.target, r.options({ requestTimeoutMs: 50 }));
      const short = quick.request('y').catch((e) => e);
      await clock.tickAsync(50);
      const error = await short;
      assert(error instanceof TimeoutError);
      await quick.close();
      const patient = await rig.connect(r.target, r.options({ requestTimeoutMs: 0 }));
      void patient.request('z').catch(() => {});
      await clock.tickAsync(0);
      assert.equal(clock.countTimers(), 0); // no timer for the request
      await patient.close();
    });

    test('a subscription registered while reconnecting is opened at the next establishment and becomes active at its first message (WSM-APP-004)', async () => {
      using clock = fakeTime();
      const rig = makeRig();
      const feeds: Stream[] = [];
      rig.acceptor.options = {
        onStream: (stream) => {
          feeds.push(stream);
          return never();
        },
      };
      const r = recorder();
      const connection = await rig.connect(r.target, r.options());
      rig.drop();
      await clock.tickAsync(0);
      const got: unknown[] = [];
      const sub = subscribe(connection, 'ticker', { onMessage: (m) => got.push(m) });
      assert.equal(sub.state, 'pending');
      await clock.tickAsync(250);
      assert.deepEqual(feeds.map((f) => f.payload), ['ticker']);
      await feeds[0].write(42);
      await sub.ready;
      assert.equal(sub.state, 'active');
      assert.deepEqual(got, [42]);
      await connection.close();
      assert.equal(sub.state, 'closed');
    });

    test('close() while open fires onClose once, fails requests at once after, and leaves no timer (WSM-DIAL-007)', async () => {
      using clock = fakeTime();
      const rig = makeRig();
      const r = recorder();
      const connection = await rig.connect(
        r.target,
        r.options({ heartbeat: { intervalMs: 1000, timeoutMs: 500 } }),
      );
      const info = await connection.close(4000, 'bye');
      assert.deepEqual([info.code, info.reason, info.willRetry], [4000, 'bye', false]);
      await clock.tickAsync(0);
      assert.equal(rig.acceptor.last.ended?.code, 4000);
      assert.deepEqual(r.events, ['open:false:0', 'close:4000:false']);
      await assert.rejects(connection.request('x'), ClosedError);
      assert.throws(() => connection.open('x'), ClosedError);
      assert.equal(clock.countTimers(), 0);
    });

    test('close() while a redial hangs aborts the attempt and its signal (WSM-DIAL-007)', async () => {
      using clock = fakeTime();
      const rig = makeRig();
      const r = recorder();
      const connection = await rig.connect(r.target, r.options());
      rig.decide(() => ({ kind: 'hang' }));
      rig.drop();
      await clock.tickAsync(250);
      assert.equal(rig.dials(), 2);
      assert.equal(r.contexts[1].signal.aborted, false);
      await connection.close();
      assert.equal(r.contexts[1].signal.aborted, true);
      assert.equal(connection.state, 'closed');
      await clock.tickAsync(0);
      assert.deepEqual(r.events.slice(-1), ['close:1000:false']);
      assert.equal(clock.countTimers(), 0);
    });
  });
}
