/**
 * Property tests of the session, seeded: `MUXWS_FC_SEED` overrides the constant seed,
 * and a failure prints the seed and path fast-check needs to replay it.
 *
 * Generated inputs per run of this file, per runtime (both codecs together): property 1 feeds
 * 10,000 batches of 8 to 12 arbitrary messages (about 100,000 messages) to long-lived sessions
 * and 3,000 sequences of up to 12 messages (about 18,000) to fresh ones, checking every promise
 * settles; property 2 runs 150 command sequences per codec, property 3 120 interleavings and
 * property 4 40 slow-reader runs per codec: about 120,000 generated inputs in all.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import type { Codec, Stream } from 'muxws';
import { codecs } from '../_codecs.ts';
import { Session } from '../../lib/session/session.ts';
import { acceptorPolicy } from '../../lib/acceptor/_policy.ts';
import { probe, sessionPair, settle } from '../_session_pair.ts';

const SEED = Number(globalThis.process?.env?.MUXWS_FC_SEED ?? 0x5e55_1011);
const WINDOW = 65536;
const BATCHES = 10_000; // of 8 to 12 messages each: about 100,000 messages
const SEQUENCES = 3_000; // of up to 12 messages each, on fresh sessions: about 18,000 more

/** Runs a property; on failure the error names the seed to replay it with. */
async function check<T>(property: fc.IAsyncProperty<T> | fc.IProperty<T>, numRuns: number) {
  try {
    await fc.assert(property as fc.IAsyncProperty<T>, { seed: SEED, numRuns });
  } catch (error) {
    throw new Error(`Property failed; replay with MUXWS_FC_SEED=${SEED}\n${String(error)}`, {
      cause: error,
    });
  }
}

// ---- (1) arbitrary input never throws and never leaves a promise pending ----------------------

const resetCode = fc.constantFrom('cancel', 'refused', 'internal', 'x', 'Bad', '', 'a.b-c_d');
const smallId = fc.integer({ min: -1, max: 14 });
/** Cheap values (fc.jsonValue() costs ~80 µs a sample; these ~5). */
const value: fc.Arbitrary<unknown> = fc.oneof(
  fc.integer(),
  fc.double(),
  fc.string({ maxLength: 8 }),
  fc.constantFrom(null, true, false, {}, [], { __proto__: 1 }, [[[]]]),
  fc.dictionary(fc.string({ maxLength: 3 }), fc.integer(), { maxKeys: 2 }),
  fc.array(fc.integer(), { maxLength: 3 }),
);
const headers = fc.oneof(fc.constant(null), fc.constant({ a: 1 }), value);

/** Frame-shaped arrays, valid and nearly valid, so deep session states are reached. */
const frameLike: fc.Arbitrary<readonly unknown[]> = fc.oneof(
  fc.tuple(fc.constant(1), smallId, fc.nat(3), headers, value),
  fc.tuple(fc.constant(2), smallId, fc.nat(3), value),
  fc.tuple(fc.constant(3), smallId),
  fc.tuple(fc.constant(4), smallId, resetCode, fc.string({ maxLength: 4 })),
  fc.tuple(fc.constant(5), smallId, fc.integer({ min: -1, max: 70_000 })),
  fc.constant([6]),
  fc.constant([7]),
  fc.tuple(fc.constant(8), smallId, resetCode, fc.string({ maxLength: 4 }), fc.nat(5000)),
  fc.tuple(fc.constant(9), fc.string({ maxLength: 3 }), headers, value),
  fc.array(value, { maxLength: 6 }),
);

function messageArbitrary(codec: Codec): fc.Arbitrary<string | Uint8Array> {
  return fc.oneof(
    { weight: 4, arbitrary: frameLike.map((frame) => codec.encode(frame)) },
    { weight: 1, arbitrary: fc.string({ maxLength: 20 }) },
    { weight: 1, arbitrary: fc.uint8Array({ maxLength: 20 }) },
    { weight: 1, arbitrary: value.map((v) => JSON.stringify(v) ?? 'null') },
    {
      weight: 1,
      arbitrary: fc.tuple(frameLike, fc.nat(6)).map(([frame, cut]) => {
        const m = codec.encode(frame);
        return m.slice(0, Math.max(0, m.length - cut)); // truncated
      }),
    },
  );
}

