// The dialer's heartbeat and the browser online/offline hints, on fake time and the in-memory
// socket pair (WSM-DIAL-009, WSM-DIAL-010).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  type CloseInfo,
  connect,
  type ConnectOptions,
  jsonCodec,
  onlineHints,
  TimeoutError,
} from 'muxws';
import { encodePublish } from '../../lib/wire/publish.ts';
import { fakeTime } from '../_fake_time.ts';
import { FakeServer } from '../_socket_pair.ts';
import { type DialDecision, serveFake, TestAcceptor } from '../_test_acceptor.ts';
import { sendEncoded } from '../../lib/session/acceptor_api.ts';

const URL_ = 'ws://fake/ws';

function harness(decide?: (index: number) => DialDecision) {
  const server = new FakeServer();
  const acceptor = new TestAcceptor();
  const dialedAt: number[] = [];
  serveFake(server, acceptor, (_c, index) => {
    dialedAt.push(Date.now());
    return decide?.(index) ?? { kind: 'accept' };
  });
  const closes: CloseInfo[] = [];
  const options = (extra: ConnectOptions = {}): ConnectOptions => ({
    WebSocket: server.WebSocket,
    draw: () => 0,
    onClose: (info) => closes.push(info),
    ...extra,
  });
  /** Times (fake ms since `from`) at which the dialer sent PING on connection `index`. */
  const pings = (index: number) =>
    server.connections[index].client.sent.filter((m) => m === '[6]').length;
  return { server, acceptor, dialedAt, closes, options, pings };
}

test('WSM-DIAL-009 a PING goes out after intervalMs of silence and a live acceptor keeps the connection', async () => {
  using clock = fakeTime();
  const h = harness();
  const connection = await connect(
    URL_,
    h.options({ heartbeat: { intervalMs: 1000, timeoutMs: 500 } }),
  );
  await clock.tickAsync(999);
  assert.equal(h.pings(0), 0);
  await clock.tickAsync(1);
  assert.equal(h.pings(0), 1);
  // anything received restarts the silence: a PUBLISH at +900 delays the next PING to +1900
  await clock.tickAsync(900);
  sendEncoded(h.acceptor.last.session, encodePublish(jsonCodec, 't', 1, null));
  await clock.tickAsync(999);
  assert.equal(h.pings(0), 1);
  await clock.tickAsync(1);
  assert.equal(h.pings(0), 2);
  await clock.tickAsync(60_000);
  assert.equal(connection.state, 'open');
  assert.equal(h.closes.length, 0);
  assert.equal(h.pings(0), 62);
  await connection.close();
  assert.equal(clock.countTimers(), 0);
});

test('WSM-DIAL-009 after an answered PING the next one goes out intervalMs after the answer, even when timeoutMs is longer', async () => {
  using clock = fakeTime();
  const h = harness();
  const connection = await connect(
    URL_,
    h.options({ heartbeat: { intervalMs: 1000, timeoutMs: 5000 } }),
  );
  await clock.tickAsync(1000);
  assert.equal(h.pings(0), 1); // answered by PONG at once (the pair delivers on microtasks)
  await clock.tickAsync(999);
  assert.equal(h.pings(0), 1);
  await clock.tickAsync(1);
  assert.equal(h.pings(0), 2); // not at 6000, when the first PING's deadline would have passed
  await clock.tickAsync(8000);
  assert.equal(h.pings(0), 10);
  assert.equal(connection.state, 'open');
  await connection.close();
  assert.equal(clock.countTimers(), 0);
});

test('WSM-DIAL-009 no answer within timeoutMs of a PING loses the connection with 4000 heartbeat timeout', async () => {
  using clock = fakeTime();
  const h = harness();
  const connection = await connect(
    URL_,
    h.options({ heartbeat: { intervalMs: 1000, timeoutMs: 500 } }),
  );
  h.server.connections[0].server.pause(); // the acceptor's messages, PONG included, stop arriving
  await clock.tickAsync(1000);
  assert.equal(h.pings(0), 1);
  await clock.tickAsync(499);
  assert.equal(connection.state, 'open');
  await clock.tickAsync(1);
  assert.equal(connection.state, 'reconnecting');
  assert.equal(h.closes[0].code, 4000);
  assert.equal(h.closes[0].reason, 'heartbeat timeout');
  assert(h.closes[0].error instanceof TimeoutError);
  assert.equal(h.closes[0].willRetry, true);
  assert.equal(h.server.connections[0].client.closeInfo?.code, 4000);
  await clock.tickAsync(250); // heartbeat loss follows the backoff schedule
  assert.equal(h.dialedAt.length, 2);
  await connection.opened();
  await connection.close();
  assert.equal(clock.countTimers(), 0);
});

test('WSM-DIAL-009 after the clock jumped with timers paused, the next send notices an expired PING at once', async () => {
  using clock = fakeTime();
  const h = harness();
  const connection = await connect(
    URL_,
    h.options({ heartbeat: { intervalMs: 1000, timeoutMs: 500 } }),
  );
  h.server.connections[0].server.pause();
  await clock.tickAsync(1000);
  assert.equal(h.pings(0), 1);
  // the device sleeps for a minute: wall-clock time moves, no timer fires
  clock.setSystemTime(Date.now() + 60_000);
  const pending = connection.request('still there?');
  await clock.tickAsync(0);
  assert.equal(connection.state, 'reconnecting');
  assert.equal(h.closes[0].code, 4000);
  await assert.rejects(pending, { code: 'connection_lost' });
  await connection.close();
  assert.equal(clock.countTimers(), 0);
});

