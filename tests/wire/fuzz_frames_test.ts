/**
 * Frame-level fuzzing over both codecs, seeded and reproducible: `MUXWS_FUZZ_SEED`
 * overrides the seed, and a failure names the seed to replay. `MUXWS_FUZZ_SCALE` multiplies the
 * run counts (`npm run fuzz` uses 20: about 2,000,000 frames).
 *
 * Per codec and scale 1: 25,000 valid frames of every kind round-trip through encode, decode and
 * the frame check unchanged; 25,000 damaged encodings (bytes flipped, cut, spliced, duplicated)
 * go through a live acceptor session, which never throws, reports only muxws errors and sends
 * only well-formed frames back. That is 100,000 generated frames across the two codecs.
 * `tests/session/session_property_test.ts` covers arbitrary frame sequences and the stream model.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import process from 'node:process';
import fc from 'fast-check';
import { type Codec, jsonCodec, MuxwsError } from 'muxws';
import { msgpackCodec } from 'muxws/msgpack';
import { Session } from '../../lib/session/session.ts';
import { acceptorPolicy } from '../../lib/acceptor/_policy.ts';
import { parseFrame } from '../../lib/wire/frame.ts';

const SEED = Number(process.env.MUXWS_FUZZ_SEED ?? 0x7a11_0007);
const SCALE = Math.max(1, Number(process.env.MUXWS_FUZZ_SCALE ?? 1));
const FRAMES_PER_PROPERTY = 25_000 * SCALE;
const BATCH = 25;

async function check<T>(property: fc.IProperty<T> | fc.IAsyncProperty<T>, numRuns: number) {
  try {
    await fc.assert(property as fc.IAsyncProperty<T>, { seed: SEED, numRuns });
  } catch (error) {
    throw new Error(`Property failed; replay with MUXWS_FUZZ_SEED=${SEED}\n${String(error)}`, {
      cause: error,
    });
  }
}

const id = fc.oneof(
  fc.integer({ min: 1, max: 20 }),
  fc.integer({ min: 1, max: Number.MAX_SAFE_INTEGER }),
);
const count = fc.oneof(fc.nat(20), fc.maxSafeNat());
// HELLO (bit 1) is valid on the OPEN of stream 1 only (WSM-APP-001), so other frames go without.
const flags = fc.oneof(fc.constantFrom(0, 1), fc.constant(Number.MAX_SAFE_INTEGER - 2));
const helloFlags = fc.oneof(fc.constantFrom(2, 3), fc.constant(Number.MAX_SAFE_INTEGER));
const resetCode = fc.stringMatching(/^[a-z][a-z0-9_.-]{0,63}$/);
const key = fc.oneof(
  fc.string({ maxLength: 6 }),
  fc.constantFrom('__proto__', 'constructor', 'prototype'),
);
/** Values both codecs carry unchanged (no -0, NaN, undefined). */
const leaf = fc.oneof(
  fc.integer(),
  fc.double({ noNaN: true, noDefaultInfinity: true }).filter((d) => !Object.is(d, -0)),
  fc.string({ maxLength: 12 }),
  fc.boolean(),
  fc.constant(null),
);
const value: fc.Arbitrary<unknown> = fc.letrec((tie) => ({
  v: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    leaf,
    fc.array(tie('v'), { maxLength: 3 }),
    fc.dictionary(key, tie('v'), { maxKeys: 3 }),
  ),
})).v;
const headers = fc.oneof(fc.constant(null), fc.dictionary(key, leaf, { maxKeys: 3 }));
const tag = fc.string({ minLength: 1, maxLength: 20 });

/** Every frame kind with valid fields (WSM-WIRE-003). */
const frame: fc.Arbitrary<readonly unknown[]> = fc.oneof(
  fc.tuple(fc.constant(1), id, flags, headers, value),
  fc.tuple(fc.constant(1), fc.constant(1), helloFlags, headers, value),
  fc.tuple(fc.constant(2), id, flags, value),
  fc.tuple(fc.constant(3), id),
  fc.tuple(fc.constant(4), id, resetCode, fc.string({ maxLength: 20 })),
  fc.tuple(fc.constant(5), id, id),
  fc.constant([6]),
  fc.constant([7]),
  fc.tuple(fc.constant(8), count, resetCode, fc.string({ maxLength: 20 }), count),
  fc.tuple(fc.constant(9), tag, headers, value),
);

/** One way to damage an encoded message. */
type Damage =
  | { kind: 'flip'; at: number; bits: number }
  | { kind: 'cut'; at: number }
  | { kind: 'splice'; at: number; bytes: number[] }
  | { kind: 'repeat'; from: number; to: number };

