// The reconnect story in one process, about 18 seconds: `npm run demo` (scripts/demo.mjs bundles
// this file for Node with esbuild and runs it; `deno run -A examples/demo.ts` works too).
//
// An acceptor listens on 127.0.0.1 (an ephemeral port; `node:http` with `attach()` of muxws/node
// and the `ws` package's dialer socket through `wsDialer()`, so it runs on Node 20, which has no
// global WebSocket), and a dialer calls its `echo` route every 200 ms (a request; the summary
// counts them as such).
//   - at 4 s the acceptor restarts: a new acceptor takes over the port's upgrades and the old one
//     runs `close()` (GOAWAY with a 1000 ms spread, drain, close 1012). The dialer redials on the
//     fast path: no attempt consumed, `resumedFromServiceRestart` set on the redial's context;
//   - at 9 s the server stops (listener closed, every socket dropped: 1006) for 4 s; the dialer's
//     redials are refused and it backs off, 200, 400, 800, ... ms (±30 %);
//   - at 13 s a new acceptor listens on the same port and the next redial gets through;
//   - at 18 s the run ends with a summary, and exits 1 if the story did not go as told (a request
//     failed outside an outage, or a redial did not happen as the schedule says).
//
// Options used: `reconnect: { initialDelayMs: 200, factor: 2, maxDelayMs: 2000, jitter: 0.3 }`,
// `serviceRestartDelayMs: 250` (the default), `draw: seededDraw('muxws-demo')` (so every run
// shows the same delays), `heartbeat: false` (the losses here are all visible as closes), each
// request `timeoutMs: 1000`; the acceptor's `close({ drainMs: 2000, spreadMs: 1000 })`.
// `--json` adds one last line: the summary as JSON (tests/node/demo_test.ts reads it).
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import process from 'node:process';
import WebSocket from 'ws';
import {
  type CloseInfo,
  connect,
  type DialContext,
  type OpenInfo,
  Reconnect,
  type ReconnectingInfo,
  seededDraw,
} from '@muxws/core';
import { Acceptor } from '@muxws/core/acceptor';
import { attach, type Attachment, wsDialer } from '@muxws/core/node';

const RESTART_AT_MS = 4000;
const STOP_AT_MS = 9000;
const STOPPED_FOR_MS = 4000;
const END_AT_MS = 18_000;
const REQUEST_EVERY_MS = 200;
const schedule = new Reconnect({ initialDelayMs: 200, factor: 2, maxDelayMs: 2000, jitter: 0.3 });

const started = performance.now();
const elapsed = (): number => performance.now() - started;
const json = process.argv.includes('--json');

// ---- the timeline ------------------------------------------------------------------------------

let ok = 0;
let failed = 0;
let failedOutside = 0;
let state = 'connecting';
/** The last redial's attempt number, delay and resumed flag, shown on every line. */
let attempt: number | undefined;
let nextDelayMs: number | undefined;
let resumed: boolean | undefined;

const pad = (value: unknown, width: number) => String(value ?? '-').padStart(width);
console.log(
  `${pad('time', 7)}  ${'state'.padEnd(12)} ${pad('attempt', 7)} ${pad('next delay', 10)} ` +
    `${pad('resumed', 7)} ${pad('ok/failed', 9)}  event`,
);
function line(event: string): void {
  console.log(
    `${pad((elapsed() / 1000).toFixed(2) + 's', 7)}  ${state.padEnd(12)} ${pad(attempt, 7)} ${
      pad(nextDelayMs === undefined ? undefined : `${Math.round(nextDelayMs)} ms`, 10)
    } ${pad(resumed === undefined ? undefined : resumed ? 'yes' : 'no', 7)} ${
      pad(`${ok}/${failed}`, 9)
    }  ${event}`,
  );
}

// ---- the acceptor side -------------------------------------------------------------------------

/** The demo's API: the welcome names the acceptor; `echo` answers with `n` and who answered. */
type Api = {
  ':hello': { input: { client: string }; output: string };
  echo: { input: { n: number }; output: { n: number; by: string } };
};

let generation = 0;
/** The acceptor that takes new upgrades; replaced on a restart. */
let acceptor: Acceptor<Api> = newAcceptor();

function newAcceptor(): Acceptor<Api> {
  const name = `acceptor #${++generation}`;
  return new Acceptor<Api>({
    onHello: () => name,
    routes: { echo: ({ n }) => ({ n, by: name }) },
    onError: (error) => line(`${name} reported: ${String(error)}`),
  });
}

/** The current and retired acceptors' attachments to the server, for `stop()`. */
let attachments: Attachment[] = [];
/** An HTTP server on 127.0.0.1:`port` whose upgrades go to the current acceptor. */
function listen(port: number): Promise<Server> {
  const server = createServer((_request, response) => response.writeHead(404).end());
  attachments.push(attach(server, acceptor));
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', () => {
      server.off('error', reject);
      resolve(server);
    });
  });
}

