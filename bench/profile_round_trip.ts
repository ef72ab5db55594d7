/**
 * Where a round trip's time goes, over loopback: a small, fixed run for profiles and counts. This
 * process is the client; it starts two server processes of the same runtime (`bench/_server.ts`,
 * subjects `muxws` and `raw`), and makes `--count`
 * requests (default 20,000), one in flight, with each subject in turn, for `--rounds` rounds
 * (default 3) after a warm-up round. The machine may be busy, so each subject is compared with the
 * others of the SAME run, on CPU time, not wall time. Subjects:
 *
 * - `muxws`: `connect()` with a hello and its defaults (`requestTimeoutMs` 30 s);
 * - `muxws-no-timeout`: the same with `requestTimeoutMs: 0`, which arms no deadline timer at all;
 * - `raw-decoding`: the runtime's raw WebSocket, the server decoding and re-encoding each message;
 * - `muxws@<name>`: `muxws` with the `connect()` of another copy of the library, given as
 *   `--libs <name>=<module>,…` (the copy's `mod.ts` on Deno and Bun; on Node an esbuild bundle of
 *   a module exporting its `connect` and `wsDialer`), to compare a change with what it replaces in the same run; the server stays this one.
 *
 * Per subject it prints the client's and the server's CPU per request (µs, least and median over
 * the rounds), the wall time per request, the `setTimeout` and `clearTimeout` calls and the
 * `queueMicrotask` calls the client made per request, and the client's heap allocated per request
 * (from `process.memoryUsage().heapUsed`, meaningful only where the young generation holds a whole
 * round: Node and Deno with `--max-semi-space-size=128 --min-semi-space-size=128`).
 *
 * ```sh
 * git archive HEAD~1 mod.ts lib | tar -x -C /tmp/before     # the copy to compare with
 * deno run -A bench/profile_round_trip.ts --count 5000 --libs before=/tmp/before/mod.ts
 * bun bench/profile_round_trip.ts --libs before=/tmp/before/mod.ts
 * echo "export { connect } from './mod.ts'; export { wsDialer } from './lib/adapters/node.ts';" \
 *   > /tmp/before/node.ts && node_modules/.bin/esbuild /tmp/before/node.ts --bundle \
 *   --platform=node --format=esm --external:ws --outfile=/tmp/before.mjs
 * node_modules/.bin/esbuild bench/profile_round_trip.ts --bundle --platform=node --format=esm \
 *   --outfile=/tmp/profile.mjs && node /tmp/profile.mjs --libs before=/tmp/before.mjs
 * ```
 *
 * `--pin 1` runs the servers on the servers' CPU of `bench/_method.ts` (`taskset`); run the client
 * under `taskset -c <its clients' CPU>` then (the line before the figures says which). On a
 * machine others load, pinning makes each request wait for its core, so it is off by default.
 *
 * `--scenario connect` measures connection setup instead: per round and subject it opens `--count`
 * connections (default 2,000), `--parallel` at a time (default 50, as the bench's `connect`),
 * each until it is established, then closes them all and waits until the server counts them gone.
 * Subjects (`--subjects`, default all four): `muxws` (`connect()` resolved: socket open, hello
 * answered), `muxws-nohello` (`connect()` without a hello), `raw` (socket open) and `raw-hello`
 * (socket open, then one small hello message each way, decoded), and `muxws@<name>` for `--libs`
 * (with a hello). Per subject it prints the client's and the server's CPU per connection to
 * establish it, the wall time per connection, the timer and microtask calls of the client per
 * connection, and then the client's and the server's CPU per connection to close it (so a close
 * that costs more, or spills its work past the 200 ms the bench's `connect` waits, shows):
 *
 * ```sh
 * deno run -A bench/profile_round_trip.ts --scenario connect --count 2000
 * node /tmp/profile.mjs --cpu-prof --scenario connect --server-flags "--cpu-prof"
 * ```
 *
 * Runtime flags go to the client (this process), e.g. `--cpu-prof` or `--v8-flags=--trace-gc`;
 * `--server-flags "--cpu-prof"` passes flags to the servers' runtime too. Every
 * child is killed on every path, and the whole run is bounded by `--budget` ms (default 300,000).
 *
 * @module
 */
