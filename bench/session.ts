/**
 * What the session costs over bare serialization, for ~100-byte payloads.
 *
 * `deno run -A bench/session.ts` or `bun bench/session.ts` (options: `--reps 7`, `--scale 0.2`
 * for a quick look, `--case json` for the cases whose name is or contains `json`). Two sessions, a dialer and an acceptor, are joined by a direct pipe: each
 * sink's `send(data)` calls the other session's `receive(data)` synchronously, so no socket, no
 * timer and no copy sits between them and the figures are the session's own cost. Each case is
 * measured against the least any protocol sending the same messages must do: encode and decode
 * every payload once per message, with no framing, no streams and no promises.
 *
 * Cases (payloads differ per message, ~100 bytes as JSON):
 * - `request`: `dialer.request(payload)` answered by a handler returning a ~100-byte answer;
 *   64 requests in flight at a time. Bare: stringify+parse the request, then the answer.
 * - `one-way`: one stream; the dialer `await`s `write()` of each message, the acceptor's handler
 *   reads them with `for await`. Bare: stringify+parse each message.
 * - `one-way pipelined`: the same, but the writer does not await each write (only the last),
 *   so writes queue behind credit and flow control does the pacing.
 * - the same three with the msgpack codec, against the bare `@msgpack/msgpack` Encoder/Decoder.
 *
 * Runs are interleaved (muxws, bare, bare, muxws, muxws, bare, …: the order alternates), after
 * one warm-up round, so drift in machine load hits both sides alike. Time is the process's CPU time (`process.cpuUsage()`, which
 * Deno and Bun provide), so other processes on a busy machine do not inflate it; `--wall` measures
 * wall-clock time instead. CPU time includes the engine's helper threads (concurrent GC), which is
 * a real cost of either side. Printed per case: median and min–max throughput over the
 * repetitions, and the ratio muxws ÷ bare: the median (and range) of the ratios of each muxws run
 * to the bare run beside it (goal ≥ 0.7 for the JSON cases).
 *
 * @module
 */
import { Decoder, Encoder } from '@msgpack/msgpack';
import { type Codec, jsonCodec, type Stream } from 'muxws';
import { msgpackCodec } from 'muxws/msgpack';
import { Session } from '../lib/session/session.ts';

const args: string[] = (globalThis as { Deno?: { args: string[] } }).Deno?.args ??
  (globalThis as { process?: { argv: string[] } }).process?.argv.slice(2) ?? [];

function option(name: string, fallback: number): number {
  const i = args.indexOf(`--${name}`);
  const value = i === -1 ? fallback : Number(args[i + 1]);
  if (!(value > 0)) throw new RangeError(`--${name} must be a positive number: found ${value}`);
  return value;
}

const only = args.includes('--case') ? args[args.indexOf('--case') + 1] : undefined;
const REPS = Math.max(5, Math.round(option('reps', 7)));
const SCALE = option('scale', 1);
const REQUESTS = Math.round(20_000 * SCALE);
const MESSAGES = Math.round(50_000 * SCALE);
const IN_FLIGHT = 64;
const GOAL = 0.7;

/** ~100 bytes of JSON, different for every `i`. */
function payload(i: number): unknown {
  return {
    id: 100_000 + i,
    user: `user-${i % 1000}`,
    action: i % 3 === 0 ? 'update' : 'create',
    fields: { name: 'Ada', score: (i % 100) + 0.5, active: i % 2 === 0 },
  };
}

/** ~100 bytes of JSON: the answer to request `i`. */
function answer(i: number): unknown {
  return {
    ok: true,
    id: 100_000 + i,
    version: i % 17,
    user: `user-${i % 1000}`,
    etag: `W/"${i.toString(16)}-abc"`,
    updatedAt: 1764480000000 + i,
  };
}

const PAYLOADS = Array.from({ length: 1024 }, (_, i) => payload(i));
const ANSWERS = Array.from({ length: 1024 }, (_, i) => answer(i));

