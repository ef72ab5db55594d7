/**
 * The server process of every scenario: `<runtime> bench/_server.ts --subject raw|muxws|socketio
 * [--port 0]`, on 127.0.0.1. It prints `READY <port>` once listening, then answers commands on
 * stdin, one per line:
 *
 * - `mem`: collects garbage, prints `MEM {"rss":…,"heap":…,"connections":…}`.
 * - `goaway` (muxws: `acceptor.close()` with its defaults, a fresh acceptor taking the redials;
 *   the others have no GOAWAY and close as `close1012` does), `close1012` (every socket closed
 *   with a bare 1012; socket.io: every engine socket closed): print `EVENT <epoch ms>`.
 * - `live`: prints `LIVE <open connections>`.
 * - `cpu`: prints `CPU <µs of CPU this process used so far>`.
 * - `bcast`: broadcasts one ~100-byte message to every connection (muxws:
 *   `acceptor.broadcast('all', …)`; raw: the one string sent to every socket in a loop) and prints
 *   `BCAST <epoch ms when it started, fractional> <count>` once it was handed to every socket.
 * - `arrivals`: prints `ARRIVALS {"t0":…,"times":[…]}`, the first arrival of each dialer (the `c`
 *   query parameter) since the last event or, without one, since the server was ready, in ms.
 * - `stalls`: with `--watch-stalls 1`, prints `STALLS [[from, to]…]`, the event loop's stalls
 *   over 15 ms since the last event, in ms after it (diagnosing the herd; empty without it).
 * - `quit`: exits.
 *
 * What each subject serves, the same on every runtime:
 * - raw (`Deno.serve`, `Bun.serve`, `ws` on Node): a text message is echoed verbatim, except
 *   `#sink <n>` (the next n messages are only counted, then `#done` is sent), `#bcast [size]`
 *   (the same string of ~`size` bytes, 100 by default, is sent to every socket, then `#bdone
 *   <count>`), `#nbcast [size]` (the same, by the runtime's own best broadcast, the `native`
 *   comparator: on Bun `server.publish()` to a topic every socket joins at the first one, on
 *   Node `ws` the string encoded once and each socket sent those bytes as text, on Deno the
 *   send loop of `#bcast`), `#cpu` (answered
 *   with `#cpu <µs of CPU this process used>`) and `#decode` (from then on this connection
 *   decodes every message with `JSON.parse`, and an echo is `JSON.stringify` of what it
 *   decoded: the least an application that reads its messages does, the `raw decoding`
 *   comparator) and `#hello <JSON>` (decoded and kept, answered with `#welcome <JSON>` of
 *   `{ welcome: true }`, as the muxws server answers its hello: the `raw-hello` comparator).
 * - muxws (`./deno`, `./bun`, `ws` + `accept()` on Node): the hello (stream 1) is answered with a
 *   welcome and the peer tagged `all`; a request is answered with its payload, and so is a call
 *   of the route `echo` (the `muxws routed` comparator, served beside `onStream`); a stream opened
 *   with the header `op: 'sink'` is read to its end and answered with the count; `op: 'hold'` is
 *   read to its end and answered with nothing, held open meanwhile (`--max-streams <n>` raises
 *   `limits.maxStreams` from its default of 100, for the streams one connection holds open);
 *   `op: 'bcast'`
 *   broadcasts one payload of ~`size` bytes (the request's payload, 100 by default) to the tag
 *   `all` and answers with the count; `op: 'cpu'` answers with
 *   the process's CPU µs.
 * - socketio (`socket.io` on `node:http`, websocket and polling both allowed): `req` acked with
 *   its payload, `sink` n then n `m` events answered with `done`, `bcast` (with a size) emitted to the
 *   room `all` and acked with the count, `cpu` acked with the process's CPU µs.
 *
 * @module
 */
import { createServer, type IncomingMessage } from 'node:http';
import process from 'node:process';
import { type WebSocket as WsSocket, WebSocketServer } from 'ws';
import { serveAcceptors } from './_serve_acceptor.ts';
import { Server as SocketIoServer } from 'socket.io';
import { Acceptor } from 'muxws/acceptor';
import type { Stream } from 'muxws';
import type { BenchApi } from './_clients.ts';
import {
  BROADCAST_SIZES,
  broadcastPayload,
  collectGarbage,
  cpuMicros,
  epochMs,
  memory,
  numberOption,
  option,
  readLines,
  runtime,
} from './_common.ts';
import { watchStalls } from './_herd_stats.ts';

