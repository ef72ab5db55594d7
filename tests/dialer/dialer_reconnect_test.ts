// The dialer's redial loop on fake time and the in-memory socket pair: the attempt counter, the
// backoff schedule, the close-code policy, GOAWAY, giving up, and close() from every state
// (WSM-RCN-*, WSM-DIAL-005..008, WSM-STR-006).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  backoffDelay,
  type CloseInfo,
  connect,
  ConnectError,
  type ConnectOptions,
  type DialContext,
  NotConnectedError,
  Reconnect,
  type ReconnectingInfo,
  StreamError,
  StreamResetError,
  subscribe,
} from 'muxws';
import { fakeTime } from '../_fake_time.ts';
import { CLOSED, type FakeConnection, FakeServer } from '../_socket_pair.ts';
import { type DialDecision, serveFake, TestAcceptor } from '../_test_acceptor.ts';
import { goAway } from '../../lib/session/acceptor_api.ts';

const URL_ = 'ws://fake/ws';
const never = () => new Promise<never>(() => {});

/** A FakeServer + TestAcceptor whose dials are decided by `decide`, with dial times recorded. */
function harness(decide?: (c: FakeConnection, index: number) => DialDecision) {
  const server = new FakeServer();
  const acceptor = new TestAcceptor();
  const dialedAt: number[] = [];
  serveFake(server, acceptor, (c, index) => {
    dialedAt.push(Date.now());
    return decide?.(c, index) ?? { kind: 'accept' };
  });
  const events: string[] = [];
  const closes: CloseInfo[] = [];
  const reconnecting: ReconnectingInfo[] = [];
  const contexts: DialContext[] = [];
  const options = (extra: ConnectOptions = {}): ConnectOptions => ({
    WebSocket: server.WebSocket,
    heartbeat: false,
    onOpen: (info) => events.push(`open:${info.reconnected}:${info.attempts}`),
    onClose: (info) => {
      closes.push(info);
      events.push(`close:${info.code}:${info.willRetry}`);
    },
    onReconnecting: (info) => {
      reconnecting.push(info);
      events.push(`reconnecting:${info.attempt}:${info.delayMs}`);
    },
    ...extra,
  });
  const target = (ctx: DialContext) => {
    contexts.push(ctx);
    return URL_;
  };
  return { server, acceptor, dialedAt, events, closes, reconnecting, contexts, options, target };
}

test('WSM-RCN-002 redial delays follow backoffDelay exactly with the injected draw', async () => {
  using clock = fakeTime();
  const h = harness((_c, index) => index === 0 ? { kind: 'accept' } : { kind: 'refuse' });
  const draws = [0.5, -1, 0.25, 1, -0.3, 0];
  let i = 0;
  const draw = () => draws[i++ % draws.length];
  const reconnect = new Reconnect({
    initialDelayMs: 100,
    factor: 3,
    maxDelayMs: 2000,
    jitter: 0.4,
  });
  const connection = await connect(h.target, h.options({ reconnect, draw }));
  const lostAt = Date.now();
  h.server.connections[0].client.drop();
  await clock.tickAsync(30_000);
  const replay = [...draws];
  let j = 0;
  const expected = Array.from(
    { length: 6 },
    (_, n) => backoffDelay(n, reconnect, () => replay[j++ % replay.length]),
  );
  const gaps = h.dialedAt.slice(1, 7).map((t, k) => t - (k === 0 ? lostAt : h.dialedAt[k]));
  assert.deepEqual(gaps, expected.map((d) => Math.ceil(d)));
  assert.deepEqual(h.reconnecting.slice(0, 6).map((r) => r.delayMs), expected);
  assert.deepEqual(h.reconnecting.slice(0, 6).map((r) => r.attempt), [0, 1, 2, 3, 4, 5]);
  await connection.close();
  assert.equal(clock.countTimers(), 0);
});

