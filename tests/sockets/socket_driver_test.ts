// lib/sockets/: the WHATWG driver and the `ws` driver send on a socket and feed its open, messages
// and close to a receiver, socketDriver() picks the `ws` one only for a `ws` socket, and a
// dialer's socket constructor names its driver through driverOf(). The
// WHATWG driver runs on a real socket on Deno and Bun (their own servers on 127.0.0.1:0), the
// `ws` driver on Node with a real `ws` server; the in-memory cases run everywhere.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  driverOf,
  type DriverSocket,
  SOCKET_DRIVER,
  type SocketData,
  type SocketReceiver,
  webSocketDriver,
} from '../../lib/sockets/socket_driver.ts';
import {
  onWsRefusal,
  socketDriver,
  textBytes,
  wsDialerDriver,
  wsDriver,
} from '../../lib/sockets/node_ws.ts';

const runtime = 'Deno' in globalThis ? 'deno' : 'Bun' in globalThis ? 'bun' : 'node';

/** A receiver that records what it is fed, and resolves `done` on the close. */
function recorder() {
  const events: unknown[] = [];
  let settle!: () => void;
  const done = new Promise<void>((resolve) => settle = resolve);
  const receiver: SocketReceiver = {
    opened: () => events.push('open'),
    message: (data: SocketData) =>
      events.push(typeof data === 'string' ? data : new TextDecoder().decode(data as Uint8Array)),
    closed: (code, reason) => {
      events.push(['close', code, reason]);
      settle();
    },
  };
  return { events, receiver, done };
}

/** An in-memory WHATWG-like socket: an EventTarget with a settable readyState. */
class MemorySocket extends EventTarget implements DriverSocket {
  readyState = 0;
  sent: (string | Uint8Array)[] = [];
  send(data: string | Uint8Array): void {
    this.sent.push(data);
  }
  close(): void {}
  fire(type: string, fields: Record<string, unknown> = {}): void {
    this.dispatchEvent(Object.assign(new Event(type), fields));
  }
}

/** A bound on every wait on a real socket. */
function within<T>(promise: Promise<T>, ms = 5000): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  return Promise.race([
    promise,
    new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`No answer within ${ms} ms`)), ms);
    }),
  ]).finally(() => clearTimeout(timer));
}

test('webSocketDriver reports a connecting socket open, its messages in order and its close once', () => {
  const socket = new MemorySocket();
  const { events, receiver } = recorder();
  webSocketDriver.listen(socket, receiver);
  socket.readyState = 1;
  socket.fire('open');
  socket.fire('message', { data: 'a' });
  socket.fire('message', { data: 'b' });
  webSocketDriver.send(socket, 'c');
  socket.fire('close', { code: 1000, reason: 'bye' });
  socket.fire('message', { data: 'late' });
  socket.fire('close', { code: 1001, reason: 'again' });
  assert.deepEqual(events, ['open', 'a', 'b', ['close', 1000, 'bye']]);
  assert.deepEqual(socket.sent, ['c']);
});

test('webSocketDriver reports a socket that is already closing as closed with 1006 at once', () => {
  const socket = new MemorySocket();
  socket.readyState = 2;
  const { events, receiver } = recorder();
  webSocketDriver.listen(socket, receiver);
  assert.deepEqual(events, [['close', 1006, '']]);
});

test('socketDriver() picks the ws driver only for an EventEmitter socket with terminate()', () => {
  const web = new MemorySocket();
  assert.equal(socketDriver(web), webSocketDriver);
  const ws = Object.assign(new MemorySocket(), {
    on() {},
    removeListener() {},
    terminate() {},
  });
  assert.equal(socketDriver(ws), wsDriver);
  assert.equal(webSocketDriver.takesTextBytes, false);
  assert.equal(wsDriver.takesTextBytes, true);
});

test('onWsRefusal() hands over the status and Retry-After wait of a ws refusal and leaves a WHATWG socket alone', () => {
  const listeners = new Map<string, (...args: unknown[]) => void>();
  const ws = {
    on: (type: string, listener: (...args: unknown[]) => void) => listeners.set(type, listener),
  };
  const seen: unknown[] = [];
  const now = () => 1_700_000_000_000;
  const inTwo = new Date(now() + 2000).toUTCString();
  onWsRefusal(ws, now, (status, retryAfterMs) => seen.push([status, retryAfterMs]));
  const refuse = listeners.get('unexpected-response')!;
  refuse({}, { statusCode: 503, headers: { 'retry-after': '7' } });
  refuse({}, { statusCode: 429, headers: { 'retry-after': inTwo } });
  refuse({}, { statusCode: 503, headers: { 'retry-after': 'soon' } });
  refuse({}, undefined);
  assert.deepEqual(seen, [[503, 7000], [429, 2000], [503, undefined], [0, undefined]]);
  let called = false;
  assert.doesNotThrow(() => onWsRefusal(new MemorySocket(), now, () => called = true));
  assert.equal(called, false);
});