const subject = option('subject', 'raw');
const requestedPort = numberOption('port', 0);
/** The muxws acceptor's `limits.maxStreams`: more streams held open on one connection. */
const maxStreams = numberOption('max-streams', 100);
/** With `--watch-stalls 1`, `stalls` prints `STALLS [[from, to]…]` after the last event. */
const stalls = numberOption('watch-stalls', 0) ? watchStalls() : undefined;
/** The broadcast payloads by size, and their JSON for the raw subjects. */
const BROADCASTS = new Map(BROADCAST_SIZES.map((size) => [size, broadcastPayload(size)]));
const BROADCAST_TEXTS = new Map(
  [...BROADCASTS].map(([size, value]) => [size, JSON.stringify(value)]),
);

/** The payload of a broadcast of `size` bytes (100 when not one of `BROADCAST_SIZES`). */
function broadcastOf(size: unknown): unknown {
  return BROADCASTS.get(size as number) ?? BROADCASTS.get(100);
}

let t0 = 0;
const arrivals = new Map<string, number>();
let live = 0;

/**
 * Records the arrival of dialer `id` (`?c=` of its URL), the first one after `t0` only: on Node
 * when its HTTP request (upgrade, or socket.io's first polling request) is parsed, before any
 * handshake work, so a busy server does not push its own arrivals later.
 */
function arrive(url: string | undefined): void {
  const id = new URL(url ?? '/', 'http://x').searchParams.get('c');
  if (id !== null && !arrivals.has(id)) arrivals.set(id, Date.now());
}

function opened(): void {
  live++;
}

function left(): void {
  live--;
}

/** Hooks the subject's commands are dispatched to. */
interface Subject {
  close1012(): void;
  goaway(): void;
  /** One ~100-byte broadcast to every connection; resolves with how many it was handed to. */
  broadcast(): Promise<number>;
}

// ---------------------------------------------------------------------------------------------
// raw

interface RawSocket {
  send(data: string): unknown;
  close(code?: number, reason?: string): void;
  /** Bun's: joins a topic of its server. */
  subscribe?(topic: string): void;
}

/** Bun's `server.publish`, once the raw server listens on Bun. */
let bunPublish: ((topic: string, data: string) => unknown) | undefined;
/** Whether the raw sockets joined the topic `all` (at the first `#nbcast` on Bun). */
let nativeTopic = false;

/** The `native` comparator: the runtime's own best broadcast of `text` to every raw socket. */
function nativeBroadcast(text: string): void {
  if (bunPublish !== undefined) {
    if (!nativeTopic) {
      nativeTopic = true;
      for (const socket of rawSockets) socket.subscribe?.('all');
    }
    bunPublish('all', text);
  } else if (runtime === 'node') {
    // ws sends bytes as they are: the string is encoded once, not once per socket.
    const bytes = new TextEncoder().encode(text);
    for (const socket of rawSockets) (socket as unknown as WsSocket).send(bytes, { binary: false });
  } else {
    for (const socket of rawSockets) socket.send(text);
  }
}

interface RawState {
  sinkLeft: number;
  /** Set by `#decode`: messages are decoded, echoes re-encoded. */
  decode?: boolean;
  /** Set by `#hello`: its payload, decoded. */
  hello?: unknown;
}

const rawSockets = new Set<RawSocket>();

function rawMessage(socket: RawSocket, state: RawState, data: unknown): void {
  const text = typeof data === 'string' ? data : String(data);
  if (state.sinkLeft > 0) {
    if (state.decode) JSON.parse(text);
    if (--state.sinkLeft === 0) socket.send('#done');
    return;
  }
  if (text.charCodeAt(0) === 35 /* # */) {
    if (text.startsWith('#sink ')) state.sinkLeft = Number(text.slice(6));
    else if (text === '#cpu') socket.send(`#cpu ${cpuMicros()}`);
    else if (text === '#decode') state.decode = true;
    else if (text.startsWith('#hello ')) {
      state.hello = JSON.parse(text.slice(7));
      socket.send(`#welcome ${JSON.stringify({ welcome: true })}`);
    } else if (text.startsWith('#bcast') || text.startsWith('#nbcast')) {
      const native = text.startsWith('#nbcast');
      const size = Number(text.slice(native ? 8 : 7)) || 100;
      const broadcast = BROADCAST_TEXTS.get(size) ?? BROADCAST_TEXTS.get(100)!;
      if (native) nativeBroadcast(broadcast);
      else for (const other of rawSockets) other.send(broadcast);
      socket.send(`#bdone ${rawSockets.size}`);
    }
    return;
  }
  socket.send(state.decode ? JSON.stringify(JSON.parse(text)) : text);
}