test('WSM-RCN-003 a server that accepts sockets but never acknowledges the hello is redialled on the exponential schedule', async () => {
  using clock = fakeTime();
  const h = harness();
  h.acceptor.options = { hello: () => 'welcome' };
  const connection = await connect(
    h.target,
    h.options({ draw: () => 0, hello: { payload: 'hi', timeoutMs: 1000 } }),
  );
  h.acceptor.options = { hello: never }; // the backend is down: sockets open, hellos hang
  const lostAt = Date.now();
  h.acceptor.last.close(1011);
  await clock.tickAsync(20_000);
  // dial k starts after a delay of 250 * 2^k, and each fails after the 1000 ms hello timeout
  const gaps = h.dialedAt.slice(1, 6).map((t, k) => t - (k === 0 ? lostAt : h.dialedAt[k] + 1000));
  assert.deepEqual(gaps, [250, 500, 1000, 2000, 4000]);
  assert.deepEqual(h.contexts.slice(1, 6).map((c) => c.attempt), [0, 1, 2, 3, 4]);
  // once a hello is acknowledged again, the counter resets: the next loss waits 250 ms
  h.acceptor.options = { hello: () => 'back' };
  await clock.tickAsync(10_000);
  await connection.opened();
  assert.equal(h.events.filter((e) => e.startsWith('open:')).at(-1), 'open:true:5');
  const before = h.dialedAt.length;
  const lost2 = Date.now();
  h.acceptor.last.close(1011);
  await clock.tickAsync(250);
  assert.equal(h.dialedAt.length, before + 1);
  assert.equal(h.dialedAt.at(-1)! - lost2, 250);
  await connection.close();
  assert.equal(clock.countTimers(), 0);
});

test('WSM-RCN-003 stableAfterMs defers the counter reset, so a flapping server backs off', async () => {
  using clock = fakeTime();
  const h = harness();
  const connection = await connect(h.target, h.options({ draw: () => 0, stableAfterMs: 5000 }));
  const lost: number[] = [];
  // each establishment is lost after 1 s, before it is stable: each loss counts as a failure
  for (const delay of [500, 1000, 2000, 4000]) {
    await clock.tickAsync(1000);
    lost.push(Date.now());
    h.acceptor.last.close(1011);
    await clock.tickAsync(delay);
    assert.equal(connection.state, 'open');
  }
  const gaps = h.dialedAt.slice(1).map((t, k) => t - lost[k]);
  assert.deepEqual(gaps, [500, 1000, 2000, 4000]);
  // a connection that stays up 5 s resets the counter: the next loss waits 250 ms
  await clock.tickAsync(5000);
  const lostAt = Date.now();
  h.acceptor.last.close(1011);
  await clock.tickAsync(250);
  assert.equal(connection.state, 'open');
  assert.equal(h.dialedAt.at(-1)! - lostAt, 250);
  await connection.close();
  assert.equal(clock.countTimers(), 0);
});

test('WSM-RCN-044 exhausting maxAttempts fires onClose once with willRetry false and never dials again', async () => {
  using clock = fakeTime();
  const h = harness((_c, index) => index === 0 ? { kind: 'accept' } : { kind: 'refuse' });
  const connection = await connect(
    h.target,
    h.options({ draw: () => 0, reconnect: { maxAttempts: 3 } }),
  );
  h.server.connections[0].client.drop();
  await clock.tickAsync(60_000);
  assert.equal(h.server.connections.length, 4);
  assert.deepEqual(h.events, [
    'open:false:0',
    'close:1006:true',
    'reconnecting:0:250',
    'reconnecting:1:500',
    'reconnecting:2:1000',
    'close:1006:false',
  ]);
  assert.equal(h.closes.at(-1)?.attempts, 3);
  assert.match(String((h.closes.at(-1)?.error as Error).message), /failed before it opened/);
  assert.equal(connection.state, 'closed');
  assert.equal((await connection.closed).willRetry, false);
  await assert.rejects(connection.opened(), { name: 'ClosedError' });
  await clock.tickAsync(600_000);
  assert.equal(h.server.connections.length, 4);
  await connection.close();
  assert.equal(h.closes.length, 2);
  assert.equal(clock.countTimers(), 0);
});

test('WSM-RCN-044 maxAttempts 0 and reconnect false give up at the first loss without dialling', async () => {
  using clock = fakeTime();
  for (const reconnect of [{ maxAttempts: 0 }, false as const]) {
    const h = harness();
    const connection = await connect(h.target, h.options({ reconnect }));
    h.acceptor.last.close(1011);
    await clock.tickAsync(60_000);
    assert.equal(h.server.connections.length, 1);
    assert.deepEqual(h.events, ['open:false:0', 'close:1011:false']);
    assert.equal(connection.state, 'closed');
  }
  assert.equal(clock.countTimers(), 0);
});