test('driverOf() reads the driver a socket constructor carries, and nothing of any other', () => {
  class Plain {}
  class Carrying {
    static [SOCKET_DRIVER] = wsDialerDriver;
  }
  class Sub extends Carrying {}
  assert.equal(driverOf(Carrying), wsDialerDriver);
  assert.equal(driverOf(Sub), wsDialerDriver, 'a subclass inherits it');
  for (const value of [Plain, undefined, null, {}, () => {}]) {
    assert.equal(driverOf(value), undefined);
  }
});

test("the ws dialer's driver reads refusals and sends as the ws driver does; the acceptor's reads none", () => {
  assert.equal(wsDialerDriver.onRefusal, onWsRefusal);
  assert.equal(wsDriver.onRefusal, undefined);
  assert.equal(webSocketDriver.onRefusal, undefined);
  assert.equal(wsDialerDriver.send, wsDriver.send);
  assert.equal(wsDialerDriver.listen, wsDriver.listen);
  assert.equal(wsDialerDriver.takesTextBytes, true);
});

/** A real echo server of this runtime on 127.0.0.1:0 (Deno or Bun). */
function echoServer(): { port: number; close(): Promise<void> | void } {
  // deno-lint-ignore no-explicit-any
  const g = globalThis as any;
  if (runtime === 'deno') {
    const server = g.Deno.serve(
      { hostname: '127.0.0.1', port: 0, onListen() {} },
      (request: Request) => {
        const { socket, response } = g.Deno.upgradeWebSocket(request);
        socket.onmessage = (event: MessageEvent) => socket.send(event.data);
        return response;
      },
    );
    return { port: server.addr.port, close: () => server.shutdown() };
  }
  const server = g.Bun.serve({
    hostname: '127.0.0.1',
    port: 0,
    fetch: (request: Request, srv: { upgrade(r: Request): boolean }) =>
      srv.upgrade(request) ? undefined : new Response('Not Found', { status: 404 }),
    websocket: {
      message: (socket: { send(d: unknown): void }, data: unknown) => socket.send(data),
    },
  });
  return { port: server.port, close: () => server.stop(true) };
}

test(
  'webSocketDriver sends on and listens to a real WHATWG WebSocket (Deno, Bun)',
  { skip: runtime === 'node' ? 'runs on Deno and Bun' : false },
  async () => {
    const server = echoServer();
    const socket = new WebSocket(`ws://127.0.0.1:${server.port}/`);
    socket.binaryType = 'arraybuffer';
    const { events, receiver, done } = recorder();
    const echoed = new Promise<void>((resolve) => {
      const message = receiver.message;
      receiver.message = (data) => {
        message(data);
        if (events.length === 3) resolve();
      };
      receiver.opened = () => {
        events.push('open');
        webSocketDriver.send(socket, 'one');
        webSocketDriver.send(socket, new TextEncoder().encode('two'));
      };
    });
    try {
      webSocketDriver.listen(socket, receiver);
      await within(echoed);
      socket.close(1000, 'done');
      await within(done);
      assert.deepEqual(events.slice(0, 3), ['open', 'one', 'two']);
      assert.deepEqual(events[3], ['close', 1000, 'done']);
    } finally {
      socket.close();
      await server.close();
    }
  },
);

test(
  'wsDriver sends on and listens to a real ws socket, and sends text bytes as text (Node)',
  { skip: runtime === 'node' ? false : 'runs on Node with ws' },
  async () => {
    const { WebSocketServer, WebSocket: WsClient } = await import('ws');
    const wss = new WebSocketServer({ host: '127.0.0.1', port: 0 });
    await within(new Promise<void>((resolve) => wss.once('listening', () => resolve())));
    const port = (wss.address() as { port: number }).port;
    const accepted = new Promise<DriverSocket>((resolve) => {
      wss.once('connection', (socket) => resolve(socket as unknown as DriverSocket));
    });
    const client = new WsClient(`ws://127.0.0.1:${port}/`);
    const received: [string, boolean][] = [];
    const three = new Promise<void>((resolve) => {
      client.on('message', (data, isBinary) => {
        received.push([String(data), isBinary]);
        if (received.length === 3) resolve();
      });
    });
    try {
      const server = await within(accepted);
      assert.equal(socketDriver(server), wsDriver);
      const { events, receiver, done } = recorder();
      wsDriver.listen(server, receiver);
      await within(new Promise((resolve) => client.once('open', resolve)));
      client.send('hello');
      client.send(new TextEncoder().encode('bytes'));
      // One tick's sends: the second corks the stream until the microtasks run.
      wsDriver.send(server, 'a');
      wsDriver.send(server, textBytes('b'));
      wsDriver.send(server, new TextEncoder().encode('c'));
      await within(three);
      assert.deepEqual(received, [['a', false], ['b', false], ['c', true]]);
      client.close(1000, 'bye');
      await within(done);
      assert.equal(events[0], 'hello');
      assert.deepEqual(events.slice(0, 2), ['hello', 'bytes']);
      assert.deepEqual(events[2], ['close', 1000, 'bye']);
      // A closed socket is reported closed with 1006 at once.
      const again = recorder();
      wsDriver.listen(server, again.receiver);
      assert.deepEqual(again.events, [['close', 1006, '']]);
    } finally {
      client.terminate();
      await new Promise((resolve) => wss.close(resolve));
    }
  },
);