const rawSubject: Subject = {
  close1012() {
    for (const socket of rawSockets) socket.close(1012, 'service restart');
  },
  goaway() {
    rawSubject.close1012();
  },
  broadcast() {
    const text = BROADCAST_TEXTS.get(100)!;
    for (const socket of rawSockets) socket.send(text);
    return Promise.resolve(rawSockets.size);
  },
};

// ---------------------------------------------------------------------------------------------
// muxws

// muxws counts its connections through the acceptor's callbacks, on every runtime, as an
// application would: a listener of the bench's own on each socket would cost muxws memory that
// the raw subject, whose one close listener does its work and the counting, does not pay.
function makeAcceptor(): Acceptor<BenchApi> {
  return new Acceptor<BenchApi>({
    limits: { maxStreams },
    routes: { echo: (input) => input },
    onPeer: opened,
    onPeerClose: left,
    onStream: async (stream: Stream, peer) => {
      if (stream.id === 1) {
        peer.tags.add('all');
        return { welcome: true };
      }
      const op = stream.headers?.op;
      if (op === 'sink') {
        let count = 0;
        for await (const _ of stream) count++;
        return count;
      }
      if (op === 'hold') {
        try {
          for await (const _ of stream) { /* held open until the dialer ends it */ }
        } catch {
          // Lost with its connection, as every held stream is at the end of a run.
        }
        return undefined;
      }
      if (op === 'bcast') return await acceptor.broadcast('all', broadcastOf(stream.payload));
      if (op === 'cpu') return cpuMicros();
      return stream.payload;
    },
    onError: (error) => console.error('acceptor error:', error),
  });
}

let acceptor: Acceptor<BenchApi> = makeAcceptor();

const muxwsSubject: Subject = {
  close1012() {
    for (const peer of acceptor.peers()) peer.close(1012, 'service restart');
  },
  goaway() {
    const old = acceptor;
    acceptor = makeAcceptor();
    old.close().catch((error) => console.error('close failed:', error));
  },
  broadcast() {
    return acceptor.broadcast('all', broadcastOf(100));
  },
};

// ---------------------------------------------------------------------------------------------
// socket.io (node:http on every runtime)

function socketIo(server: ReturnType<typeof createServer>): Subject {
  const io = new SocketIoServer(server, { cors: { origin: '*' } });
  io.on('connection', (socket) => {
    opened();
    socket.join('all');
    socket.on('disconnect', left);
    socket.on('req', (value: unknown, ack: (value: unknown) => void) => ack(value));
    let sinkLeft = 0;
    socket.on('sink', (n: number) => {
      sinkLeft = n;
    });
    socket.on('m', () => {
      if (--sinkLeft === 0) socket.emit('done');
    });
    socket.on('cpu', (ack: (micros: number) => void) => ack(cpuMicros()));
    socket.on('bcast', (size: number, ack: (count: number) => void) => {
      io.to('all').emit('b', broadcastOf(size));
      ack(io.of('/').sockets.size);
    });
  });
  return {
    close1012() {
      for (const socket of io.of('/').sockets.values()) socket.conn.close();
    },
    goaway() {
      this.close1012();
    },
    broadcast() {
      io.to('all').emit('b', broadcastOf(100));
      return Promise.resolve(io.of('/').sockets.size);
    },
  };
}

// ---------------------------------------------------------------------------------------------
// listening

function listenNode(): Promise<{ port: number; subject: Subject }> {
  const server = createServer((_req, res) => res.writeHead(404).end());
  let hooks: Subject;
  if (subject === 'socketio') hooks = socketIo(server);
  else {
    hooks = rawSubject;
    const wss = new WebSocketServer({ server });
    wss.on('connection', (ws: WsSocket) => {
      opened();
      rawSockets.add(ws);
      const state: RawState = { sinkLeft: 0 };
      ws.on('message', (data, isBinary) => rawMessage(ws, state, isBinary ? data : String(data)));
      ws.on('close', () => {
        rawSockets.delete(ws);
        left();
      });
    });
  }
  server.prependListener('upgrade', (req: IncomingMessage) => arrive(req.url));
  server.prependListener('request', (req: IncomingMessage) => arrive(req.url));
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(requestedPort, '127.0.0.1', () => {
      const address = server.address();
      resolve({ port: typeof address === 'object' && address ? address.port : 0, subject: hooks });
    });
  });
}

