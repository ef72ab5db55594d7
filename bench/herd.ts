/**
 * Scenarios `herd-goaway`, `herd-1012` and `herd-kill`, the dialer process (Node, Bun or Deno,
 * chosen by `bench/run.ts --herd-runtime`): `node herd.mjs` (`bun bench/herd.ts`,
 * `deno run -A bench/herd.ts`) `--subject muxws|socket.io-client|partysocket|reconnecting-websocket --port P
 * --count 1000` opens `count` real dialers of that library, with its default settings, to one
 * `bench/_server.ts` (muxws: the acceptor; socket.io-client: socket.io; the other two: the raw
 * `ws` server), each naming itself with the query parameter `c`. It prints `OPEN <count>` once
 * all are connected, then keeps them, redialling as each library does, until its stdin closes.
 * It records when every dialer starts each attempt (a subclass of the constructor handed to the
 * library, `ws` on Node and the global `WebSocket` on Bun and Deno; socket.io-client: its
 * `reconnect_attempt` event); `attempts <t0>` prints
 * `ATTEMPTS [ms…]`, each dialer's first attempt at or after epoch ms `t0`: the schedule as the
 * dialers ran it, before any server work. `scheduled <t0>` prints `SCHEDULED [ms…]`, when the
 * attempt of each dialer that came after t0 was scheduled for (when the library chose its delay,
 * plus the delay:
 * muxws `onReconnecting`, socket.io-client's backoff `duration()`, partysocket's and
 * reconnecting-websocket's `_getNextDelay()`), the schedule itself, which a busy event loop does
 * not delay; `closes <t0>` prints `CLOSES [ms…]`, when each dialer's socket saw its close.
 *
 * The orchestrator then makes the event happen (`goaway`, `close1012`, or kills the server and
 * starts a new one on the same port 2 s later) and reads the arrivals the server recorded
 * (`bench/_herd_stats.ts` turns them into T50/T95/T100, the busiest 100 ms and lumpiness).
 *
 * Only `WebSocket` is set where a library needs a constructor (`ws` on Node, which has no global
 * one before v22, given to muxws through `wsDialer()` as its guide says; the runtime's global
 * `WebSocket` on Bun and Deno); socket.io-client keeps its
 * defaults (polling first, then the upgrade to websocket, with whatever transport implementation
 * its package resolves to on that runtime).
 *
 * @module
 */
import process from 'node:process';
import WebSocket from 'ws';
import { io } from 'socket.io-client';
import PartySocket from 'partysocket/ws';
import ReconnectingWebSocket from 'reconnecting-websocket';
import { connect, type DialerSocketConstructor } from 'muxws';
import { wsDialer } from 'muxws/node';
import { numberOption, option, readLines, runtime, within } from './_common.ts';
import { watchStalls } from './_herd_stats.ts';

const subject = option('subject', 'muxws');
const port = numberOption('port', 0);
const count = numberOption('count', 1_000);
/** With `--watch-stalls 1`, `stalls <t0>` prints `STALLS [[from, to]…]`, the loop's stalls. */
const stalls = numberOption('watch-stalls', 0) ? watchStalls() : undefined;

const closers: Array<() => void> = [];
/** Epoch ms of every connection attempt, per dialer. */
const attempts: number[][] = Array.from({ length: count }, () => []);
/** Epoch ms each redial was scheduled for: when the library chose a delay, plus that delay. */
const scheduled: number[][] = Array.from({ length: count }, () => []);
/** Epoch ms of every socket close the dialers saw (not socket.io-client). */
const closes: number[][] = Array.from({ length: count }, () => []);

/** Wraps `owner[method]`, a delay chooser, to record when the delay it returns ends. */
function recordDelays(owner: unknown, method: string, id: number): void {
  const target = owner as Record<string, () => number>;
  const original = target[method].bind(target);
  target[method] = () => {
    const delay = original();
    scheduled[id].push(Date.now() + delay);
    return delay;
  };
}

/**
 * The runtime's WebSocket constructor (`ws` on Node, the global one on Bun and Deno), recording
 * when each dialer starts an attempt and when its socket closes (the libraries take a
 * constructor).
 */