import { cpus } from 'node:os';
import process from 'node:process';
import { connect, type Connection } from 'muxws';
import {
  type BenchClient,
  DialerWebSocket,
  openClient,
  type Subject,
  WebSocketClass,
} from './_clients.ts';
import type { wsDialer } from 'muxws/node';
import {
  countTimerCalls,
  median,
  numberOption,
  option,
  PAYLOADS,
  runtime,
  sleep,
  type TimerCalls,
} from './_common.ts';
import { Child, children, killAll } from './_child.ts';
import { canPin, CLIENT_CPU, pinCommand, SERVER_CPU } from './_method.ts';

if (option('role', 'client') === 'server') {
  // Node runs this file bundled: the server is this bundle in the server role.
  await import('./_server.ts');
} else {
  await main();
}

/** One way of making a request. */
interface Requester {
  request(value: unknown): Promise<unknown>;
  close(): void;
  /** The server's CPU so far, µs. */
  serverCpu(): Promise<number>;
}

async function main(): Promise<void> {
  const connecting = option('scenario', 'round-trip') === 'connect';
  const COUNT = numberOption('count', connecting ? 2_000 : 20_000);
  const ROUNDS = Math.max(1, numberOption('rounds', 3));
  const BUDGET = numberOption('budget', 300_000);
  const libs = option('libs', '').split(',').filter(Boolean).map((pair) => pair.split('='));
  const SUBJECTS = [
    ...option(
      'subjects',
      connecting ? 'muxws,muxws-nohello,raw,raw-hello' : 'muxws,muxws-no-timeout,raw-decoding',
    ).split(','),
    ...libs.map(([name]) => `muxws@${name}`),
  ];
  const connects = Object.fromEntries(
    await Promise.all(libs.map(async ([name, path]) => [name, await import(path)])),
  ) as Record<string, Library>;
  const started = Date.now();
  process.on('exit', killAll);
  if (numberOption('pin', 0) === 1) {
    console.error(
      `--pin 1: servers on CPU ${SERVER_CPU}; run this client under taskset -c ${CLIENT_CPU}`,
    );
  }
  const deadline = setTimeout(() => {
    console.error(`profile_round_trip: over its budget of ${BUDGET} ms`);
    killAll();
    process.exit(1);
  }, BUDGET);
  try {
    const counts = countTimerCalls();
    const servers = Object.fromEntries(
      await Promise.all(
        ['muxws', 'raw'].map(async (subject) => [subject, await startServer(subject)]),
      ),
    ) as Record<string, Server>;
    const ports = { muxws: servers.muxws.port, raw: servers.raw.port };
    if (connecting) {
      await profileConnect(SUBJECTS, servers, connects, counts, COUNT, ROUNDS);
      console.log(`done in ${((Date.now() - started) / 1000).toFixed(1)} s`);
      return;
    }
    const requesters: Record<string, Requester> = {};
    for (const subject of SUBJECTS) requesters[subject] = await open(subject, ports, connects);
    const figures = SUBJECTS.map(() => ({
      client: [] as number[],
      server: [] as number[],
      wall: [] as number[],
      heap: [] as number[],
      per: { setTimeout: 0, clearTimeout: 0, queueMicrotask: 0 },
    }));
    console.log(
      `runtime ${runtime}, ${COUNT} requests at 1 in flight per round, ${ROUNDS} rounds after a warm-up`,
    );
    for (let round = 0; round <= ROUNDS; round++) {
      for (let k = 0; k < SUBJECTS.length; k++) {
        // Rotated per round, so drift in the machine's load hits every subject alike.
        const i = (k + round) % SUBJECTS.length;
        const requester = requesters[SUBJECTS[i]];
        const before = { ...counts };
        const server0 = await requester.serverCpu();
        const heap0 = process.memoryUsage().heapUsed;
        const wall0 = performance.now();
        const cpu0 = process.cpuUsage();
        await lone(requester, COUNT);
        const cpu = process.cpuUsage(cpu0);
        const wall = performance.now() - wall0;
        const heap = process.memoryUsage().heapUsed - heap0;
        const server = await requester.serverCpu() - server0;
        if (round === 0) continue; // the warm-up
        const figure = figures[i];
        figure.client.push((cpu.user + cpu.system) / COUNT);
        figure.server.push(server / COUNT);
        figure.wall.push(wall * 1000 / COUNT);
        figure.heap.push(heap / COUNT);
        figure.per = {
          setTimeout: (counts.setTimeout - before.setTimeout) / COUNT,
          clearTimeout: (counts.clearTimeout - before.clearTimeout) / COUNT,
          queueMicrotask: (counts.queueMicrotask - before.queueMicrotask) / COUNT,
        };
      }
    }
    console.log(
      'subject            client CPU µs/req  server CPU µs/req  wall µs/req  setTimeout  clearTimeout  queueMicrotask  client heap B/req',
    );
    for (let i = 0; i < SUBJECTS.length; i++) {
      const { client, server, wall, heap, per } = figures[i];
      console.log([
        SUBJECTS[i].padEnd(18),
        range(client).padStart(17),
        range(server).padStart(18),
        median(wall).toFixed(1).padStart(12),
        per.setTimeout.toFixed(3).padStart(11),
        per.clearTimeout.toFixed(3).padStart(13),
        per.queueMicrotask.toFixed(3).padStart(15),
        Math.round(median(heap)).toString().padStart(18),
      ].join(' '));
    }
    for (const requester of Object.values(requesters)) requester.close();
    console.log(`done in ${((Date.now() - started) / 1000).toFixed(1)} s`);
  } finally {
    clearTimeout(deadline);
    // `quit` first, so a server run with `--cpu-prof` writes its profile; killed after 5 s.
    const servers = [...children];
    for (const child of servers) {
      child.send('quit');
      child.endInput();
    }
    await Promise.all(servers.map((child) => child.done(5_000).catch(() => child.kill())));
  }
  process.exit(0);
}

