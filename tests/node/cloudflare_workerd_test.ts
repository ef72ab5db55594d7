// The Cloudflare adapter in a real workerd (miniflare): examples/cloudflare/worker.ts bundled with
// esbuild, a plain Worker on /echo and the Durable Object `Room` on /room/<name>, dialled by the
// project's connect<Api>() over the `ws` package on 127.0.0.1, calling the example's routes.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import WebSocket from 'ws';
import {
  type CloseInfo,
  connect,
  ConnectError,
  type Connection,
  type ConnectOptions,
  type DialContext,
  type DialerSocketConstructor,
  NotConnectedError,
  type OpenInfo,
  type PublishMessage,
  serve,
  type Stream,
  StreamResetError,
} from 'muxws';
import { msgpackCodec } from 'muxws/msgpack';
import type { Api, Stats } from '../../examples/cloudflare/api.ts';
import {
  bundleWorker,
  bundleWorkerSource,
  startWorkerd,
  type WorkerdInstance,
} from '../_workerd.ts';

let worker: WorkerdInstance;

before(async () => {
  worker = await startWorkerd({
    script: await bundleWorker('examples/cloudflare/worker.ts'),
    durableObjects: { ROOM: 'Room' },
  });
});

after(async () => {
  await worker?.stop();
});

/** Frames this process sent and received as text, per socket class (to count PING/PONG). */
interface Traffic {
  sent: string[];
  received: string[];
}

/** The `ws` WebSocket, optionally with an Origin header and traffic recording. */
function socketClass(
  options: { origin?: string; traffic?: Traffic } = {},
): DialerSocketConstructor {
  const { origin, traffic } = options;
  class Socket extends WebSocket {
    constructor(url: string, protocols?: string | string[]) {
      super(url, protocols, origin ? { origin } : {});
      if (traffic) {
        this.on('message', (data, isBinary) => {
          if (!isBinary) traffic.received.push(String(data));
        });
      }
    }
    override send(data: unknown): void {
      if (traffic && typeof data === 'string') traffic.sent.push(data);
      // deno-lint-ignore no-explicit-any
      super.send(data as any);
    }
  }
  return Socket as unknown as DialerSocketConstructor;
}

interface Dialed {
  connection: Connection<Api>;
  published: PublishMessage[];
  closes: CloseInfo[];
  opens: OpenInfo[];
}

/** connect() to `path` with a hello as `user` holding `topics`; no redial, bounded handshake. */
async function dial(
  path: string,
  user: string,
  topics: string[] = [],
  options: ConnectOptions<Api> & {
    traffic?: Traffic;
    protocols?: string[];
    contexts?: DialContext[];
  } = {},
): Promise<Dialed> {
  const published: PublishMessage[] = [];
  const closes: CloseInfo[] = [];
  const opens: OpenInfo[] = [];
  const { traffic, protocols, contexts, ...rest } = options;
  const url = worker.wsUrl(path);
  const target = (ctx: DialContext) => {
    contexts?.push(ctx);
    return { url, protocols: protocols ?? [] };
  };
  const connection = await connect<Api>(target, {
    WebSocket: socketClass({ traffic }),
    hello: { payload: { user, topics }, timeoutMs: 5000 },
    reconnect: false,
    heartbeat: false,
    handshakeTimeoutMs: 5000,
    onPublish: (message) => void published.push(message),
    onClose: (info) => void closes.push(info),
    onOpen: (info) => void opens.push(info),
    // The routes the acceptors call back: `ask` calls `client.answer`, `push` streams words to
    // `client.collect`.
    routes: serve<Api>({
      'client.answer': (heard) => ({ from: user, heard }),
      async 'client.collect'(_input, { stream }) {
        const got: string[] = [];
        for await (const word of stream) got.push(word);
        return { got };
      },
    }),
    ...rest,
  });
  return { connection, published, closes, opens };
}