/** Feeds `messages` to a fresh session, then ends it; asserts nothing threw or hung. */
async function feedAll(
  codec: Codec,
  side: 'dialer' | 'acceptor',
  messages: (string | Uint8Array)[],
) {
  const promises: Promise<unknown>[] = [];
  const p = probe(side, {
    codec,
    limits: { maxProtocolErrors: 8, maxStreams: 4, maxResetRate: 3 },
    onStream: (stream) => {
      promises.push(stream.closed);
      if (stream.id % 3 === 0) return stream.payload;
      return (async () => {
        let n = 0;
        for await (const _ of stream) n++;
        await stream.write(n);
        return n;
      })();
    },
  });
  try {
    const own = p.session.open('mine');
    promises.push(own.closed, own[Symbol.asyncIterator]().next(), own.write('x'));
    promises.push(p.session.request('question', { timeoutMs: 1000 }));
    for (const message of messages) {
      p.session.receive(message); // must never throw
      if (p.session.isClosed) break;
    }
    assert.ok(p.session.protocolErrors <= 9);
  } finally {
    p.session.closed(1006, '');
  }
  let settled = 0;
  for (const promise of promises) promise.then(() => settled++, () => settled++);
  await settle(20);
  assert.equal(settled, promises.length, 'every promise settles once the session ends');
  assert.equal(p.session.activeStreams, 0);
}

test('property 1: arbitrary messages never make receive() throw', async () => {
  for (const codec of codecs) {
    for (const side of ['dialer', 'acceptor'] as const) {
      // One long-lived session per side takes every message (replaced when a limit closes it),
      // so the inputs also meet the state earlier ones left.
      let errors = 0;
      const fresh = () =>
        new Session({ send() {}, close() {} }, {
          side,
          codec,
          limits: { maxProtocolErrors: 1_000_000, maxResetRate: 1_000_000 },
          onStream: (s) => s.payload,
          onError: () => void errors++,
        }, acceptorPolicy);
      let p = fresh();
      try {
        await check(
          fc.property(
            fc.array(messageArbitrary(codec), { minLength: 8, maxLength: 12 }),
            (messages) => {
              for (const message of messages) {
                if (p.isClosed) p = fresh();
                p.receive(message);
              }
            },
          ),
          Math.ceil(BATCHES / (codecs.length * 2)),
        );
      } finally {
        p.closed(1006, '');
      }
      assert.ok(errors > 0); // the inputs did reach the checks
    }
  }
});

test('property 1: arbitrary message sequences never throw and never leave a promise pending', async () => {
  for (const codec of codecs) {
    for (const side of ['dialer', 'acceptor'] as const) {
      await check(
        fc.asyncProperty(
          fc.array(messageArbitrary(codec), { maxLength: 12 }),
          (messages) => feedAll(codec, side, messages),
        ),
        Math.ceil(SEQUENCES / (codecs.length * 2)),
      );
    }
  }
});

// ---- (2) a model of open/write/end/reset/credit against a plain Map ---------------------------

type Dir = 'up' | 'down'; // up: dialer to acceptor; down: acceptor to dialer

interface Item {
  value: unknown;
  size: number;
  end?: boolean;
}

interface Direction {
  delivered: Item[]; // arrived, not yet read
  pending: Item[]; // written, waiting for credit
  credit: number;
  unacked: number;
  endQueued: boolean;
  endDelivered: boolean;
}

interface ModelStream {
  reset: boolean;
  up: Direction;
  down: Direction;
}

interface Model {
  streams: Map<number, ModelStream>;
  nextId: number;
  counter: number;
}

interface Real {
  codec: Codec;
  pair: ReturnType<typeof sessionPair>;
  local: Map<number, Stream>;
  remote: Map<number, Stream>;
  writes: Map<string, boolean>; // "id/dir/n" -> resolved
  rejected: Set<string>;
  expected: Map<string, 'resolved' | 'pending' | 'rejected'>;
  pendingKeys: Map<number, Record<Dir, string[]>>;
}

function newDirection(): Direction {
  return {
    delivered: [],
    pending: [],
    credit: WINDOW,
    unacked: 0,
    endQueued: false,
    endDelivered: false,
  };
}

function units(m: string | Uint8Array): number {
  return typeof m === 'string' ? m.length : m.byteLength;
}