/** The least and the median of `values`, `least–median`. */
function range(values: number[]): string {
  return `${Math.min(...values).toFixed(1)}–${median(values).toFixed(1)}`;
}

/** `count` requests, one in flight, each answer checked. */
async function lone(requester: Requester, count: number): Promise<void> {
  for (let i = 0; i < count; i++) {
    const answer = await requester.request(PAYLOADS[i & 1023]) as { id?: unknown };
    if (answer?.id !== (PAYLOADS[i & 1023] as { id: unknown }).id) {
      throw new Error(`request ${i} was answered with ${JSON.stringify(answer)}`);
    }
  }
}

/** A copy of the library: its `connect()`, and on Node its `wsDialer()` if it exports one. */
interface Library {
  connect: typeof connect;
  wsDialer?: typeof wsDialer;
}

/** Opens `subject`'s client on its server. */
async function open(
  subject: string,
  ports: Record<string, number>,
  connects: Record<string, Library>,
): Promise<Requester> {
  if (subject === 'raw-decoding' || subject === 'raw') return await openClient(subject, ports.raw);
  const library = subject.startsWith('muxws@') ? connects[subject.slice(6)] : undefined;
  const dial = library?.connect ?? connect;
  if (subject !== 'muxws' && subject !== 'muxws-no-timeout' && library === undefined) {
    throw new TypeError(
      `Cannot profile "${subject}": expected muxws, muxws-no-timeout, raw-decoding or muxws@<name>`,
    );
  }
  const connection = await dialCopy(dial, library, ports.muxws, 0, {
    requestTimeoutMs: subject === 'muxws-no-timeout' ? 0 : undefined,
  });
  return {
    request: (value) => connection.request(value),
    serverCpu: async () => await connection.request(null, { headers: { op: 'cpu' } }) as number,
    close: () => void connection.close().catch(() => {}),
  };
}