function listenDeno(): Promise<{ port: number; subject: Subject }> {
  const deno = (globalThis as unknown as { Deno: typeof Deno }).Deno;
  return new Promise((resolve) => {
    deno.serve({
      hostname: '127.0.0.1',
      port: requestedPort,
      onListen: ({ port }) => resolve({ port, subject: rawSubject }),
    }, (request) => {
      const { socket, response } = deno.upgradeWebSocket(request);
      const state: RawState = { sinkLeft: 0 };
      arrive(request.url);
      socket.onopen = () => {
        opened();
        rawSockets.add(socket);
      };
      socket.onmessage = (event) => rawMessage(socket, state, event.data);
      socket.onclose = () => {
        rawSockets.delete(socket);
        left();
      };
      return response;
    });
  });
}

interface BunSocket {
  data: { state: RawState; url: string };
  send(data: string | Uint8Array): number;
  close(code?: number, reason?: string): void;
  subscribe(topic: string): void;
}

interface BunServe {
  serve(options: {
    hostname: string;
    port: number;
    fetch(
      request: Request,
      server: BunServerLike,
    ): Response | undefined | Promise<Response | undefined>;
    websocket: Record<string, unknown>;
  }): { port: number; publish(topic: string, data: string | Uint8Array): number };
}

interface BunServerLike {
  upgrade(request: Request, options: { headers?: Record<string, string>; data?: unknown }): boolean;
  publish(topic: string, data: string | Uint8Array): number;
}

function listenBun(): Promise<{ port: number; subject: Subject }> {
  const bun = (globalThis as unknown as { Bun: BunServe }).Bun;
  const server = bun.serve({
    hostname: '127.0.0.1',
    port: requestedPort,
    fetch(request, srv) {
      arrive(request.url);
      if (srv.upgrade(request, { data: { state: { sinkLeft: 0 }, url: request.url } })) {
        return undefined;
      }
      return new Response('Expected a WebSocket upgrade', { status: 426 });
    },
    websocket: {
      open(ws: BunSocket) {
        opened();
        rawSockets.add(ws);
        if (nativeTopic) ws.subscribe('all');
      },
      message(ws: BunSocket, message: string | Uint8Array) {
        rawMessage(ws, ws.data.state, message);
      },
      close(ws: BunSocket) {
        rawSockets.delete(ws);
        left();
      },
    },
  });
  bunPublish = (topic, data) => server.publish(topic, data);
  return Promise.resolve({ port: server.port, subject: rawSubject });
}

async function main(): Promise<void> {
  // Node loads its fetch implementation (undici: ~7.8 MB RSS, ~1.8 MB of heap) the first time
  // `Headers` or `Request` is touched, which the muxws subject does at its first upgrade (for
  // checkUpgrade()). Loaded here, before the first `mem`, that one-time cost is not divided among
  // the idle connections as if each held a share of it; the other subjects load it too.
  new Request('http://127.0.0.1/', { headers: new Headers() });
  // muxws: the adapter of each runtime, as the other bench servers serve it; a fresh acceptor
  // after `goaway` takes the redials while the closing one keeps serving its own sockets.
  const { port, subject: hooks } = subject === 'muxws'
    ? {
      port: await serveAcceptors(() => acceptor as unknown as Acceptor, {
        port: requestedPort,
        onRequest: arrive,
      }),
      subject: muxwsSubject,
    }
    : subject === 'socketio' || runtime === 'node'
    ? await listenNode()
    : runtime === 'deno'
    ? await listenDeno()
    : await listenBun();
  t0 = Date.now();
  readLines((line) => {
    switch (line) {
      case 'mem':
        collectGarbage().then(() => {
          console.log(`MEM ${JSON.stringify({ ...memory(), connections: live })}`);
        });
        break;
      case 'goaway':
      case 'close1012':
        t0 = Date.now();
        arrivals.clear();
        if (line === 'goaway') hooks.goaway();
        else hooks.close1012();
        console.error(`closing took ${Date.now() - t0} ms`);
        console.log(`EVENT ${t0}`);
        break;
      case 'live':
        console.log(`LIVE ${live}`);
        break;
      case 'cpu':
        console.log(`CPU ${cpuMicros()}`);
        break;
      case 'bcast': {
        const at = epochMs();
        hooks.broadcast().then(
          (count) => console.log(`BCAST ${at} ${count}`),
          (error) => console.error('broadcast failed:', error),
        );
        break;
      }
      case 'arrivals':
        console.log(
          `ARRIVALS ${JSON.stringify({ t0, times: [...arrivals.values()].map((t) => t - t0) })}`,
        );
        break;
      case 'stalls':
        console.log(`STALLS ${JSON.stringify(stalls?.since(t0) ?? [])}`);
        break;
      case 'quit':
        process.exit(0);
    }
  });
  process.stdin.on('end', () => process.exit(0));
  console.log(`READY ${port}`);
}

await main();