test('WSM-RCN-020 1012 takes the fast path: serviceRestartDelayMs jittered, resumedFromServiceRestart, no attempt consumed', async () => {
  using clock = fakeTime();
  const h = harness((_c, index) => index === 1 ? { kind: 'refuse' } : { kind: 'accept' });
  const connection = await connect(
    h.target,
    h.options({
      draw: () => 0.5,
      serviceRestartDelayMs: 400,
      reconnect: { initialDelayMs: 1000, jitter: 0.5 },
    }),
  );
  const lostAt = Date.now();
  h.acceptor.last.close(1012, 'restart');
  await clock.tickAsync(0);
  assert.deepEqual(h.events.slice(1), ['close:1012:true', 'reconnecting:0:500']);
  await clock.tickAsync(500); // the fast redial (refused)
  assert.equal(h.dialedAt[1] - lostAt, 500); // 400 * (1 + 0.5 * 0.5)
  assert.equal(h.contexts[1].resumedFromServiceRestart, true);
  // the failed fast redial consumed no attempt: the next delay is backoffDelay(0) = 1250
  assert.deepEqual(h.reconnecting[1], {
    attempt: 0,
    delayMs: 1250,
    error: h.reconnecting[1].error,
  });
  await clock.tickAsync(1250);
  await connection.opened();
  assert.equal(h.contexts[2].resumedFromServiceRestart, false);
  assert.equal(h.contexts[2].attempt, 0);
  await connection.close();
  assert.equal(clock.countTimers(), 0);
});

test('WSM-RCN-020 terminal close codes stop redialling and other codes back off', async () => {
  using clock = fakeTime();
  for (const code of [4401, 4403, 1008, 1002]) {
    const h = harness();
    const connection = await connect(h.target, h.options());
    h.acceptor.last.close(code);
    await clock.tickAsync(60_000);
    assert.equal(h.server.connections.length, 1, `code ${code}`);
    assert.deepEqual(h.events, ['open:false:0', `close:${code}:false`]);
    assert.equal(connection.state, 'closed');
  }
  for (const code of [1011, 1013, 4000, 1001]) {
    const h = harness();
    const connection = await connect(h.target, h.options({ draw: () => 0 }));
    h.acceptor.last.close(code);
    await clock.tickAsync(249);
    assert.equal(h.server.connections.length, 1, `code ${code}`);
    await clock.tickAsync(1);
    assert.equal(h.server.connections.length, 2, `code ${code}`);
    assert.equal(h.contexts[1].resumedFromServiceRestart, false);
    await connection.close();
  }
  const custom = harness();
  const connection = await connect(
    custom.target,
    custom.options({ closeCodes: { terminal: [4000] } }),
  );
  custom.acceptor.last.close(4000);
  await clock.tickAsync(60_000);
  assert.deepEqual(custom.events, ['open:false:0', 'close:4000:false']);
  assert.equal(connection.state, 'closed');
  assert.equal(clock.countTimers(), 0);
});

test('dialer stops redialling on a terminal close during a redial (WSM-RCN-020)', async () => {
  using clock = fakeTime();
  const cases: [code: number, terminal: number[] | undefined][] = [
    [4401, undefined],
    [4403, undefined],
    [1008, undefined],
    [1002, undefined],
    [4409, [4409]],
  ];
  for (const [code, terminal] of cases) {
    const h = harness();
    h.acceptor.options = { hello: () => 'ok' };
    const connection = await connect(
      h.target,
      h.options({
        draw: () => 0,
        hello: { payload: 'token' },
        closeCodes: terminal === undefined ? undefined : { terminal },
      }),
    );
    // every redial's socket opens, then the acceptor closes it before answering the hello
    h.acceptor.options = {
      hello: (_stream, peer) => {
        peer.close(code, 'go away');
        return never();
      },
    };
    h.acceptor.last.close(1011);
    await clock.tickAsync(60_000);
    assert.equal(h.server.connections.length, 2, `code ${code}`);
    assert.deepEqual(h.events, [
      'open:false:0',
      'close:1011:true',
      'reconnecting:0:250',
      `close:${code}:false`,
    ], `code ${code}`);
    assert.equal(h.closes.at(-1)?.reason, 'go away');
    assert.equal(connection.state, 'closed', `code ${code}`);
    assert.equal((await connection.closed).code, code);
    assert.equal(clock.countTimers(), 0, `code ${code}`);
  }
});

