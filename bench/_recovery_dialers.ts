/**
 * The dialers of the `recovery` scenario (`bench/recovery.ts`): `<runtime>
 * bench/_recovery_dialers.ts --subject muxws|socketio --ports <a>,<b> --count <n>`.
 *
 * It starts two loopback TCP proxies (`tests/_fault_proxy.ts`), one in front of each node, and
 * opens `count` dialers, dialer i through the proxy of node a when i is even, of node b when it
 * is odd, each in the room `room:1` (muxws: the hello tags it; socket.io: the node joins it). It
 * prints `OPEN <n>` once all are established, then answers lines on stdin:
 * - `wait <n>`: waits (at most 20 s) until every dialer received broadcast n; prints `HAVE <k>`,
 *   the dialers that did;
 * - `cut`: both proxies end every connection and refuse new ones (their dialers redial with
 *   their own backoff); prints `CUT`;
 * - `heal <port>`: both proxies forward again, node a's now to `port` (node a is dead); prints
 *   `HEALED`;
 * - `result <first> <last> <boundMs>`: waits until every dialer received each of broadcasts
 *   first … last, or `boundMs` after the heal, and prints `RESULT <json>` (see {@linkcode
 *   Outcome}).
 *
 * muxws dials with its defaults (backoff 250 ms doubling, jitter), socket.io-client with its own
 * (1 s doubling to 5 s, randomization 0.5), on the websocket transport.
 *
 * @module
 */
import process from 'node:process';
import { io as socketIoClient, type Socket } from 'socket.io-client';
import { connect, type Connection, recovery } from 'muxws';
import { type FaultProxy, startFaultProxy } from '../tests/_fault_proxy.ts';
import { DialerWebSocket } from './_clients.ts';
import { numberOption, option, readLines, sleep } from './_common.ts';

const subject = option('subject', 'muxws');
const [portA, portB] = option('ports', '').split(',').map(Number);
const count = numberOption('count', 1000);

/** What one dialer saw. */
interface Dialer {
  /** `died`: its node was killed; `survived`: its node lived, only its connection was cut. */
  readonly side: 'died' | 'survived';
  /** How many times each broadcast number arrived. */
  readonly received: Map<number, number>;
  /** Arrival times (ms, `Date.now()`) of every delivery after the heal. */
  readonly afterHeal: number[];
  /** The library said it recovered what it missed (muxws onRecovered without a gap, socket.io `recovered`). */
  recovered: boolean;
  /** When it connected again after the cut (0: not yet). */
  backAt: number;
  /** Its library said it will not get what it missed (a gap, or a fresh session). */
  gaveUp: boolean;
  /** When it held every broadcast asked for by `result`. */
  completeAt: number;
  close(): void;
}

/** The `RESULT` line. */
export interface Outcome {
  dialers: number;
  /** Dialers holding every broadcast of the outage, once each, by side. */
  complete: { died: number; survived: number };
  /** Dialers whose library reported a recovery, by side. */
  recovered: { died: number; survived: number };
  /** Dialers connected again. */
  back: number;
  /** From the heal until the last dialer was connected again; null when one never was. */
  allBackMs: number | null;
  /** Deliveries beyond the first of a broadcast, over all dialers. */
  duplicates: number;
  /** Broadcasts of the outage that never arrived, over all dialers. */
  missing: number;
  /** From the heal until the last dialer held every broadcast; null when one never did. */
  fullRecoveryMs: number | null;
  /** Deliveries after the heal, and the span from the first to the last of them. */
  deliveredAfterHeal: number;
  deliverySpanMs: number;
}

let healAt = 0;
let cut = false;
const dialers: Dialer[] = [];

function record(dialer: Dialer, payload: unknown): void {
  const n = (payload as { n?: unknown } | null)?.n;
  if (typeof n !== 'number') return;
  dialer.received.set(n, (dialer.received.get(n) ?? 0) + 1);
  if (healAt > 0) dialer.afterHeal.push(Date.now());
}

function blank(side: Dialer['side']): Omit<Dialer, 'close'> {
  return {
    side,
    received: new Map(),
    afterHeal: [],
    recovered: false,
    backAt: 0,
    gaveUp: false,
    completeAt: 0,
  };
}

async function openMuxws(port: number, side: Dialer['side'], id: number): Promise<Dialer> {
  const state = blank(side);
  const connection: Connection = await connect(`ws://127.0.0.1:${port}/recovery?c=${id}`, {
    hello: { payload: { id } },
    WebSocket: DialerWebSocket,
    onPublish: (message) => record(dialer, message.payload),
    recovery: recovery({
      onRecovered: (info) => {
        if (info.gap) dialer.gaveUp = true;
        else dialer.recovered = true;
      },
    }),
    onOpen: () => {
      if (cut) dialer.backAt = Date.now();
    },
    onError: () => {},
  });
  const dialer: Dialer = { ...state, close: () => void connection.close().catch(() => {}) };
  return dialer;
}