/** Opens a raw `ws` socket; resolves with its selected protocol, or the HTTP status it got. */
function rawUpgrade(
  path: string,
  protocols: string[],
  origin?: string,
  on: WorkerdInstance = worker,
): Promise<{ protocol?: string; status?: number }> {
  return new Promise((resolve, reject) => {
    const socket = new WebSocket(on.wsUrl(path), protocols, origin ? { origin } : {});
    const timer = setTimeout(() => {
      socket.terminate();
      reject(new Error(`No answer to the upgrade of ${path} within 5000 ms`));
    }, 5000);
    socket.on('open', () => {
      clearTimeout(timer);
      const protocol = socket.protocol;
      socket.close(1000);
      resolve({ protocol });
    });
    socket.on('unexpected-response', (_request, response) => {
      clearTimeout(timer);
      socket.terminate();
      resolve({ status: response.statusCode });
    });
    socket.on('error', (error) => {
      clearTimeout(timer);
      reject(error);
    });
  });
}

/** A raw `ws` socket on `path` that has sent `hello` and collects the frames it receives. */
async function rawHello(
  path: string,
  hello: unknown,
): Promise<{ socket: WebSocket; frames: unknown[][] }> {
  const socket = new WebSocket(worker.wsUrl(path), ['muxws.v1.json']);
  const frames: unknown[][] = [];
  socket.on('message', (data) => frames.push(JSON.parse(String(data))));
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`No open of ${path} within 5000 ms`)), 5000);
    socket.once('open', () => {
      clearTimeout(timer);
      resolve();
    });
    socket.once('error', (error) => {
      clearTimeout(timer);
      reject(error);
    });
  });
  socket.send(JSON.stringify([1, 1, 3, null, hello]));
  return { socket, frames };
}

/** Resolves once `check()` holds, polling every 20 ms; rejects after 5000 ms. */
async function until(check: () => boolean, what: string): Promise<void> {
  for (let waited = 0; !check(); waited += 20) {
    if (waited > 5000) throw new Error(`Timed out waiting for ${what}`);
    await sleep(20);
  }
}

function stats(connection: Connection<Api>): Promise<Stats> {
  return connection.call('stats', undefined, { timeoutMs: 5000 });
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** Every message of a stream's readable side, bounded. */
async function collect(stream: Stream, ms = 5000): Promise<unknown[]> {
  const out: unknown[] = [];
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`stream ${stream.id} not done in ${ms} ms`)), ms);
  });
  try {
    await Promise.race([
      (async () => {
        for await (const value of stream) out.push(value);
      })(),
      timeout,
    ]);
  } finally {
    clearTimeout(timer);
  }
  return out;
}

/** Streams both ways: acceptor-written, dialer-written, and one the acceptor opens. */
async function checkStreams(connection: Connection<Api>, label: string): Promise<void> {
  assert.deepEqual(
    await collect(connection.stream('count', { n: 3 }, { end: true })),
    [1, 2, 3, 'done'],
    label,
  );
  const upload = connection.stream('sum', undefined);
  for (const n of [1, 2, 3, 4]) await upload.write(n);
  await upload.end(5);
  assert.deepEqual(await collect(upload), [15], label);
  assert.deepEqual(
    await connection.call('push', { words: ['x', 'y', 'z'] }, { timeoutMs: 5000 }),
    { replies: [{ got: ['x', 'y', 'z'] }] },
    label,
  );
}

async function closeAll(...dialed: Array<Dialed | undefined>): Promise<void> {
  await Promise.all(dialed.map((d) => d?.connection.close()));
}

/** The plain Worker's routes: `upgrade()` from muxws/cloudflare, and `muxws()` in a Hono app. */
const WORKER_PATHS = ['/echo', '/hono'];

test('WSM-ACC-003 a Worker upgrade in workerd (plain and through Hono) answers 101 with the muxws subprotocol and the hello gets its welcome', async () => {
  for (const path of WORKER_PATHS) {
    // `ws` fails a handshake whose 101 lacks the offered subprotocol, as Chrome does.
    const raw = await rawUpgrade(path, ['muxws.v1.json']);
    assert.equal(raw.protocol, 'muxws.v1.json', path);
    let ada: Dialed | undefined;
    try {
      ada = await dial(path, 'ada');
      const welcome = ada.connection.welcome;
      assert.equal(welcome?.user, 'ada', path);
      assert.equal(welcome?.where, 'worker', path);
      assert.match(welcome?.peer ?? '', /^[0-9a-f-]{36}$/, path);
      assert.equal(ada.connection.state, 'open', path);
    } finally {
      await closeAll(ada);
    }
  }
});