function recordingWebSocket(id: number): unknown {
  if (runtime !== 'node') {
    return class extends globalThis.WebSocket {
      constructor(url: string | URL, protocols?: string | string[]) {
        attempts[id].push(Date.now());
        super(url, protocols);
        this.addEventListener('close', () => closes[id].push(Date.now()));
      }
    };
  }
  return class extends WebSocket {
    constructor(url: string, protocols?: string | string[]) {
      attempts[id].push(Date.now());
      super(url, protocols);
      this.on('close', () => closes[id].push(Date.now()));
    }
  };
}

function dial(id: number): Promise<void> {
  const url = `ws://127.0.0.1:${port}/herd?c=${id}`;
  return new Promise((resolve, reject) => {
    if (subject === 'muxws') {
      const Recording = recordingWebSocket(id) as DialerSocketConstructor;
      connect(url, {
        WebSocket: runtime === 'node' ? wsDialer(Recording) : Recording,
        hello: { payload: { id } },
        onReconnecting: ({ delayMs }) => scheduled[id].push(Date.now() + delayMs),
        onError: () => {},
      }).then((connection) => {
        closers.push(() => connection.close().catch(() => {}));
        resolve();
      }, reject);
    } else if (subject === 'socket.io-client') {
      const socket = io(`http://127.0.0.1:${port}`, { query: { c: String(id) }, forceNew: true });
      closers.push(() => socket.close());
      attempts[id].push(Date.now());
      socket.io.on('reconnect_attempt', () => attempts[id].push(Date.now()));
      recordDelays((socket.io as unknown as { backoff: unknown }).backoff, 'duration', id);
      socket.once('connect', () => resolve());
    } else {
      const Ctor =
        (subject === 'partysocket' ? PartySocket : ReconnectingWebSocket) as unknown as new (
          url: string,
          protocols: undefined,
          options: { WebSocket: unknown },
        ) => {
          addEventListener(type: string, listener: () => void, options?: unknown): void;
          close(): void;
        };
      const socket = new Ctor(url, undefined, { WebSocket: recordingWebSocket(id) });
      recordDelays(socket, '_getNextDelay', id);
      closers.push(() => socket.close());
      socket.addEventListener('open', () => resolve(), { once: true });
      socket.addEventListener('error', () => {});
    }
  });
}

try {
  for (let i = 0; i < count; i += 100) {
    const batch = Array.from({ length: Math.min(100, count - i) }, (_, k) => dial(i + k));
    await within(Promise.all(batch), 60_000, `dialling ${count} ${subject} clients`);
  }
  console.log(`OPEN ${count}`);
} catch (error) {
  console.error('herd client failed:', error);
  process.exit(1);
}
const quit = () => {
  for (const close of closers) close();
  process.exit(0);
};
readLines((line) => {
  const [what, at] = line.split(' ');
  const lists: Record<string, number[][]> = { attempts, closes, scheduled };
  if (lists[what] && at !== undefined) {
    // The first attempt (close, scheduled redial) of each dialer at or after t0, ms after t0.
    const t0 = Number(at);
    const first = (list: number[]) => list.find((t) => t >= t0);
    const times = what === 'scheduled'
      // The schedule of the attempt that came after t0: the last redial scheduled up to it (a
      // busy loop may start a redial scheduled before t0 after it), else the first after t0.
      ? attempts.map((list, id) => {
        const attempt = first(list);
        const due = scheduled[id];
        if (attempt === undefined) return first(due);
        return due.findLast((t) => t <= attempt + 1) ?? first(due);
      })
      : lists[what].map(first);
    const relative = times.filter((t) => t !== undefined).map((t) => t! - t0);
    console.log(`${what.toUpperCase()} ${JSON.stringify(relative)}`);
  } else if (what === 'stalls' && at !== undefined) {
    console.log(`STALLS ${JSON.stringify(stalls?.since(Number(at)) ?? [])}`);
  } else if (line === 'quit') quit();
});
process.stdin.on('end', quit);