/** Moves pending writes to delivered while credit allows; returns the keys sent. */
function flush(d: Direction, keys: string[]): string[] {
  const sent: string[] = [];
  while (d.pending.length > 0) {
    const item = d.pending[0];
    if (!item.end && d.credit <= 0) break;
    d.pending.shift();
    sent.push(keys.shift()!);
    if (item.end) {
      d.endDelivered = true;
    } else {
      d.credit -= item.size;
      d.delivered.push(item);
    }
  }
  return sent;
}

function pick(model: Model, index: number): [number, ModelStream] | undefined {
  const live = [...model.streams].filter(([, s]) => !s.reset);
  return live.length === 0 ? undefined : live[index % live.length];
}

function streamOf(real: Real, id: number, dir: Dir, writer: boolean): Stream {
  const dialerSide = writer ? dir === 'up' : dir === 'down';
  return (dialerSide ? real.local : real.remote).get(id)!;
}

class OpenCommand implements fc.AsyncCommand<Model, Real> {
  constructor(readonly end: boolean) {}
  check(m: Readonly<Model>) {
    return m.streams.size < 40;
  }
  async run(m: Model, r: Real) {
    const id = m.nextId;
    m.nextId += 2;
    const stream = r.pair.dialer.open({ id }, { end: this.end });
    assert.equal(stream.id, id);
    r.local.set(id, stream);
    const s: ModelStream = { reset: false, up: newDirection(), down: newDirection() };
    s.up.endQueued = s.up.endDelivered = this.end;
    m.streams.set(id, s);
    r.pendingKeys.set(id, { up: [], down: [] });
    await settle();
    assert.deepEqual(r.remote.get(id)?.payload, { id });
  }
  toString() {
    return `open(end=${this.end})`;
  }
}

class WriteCommand implements fc.AsyncCommand<Model, Real> {
  constructor(readonly index: number, readonly dir: Dir, readonly length: number) {}
  check(m: Readonly<Model>) {
    const picked = pick(m as Model, this.index);
    return picked !== undefined && !picked[1][this.dir].endQueued;
  }
  async run(m: Model, r: Real) {
    const [id, s] = pick(m, this.index)!;
    const d = s[this.dir];
    const value = `${m.counter++}:` + 'w'.repeat(this.length);
    const size = units(r.codec.encode([2, id, 0, value]));
    const key = `${id}/${this.dir}/${m.counter}`;
    const keys = r.pendingKeys.get(id)![this.dir];
    d.pending.push({ value, size });
    keys.push(key);
    for (const k of flush(d, keys)) r.expected.set(k, 'resolved');
    if (!r.expected.has(key)) r.expected.set(key, 'pending');
    const write = streamOf(r, id, this.dir, true).write(value);
    r.writes.set(key, false);
    write.then(() => r.writes.set(key, true), () => r.rejected.add(key));
    await verify(r);
  }
  toString() {
    return `write(${this.index}, ${this.dir}, ${this.length})`;
  }
}

class EndCommand implements fc.AsyncCommand<Model, Real> {
  constructor(readonly index: number, readonly dir: Dir) {}
  check(m: Readonly<Model>) {
    const picked = pick(m as Model, this.index);
    return picked !== undefined && !picked[1][this.dir].endQueued;
  }
  async run(m: Model, r: Real) {
    const [id, s] = pick(m, this.index)!;
    const d = s[this.dir];
    d.endQueued = true;
    const key = `${id}/${this.dir}/end`;
    const keys = r.pendingKeys.get(id)![this.dir];
    d.pending.push({ value: undefined, size: 0, end: true });
    keys.push(key);
    for (const k of flush(d, keys)) r.expected.set(k, 'resolved');
    if (!r.expected.has(key)) r.expected.set(key, 'pending');
    const ending = streamOf(r, id, this.dir, true).end();
    r.writes.set(key, false);
    ending.then(() => r.writes.set(key, true), () => r.rejected.add(key));
    await verify(r);
  }
  toString() {
    return `end(${this.index}, ${this.dir})`;
  }
}

