/**
 * The shared harness of the hostile-input tests: each subject module of this folder (`upgrade.ts`,
 * `malformed.ts`, `floods.ts`, ...) registers its `node:test` cases for one
 * {@linkcode HostileRuntime}, and `_all.ts` registers them all; `tests/deno/hostile_deno_test.ts`,
 * `tests/bun/hostile_bun_test.ts` and `tests/node/hostile_node_test.ts` call it with
 * `Deno.serve`, `Bun.serve` and the `ws` package's server on `node:http`.
 *
 * Each case crafts what an attacker or a broken network would send (a plain `WebSocket`, a
 * WebSocket over `node:net` that stops reading, the fault proxy of `_fault_proxy.ts`), asserts
 * the exact outcome of the contract (docs/spec.md) (close code, reset code, error class) and, where the case is about
 * the acceptor, that it keeps serving other peers: a fresh dialer's request still succeeds.
 * Every wait is bounded and everything is closed in `finally`.
 *
 * This file holds what the cases share: {@linkcode withServer} (an acceptor serving the test
 * application, with raw clients, dialers and fault proxies closed after the case), the
 * measurements (garbage collection, RSS, heap, a child acceptor's own figures) and the frame
 * helpers.
 */
import assert from 'node:assert/strict';
import process from 'node:process';
import { Acceptor, type AcceptorOptions, type Peer, type PeerCloseInfo } from 'muxws/acceptor';
import {
  type Codec,
  connect,
  type Connection,
  type ConnectOptions,
  type DialerSocketConstructor,
  type Stream,
  StreamError,
} from 'muxws';
import { msgpackCodec } from 'muxws/msgpack';
import { type ServerFactory, type SuiteServer, within } from '../_acceptor_suite.ts';
import { type FaultProxy, startFaultProxy } from '../_fault_proxy.ts';
import type { ChildAcceptor, SpawnOptions } from './_spawn.ts';
import { type RawClient, rawClient, type TcpClient, tcpClient } from './_raw.ts';

export type { ServerFactory };

// ---- the runtime under test ----------------------------------------------------------------

/** One acceptor runtime the hostile tests run against. */
export interface HostileRuntime {
  /** Appended to every test name in brackets, e.g. `Deno`. */
  name: string;
  /** Serves an acceptor on 127.0.0.1 and an ephemeral port. */
  start: ServerFactory;
  /**
   * Starts the acceptor of `serve_acceptor.ts` in a child process of this runtime on an
   * ephemeral port, so its CPU time and memory are its own; `kill()` sends SIGKILL.
   */
  spawnAcceptor(options?: SpawnOptions): Promise<ChildAcceptor>;
  /**
   * The `WebSocket` constructor of dialers and raw clients (Node 20: the `ws` package's).
   * @default {globalThis.WebSocket}
   */
  WebSocket?: DialerSocketConstructor;
  /**
   * How much the acceptor process's RSS may grow under the flood of 20,000 open+reset pairs, in
   * MB. The JS heap's growth is the precise check (2 MB for every runtime); RSS is the runtime's
   * own pools, which differ by runtime.
   * @default {10}
   */
  floodRssMb?: number;
}

/** A test name: the behaviour as a sentence, the SPEC rules it checks, then the runtime. */
export function named(runtime: HostileRuntime, behaviour: string, rules: string[]): string {
  return `${behaviour} (${rules.join(', ')}) [${runtime.name}]`;
}

/** `connect()` with the runtime's `WebSocket`; the caller closes the connection. */
export function dialOn(
  runtime: HostileRuntime,
  target: Parameters<typeof connect>[0],
  options: ConnectOptions = {},
): Promise<Connection> {
  return connect(target, { WebSocket: runtime.WebSocket, ...options });
}

/**
 * A fresh dialer (no reconnect, no heartbeat) gets its echo request answered at `url`: the
 * acceptor keeps serving other peers. The dialer is closed after.
 */
