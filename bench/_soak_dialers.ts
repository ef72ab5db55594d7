/**
 * One process of dialers of the soak run (`bench/soak.ts`): `<runtime> bench/_soak_dialers.ts
 * --port <p> --count <n> [--first 0] [--call-every-ms 1000] [--timeout-ms 10000]
 * [--deadline-ms 30000]`.
 *
 * It opens `count` dialers (dialer i says `{ group: i }` in its hello, so the acceptor tags it
 * `group:<i mod groups>`), each holding a standing subscription to the route `ticks`, and prints
 * `OPEN <n>`. Then every dialer calls the route `echo` once per `--call-every-ms`, the dialers
 * spread evenly over that period (one timer for the process), each call with `timeoutMs`
 * `--timeout-ms`. It answers lines on stdin:
 * - `stats`: prints `STATS <json>` ({@linkcode Stats}, this process's memory after a garbage
 *   collection);
 * - `finish`: stops calling, waits (at most `--deadline-ms`) for the calls in flight to settle,
 *   checks that every dialer is open, its subscription active, and that it received a tick and a
 *   broadcast in the last 5 s, then prints `FINAL <json>` ({@linkcode Stats});
 * - `quit` (or the end of stdin): closes every dialer and exits.
 *
 * What is expected while the acceptor restarts with GOAWAY, and counted apart from errors:
 * - a call made while the connection drains after the GOAWAY or redials rejects at once with
 *   `NotConnectedError` (the dialers use no `whileReconnecting`): counted as `refused`, and
 *   made again once the connection is open (`connection.opened()`), as an application retries;
 * - a call sent just before the GOAWAY arrived crosses it and is reset with `refused` (not
 *   processed at all: safe to retry; by the acceptor, or by the dialer when the connection closed
 *   before that reset came): counted as `crossed`, and made again the same way. The
 *   soak's routes exist and each dialer has one call in flight, far below `maxStreams`, so the
 *   GOAWAY is the only cause of a `refused` here;
 * - the subscription ends with its connection and is re-opened on the next one (`reopened`);
 * - the connection closes (1000 `goaway` once its streams finished, or the acceptor's 1012
 *   `service restart` when it saw the peer idle first) and redials (`reconnected`; a failed
 *   redial is counted in `failedRedials`, reported but not an error, as a loaded machine can time
 *   out a handshake).
 *
 * Anything else is an unexpected error: a call that rejects otherwise (a `TimeoutError`, a reset
 * such as `connection_lost` that a complete drain never causes) or answers with something other
 * than its input, a subscription error, an error the connection reports (`onError`), any other
 * close, and at `finish` a dialer that is not open, a subscription not active, or a dialer that
 * saw no tick or broadcast in the last 5 s. A call that neither resolved nor rejected `--deadline-ms` after it
 * was made is unsettled.
 *
 * @module
 */
import process from 'node:process';
import {
  connect,
  type Connection,
  NotConnectedError,
  StreamResetError,
  subscribe,
  type Subscription,
} from 'muxws';
import { DialerWebSocket } from './_clients.ts';
import {
  collectGarbage,
  memory,
  numberOption,
  PAYLOADS,
  readLines,
  sleep,
  within,
} from './_common.ts';
import type { SoakApi } from './_soak_server.ts';

const port = numberOption('port', 0);
const count = numberOption('count', 100);
const first = numberOption('first', 0);
const callEveryMs = Math.max(10, numberOption('call-every-ms', 1000));
const timeoutMs = numberOption('timeout-ms', 10_000);
const deadlineMs = numberOption('deadline-ms', 30_000);
/** The calling period is cut into this many slices, each calling its share of the dialers. */
const SLICES = 20;
/**
 * The closes a GOAWAY restart causes: the dialer's own once its streams finished, or the
 * acceptor's (`close()`'s default code) when it saw the peer idle first.
 */
const EXPECTED_CLOSES = new Set(['1000 goaway', '1012 service restart']);
/** At `finish`, a dialer must have seen a tick and a broadcast within this many ms. */
const FRESH_MS = 5_000;

/** What `STATS` and `FINAL` print. */
export interface Stats {
  dialers: number;
  rss: number;
  heap: number;
  /** Calls made, answered with their input, refused while draining or redialling, crossed a GOAWAY. */
  calls: number;
  answered: number;
  refused: number;
  crossed: number;
  /** Calls in flight now, and those older than the deadline (unsettled). */
  inFlight: number;
  unsettled: number;
  /** Subscription re-opens, connection re-establishments, ticks and broadcasts received. */
  reopened: number;
  reconnected: number;
  ticks: number;
  broadcasts: number;
  /** The connections' closes, by `<code> <reason>`, and failed redials. */
  closes: Record<string, number>;
  failedRedials: number;
  /** The dialers' connections by `connection.state` when the stats were taken. */
  states: Record<string, number>;
  /** Unexpected errors, by kind, and the first few messages. */
  errors: number;
  kinds: Record<string, number>;
  samples: string[];
}

interface Dialer {
  readonly index: number;
  readonly connection: Connection<SoakApi>;
  readonly feed: Subscription;
  lastTickAt: number;
  lastBroadcastAt: number;
}

const stats: Stats = {
  dialers: 0,
  rss: 0,
  heap: 0,
  calls: 0,
  answered: 0,
  refused: 0,
  crossed: 0,
  inFlight: 0,
  unsettled: 0,
  reopened: 0,
  reconnected: 0,
  ticks: 0,
  broadcasts: 0,
  closes: {},
  failedRedials: 0,
  states: {},
  errors: 0,
  kinds: {},
  samples: [],
};
/** Calls in flight: when each was made, by call number. */
const pending = new Map<number, number>();
/** Call numbers already counted as unsettled. */
const overdue = new Set<number>();
const dialers: Dialer[] = [];
let calling = true;
let quitting = false;
let callNumber = 0;