class ReadCommand implements fc.AsyncCommand<Model, Real> {
  constructor(readonly index: number, readonly dir: Dir) {}
  check(m: Readonly<Model>) {
    const picked = pick(m as Model, this.index);
    if (picked === undefined) return false;
    const d = picked[1][this.dir];
    return d.delivered.length > 0 || d.endDelivered;
  }
  async run(m: Model, r: Real) {
    const [id, s] = pick(m, this.index)!;
    const d = s[this.dir];
    const reader = streamOf(r, id, this.dir, false);
    const result = await reader[Symbol.asyncIterator]().next();
    const item = d.delivered.shift();
    if (item === undefined) {
      assert.equal(result.done, true);
    } else {
      assert.deepEqual(result, { value: item.value, done: false });
      if (!d.endDelivered) {
        d.unacked += item.size;
        if (d.unacked >= WINDOW / 2) {
          d.credit += d.unacked;
          d.unacked = 0;
          const keys = r.pendingKeys.get(id)![this.dir];
          for (const k of flush(d, keys)) r.expected.set(k, 'resolved');
        }
      }
    }
    await verify(r);
  }
  toString() {
    return `read(${this.index}, ${this.dir})`;
  }
}

class ResetCommand implements fc.AsyncCommand<Model, Real> {
  constructor(readonly index: number, readonly byDialer: boolean) {}
  check(m: Readonly<Model>) {
    const picked = pick(m as Model, this.index);
    if (picked === undefined) return false;
    const s = picked[1];
    // Finished streams (both ends delivered) ignore a reset: leave them out of the model.
    return !(s.up.endDelivered && s.down.endDelivered);
  }
  async run(m: Model, r: Real) {
    const [id, s] = pick(m, this.index)!;
    s.reset = true;
    for (const dir of ['up', 'down'] as const) {
      for (const k of r.pendingKeys.get(id)![dir]) r.expected.set(k, 'rejected');
    }
    const stream = (this.byDialer ? r.local : r.remote).get(id)!;
    stream.reset('app_reset', 'model');
    await verify(r);
    const other = (this.byDialer ? r.remote : r.local).get(id)!;
    await assert.rejects(other.closed, { code: 'app_reset', remote: true });
    await assert.rejects(stream.closed, { code: 'app_reset', remote: false });
  }
  toString() {
    return `reset(${this.index}, byDialer=${this.byDialer})`;
  }
}

async function verify(r: Real) {
  await settle(40); // enough hops for DATA, CREDIT and the writes they release
  for (const [key, expected] of r.expected) {
    const actual = r.rejected.has(key) ? 'rejected' : r.writes.get(key) ? 'resolved' : 'pending';
    assert.equal(actual, expected, `write ${key}`);
  }
}

test('property 2: open/write/end/reset/credit follow a plain Map model', async () => {
  const index = fc.nat(50);
  const dir = fc.constantFrom<Dir>('up', 'down');
  // Sizes around the window's fractions make credit decisions close calls.
  const length = fc.oneof(
    fc.integer({ min: 1, max: 40_000 }),
    fc.integer({ min: 7_000, max: 17_000 }),
  );
  const commands = [
    fc.boolean().map((end) => new OpenCommand(end)),
    fc.tuple(index, dir, length).map(([i, d, n]) => new WriteCommand(i, d, n)),
    fc.tuple(index, dir, length).map(([i, d, n]) => new WriteCommand(i, d, n)),
    fc.tuple(index, dir).map(([i, d]) => new EndCommand(i, d)),
    fc.tuple(index, dir).map(([i, d]) => new ReadCommand(i, d)),
    fc.tuple(index, dir).map(([i, d]) => new ReadCommand(i, d)),
    fc.tuple(index, dir).map(([i, d]) => new ReadCommand(i, d)),
    fc.tuple(index, fc.boolean()).map(([i, b]) => new ResetCommand(i, b)),
  ];
  for (const codec of codecs) {
    await check(
      fc.asyncProperty(fc.commands(commands, { maxCommands: 60, size: 'max' }), async (cmds) => {
        const remote = new Map<number, Stream>();
        const pair = sessionPair({
          codec,
          acceptor: {
            onStream: (stream) => {
              remote.set(stream.id, stream);
              return new Promise(() => {}); // the model ends the acceptor's side explicitly
            },
          },
        });
        const real: Real = {
          codec,
          pair,
          local: new Map(),
          remote,
          writes: new Map(),
          rejected: new Set(),
          expected: new Map(),
          pendingKeys: new Map(),
        };
        try {
          await fc.asyncModelRun(
            () => ({ model: { streams: new Map(), nextId: 1, counter: 0 }, real }),
            cmds,
          );
          assert.equal(pair.log.dialer.errors.length, 0);
          assert.equal(pair.log.acceptor.errors.length, 0);
        } finally {
          pair[Symbol.dispose]();
        }
      }),
      150,
    );
  }
});