const damage: fc.Arbitrary<Damage[]> = fc.array(
  fc.oneof(
    fc.record({
      kind: fc.constant('flip' as const),
      at: fc.nat(),
      bits: fc.integer({ min: 1, max: 255 }),
    }),
    fc.record({ kind: fc.constant('cut' as const), at: fc.nat() }),
    fc.record({
      kind: fc.constant('splice' as const),
      at: fc.nat(),
      bytes: fc.array(
        fc.oneof(fc.nat(255), fc.constantFrom(0x5b, 0x5d, 0x2c, 0x22, 0x91, 0xc0, 0xdc)),
        {
          minLength: 1,
          maxLength: 6,
        },
      ),
    }),
    fc.record({ kind: fc.constant('repeat' as const), from: fc.nat(), to: fc.nat() }),
  ),
  { minLength: 1, maxLength: 3 },
);

const encoder = new TextEncoder();
const lossy = new TextDecoder();

/** Applies the damage to the message's bytes; a text codec's result is decoded back to text. */
function damaged(codec: Codec, message: string | Uint8Array, steps: Damage[]): string | Uint8Array {
  let bytes = typeof message === 'string' ? encoder.encode(message) : message.slice();
  for (const step of steps) {
    const n = bytes.length;
    if (n === 0) break;
    switch (step.kind) {
      case 'flip': {
        const copy = bytes.slice();
        copy[step.at % n] ^= step.bits;
        bytes = copy;
        break;
      }
      case 'cut':
        bytes = bytes.slice(0, step.at % n);
        break;
      case 'splice': {
        const at = step.at % (n + 1);
        bytes = Uint8Array.from([...bytes.subarray(0, at), ...step.bytes, ...bytes.subarray(at)]);
        break;
      }
      case 'repeat': {
        const a = step.from % n;
        const b = a + (step.to % (n - a)) + 1;
        bytes = Uint8Array.from([
          ...bytes.subarray(0, b),
          ...bytes.subarray(a, b),
          ...bytes.subarray(b),
        ]);
        break;
      }
    }
  }
  return codec.binary ? bytes : lossy.decode(bytes);
}

/** The JSON codec carries `-0` as `0`; both carry everything else in `value` unchanged. */
function normalized(frame: readonly unknown[]): unknown[] {
  return JSON.parse(JSON.stringify(frame));
}

for (const codec of [jsonCodec, msgpackCodec]) {
  test(`WSM-WIRE-002 WSM-WIRE-003 [${codec.name}] ${FRAMES_PER_PROPERTY.toLocaleString('en')} valid frames of every kind round-trip through the codec and the frame check unchanged`, async () => {
    await check(
      fc.property(frame, (f) => {
        const message = codec.encode(f);
        assert.equal(typeof message === 'string', !codec.binary);
        const back = parseFrame(codec.decode(message));
        assert.deepEqual(normalized(back), normalized(f));
        // __proto__ keys stay own data properties (WSM-WIRE-008).
        assert.equal((({}) as Record<string, unknown>).polluted, undefined);
      }),
      FRAMES_PER_PROPERTY,
    );
  });

  test(`WSM-WIRE-007 [${codec.name}] ${FRAMES_PER_PROPERTY.toLocaleString('en')} damaged frames never make a session throw, are reported only as muxws errors, and get only well-formed frames back`, async () => {
    let fed = 0;
    await check(
      fc.property(
        fc.array(fc.tuple(frame, damage), { minLength: BATCH, maxLength: BATCH }),
        (batch) => {
          const sent: Array<string | Uint8Array> = [];
          const reported: unknown[] = [];
          let closedWith: number | undefined;
          const session = new Session({
            send: (data) => void sent.push(data),
            close: (code) => void (closedWith = code),
          }, {
            side: 'acceptor',
            codec,
            limits: { maxProtocolErrors: 1_000_000, maxResetRate: 1_000_000 },
            onStream: (stream) => stream.payload,
            onError: (error) => void reported.push(error),
          }, acceptorPolicy);
          for (const [f, steps] of batch) {
            const message = damaged(codec, codec.encode(f), steps);
            session.receive(message);
            fed++;
          }
          session.close(1000, '');
          for (const error of reported) {
            assert.ok(error instanceof MuxwsError, `reported a ${String(error)}`);
          }
          assert.ok(closedWith === 1000 || closedWith === 1009, `closed with ${closedWith}`);
          for (const data of sent) parseFrame(codec.decode(data));
        },
      ),
      FRAMES_PER_PROPERTY / BATCH,
    );
    assert.equal(fed, FRAMES_PER_PROPERTY);
  });
}