/** `connect()` of `dial` (a copy's, or this one's) with a hello, as the bench's dialer does. */
async function dialCopy(
  dial: typeof connect,
  library: Library | undefined,
  port: number,
  id: number,
  options: { requestTimeoutMs?: number } = {},
): Promise<Connection> {
  return await dial(`ws://127.0.0.1:${port}/muxws?c=${id}`, {
    hello: { payload: { client: 'bench', id } },
    reconnect: false,
    // On Node, the copy's own `wsDialer()` when it exports one: a copy does not know the socket
    // driver of another.
    WebSocket: library?.wsDialer && runtime === 'node'
      ? library.wsDialer(WebSocketClass)
      : DialerWebSocket,
    requestTimeoutMs: options.requestTimeoutMs,
    onError: (error) => console.error('muxws client error:', error),
  });
}

/** A server process and its port. */
interface Server {
  child: Child;
  port: number;
}

/**
 * Starts `bench/_server.ts` for `subject` on this runtime, pinned to the servers' CPU with
 * `--pin 1` where it can be; resolves with it and its port.
 */
async function startServer(subject: string): Promise<Server> {
  const flags = option('server-flags', '').split(' ').filter(Boolean);
  const script = process.argv[1];
  const [command, args] = runtime === 'deno'
    ? [process.execPath, ['run', '-A', ...flags, new URL('./_server.ts', import.meta.url).pathname]]
    : runtime === 'bun'
    ? [process.execPath, [...flags, new URL('./_server.ts', import.meta.url).pathname]]
    : [process.execPath, [...flags, script, '--role', 'server']];
  const pin = numberOption('pin', 0) === 1 && canPin(cpus().length);
  const child = new Child(
    `the ${subject} server`,
    ...pinCommand(pin, '_server', [command, [...args, '--subject', subject, '--port', '0']]),
  );
  return { child, port: Number(await child.waitFor('READY', 30_000)) };
}

/** A connection of the `connect` scenario. */
interface Closable {
  close(): void;
}

/** The figures of one subject over the rounds of the `connect` scenario. */
interface SetupFigures {
  client: number[];
  server: number[];
  wall: number[];
  closeClient: number[];
  closeServer: number[];
  closeWall: number[];
  per: TimerCalls;
}

/**
 * The `connect` scenario: per round and subject, `count` connections opened 50 at a time (or
 * `--parallel`), then closed; CPU of both sides and wall time per connection, of the opening and
 * of the closing apart.
 */