/** Hands the server's new upgrades to `next`; the current acceptor keeps its open peers. */
function takeOver(target: Server, next: Acceptor<Api>): void {
  attachments.at(-1)?.close();
  acceptor = next;
  attachments.push(attach(target, next));
}

/** Listens on `port` again; retried for up to 2 s should the port be busy for a moment. */
async function relisten(port: number): Promise<Server> {
  for (let tries = 0;; tries++) {
    try {
      return await listen(port);
    } catch (error) {
      if ((error as { code?: string }).code !== 'EADDRINUSE' || tries >= 10) throw error;
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
  }
}

function stop(target: Server): Promise<void> {
  for (const attachment of attachments) {
    attachment.close();
    for (const client of attachment.wss.clients) client.terminate();
  }
  attachments = [];
  target.closeAllConnections();
  return new Promise((resolve) => target.close(() => resolve()));
}

// ---- outages: from the moment the acceptor side acts until the dialer is open again -------------

interface Outage {
  kind: 'restart' | 'stop';
  from: number;
  to?: number;
}
const outages: Outage[] = [];
const inOutage = (at: number) =>
  outages.some((outage) => at >= outage.from && (outage.to === undefined || at <= outage.to));

// ---- the dialer --------------------------------------------------------------------------------

interface Dial {
  at: number;
  reason: 'initial' | 'reconnect';
  attempt: number;
  resumedFromServiceRestart: boolean;
}
const dials: Dial[] = [];
const reconnecting: { at: number; attempt: number; delayMs: number }[] = [];
const opens: { at: number; reconnected: boolean; attempts: number; welcome: unknown }[] = [];
const closes: { at: number; code: number; delayMs?: number }[] = [];

let server = await listen(0);
const port = (server.address() as AddressInfo).port;
line(`acceptor #1 listening on 127.0.0.1:${port}`);

const connection = await connect<Api>((ctx: DialContext) => {
  dials.push({
    at: elapsed(),
    reason: ctx.reason,
    attempt: ctx.attempt,
    resumedFromServiceRestart: ctx.resumedFromServiceRestart,
  });
  attempt = ctx.attempt;
  resumed = ctx.resumedFromServiceRestart;
  nextDelayMs = undefined;
  line(
    ctx.reason === 'initial'
      ? 'dial'
      : `redial${ctx.resumedFromServiceRestart ? ' on the fast path (GOAWAY or 1012)' : ''}`,
  );
  return `ws://127.0.0.1:${port}/`;
}, {
  WebSocket: wsDialer(WebSocket),
  hello: { payload: { client: 'demo' } },
  reconnect: schedule,
  draw: seededDraw('muxws-demo'),
  heartbeat: false,
  onOpen(info: OpenInfo) {
    const at = elapsed();
    opens.push({ at, ...info });
    state = 'open';
    attempt = 0; // the count resets at establishment; info.attempts is the count before
    nextDelayMs = undefined;
    const outage = outages.at(-1);
    if (info.reconnected && outage && outage.to === undefined) outage.to = at;
    line(
      `open${info.reconnected ? ` again after ${info.attempts} failed attempts` : ''}: welcome "${
        String(info.welcome)
      }"`,
    );
  },
  onClose(info: CloseInfo) {
    closes.push({ at: elapsed(), code: info.code, delayMs: info.delayMs });
    state = info.willRetry ? 'reconnecting' : 'closed';
    attempt = info.attempts;
    nextDelayMs = info.delayMs;
    resumed = undefined; // known at the redial, from its DialContext
    const why = info.code === 1000 && info.reason === 'goaway'
      ? ": the dialer's own close, after the GOAWAY, once no stream is left"
      : info.code === 1006
      ? ': the socket was dropped'
      : '';
    line(
      `closed ${info.code}${info.reason ? ` "${info.reason}"` : ''}${why}${
        info.willRetry ? '' : ', no redial'
      }`,
    );
  },
  onReconnecting(info: ReconnectingInfo) {
    reconnecting.push({ at: elapsed(), attempt: info.attempt, delayMs: info.delayMs });
    state = 'reconnecting';
    attempt = info.attempt;
    nextDelayMs = info.delayMs;
    line(
      info.attempt === 0
        ? 'redial scheduled'
        : `redial scheduled, ${info.attempt} failed so far (${shortly(info.error)})`,
    );
  },
});
/** The error's message without the URL it names. */
function shortly(error: unknown): string {
  return describe(error).replace(/^The WebSocket to \S+ /, 'the socket ');
}
function describe(error: unknown): string {
  const cause = (error as { cause?: unknown })?.cause;
  const message = error instanceof Error ? error.message : String(error);
  return cause instanceof Error ? `${message}: ${cause.message}` : message;
}

// ---- the requests ------------------------------------------------------------------------------

let n = 0;
const pending = new Set<Promise<void>>();
function tick(): void {
  const request = connection.call('echo', { n: ++n }, { timeoutMs: 1000 }).then(
    () => {
      ok++;
    },
    (error) => {
      failed++;
      if (!inOutage(elapsed())) {
        failedOutside++;
        line(`request ${n} failed outside an outage: ${describe(error)}`);
      }
    },
  ).finally(() => pending.delete(request));
  pending.add(request);
}
const requests = setInterval(tick, REQUEST_EVERY_MS);
const progress = setInterval(() => line('requests so far'), 1000);

// ---- the story ---------------------------------------------------------------------------------

const at = (ms: number) =>
  new Promise((resolve) => setTimeout(resolve, Math.max(0, ms - elapsed())));

await at(RESTART_AT_MS);
outages.push({ kind: 'restart', from: elapsed() });
const retiring = acceptor;
takeOver(server, newAcceptor());
line('restart: acceptor #2 takes new upgrades; acceptor #1 close(): GOAWAY, drain, 1012');
await retiring.close({ drainMs: 2000, spreadMs: 1000 });
line('acceptor #1 closed (drained)');

await at(STOP_AT_MS);
outages.push({ kind: 'stop', from: elapsed() });
line(`stop: listener closed and every socket dropped for ${STOPPED_FOR_MS / 1000} s`);
await stop(server);
await acceptor.close({ drainMs: 0 }); // it has no peers left; this clears its timers

await at(STOP_AT_MS + STOPPED_FOR_MS);
acceptor = newAcceptor();
server = await relisten(port);
line(`start: acceptor #3 listening on 127.0.0.1:${port} again`);

await at(END_AT_MS);
clearInterval(requests);
clearInterval(progress);
await Promise.all(pending);
await connection.close();
state = 'closed';
await acceptor.close({ drainMs: 1000 });
await stop(server);

// ---- the summary -------------------------------------------------------------------------------

const durations = outages.map((outage) => ({
  kind: outage.kind,
  from: outage.from,
  to: outage.to,
  ms: Math.round((outage.to ?? elapsed()) - outage.from),
}));
const longest = durations.reduce((a, b) => (b.ms > a.ms ? b : a), { kind: 'none', ms: 0 });
const fastPath = dials.filter((dial) => dial.resumedFromServiceRestart);
const stopped = outages.find((outage) => outage.kind === 'stop');
const backoff = reconnecting.filter((r) => stopped && r.at >= stopped.from);
const summary = {
  requests: { ok, failed, failedOutsideOutages: failedOutside },
  reconnects: opens.filter((open) => open.reconnected).length,
  fastPathRedials: fastPath.length,
  outages: durations,
  longestOutageMs: longest.ms,
  backoffDelaysMs: backoff.map((r) => Math.round(r.delayMs)),
  dials,
  reconnecting,
  opens: opens.map(({ at, reconnected, attempts, welcome }) => ({
    at,
    reconnected,
    attempts,
    welcome,
  })),
  closes,
};

// The story as told: two reconnects, the first on the fast path, the second after backoff, and
// no request lost while the connection was up.
const problems: string[] = [];
if (summary.reconnects !== 2) problems.push(`expected 2 reconnects, saw ${summary.reconnects}`);
if (fastPath.length !== 1) problems.push(`expected 1 fast-path redial, saw ${fastPath.length}`);
if (backoff.length < 2) problems.push(`expected backoff redials, saw ${backoff.length}`);
if (failedOutside > 0) problems.push(`${failedOutside} requests failed outside an outage`);

console.log(`
summary after ${(elapsed() / 1000).toFixed(1)} s
  requests           ${ok} ok, ${failed} failed (${
  failedOutside === 0 ? 'every failure during an outage' : `${failedOutside} outside an outage`
})
  reconnects         ${summary.reconnects}
  fast-path redials  ${fastPath.length} (after the restart, resumedFromServiceRestart: true)
  backoff redials    ${backoff.length} while stopped, delays ${
  summary.backoffDelaysMs.join(', ')
} ms
  outages            ${durations.map((d) => `${d.kind} ${(d.ms / 1000).toFixed(2)} s`).join(', ')}
  longest outage     ${(longest.ms / 1000).toFixed(2)} s (${longest.kind})${
  problems.length ? `\n  PROBLEMS           ${problems.join('; ')}` : ''
}`);
if (json) console.log(JSON.stringify(summary));
process.exitCode = problems.length === 0 ? 0 : 1;