export async function assertServesFreshDialer(
  runtime: HostileRuntime,
  url: string,
  codec?: Codec,
): Promise<void> {
  const c = await within(
    dialOn(runtime, url, { codec, reconnect: false, heartbeat: false }),
    5000,
    'a healthy dialer connecting',
  );
  try {
    assert.deepEqual(
      await within(c.request({ op: 'echo', value: 'still serving' }), 5000, 'echo'),
      { echo: 'still serving' },
    );
  } finally {
    await c.close();
  }
}

// ---- measuring -----------------------------------------------------------------------------

/** Collects garbage where the runtime allows it (Bun.gc, V8's gc through node:vm). */
export async function collectGarbage(): Promise<void> {
  const bun = (globalThis as { Bun?: { gc(force: boolean): void } }).Bun;
  if (bun) {
    bun.gc(true);
    return;
  }
  const gc = await v8gc();
  if (gc) {
    gc();
    // A second pass frees what finalizers of the first released.
    await new Promise((resolve) => setTimeout(resolve, 0));
    gc();
  }
}

let gcFunction: (() => void) | null | undefined;
async function v8gc(): Promise<(() => void) | null> {
  if (gcFunction !== undefined) return gcFunction;
  try {
    const v8 = await import('node:v8');
    const vm = await import('node:vm');
    v8.setFlagsFromString('--expose-gc');
    gcFunction = vm.runInNewContext('gc') as () => void;
  } catch {
    gcFunction = null;
  }
  return gcFunction;
}

/** The process's resident set size, in bytes, after a garbage collection. */
export async function rssAfterGc(): Promise<number> {
  await collectGarbage();
  return process.memoryUsage().rss;
}

/** The JS heap in use, in bytes, after a garbage collection. */
export async function heapAfterGc(): Promise<number> {
  await collectGarbage();
  return process.memoryUsage().heapUsed;
}

/** Resolves after `ms` milliseconds (real time: these tests run on real sockets). */
export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

// ---- the application and the harness ------------------------------------------------------

// ---- the application and the harness ------------------------------------------------------

/** A gate a handler waits on until the test opens it. */
export interface Gate {
  wait: Promise<void>;
  open: () => void;
}

/** A closed gate. */
export function gate(): Gate {
  let open!: () => void;
  const wait = new Promise<void>((resolve) => open = resolve);
  return { wait, open };
}

/** What the application's handlers record. */
export interface AppState {
  gates: Gate[];
  /** Handler invocations so far, and how many run now (and the most at once). */
  handled: number;
  running: number;
  maxRunning: number;
  /** Per stream id: DATA messages a `write` handler has handed to the socket. */
  written: Map<number, number>;
  /** Per stream id: messages a `read` handler consumed. */
  consumed: Map<number, number>;
  /** Payloads every handler saw, in order. */
  payloads: unknown[];
}

/** The detail a throwing handler carries, which must never reach the other side. */
export const SECRET = 'secret detail: /srv/app/db.sqlite password=hunter2';

/**
 * The application every test serves. The payload's `op` says what the handler does; a hello
 * (stream 1 with a `user` payload) tags the peer.
 */