async function profileConnect(
  subjects: readonly string[],
  servers: Record<string, Server>,
  connects: Record<string, Library>,
  counts: TimerCalls,
  count: number,
  rounds: number,
): Promise<void> {
  const parallel = Math.max(1, numberOption('parallel', 50));
  const known = ['muxws', 'muxws-nohello', 'raw', 'raw-hello'];
  for (const subject of subjects) {
    if (!known.includes(subject) && !(subject.slice(6) in connects)) {
      throw new TypeError(
        `Cannot profile "${subject}": expected ${known.join(', ')} or muxws@<name> of --libs`,
      );
    }
  }
  // One connection per server that stays open, to read its CPU.
  const control: Record<string, BenchClient> = {
    muxws: await openClient('muxws', servers.muxws.port),
    raw: await openClient('raw', servers.raw.port),
  };
  const serverOf = (subject: string) => subject.startsWith('muxws') ? 'muxws' : 'raw';
  const dial = (subject: string, id: number): Promise<Closable> => {
    const port = servers[serverOf(subject)].port;
    if (!subject.startsWith('muxws@')) return openClient(subject as Subject, port, id);
    const library = connects[subject.slice(6)];
    return dialCopy(library.connect, library, port, id).then((connection) => ({
      close: () => void connection.close().catch(() => {}),
    }));
  };
  /** Resolves once the server of `subject` counts `live` connections or fewer. */
  const drained = async (subject: string, live: number) => {
    const child = servers[serverOf(subject)].child;
    for (let i = 0; i < 1_000; i++) {
      child.send('live');
      if (Number(await child.waitFor('LIVE', 5_000)) <= live) return;
      await sleep(10);
    }
    throw new Error(`the ${serverOf(subject)} server still counts connections after 10 s`);
  };
  const figures: SetupFigures[] = subjects.map(() => ({
    client: [],
    server: [],
    wall: [],
    closeClient: [],
    closeServer: [],
    closeWall: [],
    per: { setTimeout: 0, clearTimeout: 0, queueMicrotask: 0 },
  }));
  console.log(
    `runtime ${runtime}, ${count} connections ${parallel} at a time per round, ${rounds} rounds after a warm-up`,
  );
  const cpuOf = (usage: NodeJS.CpuUsage) => usage.user + usage.system;
  for (let round = 0; round <= rounds; round++) {
    for (let k = 0; k < subjects.length; k++) {
      const i = (k + round) % subjects.length;
      const subject = subjects[i];
      const server = control[serverOf(subject)];
      const opened: Closable[] = [];
      let next = 0;
      const worker = async () => {
        while (next < count) opened.push(await dial(subject, ++next));
      };
      const before = { ...counts };
      const server0 = await server.serverCpu();
      const wall0 = performance.now();
      const cpu0 = process.cpuUsage();
      await Promise.all(Array.from({ length: parallel }, worker));
      const cpu = cpuOf(process.cpuUsage(cpu0));
      const wall = performance.now() - wall0;
      const per = {
        setTimeout: (counts.setTimeout - before.setTimeout) / count,
        clearTimeout: (counts.clearTimeout - before.clearTimeout) / count,
        queueMicrotask: (counts.queueMicrotask - before.queueMicrotask) / count,
      };
      const server1 = await server.serverCpu();
      const close0 = process.cpuUsage();
      const closeWall0 = performance.now();
      for (const connection of opened) connection.close();
      await drained(subject, 1);
      const closeWall = performance.now() - closeWall0;
      // The client's sockets finish closing after the server counted them gone.
      await sleep(50);
      const closeCpu = cpuOf(process.cpuUsage(close0));
      const server2 = await server.serverCpu();
      if (round === 0) continue; // the warm-up
      const figure = figures[i];
      figure.client.push(cpu / count);
      figure.server.push((server1 - server0) / count);
      figure.wall.push(wall * 1000 / count);
      figure.closeClient.push(closeCpu / count);
      figure.closeServer.push((server2 - server1) / count);
      figure.closeWall.push(closeWall);
      figure.per = per;
    }
  }
  console.log(
    'subject            client CPU µs/conn  server CPU µs/conn  wall µs/conn  setTimeout  clearTimeout  queueMicrotask  close: client µs/conn  server µs/conn  wall ms',
  );
  for (let i = 0; i < subjects.length; i++) {
    const { client, server, wall, closeClient, closeServer, closeWall, per } = figures[i];
    console.log([
      subjects[i].padEnd(18),
      range(client).padStart(18),
      range(server).padStart(19),
      median(wall).toFixed(1).padStart(13),
      per.setTimeout.toFixed(3).padStart(11),
      per.clearTimeout.toFixed(3).padStart(13),
      per.queueMicrotask.toFixed(3).padStart(15),
      range(closeClient).padStart(22),
      range(closeServer).padStart(15),
      median(closeWall).toFixed(0).padStart(8),
    ].join(' '));
  }
  for (const client of Object.values(control)) client.close();
}