test('a terminal close before the first hello is acknowledged rejects connect() with ConnectError and dials once (WSM-DIAL-003)', async () => {
  using clock = fakeTime();
  for (const code of [4401, 1008]) {
    const h = harness();
    h.acceptor.options = {
      hello: (_stream, peer) => {
        peer.close(code);
        return never();
      },
    };
    const error = await connect(h.target, h.options({ hello: { payload: 'token' } }))
      .catch((e) => e);
    assert(error instanceof ConnectError, `code ${code}`);
    assert.match((error.cause as Error).message, new RegExp(`code ${code}`));
    await clock.tickAsync(60_000);
    assert.equal(h.server.connections.length, 1);
    assert.deepEqual(h.events, []);
    assert.equal(clock.countTimers(), 0);
  }
});

test('WSM-WIRE-009 a close event with code 0 or no code counts as 1006', async () => {
  using clock = fakeTime();
  const h = harness();
  const Base = h.server.WebSocket;
  class ZeroCode extends Base {
    override addEventListener(
      type: string,
      listener: ((event: Event) => void) | { handleEvent(event: Event): void },
    ): void {
      if (type !== 'close' || typeof listener !== 'function') {
        return super.addEventListener(type, listener);
      }
      super.addEventListener(type, (event) => {
        listener(Object.assign(new Event('close'), { code: 0, reason: '', wasClean: false }));
        void event;
      });
    }
  }
  const connection = await connect(h.target, h.options({ WebSocket: ZeroCode, draw: () => 0 }));
  h.acceptor.last.close(4401); // terminal, but the socket reports 0
  await clock.tickAsync(0);
  assert.equal(h.closes[0].code, 1006);
  assert.equal(h.closes[0].willRetry, true);
  await connection.close();
  assert.equal(clock.countTimers(), 0);
});

test('WSM-DIAL-004 a hello rejected with unauthorized twice in a row is terminal', async () => {
  using clock = fakeTime();
  const h = harness();
  let rejecting = false;
  h.acceptor.options = {
    hello: () => {
      if (rejecting) throw new StreamError('unauthorized', 'token expired');
      return 'ok';
    },
  };
  const credentials: unknown[] = [];
  const connection = await connect(
    (ctx) => {
      credentials.push(ctx.lastError);
      return URL_;
    },
    h.options({ draw: () => 0, hello: { payload: 'token' } }),
  );
  rejecting = true;
  h.acceptor.last.close(1011);
  await clock.tickAsync(60_000);
  assert.equal(h.server.connections.length, 3);
  assert.deepEqual(h.events, [
    'open:false:0',
    'close:1011:true',
    'reconnecting:0:250',
    'reconnecting:1:500',
    'close:1006:false',
  ]);
  assert.equal((h.closes.at(-1)?.error as { code: string }).code, 'unauthorized');
  // the target function saw the rejection before the second try, to fetch fresh credentials
  assert.equal((credentials[2] as { code: string }).code, 'unauthorized');
  assert.equal(connection.state, 'closed');
  assert.equal(clock.countTimers(), 0);
});

test('WSM-DIAL-004 one unauthorized hello followed by another failure is not terminal', async () => {
  using clock = fakeTime();
  const h = harness((_c, index) => index === 2 ? { kind: 'refuse' } : { kind: 'accept' });
  let helloCount = 0;
  h.acceptor.options = {
    hello: () => {
      helloCount++;
      if (helloCount === 2 || helloCount === 3) throw new StreamError('forbidden', 'no');
      return 'ok';
    },
  };
  const connection = await connect(h.target, h.options({ draw: () => 0, hello: { payload: 1 } }));
  h.acceptor.last.close(1011);
  // dial 1: forbidden; dial 2: refused; dial 3: forbidden; dial 4: accepted
  await clock.tickAsync(250 + 500 + 1000 + 2000);
  await connection.opened();
  assert.equal(h.server.connections.length, 5);
  assert.equal(connection.state, 'open');
  await connection.close();
  assert.equal(clock.countTimers(), 0);
});