/** Two sessions joined by a synchronous pipe. */
function pipe(codec: Codec, onStream: (stream: Stream) => unknown): Session {
  // Each sink reaches the other session through the closure once both exist.
  const dialer: Session = new Session({
    send: (data) => acceptor.receive(data),
    close: (code, reason) => acceptor.closed(code, reason),
  }, { side: 'dialer', codec });
  const acceptor: Session = new Session({
    send: (data) => dialer.receive(data),
    close: (code, reason) => dialer.closed(code, reason),
  }, { side: 'acceptor', codec, onStream, onError: (error) => console.error(error) });
  return dialer;
}

async function muxwsRequests(codec: Codec): Promise<number> {
  const dialer = pipe(codec, (stream) => ANSWERS[(stream.payload as { id: number }).id & 1023]);
  let checksum = 0;
  for (let sent = 0; sent < REQUESTS; sent += IN_FLIGHT) {
    const batch: Promise<unknown>[] = [];
    for (let i = sent; i < sent + IN_FLIGHT && i < REQUESTS; i++) {
      batch.push(dialer.request(PAYLOADS[i & 1023]));
    }
    for (const result of await Promise.all(batch)) {
      checksum += (result as { version: number }).version + 1;
    }
  }
  dialer.close(1000, '');
  return checksum;
}

async function muxwsOneWay(codec: Codec, pipelined: boolean): Promise<number> {
  let checksum = 0;
  let done!: () => void;
  const received = new Promise<void>((resolve) => (done = resolve));
  const dialer = pipe(codec, async (stream) => {
    for await (const message of stream) checksum += (message as { id: number }).id & 1;
    done();
  });
  const stream = dialer.open(null);
  if (pipelined) {
    let last: Promise<void> = Promise.resolve();
    for (let i = 0; i < MESSAGES; i++) last = stream.write(PAYLOADS[i & 1023]);
    await last;
  } else {
    for (let i = 0; i < MESSAGES; i++) await stream.write(PAYLOADS[i & 1023]);
  }
  await stream.end();
  await received;
  dialer.close(1000, '');
  return checksum;
}

type Bare = { encode(value: unknown): unknown; decode(data: unknown): unknown };

const bareJson: Bare = {
  encode: (value) => JSON.stringify(value),
  decode: (data) => JSON.parse(data as string),
};
const msgpackEncoder = new Encoder();
const msgpackDecoder = new Decoder();
const bareMsgpack: Bare = {
  encode: (value) => msgpackEncoder.encode(value),
  decode: (data) => msgpackDecoder.decode(data as Uint8Array),
};

function bareRequests(bare: Bare): number {
  let checksum = 0;
  for (let i = 0; i < REQUESTS; i++) {
    const request = bare.decode(bare.encode(PAYLOADS[i & 1023])) as { id: number };
    checksum +=
      (bare.decode(bare.encode(ANSWERS[request.id & 1023])) as { version: number }).version + 1;
  }
  return checksum;
}

function bareOneWay(bare: Bare): number {
  let checksum = 0;
  for (let i = 0; i < MESSAGES; i++) {
    checksum += (bare.decode(bare.encode(PAYLOADS[i & 1023])) as { id: number }).id & 1;
  }
  return checksum;
}

interface Case {
  name: string;
  ops: number;
  unit: string;
  muxws: () => Promise<number>;
  bare: () => number;
  goal: boolean;
}

const cases: Case[] = [];
for (const [codec, bare] of [[jsonCodec, bareJson], [msgpackCodec, bareMsgpack]] as const) {
  const goal = codec === jsonCodec;
  cases.push(
    {
      name: `${codec.name} request`,
      ops: REQUESTS,
      unit: 'req/s',
      muxws: () => muxwsRequests(codec),
      bare: () => bareRequests(bare),
      goal,
    },
    {
      name: `${codec.name} one-way`,
      ops: MESSAGES,
      unit: 'msg/s',
      muxws: () => muxwsOneWay(codec, false),
      bare: () => bareOneWay(bare),
      goal,
    },
    {
      name: `${codec.name} one-way pipelined`,
      ops: MESSAGES,
      unit: 'msg/s',
      muxws: () => muxwsOneWay(codec, true),
      bare: () => bareOneWay(bare),
      goal,
    },
  );
}

type CpuUsage = { user: number; system: number };
const cpuUsage = (globalThis as { process?: { cpuUsage?: () => CpuUsage } }).process?.cpuUsage;
/** CPU time (user + system, ms) when the runtime reports it and `--wall` is not given. */
const clock: () => number = cpuUsage !== undefined && !args.includes('--wall')
  ? () => {
    const usage = cpuUsage();
    return (usage.user + usage.system) / 1000;
  }
  : () => performance.now();
