/**
 * Hostile-input tests of flow-control abuse: DATA past the window, a CREDIT dribble of one unit,
 * and CREDIT adding up past 2^53.
 * @module
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { eventually } from '../_acceptor_suite.ts';
import { framesOf, type HostileRuntime, named, sleep, withServer } from './_harness.ts';

/** Registers the tests of this subject for `rt`. */
export function flowAbuseTests(rt: HostileRuntime): void {
  test(
    named(
      rt,
      'acceptor resets with flow a stream whose DATA exceeds the window past one overshooting message',
      ['WSM-WIRE-006'],
    ),
    async () => {
      await withServer(rt, {}, async (h) => {
        const attacker = await h.raw();
        attacker.send([1, 1, 0, null, { op: 'hold' }]);
        await eventually(() => h.state.gates.length === 1, 5000, 'the held stream');
        // Each DATA is [2,1,0,"…"] around 10,000 characters: 10,010 units. Six leave 5,476 of the
        // 65,536; the seventh may overshoot; the eighth exceeds the window.
        const data = `[2,1,0,${JSON.stringify('f'.repeat(10_000))}]`;
        assert.equal(data.length, 10_010);
        for (let i = 0; i < 7; i++) attacker.send(data);
        await attacker.alive();
        assert.deepEqual(framesOf(attacker, 1), [], 'seven messages fit (one overshoot)');
        attacker.send(data);
        const reset = await attacker.next((f) => f[1] === 1, 5000, 'the flow reset');
        assert.equal(reset[0], 4);
        assert.equal(reset[2], 'flow');
        await attacker.alive();
        await h.healthy();
      });
    },
  );

  test(
    named(
      rt,
      'acceptor sends no partial or 1-unit message on a 1-unit CREDIT dribble and grants credit only in half windows',
      ['WSM-WIRE-006'],
    ),
    async () => {
      await withServer(rt, {}, async (h) => {
        const attacker = await h.raw();
        attacker.send([1, 1, 0, null, { op: 'write', n: 100, size: 1000 }]);
        // Each DATA is 1,010 units: 64 leave 896 of the window, the 65th overshoots to -114.
        await eventually(() => h.state.written.get(1) === 65, 5000, '65 messages');
        await attacker.alive();
        await sleep(50);
        assert.equal(framesOf(attacker, 1).length, 65);
        for (let i = 0; i < 114; i++) attacker.send([5, 1, 1]);
        await attacker.alive();
        assert.equal(
          framesOf(attacker, 1).length,
          65,
          '114 one-unit credits bring it to 0: no send',
        );
        attacker.send([5, 1, 1]);
        await attacker.next(
          (f) => f[1] === 1 && framesOf(attacker, 1).length === 66,
          5000,
          'one more',
        );
        await attacker.alive();
        assert.equal(
          framesOf(attacker, 1).length,
          66,
          'one unit of credit releases one whole message',
        );
        for (const f of framesOf(attacker, 1)) assert.deepEqual(f, [2, 1, 0, 'x'.repeat(1000)]);

        // The acceptor as receiver: 5,000 one-character messages (55,000 units) get one CREDIT of
        // at least half the window, never a trickle.
        attacker.send([1, 3, 0, null, { op: 'read' }]);
        for (let i = 0; i < 5000; i++) attacker.send('[2,3,0,"x"]');
        await eventually(() => h.state.consumed.get(3) === 5000, 5000, 'every message read');
        await attacker.alive();
        const credits = attacker.frames.filter((f) => Array.isArray(f) && f[0] === 5) as number[][];
        assert.equal(credits.length, 1);
        assert.equal(credits[0][1], 3);
        assert.ok(credits[0][2] >= 32_768, `granted ${credits[0][2]} units`);
      });
    },
  );

  test(
    named(
      rt,
      'acceptor takes CREDIT frames adding up past 2^53 without an error and the writer finishes',
      ['WSM-WIRE-006'],
    ),
    async () => {
      await withServer(rt, {}, async (h) => {
        const attacker = await h.raw();
        attacker.send([1, 1, 0, null, { op: 'write', n: 200, size: 1000 }]);
        await eventually(() => h.state.written.get(1) === 65, 5000, 'the first window');
        for (let i = 0; i < 3; i++) attacker.send([5, 1, Number.MAX_SAFE_INTEGER]);
        await eventually(() => h.state.written.get(1) === 200, 5000, 'every message');
        const done = await attacker.next(
          (f) => f[0] === 2 && f[1] === 1 && f[2] === 1,
          5000,
          'the last message',
        );
        assert.equal(done[3], 'done');
        assert.equal(framesOf(attacker, 1).length, 201);
        assert.deepEqual(h.errors, []);
      });
    },
  );
}