function application(state: AppState): (stream: Stream, peer: Peer) => unknown {
  return (stream, peer) => {
    state.handled++;
    state.payloads.push(stream.payload);
    const p = (stream.payload ?? {}) as Record<string, unknown>;
    const op = typeof p === 'object' ? p.op : undefined;
    if (op === 'throw-sync') throw new Error(SECRET);
    if (op === 'throw-value') throw SECRET;
    if (op === 'throw-async') return Promise.reject(new TypeError(SECRET));
    state.running++;
    state.maxRunning = Math.max(state.maxRunning, state.running);
    const run = async (): Promise<unknown> => {
      switch (op) {
        case undefined:
          return p;
        case 'hello': {
          if (p.token === 'bad') throw new StreamError('unauthorized', 'The token was refused');
          for (const tag of (p.tags as string[] | undefined) ?? []) peer.tags.add(tag);
          return { welcome: peer.id };
        }
        case 'echo':
          return { echo: p.value };
        case 'hold': {
          const g = gate();
          state.gates.push(g);
          await Promise.race([g.wait, stream.closed.catch(() => {})]);
          return 'released';
        }
        case 'park': {
          // Work that goes on whatever happens to the stream (a backend call).
          const g = gate();
          state.gates.push(g);
          await g.wait;
          return 'parked';
        }
        case 'write': {
          const n = p.n as number;
          const chunk = 'x'.repeat(p.size as number);
          state.written.set(stream.id, 0);
          for (let i = 0; i < n; i++) {
            await stream.write(chunk);
            state.written.set(stream.id, i + 1);
          }
          return 'done';
        }
        case 'read': {
          let count = 0;
          for await (const _ of stream) state.consumed.set(stream.id, ++count);
          return count;
        }
        case 'proto': {
          const payload = stream.payload as Record<string, unknown>;
          return {
            keys: Object.keys(payload).sort(),
            plain: Object.getPrototypeOf(payload) === Object.prototype,
            headerKeys: Object.keys(stream.headers ?? {}).sort(),
            polluted: (({}) as Record<string, unknown>).polluted ?? null,
            protoValue: Object.getOwnPropertyDescriptor(payload, '__proto__')?.value ?? null,
          };
        }
        default:
          return { unknown: op };
      }
    };
    return run().finally(() => state.running--);
  };
}

/** What a test's body gets. */
export interface Harness {
  acceptor: Acceptor;
  server: SuiteServer;
  url: string;
  state: AppState;
  /** Errors reported to the acceptor's `onError`. */
  errors: unknown[];
  peers: Peer[];
  peerCloses: PeerCloseInfo[];
  /** A plain WebSocket speaking raw frames; closed after the test. */
  raw(options?: { codec?: Codec; protocols?: string[] }): Promise<RawClient>;
  /** A WebSocket over node:net that can stop reading; destroyed after the test. */
  tcp(): Promise<TcpClient>;
  /** A connect() dialer (reconnect and heartbeat off unless given); closed after the test. */
  dial(options?: ConnectOptions, target?: Parameters<typeof connect>[0]): Promise<Connection>;
  /** A fault proxy in front of the server; closed after the test. */
  proxy(): Promise<FaultProxy>;
  /** A fresh dialer's request succeeds: the acceptor keeps serving other peers. */
  healthy(): Promise<void>;
}

/**
 * Serves the test application on `runtime` with `options`, runs `body`, then closes every raw
 * client, dialer, fault proxy, the acceptor and the server (each bounded).
 */
export async function withServer(
  runtime: HostileRuntime,
  options: Partial<AcceptorOptions>,
  body: (h: Harness) => Promise<void>,
): Promise<void> {
  const state: AppState = {
    gates: [],
    handled: 0,
    running: 0,
    maxRunning: 0,
    written: new Map(),
    consumed: new Map(),
    payloads: [],
  };
  const errors: unknown[] = [];
  const peers: Peer[] = [];
  const peerCloses: PeerCloseInfo[] = [];
  const acceptor = new Acceptor({
    onStream: application(state),
    onError: (error) => errors.push(error),
    onPeer: (peer) => peers.push(peer),
    onPeerClose: (_, info) => peerCloses.push(info),
    idleTimeoutMs: false,
    ...options,
  });
  const raws: RawClient[] = [];
  const tcps: TcpClient[] = [];
  const dialers: Connection[] = [];
  const proxies: FaultProxy[] = [];
  let server: SuiteServer | undefined;
  try {
    server = await within(runtime.start(acceptor), 10_000, 'the server start');
    const url = `ws://127.0.0.1:${server.port}${server.path}`;
    const codec = options.codec;
    const h: Harness = {
      acceptor,
      server,
      url,
      state,
      errors,
      peers,
      peerCloses,
      async raw(rawOptions = {}) {
        const client = await rawClient(url, { codec, WebSocket: runtime.WebSocket, ...rawOptions });
        raws.push(client);
        return client;
      },
      async tcp() {
        const client = await tcpClient(server!.port, server!.path);
        tcps.push(client);
        return client;
      },
      async dial(dialOptions = {}, target = url) {
        const c = await within(
          dialOn(runtime, target, { codec, reconnect: false, heartbeat: false, ...dialOptions }),
          5000,
          'connect()',
        );
        dialers.push(c);
        return c;
      },
      async proxy() {
        const p = await startFaultProxy(server!.port);
        proxies.push(p);
        return p;
      },
      healthy: () => assertServesFreshDialer(runtime, url, codec),
    };
    await body(h);
  } finally {
    for (const g of state.gates) g.open();
    for (const r of raws) r.close();
    for (const t of tcps) t.destroy();
    await Promise.allSettled(dialers.map((c) => within(c.close(), 5000, 'a dialer close')));
    await within(acceptor.close({ drainMs: 0 }), 5000, 'acceptor.close()').catch(() => {});
    await Promise.allSettled(proxies.map((p) => p.close()));
    if (server) await within(server.close(), 5000, 'the server stop');
  }
}