test('WSM-APP-003 WSM-STR-005 routed calls and streams work both ways between a dialer and a Worker in workerd (plain and through Hono), and a room route is not found there', async () => {
  for (const path of WORKER_PATHS) await requestsAndStreams(path);
});

async function requestsAndStreams(path: string): Promise<void> {
  let ada: Dialed | undefined;
  try {
    ada = await dial(path, 'ada');
    assert.deepEqual(
      await ada.connection.call('echo', { value: [1, 'two', { three: 3 }] }, { timeoutMs: 5000 }),
      { echo: [1, 'two', { three: 3 }] },
    );
    // The Worker calls the dialer back (peer.call) and returns what the dialer answered.
    assert.deepEqual(
      await ada.connection.call('ask', { question: 'who?' }, { timeoutMs: 5000 }),
      { answer: { from: 'ada', heard: { question: 'who?' } } },
    );
    await checkStreams(ada.connection, path);
    // The room's own routes are not the plain Worker's.
    await assert.rejects(
      ada.connection.call('who', undefined, { timeoutMs: 5000 }),
      (error) => error instanceof StreamResetError && error.code === 'not_found',
    );
  } finally {
    await closeAll(ada);
  }
}

test('WSM-WIRE-001 a credential token offered after the muxws token: the Worker and the Durable Object select the muxws token', async () => {
  for (const path of [...WORKER_PATHS, '/room/tokens']) {
    const raw = await rawUpgrade(path, ['muxws.v1.json', 'token.secret-123']);
    assert.equal(raw.protocol, 'muxws.v1.json', path);
    let ada: Dialed | undefined;
    try {
      ada = await dial(path, 'ada', [], { protocols: ['token.secret-123'] });
      assert.equal(ada.connection.state, 'open', path);
      assert.equal((await stats(ada.connection)).you.user, 'ada', path);
    } finally {
      await closeAll(ada);
    }
  }
  // Offering only the credential token is refused before any socket exists.
  assert.deepEqual(await rawUpgrade('/room/tokens', ['token.secret-123']), { status: 400 });
});

test('WSM-ACC-003 a foreign Origin is refused with 403 and no peer by the Worker and the Durable Object', async () => {
  for (const path of [...WORKER_PATHS, '/room/origin']) {
    let watcher: Dialed | undefined;
    try {
      watcher = await dial(path, 'watcher');
      const before = (await stats(watcher.connection)).peers;
      assert.deepEqual(
        await rawUpgrade(path, ['muxws.v1.json'], 'https://evil.example'),
        { status: 403 },
        path,
      );
      await assert.rejects(
        connect(worker.wsUrl(path), {
          WebSocket: socketClass({ origin: 'https://evil.example' }),
          reconnect: false,
          heartbeat: false,
          handshakeTimeoutMs: 5000,
        }),
        ConnectError,
      );
      // The same host is allowed (the default policy), as a browser page of that host would be.
      assert.equal(
        (await rawUpgrade(path, ['muxws.v1.json'], worker.httpUrl('/').replace(/\/$/, '')))
          .protocol,
        'muxws.v1.json',
      );
      await sleep(50); // let the same-host socket's close reach the acceptor
      assert.equal((await stats(watcher.connection)).peers, before, path);
    } finally {
      await closeAll(watcher);
    }
  }
});

test('WSM-ACC-004 a Durable Object peer holds its upgrade tags plus the tags its hello added', async () => {
  let ada: Dialed | undefined;
  try {
    ada = await dial('/room/tags', 'ada', ['x', 'y']);
    const you = (await stats(ada.connection)).you;
    assert.deepEqual(you.tags, ['room', 'topic:x', 'topic:y', 'user:ada']);
    assert.equal(you.id, ada.connection.welcome?.peer);
    assert.deepEqual(await ada.connection.call('who', undefined, { timeoutMs: 5000 }), ['ada']);
  } finally {
    await closeAll(ada);
  }
});