// ---- (3) many concurrent streams deliver every message exactly once, in order ----------------

test('property 3: random interleavings of writes on up to 50 streams deliver each message once, in order', async () => {
  for (const codec of codecs) {
    await check(
      fc.asyncProperty(
        fc.integer({ min: 1, max: 50 }),
        fc.array(fc.tuple(fc.nat(49), fc.integer({ min: 0, max: 20_000 })), { maxLength: 150 }),
        fc.array(fc.nat(3), { minLength: 1, maxLength: 20 }),
        async (n, plan, pauses) => {
          const received = new Map<number, unknown[]>();
          let pause = 0;
          const pair = sessionPair({
            codec,
            acceptor: {
              onStream: async (stream) => {
                const got: unknown[] = [];
                received.set(stream.id, got);
                for await (const m of stream) {
                  got.push(m);
                  await settle(pauses[pause++ % pauses.length]); // readers interleave
                }
                return got.length;
              },
            },
          });
          try {
            const streams = Array.from({ length: n }, (_, i) => pair.dialer.open(i));
            const sent = streams.map(() => [] as string[]);
            const writes: Promise<void>[] = [];
            plan.forEach(([which, length], k) => {
              const i = which % n;
              const value = `${i}:${k}:` + 'p'.repeat(length);
              sent[i].push(value);
              writes.push(streams[i].write(value));
            });
            writes.push(...streams.map((s) => s.end()));
            await Promise.all(writes);
            const counts = await Promise.all(streams.map(async (s) => {
              const r = await s[Symbol.asyncIterator]().next();
              await s.closed;
              return r.value;
            }));
            streams.forEach((s, i) => {
              assert.deepEqual(received.get(s.id), sent[i]);
              assert.equal(counts[i], sent[i].length);
            });
            assert.equal(pair.dialer.activeStreams, 0);
          } finally {
            pair[Symbol.dispose]();
          }
        },
      ),
      120,
    );
  }
});

// ---- (4) a slow reader holds the writer at the window --------------------------------------

test('property 4: a slow reader bounds what is buffered by window x streams', async () => {
  for (const codec of codecs) {
    await check(
      fc.asyncProperty(
        fc.integer({ min: 1, max: 8 }),
        fc.integer({ min: 100, max: 30_000 }),
        fc.integer({ min: 3, max: 40 }),
        async (n, length, perStream) => {
          const remote: Stream[] = [];
          const pair = sessionPair({
            codec,
            acceptor: { onStream: (s) => (remote.push(s), new Promise(() => {})) },
          });
          try {
            const streams = Array.from({ length: n }, (_, i) => pair.dialer.open(i));
            const writes = streams.flatMap((s) =>
              Array.from({ length: perStream }, () => s.write('q'.repeat(length)))
            );
            await settle(200);
            let buffered = 0;
            const perId = new Map<number, number>();
            for (const m of pair.client.sent) {
              const frame = codec.decode(m) as unknown[];
              if (frame[0] !== 2) continue;
              buffered += units(m);
              perId.set(frame[1] as number, (perId.get(frame[1] as number) ?? 0) + 1);
            }
            let bound = 0;
            for (const s of streams) {
              const size = units(codec.encode([2, s.id, 0, 'q'.repeat(length)]));
              bound += WINDOW + size; // the window and one overshooting message
              // The writer went as far as its credit allowed, no further and no less.
              assert.equal(perId.get(s.id), Math.min(perStream, Math.ceil(WINDOW / size)));
            }
            assert.ok(buffered <= bound, `${buffered} > ${bound}`);
            // Now read everything, slowly: every write completes and nothing was reset.
            await Promise.all(remote.map(async (s) => {
              const it = s[Symbol.asyncIterator]();
              for (let i = 0; i < perStream; i++) {
                await it.next();
                await settle(2);
              }
            }));
            await Promise.all(writes);
            assert.equal(pair.log.dialer.errors.length + pair.log.acceptor.errors.length, 0);
          } finally {
            pair[Symbol.dispose]();
          }
        },
      ),
      40,
    );
  }
});