test('WSM-DIAL-006 WSM-STR-006 during an outage calls reject at once, streams fail with connection_lost, subscriptions wait, and ids restart at 1', async () => {
  using clock = fakeTime();
  const h = harness();
  h.acceptor.options = { onStream: never };
  const connection = await connect(h.target, h.options({ draw: () => 0 }));
  const stream = connection.open('a');
  const pending = connection.request('b');
  assert.deepEqual([stream.id, h.acceptor.last.streams.length], [1, 0]);
  h.server.connections[0].client.drop();
  const lost = await pending.catch((e) => e);
  assert(lost instanceof StreamResetError);
  assert.equal(lost.code, 'connection_lost');
  assert.equal(lost.remote, false);
  await assert.rejects(stream.closed, { code: 'connection_lost' });
  assert.equal(connection.state, 'reconnecting');
  assert.throws(() => connection.open('x'), NotConnectedError);
  await assert.rejects(connection.request('x'), NotConnectedError);
  const sub = subscribe(connection, 'x', { onMessage: () => {} });
  assert.equal(sub.state, 'pending');
  await clock.tickAsync(250);
  await connection.opened();
  const fresh = connection.open('c');
  assert.equal(fresh.id, 3);
  await clock.tickAsync(0);
  assert.deepEqual(h.acceptor.last.streams.map((s) => [s.id, s.payload]), [[1, 'x'], [3, 'c']]);
  await connection.close();
  assert.equal(clock.countTimers(), 0);
});

/**
 * A connection of `h` that received a GOAWAY while its one request (`pending`) waits, held by the
 * acceptor until `finish`: it drains, still `open`.
 */
async function drainingAfterGoAway(
  h: ReturnType<typeof harness>,
  clock: ReturnType<typeof fakeTime>,
) {
  let finish!: (value: unknown) => void;
  h.acceptor.options = {
    onStream: () => new Promise((resolve) => finish = resolve),
  };
  const connection = await connect(h.target, h.options({ draw: () => 0 }));
  const pending = connection.request('slow');
  await clock.tickAsync(0);
  goAway(h.acceptor.last.session, 'restart', 'deploy', 0);
  await clock.tickAsync(0);
  return { connection, pending, finish: (value: unknown) => finish(value) };
}

test('WSM-WIRE-003 after GOAWAY no stream opens, the dialer closes with 1000 once its streams finish, and redials fast', async () => {
  using clock = fakeTime();
  const h = harness();
  const { connection, pending, finish } = await drainingAfterGoAway(h, clock);
  assert.equal(connection.state, 'open');
  assert.throws(() => connection.open('x'), NotConnectedError);
  await assert.rejects(connection.request('x'), NotConnectedError);
  assert.equal(h.server.connections[0].client.readyState, 1);
  await clock.tickAsync(3000);
  const doneAt = Date.now();
  finish('answer');
  assert.equal(await pending, 'answer');
  await clock.tickAsync(0);
  assert.equal(h.acceptor.peers[0].ended?.code, 1000);
  assert.equal(h.closes[0].code, 1000);
  assert.equal(h.closes[0].delayMs, 250);
  await clock.tickAsync(250);
  assert.equal(h.dialedAt[1] - doneAt, 250);
  assert.equal(h.contexts[1].resumedFromServiceRestart, true);
  await connection.opened();
  await connection.close();
  assert.equal(clock.countTimers(), 0);
});

test('opened() waits through a GOAWAY drain for the next establishment, so retrying a refused request after it does not spin (WSM-WIRE-003)', async () => {
  using clock = fakeTime();
  const h = harness();
  const { connection, pending, finish } = await drainingAfterGoAway(h, clock);
  assert.equal(connection.state, 'open');
  // An application's retry: on NotConnectedError, wait for opened() and try again.
  let refusals = 0;
  let answer: unknown;
  const retried = (async () => {
    while (true) {
      try {
        return answer = await connection.request('again');
      } catch (error) {
        if (!(error instanceof NotConnectedError) || ++refusals > 100) throw error;
        await connection.opened();
      }
    }
  })();
  await clock.tickAsync(1000);
  assert.equal(refusals, 1);
  assert.equal(answer, undefined);
  h.acceptor.options = { onStream: (stream) => stream.payload };
  finish('answer');
  assert.equal(await pending, 'answer');
  await clock.tickAsync(250);
  assert.equal(await retried, 'again');
  assert.equal(refusals, 1);
  assert.equal(h.dialedAt.length, 2);
  await connection.close();
  assert.equal(clock.countTimers(), 0);
});

