/**
 * The acceptor process of the soak run (`bench/soak.ts`): `<runtime> bench/_soak_server.ts
 * [--tick-ms 1000] [--groups 10] [--self-test-leak]`, on 127.0.0.1 and a free port, served by
 * this runtime's server (Deno.serve, Bun.serve, `node:http` with `ws`) as the bench servers are.
 * It prints `READY <port>`, then answers lines on stdin:
 * - `restart`: the acceptor restarts with GOAWAY, in this process: a fresh acceptor takes the
 *   upgrades on the same port at once, and the old one's `close()` (GOAWAY, drain, close) runs;
 *   prints `RESTARTED <ms the close took>` once it resolved;
 * - `mem`: prints `MEM {"rss":…,"heap":…,"peers":…,"errors":…,"samples":[…]}` after a garbage
 *   collection: `peers` the current acceptor's, `errors` every error reported so far (the
 *   acceptors' `onError`, a failed broadcast or `close()`), `samples` the first few of them;
 * - `quit` (or the end of stdin): exits.
 *
 * What the acceptor serves: the hello (`{ group }`) tags its peer `all` and `group:<group>`; the
 * route `echo` answers a call with its input; the route `ticks` is a subscription yielding a
 * count at once and then at every tick. Every tick (`--tick-ms`) it broadcasts a small message to
 * `all` and a ~100-byte payload to one `group:<k>` in turn. With `--self-test-leak` the route
 * `echo` also keeps every input in an array, the leak `bench/soak.ts --self-test-leak` must catch.
 *
 * @module
 */
import process from 'node:process';
import { Acceptor } from 'muxws/acceptor';
import { serveAcceptors } from './_serve_acceptor.ts';
import { args, collectGarbage, memory, numberOption, PAYLOADS, readLines } from './_common.ts';

/** What the soak's acceptor serves. */
export type SoakApi = {
  ':hello': { input: { group: number } };
  echo: { input: unknown; output: unknown };
  ticks: { input: null; message: number };
};

const tickMs = numberOption('tick-ms', 1000);
const groups = Math.max(1, numberOption('groups', 10));
const leak = args.includes('--self-test-leak');
/** The self-test's leak: every call's input, kept for ever. */
const kept: unknown[] = [];

let errors = 0;
const samples: string[] = [];
function reportError(where: string, error: unknown): void {
  errors++;
  if (samples.length < 5) samples.push(`${where}: ${String(error)}`.slice(0, 300));
  console.error(`soak acceptor ${where}:`, error);
}

/** The subscriptions waiting for the next tick, woken together by the one tick timer. */
const waiting = new Set<() => void>();

function nextTick(signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const wake = () => {
      waiting.delete(wake);
      signal.removeEventListener('abort', wake);
      resolve();
    };
    waiting.add(wake);
    signal.addEventListener('abort', wake);
  });
}

function makeAcceptor(): Acceptor<SoakApi> {
  return new Acceptor<SoakApi>({
    onHello: ({ payload }, peer) => {
      peer.tags.add('all');
      peer.tags.add(`group:${payload.group % groups}`);
    },
    routes: {
      echo: (input) => {
        if (leak) kept.push(input);
        return input;
      },
      ticks: async function* (_input, { signal }) {
        let n = 0;
        yield n++;
        while (!signal.aborted) {
          await nextTick(signal);
          if (signal.aborted) return;
          yield n++;
        }
      },
    },
    onError: (error) => reportError('onError', error),
  });
}

let acceptor = makeAcceptor();
let seq = 0;
const ticker = setInterval(() => {
  const woken = [...waiting];
  for (const wake of woken) wake();
  const n = seq++;
  acceptor.broadcast('all', { seq: n, at: Date.now() }).catch((error) =>
    reportError('broadcast', error)
  );
  acceptor.broadcast(`group:${n % groups}`, PAYLOADS[n % PAYLOADS.length]).catch((error) =>
    reportError('broadcast', error)
  );
}, tickMs);

function restart(): void {
  const old = acceptor;
  acceptor = makeAcceptor();
  const started = Date.now();
  old.close().then(
    () => console.log(`RESTARTED ${Date.now() - started}`),
    (error) => {
      reportError('close', error);
      console.log(`RESTARTED ${Date.now() - started}`);
    },
  );
}

function quit(): void {
  clearInterval(ticker);
  process.exit(0);
}

const port = await serveAcceptors(() => acceptor as unknown as Acceptor);
readLines((line) => {
  if (line === 'quit') quit();
  else if (line === 'restart') restart();
  else if (line === 'mem') {
    void collectGarbage().then(() => {
      const peers = [...acceptor.peers()].length;
      console.log(
        `MEM ${JSON.stringify({ ...memory(), peers, errors, samples, kept: kept.length })}`,
      );
    });
  }
});
process.stdin.on('end', quit);
console.log(`READY ${port}`);