const clockName = clock === performance.now ||
    cpuUsage === undefined || args.includes('--wall')
  ? 'wall-clock time'
  : 'process CPU time (user + system)';

/** Operations per second of one run; checks the work was really done. */
async function time(ops: number, run: () => number | Promise<number>): Promise<number> {
  const started = clock();
  const checksum = await run();
  const elapsed = clock() - started;
  if (!(checksum > 0)) throw new Error(`A run did no work: checksum ${checksum}`);
  return ops / (Math.max(elapsed, 0.001) / 1000);
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 === 1 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
}

const k = (value: number): string => `${Math.round(value / 1000).toLocaleString('en-US')}k`;

const runtime = (globalThis as { Bun?: { version: string } }).Bun
  ? `Bun ${(globalThis as unknown as { Bun: { version: string } }).Bun.version}`
  : (globalThis as { Deno?: { version: { deno: string } } }).Deno
  ? `Deno ${(globalThis as unknown as { Deno: { version: { deno: string } } }).Deno.version.deno}`
  : 'unknown runtime';
const sizes = {
  json: jsonCodec.encode([2, 1, 0, PAYLOADS[0]]).length,
  msgpack: msgpackCodec.encode([2, 1, 0, PAYLOADS[0]]).length,
  bare: JSON.stringify(PAYLOADS[0]).length,
  answer: JSON.stringify(ANSWERS[0]).length,
};
console.log(
  `muxws session vs bare serialization on ${runtime}: ${REPS} interleaved repetitions, ` +
    `${REQUESTS} requests / ${MESSAGES} messages per run; payload ${sizes.bare} B, answer ${sizes.answer} B as JSON ` +
    `(DATA frame ${sizes.json} B JSON, ${sizes.msgpack} B msgpack); throughput per second of ` +
    `${clockName}\n`,
);

if (only !== undefined) {
  cases.splice(
    0,
    cases.length,
    ...cases.filter((c) =>
      cases.some((d) => d.name === only) ? c.name === only : c.name.includes(only)
    ),
  );
}
const results = new Map<string, { muxws: number[]; bare: number[] }>();
for (const c of cases) results.set(c.name, { muxws: [], bare: [] });
for (let rep = -1; rep < REPS; rep++) {
  for (const c of cases) {
    // Alternate which side goes first, so neither always runs on a warmer or cooler machine.
    const muxwsFirst = rep % 2 === 0;
    const first = await time(c.ops, muxwsFirst ? c.muxws : c.bare);
    const second = await time(c.ops, muxwsFirst ? c.bare : c.muxws);
    const [muxws, bare] = muxwsFirst ? [first, second] : [second, first];
    if (rep >= 0) {
      results.get(c.name)!.muxws.push(muxws);
      results.get(c.name)!.bare.push(bare);
    }
  }
}

const rows = cases.map((c) => {
  const r = results.get(c.name)!;
  // Each muxws run is paired with the bare run next to it: the median of the paired ratios
  // resists drift in machine speed better than a ratio of medians.
  const ratios = r.muxws.map((value, i) => value / r.bare[i]);
  const ratio = median(ratios);
  return [
    c.name,
    `${k(median(r.muxws))} ${c.unit} (${k(Math.min(...r.muxws))}–${k(Math.max(...r.muxws))})`,
    `${k(median(r.bare))} ${c.unit} (${k(Math.min(...r.bare))}–${k(Math.max(...r.bare))})`,
    `${ratio.toFixed(2)} (${Math.min(...ratios).toFixed(2)}–${Math.max(...ratios).toFixed(2)})` +
    (c.goal ? (ratio >= GOAL ? '' : `  below ${GOAL}`) : ''),
  ];
});
const header = [
  'case',
  'muxws median (min–max)',
  'bare median (min–max)',
  'muxws ÷ bare, paired median (min–max)',
];
const widths = header.map((h, i) => Math.max(h.length, ...rows.map((row) => row[i].length)));
for (const row of [header, ...rows]) {
  console.log(row.map((cell, i) => cell.padEnd(widths[i])).join('  '));
}