// ---- frames and child processes ------------------------------------------------------------

/** The frames of stream `id` received so far. */
export function framesOf(client: RawClient, id: number): unknown[][] {
  return client.frames.filter((f): f is unknown[] =>
    Array.isArray(f) && f[0] !== 6 && f[0] !== 7 && f[1] === id
  );
}

/** Tracks how often each promise settled. */
export function settleCounter(): {
  track(p: Promise<unknown>): void;
  readonly outcomes: Array<{ ok: boolean; value: unknown; times: number }>;
} {
  const outcomes: Array<{ ok: boolean; value: unknown; times: number }> = [];
  return {
    track(p) {
      const o = { ok: false, value: undefined as unknown, times: 0 };
      outcomes.push(o);
      p.then(
        (value) => Object.assign(o, { ok: true, value, times: o.times + 1 }),
        (error) => Object.assign(o, { ok: false, value: error, times: o.times + 1 }),
      );
    },
    outcomes,
  };
}

/**
 * Sends raw messages to a peer's dialer through the acceptor's own socket, as a compromised or
 * buggy acceptor would. It reaches into the Peer's sink, which is internal to lib/acceptor/acceptor.ts.
 */
export function rawSend(peer: Peer): (data: string | Uint8Array) => void {
  const sink = (peer as unknown as { sink?: { send(data: string | Uint8Array): void } }).sink;
  if (typeof sink?.send !== 'function') {
    throw new Error(
      'Expected the Peer to keep its socket sink in "sink": lib/acceptor/acceptor.ts changed',
    );
  }
  return (data) => sink.send(data);
}

/** What the child acceptor's `/stats` answers. */
export interface ChildStats {
  cpuUs: number;
  rss: number;
  heapUsed: number;
  peers: number;
  closes: number[];
}

/** Asks the child acceptor for its CPU time and memory (after a collection unless `gc` is false). */
export async function childStats(port: number, gc: boolean): Promise<ChildStats> {
  const response = await within(
    fetch(`http://127.0.0.1:${port}/stats${gc ? '' : '?nogc'}`),
    5000,
    'the child stats',
  );
  return await response.json() as ChildStats;
}

/** A msgpack message: `prefix` bytes then `depth` one-element arrays around nil. */
export function msgpackDeep(prefix: number[], depth: number): Uint8Array {
  const out = new Uint8Array(prefix.length + depth + 1);
  out.set(prefix);
  out.fill(0x91, prefix.length, prefix.length + depth);
  out[prefix.length + depth] = 0xc0;
  return out;
}

/** The msgpack encoding of a JSON text, keeping `__proto__` keys as data. */
export function msgpackFromJson(json: string): Uint8Array {
  return msgpackCodec.encode(JSON.parse(json)) as Uint8Array;
}