test('WSM-ACC-005 a broadcast in a Durable Object reaches exactly the peers holding the tag', async () => {
  let ada: Dialed | undefined;
  let bob: Dialed | undefined;
  let cy: Dialed | undefined;
  try {
    ada = await dial('/room/chat', 'ada', ['x']);
    bob = await dial('/room/chat', 'bob', ['x', 'y']);
    cy = await dial('/room/chat', 'cy', ['y']);
    assert.deepEqual(await ada.connection.call('who', undefined, { timeoutMs: 5000 }), [
      'ada',
      'bob',
      'cy',
    ]);
    const said = await ada.connection.call('say', { topic: 'x', text: 'hi x' }, {
      timeoutMs: 5000,
    });
    assert.deepEqual(said, { delivered: 2 });
    // A round trip on each socket after the broadcast: its PUBLISH, if any, came before.
    for (const d of [ada, bob, cy]) await stats(d.connection);
    const expected = { tag: 'topic:x', headers: null, payload: { from: 'ada', text: 'hi x' } };
    assert.deepEqual(ada.published, [expected]);
    assert.deepEqual(bob.published, [expected]);
    assert.deepEqual(cy.published, []);
  } finally {
    await closeAll(ada, bob, cy);
  }
});

test('WSM-APP-003 WSM-STR-005 routed calls and streams work both ways between a dialer and a Durable Object', async () => {
  let ada: Dialed | undefined;
  try {
    ada = await dial('/room/ask', 'ada');
    assert.deepEqual(
      await ada.connection.call('echo', { value: 'ping?' }, { timeoutMs: 5000 }),
      { echo: 'ping?' },
    );
    assert.deepEqual(
      await ada.connection.call('ask', { question: 'name?' }, { timeoutMs: 5000 }),
      { answer: { from: 'ada', heard: { question: 'name?' } } },
    );
    await checkStreams(ada.connection, 'Durable Object');
  } finally {
    await closeAll(ada);
  }
});

