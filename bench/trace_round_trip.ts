/**
 * What one muxws round trip costs inside the library, with no socket: a dialer (`connect()`) and
 * an acceptor in one process, joined by an in-memory socket that delivers each message on a
 * microtask, the bench's payloads and handlers (`request()` answered by `onStream`, `call('echo')`
 * by a route). Per request, for 1 and for 64 in flight, it prints the CPU time (least and median over the batches: the library's
 * work on both sides plus the pipe's, which is the same for every subject), the timers set and
 * cleared, the microtasks queued, the promises made (Node only, through `async_hooks`) and the
 * heap allocated (where the young generation holds a whole batch: run Node and Deno with
 * `--min-semi-space-size=128 --max-semi-space-size=128`, else a collection shows as a negative
 * figure).
 *
 * ```sh
 * deno run -A --v8-flags=--min-semi-space-size=128,--max-semi-space-size=128 \
 *   bench/trace_round_trip.ts
 * bun bench/trace_round_trip.ts
 * node_modules/.bin/esbuild bench/trace_round_trip.ts --bundle --platform=node --format=esm \
 *   --outfile=/tmp/trace.mjs && node --min-semi-space-size=128 --max-semi-space-size=128 \
 *   /tmp/trace.mjs
 * ```
 *
 * Options: `--count 5000` requests per batch, `--batches 9` (every case once per batch, after a warm-up
 * batch; the median is printed),
 * `--subjects request,call`. Add `--cpu-prof` (Node, Deno) to profile the same loop.
 *
 * @module
 */
import process from 'node:process';
import { connect, type Connection, type DialerSocketConstructor } from 'muxws';
import { Acceptor, type ServerWebSocket } from 'muxws/acceptor';
import {
  countTimerCalls,
  median,
  numberOption,
  option,
  PAYLOADS,
  runtime,
  type TimerCalls,
} from './_common.ts';

const COUNT = numberOption('count', 5_000);
const BATCHES = Math.max(1, numberOption('batches', 9));
const SUBJECTS = option('subjects', 'request,call').split(',');

type BenchApi = { echo: { input: unknown; output: unknown } };

// ---------------------------------------------------------------------------------------------
// Counters over the globals the library reaches for.

// The real queueMicrotask, for the in-memory sockets below, which are not counted.
const realQueueMicrotask = globalThis.queueMicrotask;
const counts: TimerCalls & { promises: number } = Object.assign(countTimerCalls(), {
  promises: 0,
});
if (runtime === 'node') {
  const { createHook } = await import('node:async_hooks');
  createHook({
    init(_id: number, type: string) {
      if (type === 'PROMISE') counts.promises++;
    },
  }).enable();
}

function heapUsed(): number {
  return process.memoryUsage().heapUsed;
}

// ---------------------------------------------------------------------------------------------
// An in-memory WebSocket pair: the dialer's end has the WHATWG surface `connect()` uses, the
// acceptor's end the one `acceptor.accept()` takes. Each message is delivered on a microtask.

type Listener = (event: { data?: unknown; code?: number; reason?: string }) => void;

class End {
  readyState = 0;
  protocol = 'muxws.v1.json';
  bufferedAmount = 0;
  binaryType = 'arraybuffer';
  extensions = '';
  url = '';
  peer: End | undefined;
  onopen: Listener | null = null;
  onmessage: Listener | null = null;
  onclose: Listener | null = null;
  onerror: Listener | null = null;
  readonly #listeners = new Map<string, Set<Listener>>();

  addEventListener(type: string, listener: Listener): void {
    let set = this.#listeners.get(type);
    if (set === undefined) this.#listeners.set(type, set = new Set());
    set.add(listener);
  }

  removeEventListener(type: string, listener: Listener): void {
    this.#listeners.get(type)?.delete(listener);
  }

  dispatch(type: string, event: { data?: unknown; code?: number; reason?: string }): void {
    const handler = (this as unknown as Record<string, Listener | null>)[`on${type}`];
    handler?.(event);
    const set = this.#listeners.get(type);
    if (set !== undefined) { for (const listener of set) listener(event); }
  }

  send(data: unknown): void {
    const peer = this.peer!;
    realQueueMicrotask(() => peer.dispatch('message', { data }));
  }

  close(code = 1000, reason = ''): void {
    if (this.readyState === 3) return;
    this.readyState = 3;
    const peer = this.peer!;
    realQueueMicrotask(() => {
      this.dispatch('close', { code, reason });
      if (peer.readyState !== 3) {
        peer.readyState = 3;
        peer.dispatch('close', { code, reason });
      }
    });
  }
}

