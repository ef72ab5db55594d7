/**
 * One client API over the three subjects, so each scenario is written once: the runtime's raw
 * WebSocket (the global `WebSocket` on Deno and Bun, `ws` on Node), muxws `connect()` with a
 * hello (over `ws` through `wsDialer()` on Node), and socket.io-client on its websocket transport. Each talks to `bench/_server.ts`.
 *
 * @module
 */
import WsWebSocket from 'ws';
import { io as socketIoClient, type Socket } from 'socket.io-client';
import { connect, type Connection, type DialerSocketConstructor } from 'muxws';
import { wsDialer } from 'muxws/node';
import { runtime } from './_common.ts';

/**
 * The subjects every side-by-side scenario compares, plus `muxws-nohello` (muxws without a hello,
 * established when the socket opens), which only `connect` measures, to show what the hello costs,
 * and `raw-decoding` (the raw client and server, the server decoding every message with
 * `JSON.parse` and encoding each echo with `JSON.stringify`), which the request/response and
 * one-way scenarios measure, to show what reading the messages costs against raw's verbatim echo,
 * and `muxws-routed` (the muxws client and server, each request a `connection.call('echo', …)`
 * served by the acceptor's route `echo` instead of `request()` served by `onStream`), which only
 * the request/response scenarios measure, to show what a route costs against an unrouted request,
 * and `raw-hello` (the raw client and server, the client established only once it sent a small
 * hello message after `open` and the server answered it, as muxws's hello is), which only
 * `connect` measures, the fair baseline of a setup with a hello, and `native` (the raw client and
 * server, each broadcast the runtime's own best one: Bun's `server.publish()` to a topic), which
 * only the broadcast scenarios measure, to show how near muxws comes to the runtime's ceiling.
 */
export type Subject =
  | 'raw'
  | 'muxws'
  | 'socketio'
  | 'muxws-nohello'
  | 'raw-decoding'
  | 'muxws-routed'
  | 'raw-hello'
  | 'native';

/** The routes of the muxws bench server: `echo` answers with its input. */
export type BenchApi = { echo: { input: unknown; output: unknown } };

/** The subjects in the order repetitions interleave them. */
export const SUBJECTS: readonly Subject[] = ['muxws', 'raw', 'socketio'];

/** A connected client of one subject. */
export interface BenchClient {
  /** One request/response: resolves with the answer. */
  request(value: unknown): Promise<unknown>;
  /** Sends `values.length` one-way messages; resolves once the server says it received all. */
  sink(count: number, value: (i: number) => unknown): Promise<void>;
  /**
   * Asks the server to broadcast one message of about `size` bytes (100 by default) to every
   * client; resolves with its count.
   */
  broadcast(size?: number): Promise<number>;
  /** The server process's CPU time so far, in µs. */
  serverCpu(): Promise<number>;
  /** Called for each broadcast message this client receives. */
  onBroadcast: (() => void) | undefined;
  /**
   * Closes the client; resolves once its connection is closed (never rejects), so a scenario can
   * wait for the closes before it times the next subject.
   */
  close(): Promise<void>;
}

/** The `WebSocket` constructor of this runtime: the global one, or `ws` on Node. */
export const WebSocketClass: DialerSocketConstructor =
  (runtime === 'node' ? WsWebSocket : globalThis.WebSocket) as unknown as DialerSocketConstructor;

/**
 * The `WebSocket` option of a muxws dialer on this runtime, as its guide writes it: the global
 * one, or `ws` through `wsDialer()` on Node.
 */
export const DialerWebSocket: DialerSocketConstructor = runtime === 'node'
  ? wsDialer(WebSocketClass)
  : WebSocketClass;

interface RawWebSocket {
  onopen: ((event: unknown) => void) | null;
  onmessage: ((event: { data: unknown }) => void) | null;
  onerror: ((event: unknown) => void) | null;
  onclose: ((event: unknown) => void) | null;
  send(data: string): void;
  close(): void;
}

/** Opens a client of `subject` to the server on `port`; resolves once it is established. */
export function openClient(subject: Subject, port: number, id = 0): Promise<BenchClient> {
  if (subject === 'muxws') return openMuxws(port, id, true, false);
  if (subject === 'muxws-nohello') return openMuxws(port, id, false, false);
  if (subject === 'muxws-routed') return openMuxws(port, id, true, true);
  if (subject === 'raw') return openRaw(port, id, {});
  if (subject === 'raw-decoding') return openRaw(port, id, { decode: true });
  if (subject === 'raw-hello') return openRaw(port, id, { hello: true });
  if (subject === 'native') return openRaw(port, id, { native: true });
  return openSocketIo(port, id);
}

/** How a raw client differs from the plain one. */
interface RawMode {
  /** The server decodes every message and re-encodes each echo (`#decode`). */
  decode?: boolean;
  /** Broadcasts are the runtime's own best one (`#nbcast`). */
  native?: boolean;
  /**
   * Established only once the hello round trip is done: after `open` the client sends
   * `#hello <JSON>` (the payload muxws's bench dialer sends, `{ client: 'bench', id }`), the
   * server decodes it, keeps it and answers `#welcome <JSON>` (`{ welcome: true }`, as the muxws
   * bench server's hello handler answers), which the client decodes.
   */
  hello?: boolean;
}