test('WSM-WIRE-003 WSM-WIRE-004 WSM-LIM-003 PING is answered by the runtime, so a Durable Object hibernates under heartbeats and restores its peers from their attachments, stream ids included, and a restored peer refuses a second hello', async () => {
  const traffic: Traffic = { sent: [], received: [] };
  let ada: Dialed | undefined;
  let bob: Dialed | undefined;
  let carol: { socket: WebSocket; frames: unknown[][] } | undefined;
  try {
    // A PING after 500 ms of silence, then the next check when its 2500 ms deadline is due:
    // about one PING every 3 s.
    const heartbeat = { intervalMs: 500, timeoutMs: 2500 };
    ada = await dial('/room/sleepy', 'ada', ['x'], { heartbeat, traffic });
    bob = await dial('/room/sleepy', 'bob', ['y'], { heartbeat });
    // carol's raw socket sends its hello, then nothing until the object has slept.
    carol = await rawHello('/room/sleepy', { user: 'carol', topics: ['c'] });
    const frames = carol.frames;
    await until(() => frames.length > 0, "carol's welcome");
    assert.equal(frames[0][1], 1, "carol's hello is answered on stream 1");
    const awake = await stats(ada.connection);
    const bobId = (await stats(bob.connection)).you.id;
    // The object opens a stream to ada before it sleeps (WSM-WIRE-004: ada has now seen id 2).
    assert.deepEqual(
      await ada.connection.call('ask', { question: 'asleep?' }, { timeoutMs: 5000 }),
      { answer: { from: 'ada', heard: { question: 'asleep?' } } },
    );
    const pingsBefore = traffic.sent.filter((m) => m === '[6]').length;

    // workerd hibernates an object about 10 s after its last event. Only heartbeats flow now:
    // if a PING reached the object it would stay awake (and without a PONG, ada would close).
    for (let waited = 0; waited < 12_500; waited += 500) {
      await sleep(500);
      assert.equal(ada.connection.state, 'open');
      assert.equal(bob.connection.state, 'open');
    }
    const pings = traffic.sent.filter((m) => m === '[6]').length - pingsBefore;
    const pongs = traffic.received.filter((m) => m === '[7]').length;
    assert.ok(pings >= 3, `expected at least 3 PINGs in 12.5 s, got ${pings}`);
    assert.ok(pongs >= pings - 1, `expected a PONG per PING: ${pings} PINGs, ${pongs} PONGs`);

    const woken = await stats(ada.connection);
    assert.notEqual(woken.instance, awake.instance, 'the object did not hibernate');
    assert.equal(woken.restored, 3);
    assert.equal(woken.peers, 3);
    assert.deepEqual(woken.you, awake.you);
    assert.equal((await stats(bob.connection)).you.id, bobId);

    // After the wake the object's next stream to ada takes an id above the ones ada has seen
    // (restored from the attachment), so ada answers it instead of dropping it as reused.
    assert.deepEqual(
      await ada.connection.call('ask', { question: 'awake?' }, { timeoutMs: 5000 }),
      { answer: { from: 'ada', heard: { question: 'awake?' } } },
    );

    // The restored peers keep their hello's tags: the broadcast reaches bob alone.
    assert.deepEqual(
      await ada.connection.call('say', { topic: 'y', text: 'awake?' }, { timeoutMs: 5000 }),
      { delivered: 1 },
    );
    await stats(bob.connection);
    assert.deepEqual(bob.published.map((m) => m.payload), [{ from: 'ada', text: 'awake?' }]);
    assert.deepEqual(ada.published, []);
    assert.deepEqual(ada.closes, []);

    // A second hello on carol's restored socket is refused: onHello does not run again, so the
    // tags it would add (topic:z) are not there, and carol keeps hers (topic:c).
    const before = frames.length;
    carol.socket.send(JSON.stringify([1, 1, 3, null, { user: 'mallory', topics: ['z'] }]));
    await until(() => frames.length > before, 'the answer to the second hello');
    assert.deepEqual(frames[before], [4, 1, 'refused', 'The hello was already accepted']);
    assert.deepEqual(
      await ada.connection.call('say', { topic: 'z', text: 'mallory?' }, { timeoutMs: 5000 }),
      { delivered: 0 },
    );
    assert.deepEqual(
      await ada.connection.call('say', { topic: 'c', text: 'carol?' }, { timeoutMs: 5000 }),
      { delivered: 1 },
    );
  } finally {
    carol?.socket.terminate();
    await closeAll(ada, bob);
  }
});

test('WSM-WIRE-009 a close from the dialer is answered with a close frame by the Worker (plain and through Hono) and the Durable Object', async () => {
  for (const path of ['/echo', '/hono', '/room/bye']) {
    const socket = new WebSocket(worker.wsUrl(path), ['muxws.v1.json']);
    try {
      const closed = new Promise<{ code: number; reason: string }>((resolve, reject) => {
        const timer = setTimeout(
          () => reject(new Error(`${path}: no close frame in 3000 ms`)),
          3000,
        );
        socket.on('close', (code, reason) => {
          clearTimeout(timer);
          resolve({ code, reason: String(reason) });
        });
        socket.on('error', reject);
      });
      await new Promise((resolve, reject) => {
        socket.once('open', resolve);
        socket.once('error', reject);
      });
      socket.close(1000, 'bye');
      // 1006 would mean the runtime dropped the connection without answering the close.
      assert.deepEqual(await closed, { code: 1000, reason: 'bye' }, path);
    } finally {
      socket.terminate();
    }
  }
  // The room's peer for that socket is gone: a new dialer sees only itself.
  let cy: Dialed | undefined;
  try {
    cy = await dial('/room/bye', 'cy');
    assert.deepEqual(await cy.connection.call('who', undefined, { timeoutMs: 5000 }), ['cy']);
  } finally {
    await closeAll(cy);
  }
});