function makeAcceptor(): Acceptor<BenchApi> {
  return new Acceptor<BenchApi>({
    routes: { echo: (input) => input },
    // Async, as the bench server's handler is (its other branches await).
    // deno-lint-ignore require-await
    onStream: async (stream, peer) => {
      if (stream.id === 1) {
        peer.tags.add('all');
        return { welcome: true };
      }
      return stream.payload;
    },
    onError: (error) => console.error('acceptor error:', error),
  });
}

function socketClass(acceptor: Acceptor<BenchApi>): DialerSocketConstructor {
  return class extends End {
    static readonly CONNECTING = 0;
    static readonly OPEN = 1;
    static readonly CLOSING = 2;
    static readonly CLOSED = 3;
    constructor(url: string) {
      super();
      this.url = url;
      const server = new End();
      this.peer = server;
      server.peer = this;
      server.readyState = 1;
      realQueueMicrotask(() => {
        acceptor.accept(server as unknown as ServerWebSocket);
        this.readyState = 1;
        this.dispatch('open', {});
      });
    }
  } as unknown as DialerSocketConstructor;
}

// ---------------------------------------------------------------------------------------------

async function run(
  connection: Connection<BenchApi>,
  subject: string,
  inFlight: number,
  count: number,
): Promise<void> {
  let next = 0;
  const one = subject === 'call'
    ? (value: unknown) => connection.call('echo', value)
    : (value: unknown) => connection.request(value);
  async function worker(): Promise<void> {
    while (next < count) {
      const i = next++;
      const answer = await one(PAYLOADS[i & 1023]) as { id?: unknown };
      if (answer?.id !== (PAYLOADS[i & 1023] as { id: unknown }).id) {
        throw new Error(`request ${i} was answered with ${JSON.stringify(answer)}`);
      }
    }
  }
  await Promise.all(Array.from({ length: inFlight }, worker));
}

async function main(): Promise<void> {
  const acceptor = makeAcceptor();
  const connection = await connect<BenchApi>('ws://in-memory/', {
    WebSocket: socketClass(acceptor),
    hello: { payload: { client: 'trace' } },
    reconnect: false,
    onError: (error) => console.error('dialer error:', error),
  });
  console.log(`runtime ${runtime}, ${COUNT} requests per batch, median of ${BATCHES} batches`);
  console.log(
    'subject  in flight  CPU µs/req (min–median)  setTimeout  clearTimeout  queueMicrotask  promises  heap B/req',
  );
  const cases = SUBJECTS.flatMap((subject) => [1, 64].map((inFlight) => ({ subject, inFlight })));
  // Warmed up, then measured in rounds that take every case in turn, so the JIT and the load
  // of the machine treat them alike.
  for (const { subject, inFlight } of cases) await run(connection, subject, inFlight, COUNT);
  const figures = cases.map(() => ({
    cpu: [] as number[],
    heap: [] as number[],
    per: { ...counts },
  }));
  for (let b = 0; b < BATCHES; b++) {
    for (let k = 0; k < cases.length; k++) {
      const { subject, inFlight } = cases[k];
      const figure = figures[k];
      const before = { ...counts };
      const heap0 = heapUsed();
      const cpu0 = process.cpuUsage();
      await run(connection, subject, inFlight, COUNT);
      const spent = process.cpuUsage(cpu0);
      figure.heap.push((heapUsed() - heap0) / COUNT);
      figure.cpu.push((spent.user + spent.system) / COUNT);
      figure.per = {
        setTimeout: (counts.setTimeout - before.setTimeout) / COUNT,
        clearTimeout: (counts.clearTimeout - before.clearTimeout) / COUNT,
        queueMicrotask: (counts.queueMicrotask - before.queueMicrotask) / COUNT,
        promises: (counts.promises - before.promises) / COUNT,
      };
    }
  }
  for (let k = 0; k < cases.length; k++) {
    const { subject, inFlight } = cases[k];
    const { cpu, heap, per } = figures[k];
    console.log(
      [
        subject.padEnd(8),
        String(inFlight).padStart(9),
        `${Math.min(...cpu).toFixed(2)}–${median(cpu).toFixed(2)}`.padStart(24),
        per.setTimeout.toFixed(2).padStart(11),
        per.clearTimeout.toFixed(2).padStart(13),
        per.queueMicrotask.toFixed(2).padStart(15),
        (runtime === 'node' ? per.promises.toFixed(2) : '-').padStart(9),
        Math.round(median(heap)).toString().padStart(11),
      ].join(' '),
    );
  }
  await connection.close();
  await acceptor.close();
}

await main();
process.exit(0);
