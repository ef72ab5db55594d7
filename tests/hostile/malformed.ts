/**
 * Hostile-input tests of an attacker dialer: malformed, oversized, deeply nested, prototype-
 * polluting and out-of-order frames sent to the acceptor, which reports them, resets or closes as
 * the contract (docs/spec.md) says, and keeps serving.
 * @module
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ProtocolError } from 'muxws';
import { msgpackCodec } from 'muxws/msgpack';
import { eventually, within } from '../_acceptor_suite.ts';
import {
  framesOf,
  type HostileRuntime,
  msgpackDeep,
  msgpackFromJson,
  named,
  withServer,
} from './_harness.ts';
import { nestedJson } from './_raw.ts';

/** Registers the tests of this subject for `rt`. */
export function malformedTests(rt: HostileRuntime): void {
  test(
    named(
      rt,
      'acceptor closes with 1009 a peer that sends a message over maxMessageBytes and keeps serving',
      ['WSM-WIRE-007', 'WSM-ACC-006'],
    ),
    async () => {
      await withServer(rt, { limits: { maxMessageBytes: 4096 } }, async (h) => {
        const ok = await h.raw();
        ok.send(`[1,1,1,null,${JSON.stringify('y'.repeat(4000))}]`);
        await ok.next((f) => f[1] === 1, 5000, 'the answer to a message under the limit');
        const big = await h.raw();
        big.send(`[1,1,1,null,${JSON.stringify('y'.repeat(5000))}]`);
        assert.equal((await within(big.closed, 5000, 'the 1009 close')).code, 1009);
        assert.equal(h.state.handled, 1, 'the oversized OPEN never reached a handler');
        await ok.alive();
        await h.healthy();
      });
    },
  );

  test(
    named(
      rt,
      'acceptor drops and reports 16 non-frame messages and closes with 1002 at the 17th',
      ['WSM-WIRE-007'],
    ),
    async () => {
      await withServer(rt, {}, async (h) => {
        const attacker = await h.raw();
        const garbage = [
          'not json',
          '{}',
          '"a string"',
          '42',
          'null',
          '[]',
          '[99]',
          '[0]',
          '[-1,1]',
          '["OPEN",1,0,null,1]',
          '[1]',
          '[2,1]',
          '[6,[[[]]]',
          '\u0000\u0001',
          '{"kind":1,',
          new Uint8Array([0xff, 0x00, 0x13]),
        ];
        assert.equal(garbage.length, 16);
        for (const g of garbage) attacker.send(g);
        await attacker.alive();
        assert.equal(attacker.isClosed, false);
        assert.equal(h.errors.length, 16);
        for (const e of h.errors) assert.ok(e instanceof ProtocolError, `reported ${e}`);
        assert.equal(
          attacker.frames.filter((f) => !(Array.isArray(f) && f[0] === 7)).length,
          0,
          `nothing but the PONG was sent back: ${JSON.stringify(attacker.frames)}`,
        );
        attacker.send('{"seventeenth":true}');
        assert.equal((await within(attacker.closed, 5000, 'the 1002 close')).code, 1002);
        await h.healthy();
      });
    },
  );

  test(
    named(
      rt,
      'acceptor reports an OPEN id that is 0, negative, fractional, above 2^53, of the wrong parity or not increasing as a protocol error',
      ['WSM-WIRE-004', 'WSM-WIRE-007'],
    ),
    async () => {
      await withServer(rt, {}, async (h) => {
        const attacker = await h.raw();
        attacker.send([1, 5, 1, null, { op: 'echo', value: 5 }]);
        await attacker.next((f) => f[1] === 5, 5000, 'the answer on stream 5');
        const bad = [
          '[1,0,1,null,{"op":"echo"}]',
          '[1,-3,1,null,{"op":"echo"}]',
          '[1,7.5,1,null,{"op":"echo"}]',
          '[1,9007199254740993,1,null,{"op":"echo"}]',
          '[1,1e300,1,null,{"op":"echo"}]',
          '[1,8,1,null,{"op":"echo"}]',
          '[1,3,1,null,{"op":"echo"}]',
          '[1,5,1,null,{"op":"echo"}]',
          '[2,11,0,"never opened"]',
          '[1,"7",1,null,{"op":"echo"}]',
        ];
        for (const [i, frame] of bad.entries()) {
          attacker.send(frame);
          await attacker.alive();
          assert.equal(h.errors.length, i + 1, `${frame} is one protocol error`);
          assert.ok(h.errors[i] instanceof ProtocolError);
        }
        assert.equal(h.state.handled, 1, 'no bad id reached a handler');
        assert.deepEqual(
          attacker.frames.filter((f) => Array.isArray(f) && f[0] !== 7 && f[1] !== 5),
          [],
          'nothing was answered to a bad id',
        );
        // The id space still works above the highest id seen.
        attacker.send([1, 7, 1, null, { op: 'echo', value: 7 }]);
        assert.deepEqual(
          await attacker.next((f) => f[1] === 7, 5000, 'the answer on stream 7'),
          [2, 7, 1, { echo: 7 }],
        );
      });
    },
  );

  test(
    named(
      rt,
      'acceptor ignores frames for a finished stream without an error or an answer',
      ['WSM-WIRE-007'],
    ),
    async () => {
      await withServer(rt, {}, async (h) => {
        const attacker = await h.raw();
        attacker.send([1, 1, 1, null, { op: 'echo', value: 1 }]);
        assert.deepEqual(
          await attacker.next((f) => f[1] === 1, 5000, 'the answer'),
          [2, 1, 1, { echo: 1 }],
        );
        for (
          const late of [[2, 1, 0, 'late'], [2, 1, 1, 'late'], [3, 1], [5, 1, 1000], [
            4,
            1,
            'cancel',
            'late',
          ], [1, 1, 1, null, 'reuse']]
        ) {
          attacker.send(late);
        }
        await attacker.alive();
        // The reused OPEN is a protocol error (not above the highest id); the rest are ignored.
        assert.equal(h.errors.length, 1);
        assert.match(String(h.errors[0]), /not above the highest id/);
        assert.equal(framesOf(attacker, 1).length, 1, 'nothing more was sent on stream 1');
        assert.equal(h.state.handled, 1);
      });
    },
  );

  for (const codec of ['json', 'msgpack'] as const) {
    test(
      named(
        rt,
        `acceptor resets with decode a stream whose ${codec} payload nests 10,000 deep, and no RangeError escapes`,
        ['WSM-WIRE-008'],
      ),
      async () => {
        const options = codec === 'json' ? {} : { codec: msgpackCodec };
        await withServer(rt, options, async (h) => {
          const attacker = await h.raw();
          const deepOpen = codec === 'json'
            ? `[1,1,1,null,${nestedJson(10_000)}]`
            : msgpackDeep([0x95, 0x01, 0x01, 0x01, 0xc0], 10_000);
          attacker.send(deepOpen);
          const reset = await attacker.next((f) => f[1] === 1, 5000, 'the reset of stream 1');
          assert.equal(reset[0], 4);
          assert.equal(reset[2], 'decode');
          // The same in a DATA on a live stream.
          attacker.send([1, 3, 0, null, { op: 'hold' }]);
          await eventually(() => h.state.gates.length === 1, 5000, 'the held stream');
          attacker.send(
            codec === 'json'
              ? `[2,3,0,${nestedJson(10_000)}]`
              : msgpackDeep([0x94, 0x02, 0x03, 0x00], 10_000),
          );
          const dataReset = await attacker.next((f) => f[1] === 3, 5000, 'the reset of stream 3');
          assert.equal(dataReset[0], 4);
          assert.equal(dataReset[2], 'decode');
          await attacker.alive();
          assert.equal(h.state.handled, 1, 'the deep OPEN never reached a handler');
          assert.ok(h.errors.length >= 2);
          for (const e of h.errors) {
            assert.ok(e instanceof ProtocolError, `reported ${e}`);
            assert.ok(!(e instanceof RangeError));
          }
          await h.healthy();
        });
      },
    );

    test(
      named(
        rt,
        `acceptor keeps __proto__, constructor and prototype keys of a ${codec} frame as plain data and pollutes nothing`,
        ['WSM-WIRE-008'],
      ),
      async () => {
        const options = codec === 'json' ? {} : { codec: msgpackCodec };
        await withServer(rt, options, async (h) => {
          const attacker = await h.raw();
          const json =
            '[1,1,1,{"__proto__":{"polluted":"yes"},"constructor":{"prototype":{"polluted":"yes"}}},' +
            '{"op":"proto","__proto__":{"polluted":"yes"},"constructor":{"prototype":{"polluted":"yes"}},"prototype":{"polluted":"yes"}}]';
          attacker.send(codec === 'json' ? json : msgpackFromJson(json));
          const answer = await attacker.next((f) => f[1] === 1, 5000, 'the answer');
          assert.equal(answer[0], 2);
          assert.deepEqual(answer[3], {
            keys: ['__proto__', 'constructor', 'op', 'prototype'],
            plain: true,
            headerKeys: ['__proto__', 'constructor'],
            polluted: null,
            protoValue: { polluted: 'yes' },
          });
          assert.equal((({}) as Record<string, unknown>).polluted, undefined);
          assert.equal((Object.prototype as Record<string, unknown>).polluted, undefined);
        });
      },
    );
  }

  test(
    named(
      rt,
      'acceptor reports a wrong type in any field of any frame kind as one protocol error and never crashes',
      ['WSM-WIRE-003', 'WSM-WIRE-007'],
    ),
    async () => {
      await withServer(rt, { limits: { maxProtocolErrors: 1000 } }, async (h) => {
        const attacker = await h.raw();
        attacker.send([1, 1, 0, null, { op: 'hold' }]);
        await eventually(() => h.state.gates.length === 1, 5000, 'the held stream');
        const wrong: string[] = [
          '["1",3,0,null,1]',
          '[true,3,0,null,1]',
          '[1,"3",0,null,1]',
          '[1,3,"0",null,1]',
          '[1,3,0.5,null,1]',
          '[1,3,0,5,1]',
          '[1,3,0,"h",1]',
          '[1,3,0,[1],1]',
          '[1,3,0,null]',
          '[2,"1",0,"x"]',
          '[2,1,"0","x"]',
          '[2,1,null,"x"]',
          '[2,1,0]',
          '[3,"1"]',
          '[3,null]',
          '[4,"1","cancel",""]',
          '[4,1,5,""]',
          '[4,1,"Bad Code",""]',
          '[4,1,"cancel",5]',
          '[4,1,"cancel"]',
          '[5,"1",100]',
          '[5,1,"100"]',
          '[5,1,-5]',
          '[5,1,0.5]',
          '[5,1]',
          '[8,"0","restart","",0]',
          '[8,0,5,"",0]',
          '[8,0,"restart",5,0]',
          '[8,0,"restart","",-1]',
          '[8,0,"restart","","0"]',
          '[9,"tag",null,1]',
          '[9,5,null,1]',
          '[null]',
          '[{}]',
        ];
        for (const frame of wrong) attacker.send(frame);
        await attacker.alive();
        assert.equal(h.errors.length, wrong.length, 'each one is exactly one protocol error');
        for (const e of h.errors) assert.ok(e instanceof ProtocolError, `reported ${e}`);
        assert.deepEqual(framesOf(attacker, 1), [], 'stream 1 was neither reset nor answered');
        assert.equal(h.acceptor.stats.peers, 1);
        // Stream 1 is intact: a valid END now lets its handler finish.
        h.state.gates[0].open();
        attacker.send([3, 1]);
        assert.deepEqual(await attacker.next((f) => f[1] === 1, 5000, 'the answer'), [
          2,
          1,
          1,
          'released',
        ]);
      });
    },
  );

  test(
    named(
      rt,
      'acceptor refuses with refused the streams a dialer opens after its GOAWAY and lets earlier ones finish',
      ['WSM-WIRE-003'],
    ),
    async () => {
      await withServer(rt, {}, async (h) => {
        const attacker = await h.raw();
        attacker.send([1, 1, 0, null, { op: 'hold' }]);
        await eventually(() => h.state.gates.length === 1, 5000, 'the held stream');
        attacker.send([8, 0, 'shutdown', 'going', 0]);
        attacker.send([1, 3, 1, null, { op: 'echo', value: 3 }]);
        const refused = await attacker.next((f) => f[1] === 3, 5000, 'the answer on stream 3');
        assert.equal(refused[0], 4);
        assert.equal(refused[2], 'refused');
        assert.equal(h.state.handled, 1, 'stream 3 never reached a handler');
        h.state.gates[0].open();
        attacker.send([3, 1]);
        assert.deepEqual(await attacker.next((f) => f[1] === 1, 5000, 'stream 1 finishing'), [
          2,
          1,
          1,
          'released',
        ]);
        assert.deepEqual(h.errors, []);
        await h.healthy();
      });
    },
  );
}