test("WSM-ACC-008 a Durable Object's acceptor.close() drains with GOAWAY and the dialer redials on the fast path", async () => {
  const contexts: DialContext[] = [];
  let ada: Dialed | undefined;
  try {
    ada = await dial('/room/deploy', 'ada', [], {
      contexts,
      serviceRestartDelayMs: 50,
      reconnect: { initialDelayMs: 100, maxAttempts: 10 },
    });
    const firstPeer = ada.connection.welcome?.peer;
    const inFlight = ada.connection.call('wait', { ms: 400 }, { timeoutMs: 5000 });
    await sleep(50); // the OPEN reaches the room before the restart does
    const startedAt = Date.now();
    const restart = fetch(worker.httpUrl('/room/deploy/restart'), { method: 'POST' });
    // The GOAWAY reaches the dialer: it refuses new streams itself (WSM-DIAL-006).
    for (let refused = false; !refused;) {
      assert.ok(Date.now() - startedAt < 5000, 'no GOAWAY within 5000 ms');
      refused = await ada.connection.call('echo', { value: null }, { timeoutMs: 5000 }).then(
        () => false,
        (error) => error instanceof NotConnectedError,
      );
      if (!refused) await sleep(10);
    }
    assert.deepEqual(ada.closes, [], 'the busy connection stays open while draining');
    assert.equal(await inFlight, 'waited');
    const answer = await restart;
    assert.equal(answer.status, 200);
    assert.equal(await answer.text(), 'restarted');

    // The dialer redials on the service-restart path, within the GOAWAY's 200 ms spread.
    for (let waited = 0; ada.opens.length < 2; waited += 25) {
      assert.ok(waited < 5000, `no redial within 5000 ms: ${JSON.stringify(ada.closes)}`);
      await sleep(25);
    }
    const closed: CloseInfo = ada.closes[0];
    assert.ok([1000, 1012].includes(closed.code), `closed with ${closed.code}`);
    assert.equal(closed.willRetry, true);
    assert.ok(closed.delayMs! < 200, `redial delay ${closed.delayMs} ms`);
    assert.equal(contexts[1].reason, 'reconnect');
    assert.equal(contexts[1].resumedFromServiceRestart, true);
    assert.equal(ada.opens[1].reconnected, true);
    // A new Peer on the new acceptor, holding only what its new hello gave it.
    const you = (await stats(ada.connection)).you;
    assert.notEqual(you.id, firstPeer);
    assert.deepEqual(you.tags, ['room', 'user:ada']);
  } finally {
    await closeAll(ada);
  }
});

const MSGPACK_WORKER = `
import { Acceptor } from './lib/acceptor/acceptor.ts';
import { DurableObjectAcceptor, upgrade } from './lib/adapters/cloudflare.ts';
import { msgpackCodec } from './lib/wire/msgpack.ts';

const onStream = (stream) => ({ echo: stream.payload, bytes: stream.payload?.data instanceof Uint8Array });
let workerAcceptor;
export class Room {
  constructor(state) {
    this.acceptor = new Acceptor({ codec: msgpackCodec, idleTimeoutMs: 0, onStream });
    this.muxws = new DurableObjectAcceptor(state, this.acceptor);
  }
  async fetch(request) {
    if (request.method === 'POST') {
      return Response.json(await this.acceptor.broadcast('all', { bytes: new Uint8Array([9, 8]) }));
    }
    return this.muxws.upgrade(request, { tags: ['all'] });
  }
  webSocketMessage(ws, message) { this.muxws.webSocketMessage(ws, message); }
  webSocketClose(ws, code, reason) { this.muxws.webSocketClose(ws, code, reason); }
}
export default {
  fetch(request, env) {
    if (new URL(request.url).pathname === '/worker') {
      workerAcceptor ??= new Acceptor({ codec: msgpackCodec, idleTimeoutMs: 0, onStream });
      return upgrade(request, workerAcceptor);
    }
    return env.ROOM.get(env.ROOM.idFromName('binary')).fetch(request);
  },
};
`;