test('WSM-DIAL-009 after the clock jumped with timers paused, the next send probes at once instead of waiting', async () => {
  using clock = fakeTime();
  const h = harness();
  h.acceptor.options = { onStream: () => new Promise(() => {}) };
  const connection = await connect(
    URL_,
    h.options({ heartbeat: { intervalMs: 1000, timeoutMs: 500 } }),
  );
  await clock.tickAsync(500);
  clock.setSystemTime(Date.now() + 60_000);
  h.server.connections[0].server.pause();
  connection.open('x', { end: true });
  await clock.tickAsync(0);
  assert.equal(h.pings(0), 1); // sent with no timer having fired
  await clock.tickAsync(499);
  assert.equal(connection.state, 'open');
  await clock.tickAsync(1);
  assert.equal(h.closes[0]?.code, 4000);
  await connection.close();
  assert.equal(clock.countTimers(), 0);
});

test('WSM-DIAL-009 heartbeat false sends no PING and arms no timer', async () => {
  using clock = fakeTime();
  const h = harness();
  const connection = await connect(URL_, h.options({ heartbeat: false }));
  assert.equal(clock.countTimers(), 0);
  await clock.tickAsync(600_000);
  assert.equal(h.pings(0), 0);
  assert.equal(connection.state, 'open');
  await connection.close();
});

/** Installs browser-like `addEventListener` and `navigator.onLine` on the global scope. */
function browserScope(withNavigator = true) {
  const target = new EventTarget();
  const g = globalThis as Record<string, unknown>;
  const saved = ['addEventListener', 'removeEventListener', 'navigator'].map((name) => ({
    name,
    descriptor: Object.getOwnPropertyDescriptor(globalThis, name),
  }));
  let listeners = 0;
  const define = (name: string, value: unknown) =>
    Object.defineProperty(globalThis, name, { value, configurable: true, writable: true });
  define('addEventListener', (type: string, listener: EventListener) => {
    listeners++;
    target.addEventListener(type, listener);
  });
  define('removeEventListener', (type: string, listener: EventListener) => {
    listeners--;
    target.removeEventListener(type, listener);
  });
  define('navigator', withNavigator ? { onLine: true } : {});
  void g;
  return {
    dispatch: (type: 'online' | 'offline') => target.dispatchEvent(new Event(type)),
    get listeners() {
      return listeners;
    },
    [Symbol.dispose]() {
      for (const { name, descriptor } of saved) {
        if (descriptor) Object.defineProperty(globalThis, name, descriptor);
        else delete g[name];
      }
    },
  };
}

test('WSM-DIAL-010 an online event while reconnecting replaces the wait with a short jittered one, keeping the count', async () => {
  using clock = fakeTime();
  using scope = browserScope();
  const h = harness((index) => index === 1 ? { kind: 'refuse' } : { kind: 'accept' });
  const delays: number[] = [];
  const connection = await connect(
    URL_,
    h.options({
      onlineHints: onlineHints(),
      heartbeat: false,
      reconnect: { initialDelayMs: 10_000, maxDelayMs: 100_000 },
      serviceRestartDelayMs: 400,
      onReconnecting: (info) => delays.push(info.delayMs),
    }),
  );
  assert.equal(scope.listeners, 2);
  const lostAt = Date.now();
  h.acceptor.last.close(1011);
  await clock.tickAsync(1000);
  scope.dispatch('online');
  await clock.tickAsync(199);
  assert.equal(h.dialedAt.length, 1);
  await clock.tickAsync(1);
  assert.equal(h.dialedAt[1] - lostAt, 1200); // (draw 0 + 1) / 2 * 400 after the event
  // that dial was refused: the count was not reset, so the next wait is backoffDelay(1)
  assert.deepEqual(delays, [10_000, 20_000]);
  await connection.close();
  assert.equal(scope.listeners, 0);
  assert.equal(clock.countTimers(), 0);
});

test('WSM-DIAL-010 an offline event while open starts the heartbeat probe at once', async () => {
  using clock = fakeTime();
  using scope = browserScope();
  const h = harness();
  const connection = await connect(
    URL_,
    h.options({
      onlineHints: onlineHints(),
      heartbeat: { intervalMs: 20_000, timeoutMs: 500 },
    }),
  );
  h.server.connections[0].server.pause();
  await clock.tickAsync(100);
  scope.dispatch('offline');
  assert.equal(h.pings(0), 1);
  await clock.tickAsync(500);
  assert.equal(h.closes[0]?.code, 4000);
  await connection.close();
  assert.equal(scope.listeners, 0);
  assert.equal(clock.countTimers(), 0);
});

test('WSM-DIAL-010 without navigator.onLine no listener is added', async () => {
  using clock = fakeTime();
  using scope = browserScope(false);
  const h = harness();
  const connection = await connect(
    URL_,
    h.options({ onlineHints: onlineHints(), heartbeat: false }),
  );
  assert.equal(scope.listeners, 0);
  await connection.close();
  assert.equal(clock.countTimers(), 0);
});

test('without the onlineHints option no listener is added, even where navigator.onLine is (WSM-API-006)', async () => {
  using clock = fakeTime();
  using scope = browserScope();
  const h = harness();
  const connection = await connect(URL_, h.options({ heartbeat: false }));
  assert.equal(scope.listeners, 0);
  scope.dispatch('offline');
  assert.equal(h.pings(0), 0);
  await connection.close();
  assert.equal(clock.countTimers(), 0);
});