function openSocketIo(port: number, side: Dialer['side'], id: number): Promise<Dialer> {
  const socket: Socket = socketIoClient(`http://127.0.0.1:${port}`, {
    transports: ['websocket'],
    forceNew: true,
    query: { c: String(id) },
  });
  const dialer: Dialer = { ...blank(side), close: () => socket.close() };
  socket.on('b', (payload: unknown) => record(dialer, payload));
  return new Promise((resolve, reject) => {
    socket.once('connect', () => {
      socket.on('connect', () => {
        if (!cut) return;
        dialer.backAt = Date.now();
        if (socket.recovered) dialer.recovered = true;
        else dialer.gaveUp = true;
      });
      resolve(dialer);
    });
    socket.once('connect_error', (error) => reject(error));
  });
}

async function waitUntil(done: () => boolean, ms: number): Promise<void> {
  const deadline = Date.now() + ms;
  while (!done() && Date.now() < deadline) await sleep(20);
}

function holdsAll(dialer: Dialer, first: number, last: number): boolean {
  for (let n = first; n <= last; n++) if (!dialer.received.has(n)) return false;
  return true;
}

async function result(first: number, last: number, boundMs: number): Promise<Outcome> {
  const deadline = healAt + boundMs;
  while (Date.now() < deadline) {
    for (const dialer of dialers) {
      if (!dialer.completeAt && holdsAll(dialer, first, last)) dialer.completeAt = Date.now();
    }
    // Settled: every dialer is back and holds everything, or was told it never will.
    if (dialers.every((d) => d.backAt > 0 && (d.completeAt > 0 || d.gaveUp))) break;
    await sleep(10);
  }
  // Late arrivals and duplicates would show within a moment of the last arrival.
  await sleep(300);
  for (const dialer of dialers) {
    if (!dialer.completeAt && holdsAll(dialer, first, last)) dialer.completeAt = Date.now();
  }
  const outcome: Outcome = {
    dialers: dialers.length,
    complete: { died: 0, survived: 0 },
    recovered: { died: 0, survived: 0 },
    back: 0,
    allBackMs: 0,
    duplicates: 0,
    missing: 0,
    fullRecoveryMs: 0,
    deliveredAfterHeal: 0,
    deliverySpanMs: 0,
  };
  let firstAt = Infinity;
  let lastAt = 0;
  for (const dialer of dialers) {
    let missing = 0;
    let duplicates = 0;
    for (let n = first; n <= last; n++) {
      const times = dialer.received.get(n) ?? 0;
      if (times === 0) missing++;
      else duplicates += times - 1;
    }
    outcome.missing += missing;
    outcome.duplicates += duplicates;
    if (missing === 0 && duplicates === 0) outcome.complete[dialer.side]++;
    if (dialer.recovered) outcome.recovered[dialer.side]++;
    if (dialer.backAt) outcome.back++;
    if (!dialer.backAt) outcome.allBackMs = null;
    else if (outcome.allBackMs !== null) {
      outcome.allBackMs = Math.max(outcome.allBackMs, dialer.backAt - healAt);
    }
    if (!dialer.completeAt) outcome.fullRecoveryMs = null;
    else if (outcome.fullRecoveryMs !== null) {
      outcome.fullRecoveryMs = Math.max(outcome.fullRecoveryMs, dialer.completeAt - healAt);
    }
    outcome.deliveredAfterHeal += dialer.afterHeal.length;
    for (const at of dialer.afterHeal) {
      if (at < firstAt) firstAt = at;
      if (at > lastAt) lastAt = at;
    }
  }
  outcome.deliverySpanMs = lastAt > 0 ? lastAt - firstAt : 0;
  return outcome;
}

const proxies: FaultProxy[] = [await startFaultProxy(portA), await startFaultProxy(portB)];
const open = subject === 'socketio' ? openSocketIo : openMuxws;
for (let i = 0; i < count; i += 50) {
  const batch: Promise<Dialer>[] = [];
  for (let k = i; k < Math.min(count, i + 50); k++) {
    const side = k % 2 === 0 ? 'died' : 'survived';
    batch.push(open(proxies[k % 2].port, side, k));
  }
  dialers.push(...await Promise.all(batch));
}
console.log(`OPEN ${dialers.length}`);

readLines((line) => {
  const [command, ...rest] = line.split(' ');
  const numbers = rest.map(Number);
  if (command === 'wait') {
    void waitUntil(() => dialers.every((d) => d.received.has(numbers[0])), 20_000).then(() =>
      console.log(`HAVE ${dialers.filter((d) => d.received.has(numbers[0])).length}`)
    );
  } else if (command === 'cut') {
    cut = true;
    for (const proxy of proxies) {
      proxy.mode = { kind: 'cut', afterBytes: 0 };
      proxy.reset();
    }
    console.log('CUT');
  } else if (command === 'heal') {
    proxies[0].target = numbers[0];
    healAt = Date.now();
    for (const proxy of proxies) proxy.mode = { kind: 'pass' };
    console.log('HEALED');
  } else if (command === 'result') {
    void result(numbers[0], numbers[1], numbers[2]).then((outcome) => {
      console.log(`RESULT ${JSON.stringify(outcome)}`);
    });
  } else if (command === 'quit') {
    for (const dialer of dialers) dialer.close();
    void Promise.all(proxies.map((proxy) => proxy.close())).finally(() => process.exit(0));
  }
});
process.stdin.on('end', () => process.exit(0));