test('WSM-WIRE-003 GOAWAY spreadMs redials at the later of the close and GOAWAY receipt plus a uniform draw', async () => {
  using clock = fakeTime();
  // idle at GOAWAY: closes at once, redials at receipt + (draw + 1) / 2 * spreadMs
  const h = harness();
  const connection = await connect(h.target, h.options({ draw: () => 0.5 }));
  let finish!: (value: unknown) => void;
  h.acceptor.options = { onStream: () => new Promise((resolve) => finish = resolve) };
  const at = Date.now();
  goAway(h.acceptor.last.session, 'restart', '', 2000);
  await clock.tickAsync(0);
  assert.equal(h.closes[0].code, 1000);
  assert.equal(h.closes[0].delayMs, 1500);
  await clock.tickAsync(1500);
  assert.equal(h.dialedAt[1] - at, 1500);
  assert.equal(h.contexts[1].resumedFromServiceRestart, true);
  await connection.opened();

  // a stream outlasting the spread: redial right when the socket closes
  const pending = connection.request('slow');
  await clock.tickAsync(0);
  goAway(h.acceptor.last.session, 'restart', '', 2000);
  await clock.tickAsync(5000);
  finish('ok');
  await pending;
  const closedAt = Date.now();
  await clock.tickAsync(0);
  assert.equal(h.closes[1].delayMs, 0);
  assert.equal(h.dialedAt[2], closedAt);
  await connection.opened();
  await connection.close();
  assert.equal(clock.countTimers(), 0);
});

test('WSM-DIAL-007 close() while open fires onClose once, fails streams, and leaves no timer', async () => {
  using clock = fakeTime();
  const h = harness();
  h.acceptor.options = { onStream: never };
  const connection = await connect(h.target, h.options({ heartbeat: {} }));
  const pending = connection.request('x');
  const closing = connection.close(4000, 'bye');
  assert.equal(connection.state, 'closed');
  await assert.rejects(pending, { code: 'connection_lost' });
  const info = await closing;
  assert.deepEqual(info, {
    code: 4000,
    reason: 'bye',
    wasClean: true,
    willRetry: false,
    attempts: 0,
  });
  await connection.close();
  await connection[Symbol.asyncDispose]();
  assert.deepEqual(h.events, ['open:false:0', 'close:4000:false']);
  await clock.tickAsync(0);
  assert.equal(h.acceptor.last.ended?.code, 4000);
  assert.equal(h.server.connections[0].client.listenerCount(), 0);
  assert.equal(clock.countTimers(), 0);
});

test('WSM-DIAL-007 close() while waiting to redial cancels the timer and fires onClose once', async () => {
  using clock = fakeTime();
  const h = harness();
  const connection = await connect(h.target, h.options({ draw: () => 0 }));
  h.acceptor.last.close(1011);
  await clock.tickAsync(100);
  assert.equal(connection.state, 'reconnecting');
  const waiting = connection.opened();
  await connection.close();
  await assert.rejects(waiting, { name: 'ClosedError' });
  assert.deepEqual(h.events, [
    'open:false:0',
    'close:1011:true',
    'reconnecting:0:250',
    'close:1000:false',
  ]);
  assert.equal(clock.countTimers(), 0);
  await clock.tickAsync(60_000);
  assert.equal(h.server.connections.length, 1);
});