test('WSM-WIRE-002 the msgpack codec runs through workerd: binary messages in the Worker and the Durable Object', async () => {
  await using binary = await startWorkerd({
    script: await bundleWorkerSource(MSGPACK_WORKER),
    durableObjects: { ROOM: 'Room' },
  });
  for (const path of ['/worker', '/room']) {
    assert.equal(
      (await rawUpgrade(path, ['muxws.v1.msgpack'], undefined, binary)).protocol,
      'muxws.v1.msgpack',
    );
    const published: PublishMessage[] = [];
    const connection = await connect(binary.wsUrl(path), {
      codec: msgpackCodec,
      WebSocket: socketClass(),
      reconnect: false,
      heartbeat: false,
      handshakeTimeoutMs: 5000,
      onPublish: (message) => void published.push(message),
    });
    try {
      const data = new Uint8Array([0, 1, 2, 254, 255]);
      assert.deepEqual(
        await connection.request({ data, n: 1.5 }, { timeoutMs: 5000 }),
        { echo: { data, n: 1.5 }, bytes: true },
        path,
      );
      if (path === '/room') {
        const answer = await fetch(binary.httpUrl('/room'), { method: 'POST' });
        assert.equal(await answer.json(), 1);
        await connection.request({ data }, { timeoutMs: 5000 }); // the PUBLISH came before
        assert.deepEqual(published, [{
          tag: 'all',
          headers: null,
          payload: { bytes: new Uint8Array([9, 8]) },
        }]);
      }
    } finally {
      await connection.close();
    }
  }
});

const AUTH_WORKER = `
import { Acceptor } from './lib/acceptor/acceptor.ts';
import { DurableObjectAcceptor, upgrade } from './lib/adapters/cloudflare.ts';

function authorize(request) {
  switch (new URL(request.url).searchParams.get('auth')) {
    case 'no': return false;
    case 'teapot': return new Response('no tea', { status: 418 });
    case 'throw': throw new Error('store down');
    case 'later': return Promise.resolve({ data: { user: 'bob' }, tags: ['vip'] });
  }
  return { data: { user: 'ada' }, tags: ['vip'] };
}
let workerAcceptor;
export class Room {
  constructor(state) {
    const onStream = (stream, peer) => ({
      user: peer.data.user,
      tags: [...peer.tags],
      doTagged: state.getWebSockets('vip').length,
    });
    this.muxws = new DurableObjectAcceptor(
      state,
      new Acceptor({ idleTimeoutMs: 0, authorize, onStream, onError() {} }),
    );
  }
  fetch(request) {
    return this.muxws.upgrade(request, { tags: ['room'] });
  }
  webSocketMessage(ws, message) { this.muxws.webSocketMessage(ws, message); }
  webSocketClose(ws, code, reason) { this.muxws.webSocketClose(ws, code, reason); }
}
export default {
  fetch(request, env) {
    if (new URL(request.url).pathname === '/worker') {
      workerAcceptor ??= new Acceptor({
        idleTimeoutMs: 0,
        authorize,
        onError() {},
        onStream: (stream, peer) => ({ user: peer.data.user, tags: [...peer.tags] }),
      });
      return upgrade(request, workerAcceptor);
    }
    return env.ROOM.get(env.ROOM.idFromName('auth')).fetch(request);
  },
};
`;

test('authorize decides the upgrade in the Worker and the Durable Object, whose tags it joins (WSM-APP-002)', async () => {
  await using authed = await startWorkerd({
    script: await bundleWorkerSource(AUTH_WORKER),
    durableObjects: { ROOM: 'Room' },
  });
  for (const path of ['/worker', '/room']) {
    const ask = (auth: string) =>
      rawUpgrade(`${path}?auth=${auth}`, ['muxws.v1.json'], undefined, authed);
    assert.deepEqual(await ask('no'), { status: 403 }, path);
    assert.deepEqual(await ask('teapot'), { status: 418 }, path);
    assert.deepEqual(await ask('throw'), { status: 500 }, path);
    for (const [auth, user] of [['yes', 'ada'], ['later', 'bob']]) {
      const connection = await connect(authed.wsUrl(`${path}?auth=${auth}`), {
        WebSocket: socketClass(),
        reconnect: false,
        heartbeat: false,
        handshakeTimeoutMs: 5000,
      });
      try {
        const answer = await connection.request('who', { timeoutMs: 5000 }) as Record<
          string,
          unknown
        >;
        assert.equal(answer.user, user, path);
        if (path === '/room') {
          assert.deepEqual(answer.tags, ['room', 'vip']);
          assert.ok((answer.doTagged as number) >= 1, 'the socket carries the Durable Object tag');
        } else {
          assert.deepEqual(answer.tags, ['vip']);
        }
      } finally {
        await connection.close();
      }
    }
  }
});