function openRaw(port: number, id: number, mode: RawMode): Promise<BenchClient> {
  const { decode = false, native = false, hello = false } = mode;
  const Ctor = WebSocketClass as unknown as new (url: string) => RawWebSocket;
  const ws = new Ctor(`ws://127.0.0.1:${port}/raw?c=${id}`);
  const waiting: Array<(value: unknown) => void> = [];
  let control: ((text: string) => void) | undefined;
  const client: BenchClient = {
    onBroadcast: undefined,
    request(value) {
      return new Promise((resolve) => {
        waiting.push(resolve);
        ws.send(JSON.stringify(value));
      });
    },
    sink(count, value) {
      return new Promise<void>((resolve) => {
        control = () => resolve();
        ws.send(`#sink ${count}`);
        for (let i = 0; i < count; i++) ws.send(JSON.stringify(value(i)));
      });
    },
    broadcast(size = 100) {
      return new Promise((resolve) => {
        control = (text) => resolve(Number(text.slice(7)));
        ws.send(`${native ? '#nbcast' : '#bcast'} ${size}`);
      });
    },
    serverCpu() {
      return new Promise((resolve) => {
        control = (text) => resolve(Number(text.slice(5)));
        ws.send('#cpu');
      });
    },
    close() {
      return new Promise<void>((resolve) => {
        ws.onclose = () => resolve();
        ws.close();
      });
    },
  };
  ws.onmessage = (event) => {
    const text = event.data as string;
    if (text.charCodeAt(0) === 35 /* # */) control?.(text);
    else if (waiting.length > 0) waiting.shift()!(JSON.parse(text));
    else if (client.onBroadcast) {
      JSON.parse(text);
      client.onBroadcast();
    }
  };
  return new Promise((resolve, reject) => {
    ws.onopen = () => {
      if (decode) ws.send('#decode');
      if (!hello) return resolve(client);
      control = (text) => {
        control = undefined;
        if (!text.startsWith('#welcome ')) {
          return reject(new Error(`Expected #welcome after the raw hello: found ${text}`));
        }
        JSON.parse(text.slice(9));
        resolve(client);
      };
      ws.send(`#hello ${JSON.stringify({ client: 'bench', id })}`);
    };
    ws.onerror = () => reject(new Error(`raw WebSocket to port ${port} failed`));
    ws.onclose = () =>
      reject(new Error(`raw WebSocket to port ${port} closed before it was established`));
  });
}

async function openMuxws(
  port: number,
  id: number,
  hello: boolean,
  routed: boolean,
): Promise<BenchClient> {
  const client: BenchClient = {
    onBroadcast: undefined,
    request: routed
      ? (value) => connection.call('echo', value)
      : (value) => connection.request(value),
    async sink(count, value) {
      const stream = connection.open(value(0), { headers: { op: 'sink' } });
      for (let i = 1; i < count; i++) await stream.write(value(i));
      await stream.end();
      for await (const _ of stream) { /* the count */ }
    },
    async broadcast(size = 100) {
      return await connection.request(size, { headers: { op: 'bcast' } }) as number;
    },
    async serverCpu() {
      return await connection.request(null, { headers: { op: 'cpu' } }) as number;
    },
    close() {
      return connection.close().then(() => {}, () => {});
    },
  };
  const connection: Connection<BenchApi> = await connect<BenchApi>(
    `ws://127.0.0.1:${port}/muxws?c=${id}`,
    {
      hello: hello ? { payload: { client: 'bench', id } } : undefined,
      reconnect: false,
      WebSocket: DialerWebSocket,
      onPublish: () => client.onBroadcast?.(),
      onError: (error) => console.error('muxws client error:', error),
    },
  );
  return client;
}

function openSocketIo(port: number, id: number): Promise<BenchClient> {
  const socket: Socket = socketIoClient(`http://127.0.0.1:${port}`, {
    transports: ['websocket'],
    reconnection: false,
    forceNew: true,
    query: { c: String(id) },
  });
  const client: BenchClient = {
    onBroadcast: undefined,
    request: (value) => socket.emitWithAck('req', value),
    sink(count, value) {
      return new Promise<void>((resolve) => {
        socket.once('done', () => resolve());
        socket.emit('sink', count);
        for (let i = 0; i < count; i++) socket.emit('m', value(i));
      });
    },
    broadcast: (size = 100) => socket.emitWithAck('bcast', size),
    serverCpu: () => socket.emitWithAck('cpu'),
    close() {
      if (socket.disconnected) return Promise.resolve();
      return new Promise<void>((resolve) => {
        socket.once('disconnect', () => resolve());
        socket.close();
      });
    },
  };
  socket.on('b', () => client.onBroadcast?.());
  return new Promise((resolve, reject) => {
    socket.once('connect', () => resolve(client));
    socket.once('connect_error', (error) => reject(error));
  });
}