test('WSM-DIAL-007 close() mid-attempt aborts the attempt signal and closes its socket', async () => {
  using clock = fakeTime();
  for (const phase of ['opening', 'hello'] as const) {
    const h = harness((_c, index) =>
      index === 1 && phase === 'opening' ? { kind: 'hang' } : { kind: 'accept' }
    );
    let helloCount = 0;
    h.acceptor.options = { hello: () => helloCount++ === 0 ? 'ok' : never() };
    const connection = await connect(h.target, h.options({ draw: () => 0, hello: { payload: 1 } }));
    h.acceptor.last.close(1011);
    await clock.tickAsync(250);
    assert.equal(h.server.connections.length, 2);
    assert.equal(h.contexts[1].signal.aborted, false);
    await connection.close(4000, 'stop');
    assert.equal(h.contexts[1].signal.aborted, true, phase);
    await clock.tickAsync(0);
    assert.equal(h.server.connections[1].client.readyState, CLOSED, phase);
    assert.equal(h.server.connections[1].client.listenerCount(), 0, phase);
    assert.deepEqual(h.events.slice(-1), ['close:4000:false']);
    assert.equal(h.closes.length, 2);
    assert.equal(clock.countTimers(), 0, phase);
  }
});

test('WSM-DIAL-007 aborting the signal while connecting rejects connect() and fires onClose once', async () => {
  using clock = fakeTime();
  const h = harness(() => ({ kind: 'hang' }));
  const controller = new AbortController();
  const pending = connect(h.target, h.options({ signal: controller.signal })).catch((e) => e);
  await clock.tickAsync(100);
  controller.abort(new Error('user left'));
  const error = await pending;
  assert(error instanceof ConnectError);
  assert.equal((error.cause as Error).message, 'user left');
  assert.equal(h.contexts[0].signal.aborted, true);
  assert.deepEqual(h.events, ['close:1000:false']);
  assert.equal(h.server.connections[0].client.readyState, CLOSED);
  assert.equal(clock.countTimers(), 0);
});

test('WSM-DIAL-007 with a fixed target and hello, close() and the signal option abandon the attempt in progress', async () => {
  using clock = fakeTime();
  for (const phase of ['opening', 'hello'] as const) {
    const h = harness((_c, index) =>
      index === 1 && phase === 'opening' ? { kind: 'hang' } : { kind: 'accept' }
    );
    let helloCount = 0;
    h.acceptor.options = { hello: () => helloCount++ === 0 ? 'ok' : never() };
    const connection = await connect(URL_, h.options({ draw: () => 0, hello: { payload: 1 } }));
    h.acceptor.last.close(1011);
    await clock.tickAsync(250);
    assert.equal(h.server.connections.length, 2);
    await connection.close(4000, 'stop');
    await clock.tickAsync(0);
    assert.equal(h.server.connections[1].client.readyState, CLOSED, phase);
    assert.equal(h.server.connections[1].client.listenerCount(), 0, phase);
    assert.deepEqual(h.events.slice(-1), ['close:4000:false']);
    assert.equal(h.closes.length, 2);
    assert.equal(clock.countTimers(), 0, phase);
  }
  const h = harness(() => ({ kind: 'hang' }));
  const controller = new AbortController();
  const pending = connect(URL_, h.options({ signal: controller.signal })).catch((e) => e);
  await clock.tickAsync(100);
  controller.abort(new Error('user left'));
  const error = await pending;
  assert(error instanceof ConnectError);
  assert.equal((error.cause as Error).message, 'user left');
  assert.deepEqual(h.events, ['close:1000:false']);
  assert.equal(h.server.connections[0].client.readyState, CLOSED);
  assert.equal(clock.countTimers(), 0);
});

test('WSM-DIAL-007 connect() with an already aborted signal rejects without dialling or timers', async () => {
  using clock = fakeTime();
  const h = harness();
  const error = await connect(h.target, h.options({ signal: AbortSignal.abort('gone') })).catch((
    e,
  ) => e);
  assert(error instanceof ConnectError);
  assert.equal(error.cause, 'gone');
  assert.equal(h.server.connections.length, 0);
  assert.equal(clock.countTimers(), 0);
});

test('WSM-DIAL-007 aborting the signal after connecting closes the connection for good', async () => {
  using clock = fakeTime();
  const h = harness();
  const controller = new AbortController();
  const connection = await connect(h.target, h.options({ signal: controller.signal }));
  controller.abort();
  assert.equal(connection.state, 'closed');
  assert.deepEqual(h.events, ['open:false:0', 'close:1000:false']);
  assert.equal(clock.countTimers(), 0);
});