function unexpected(kind: string, error: unknown): void {
  stats.errors++;
  stats.kinds[kind] = (stats.kinds[kind] ?? 0) + 1;
  if (stats.samples.length < 5) {
    stats.samples.push(`${kind}: ${String((error as Error)?.stack ?? error)}`.slice(0, 400));
  }
}

function call(dialer: Dialer): void {
  const n = callNumber++;
  const input = PAYLOADS[n % PAYLOADS.length];
  stats.calls++;
  pending.set(n, Date.now());
  dialer.connection.call('echo', input, { timeoutMs }).then(
    (output) => {
      stats.answered++;
      if ((output as { id?: unknown } | null)?.id !== input.id) {
        unexpected('wrong-answer', JSON.stringify(output).slice(0, 100));
      }
    },
    (error) => {
      if (error instanceof NotConnectedError) stats.refused++;
      else if (error instanceof StreamResetError && error.code === 'refused') stats.crossed++;
      else return unexpected(`call:${errorKind(error)}`, error);
      dialer.connection.opened().then(
        () => calling && call(dialer),
        (error) => calling && unexpected('opened', error),
      );
    },
  ).finally(() => pending.delete(n));
}

function errorKind(error: unknown): string {
  const name = (error as Error)?.name ?? typeof error;
  const code = (error as { code?: unknown })?.code;
  return typeof code === 'string' ? `${name}:${code}` : name;
}

async function open(index: number): Promise<Dialer> {
  const connection = await connect<SoakApi>(`ws://127.0.0.1:${port}/soak?c=${index}`, {
    hello: { payload: { group: index } },
    WebSocket: DialerWebSocket,
    onPublish: () => {
      stats.broadcasts++;
      dialer.lastBroadcastAt = Date.now();
    },
    onOpen: (info) => {
      if (info.reconnected) stats.reconnected++;
      stats.failedRedials += info.attempts;
    },
    onClose: ({ code, reason }) => {
      const key = `${code} ${reason}`;
      stats.closes[key] = (stats.closes[key] ?? 0) + 1;
      if (!EXPECTED_CLOSES.has(key) && !quitting) unexpected(`close:${key}`, key);
    },
    onError: (error) => unexpected(`connection:${errorKind(error)}`, error),
  });
  const feed = subscribe(connection, 'ticks', null, {
    onMessage: () => {
      stats.ticks++;
      dialer.lastTickAt = Date.now();
    },
    onReopen: () => void stats.reopened++,
    onError: (error) => unexpected(`subscription:${errorKind(error)}`, error),
  });
  const dialer: Dialer = { index, connection, feed, lastTickAt: 0, lastBroadcastAt: 0 };
  return dialer;
}

/** Counts the calls in flight past the deadline, each once. */
function countOverdue(): void {
  const now = Date.now();
  for (const [n, at] of pending) {
    if (now - at > deadlineMs && !overdue.has(n)) {
      overdue.add(n);
      stats.unsettled++;
    }
  }
  stats.inFlight = pending.size;
}

async function snapshot(): Promise<Stats> {
  countOverdue();
  await collectGarbage();
  const states: Record<string, number> = {};
  for (const dialer of dialers) {
    states[dialer.connection.state] = (states[dialer.connection.state] ?? 0) + 1;
  }
  Object.assign(stats, memory(), { dialers: dialers.length, states });
  return stats;
}

async function finish(): Promise<Stats> {
  calling = false;
  clearInterval(caller);
  const deadline = Date.now() + deadlineMs + 1000;
  while (Date.now() < deadline && [...pending.keys()].some((n) => !overdue.has(n))) {
    countOverdue();
    await sleep(100);
  }
  countOverdue();
  const now = Date.now();
  for (const dialer of dialers) {
    if (dialer.connection.state !== 'open') unexpected('not-open', dialer.connection.state);
    else if (dialer.feed.state !== 'active') unexpected('feed-not-active', dialer.feed.state);
    else if (now - dialer.lastTickAt > FRESH_MS) unexpected('no-recent-tick', dialer.index);
    else if (now - dialer.lastBroadcastAt > FRESH_MS) {
      unexpected('no-recent-broadcast', dialer.index);
    }
  }
  return await snapshot();
}

async function quit(): Promise<void> {
  calling = false;
  quitting = true;
  clearInterval(caller);
  await within(
    Promise.allSettled(dialers.map((dialer) => dialer.connection.close())),
    5_000,
    'closing the dialers',
  ).catch(() => {});
  process.exit(0);
}

for (let i = 0; i < count; i += 50) {
  const batch: Promise<Dialer>[] = [];
  for (let k = i; k < Math.min(count, i + 50); k++) batch.push(open(first + k));
  dialers.push(...await Promise.all(batch));
}
await Promise.all(dialers.map((dialer) => dialer.feed.ready));
stats.dialers = dialers.length;
console.log(`OPEN ${dialers.length}`);

let slice = 0;
const caller = setInterval(() => {
  const mine = slice++ % SLICES;
  for (let i = mine; i < dialers.length; i += SLICES) call(dialers[i]);
}, callEveryMs / SLICES);

readLines((line) => {
  if (line === 'stats') void snapshot().then((s) => console.log(`STATS ${JSON.stringify(s)}`));
  else if (line === 'finish') void finish().then((s) => console.log(`FINAL ${JSON.stringify(s)}`));
  else if (line === 'quit') void quit();
});
process.stdin.on('end', () => void quit());