test('WSM-RCN-031 firstDialDelayMs spreads the first dial by the draw, and close() during the wait cancels it', async () => {
  using clock = fakeTime();
  const h = harness();
  const started = Date.now();
  const pending = connect(h.target, h.options({ firstDialDelayMs: 1000, draw: () => 0.5 }));
  await clock.tickAsync(749);
  assert.equal(h.server.connections.length, 0);
  await clock.tickAsync(1);
  const connection = await pending;
  assert.equal(h.dialedAt[0] - started, 750); // (0.5 + 1) / 2 * 1000
  await connection.close();

  const controller = new AbortController();
  const waiting = connect(
    h.target,
    // a fixed draw: with the default uniform one, a spread under 10 ms (1 run in 100) dialled
    // before the abort below
    h.options({ firstDialDelayMs: 1000, draw: () => 0, signal: controller.signal }),
  )
    .catch((e) => e);
  await clock.tickAsync(10);
  controller.abort();
  assert(await waiting instanceof ConnectError);
  assert.equal(h.server.connections.length, 1);
  assert.equal(clock.countTimers(), 0);
});

test('WSM-DIAL-005 opened() resolves at the next establishment and honours its signal', async () => {
  using clock = fakeTime();
  const h = harness();
  const connection = await connect(h.target, h.options({ draw: () => 0 }));
  await connection.opened();
  h.acceptor.last.close(1011);
  await clock.tickAsync(0);
  assert.equal(connection.state, 'reconnecting');
  let resolved = false;
  const next = connection.opened().then(() => resolved = true);
  const controller = new AbortController();
  const abandoned = connection.opened({ signal: controller.signal });
  controller.abort(new Error('not waiting'));
  await assert.rejects(abandoned, { message: 'not waiting' });
  await clock.tickAsync(249);
  assert.equal(resolved, false);
  await clock.tickAsync(1);
  await next;
  assert.equal(connection.state, 'open');
  await connection.close();
  assert.equal(clock.countTimers(), 0);
});

test('WSM-DIAL-008 onClose and onReconnecting that throw are reported and the redial still happens', async () => {
  using clock = fakeTime();
  const h = harness();
  const errors: unknown[] = [];
  const connection = await connect(
    h.target,
    h.options({
      draw: () => 0,
      onClose: () => {
        throw new Error('onClose bug');
      },
      onReconnecting: () => {
        throw new Error('onReconnecting bug');
      },
      onError: (error) => errors.push(error),
    }),
  );
  h.acceptor.last.close(1011);
  await clock.tickAsync(250);
  assert.equal(connection.state, 'open');
  assert.equal(h.server.connections.length, 2);
  assert.deepEqual(errors.map((e) => (e as Error).message), ['onClose bug', 'onReconnecting bug']);
  await connection.close();
  assert.equal(clock.countTimers(), 0);
});

test('WSM-WIRE-007 a message over limits.maxMessageBytes closes with 4009 and backs off', async () => {
  using clock = fakeTime();
  const h = harness();
  const connection = await connect(
    h.target,
    h.options({ draw: () => 0, limits: { maxMessageBytes: 64 } }),
  );
  h.acceptor.last.session.open('x'.repeat(200), { end: true });
  await clock.tickAsync(0);
  assert.equal(h.closes[0].code, 4009);
  assert.equal(h.closes[0].willRetry, true);
  assert.equal(h.server.connections[0].client.closeInfo?.code, 4009);
  await clock.tickAsync(250);
  assert.equal(connection.state, 'open');
  await connection.close();
  assert.equal(clock.countTimers(), 0);
});

test('WSM-WIRE-003 a GOAWAY that arrives before the hello is acknowledged drains once established', async () => {
  using clock = fakeTime();
  const h = harness();
  h.acceptor.options = {
    hello: (_stream, peer) => {
      goAway(peer.session, 'restart', '', 0);
      return 'welcome';
    },
  };
  const connection = await connect(h.target, h.options({ draw: () => 0, hello: { payload: 1 } }));
  assert.throws(() => connection.open('x'), NotConnectedError);
  await clock.tickAsync(0);
  assert.equal(h.closes[0]?.code, 1000);
  assert.equal(h.closes[0]?.delayMs, 250);
  await connection.close();
  assert.equal(clock.countTimers(), 0);
});
