/**
 * Hostile-input tests of application code that throws: stream handlers and every callback of the
 * acceptor and the dialer.
 * @module
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { StreamResetError } from 'muxws';
import { eventually, within } from '../_acceptor_suite.ts';
import { type HostileRuntime, named, SECRET, withServer } from './_harness.ts';

/** Registers the tests of this subject for `rt`. */
export function throwingCodeTests(rt: HostileRuntime): void {
  test(
    named(
      rt,
      'acceptor resets with internal, in a message carrying no stack or detail, a stream whose handler throws (sync, async or a non-Error)',
      ['WSM-STR-004', 'WSM-WIRE-005'],
    ),
    async () => {
      await withServer(rt, {}, async (h) => {
        const attacker = await h.raw();
        attacker.send([1, 1, 1, null, { op: 'throw-sync' }]);
        attacker.send([1, 3, 1, null, { op: 'throw-async' }]);
        attacker.send([1, 5, 1, null, { op: 'throw-value' }]);
        for (const id of [1, 3, 5]) {
          const reset = await attacker.next((f) => f[1] === id, 5000, `the reset of ${id}`);
          assert.equal(reset[0], 4);
          assert.equal(reset[2], 'internal');
          const message = String(reset[3]);
          for (const leak of ['secret', 'hunter2', '/srv', 'at ', 'Error', 'TypeError']) {
            assert.ok(!message.includes(leak), `the reset message "${message}" leaks "${leak}"`);
          }
        }
        assert.equal(h.errors.length, 3, 'each failure is reported locally');
        await attacker.alive();
        await h.healthy();
      });
    },
  );

  test(
    named(
      rt,
      'acceptor and dialer contain onError, onPeer, onPeerClose, onOpen, onClose and onPublish callbacks that throw',
      ['WSM-DIAL-008', 'WSM-ACC-009'],
    ),
    async () => {
      const printed: unknown[] = [];
      const original = console.error;
      console.error = (...args: unknown[]) => void printed.push(args);
      const reported: unknown[] = [];
      const boom = (where: string) => () => {
        throw new Error(`${where} threw`);
      };
      try {
        await withServer(rt, {
          onError: (error) => {
            reported.push(error);
            throw new Error('acceptor onError threw');
          },
          onPeer: (peer) => {
            peer.tags.add('all');
            throw new Error('onPeer threw');
          },
          onPeerClose: boom('onPeerClose'),
        }, async (h) => {
          const dialerErrors: unknown[] = [];
          const c = await h.dial({
            onOpen: boom('onOpen'),
            onClose: boom('onClose'),
            onPublish: boom('onPublish'),
            onError: (error) => {
              dialerErrors.push(error);
              throw new Error('dialer onError threw');
            },
          });
          assert.equal(await h.acceptor.broadcast('all', 'news'), 1);
          await eventually(() => dialerErrors.length >= 2, 5000, 'the dialer reports');
          await assert.rejects(c.request({ op: 'throw-sync' }), StreamResetError);
          assert.deepEqual(await within(c.request({ op: 'echo', value: 1 }), 5000, 'echo'), {
            echo: 1,
          });
          await c.close();
          await eventually(
            () => reported.some((e) => String(e).includes('onPeerClose threw')),
            5000,
            'the onPeerClose report',
          );
          assert.ok(reported.some((e) => String(e).includes('onPeer threw')));
          assert.ok(reported.some((e) => String(e).includes(SECRET)));
          assert.ok(dialerErrors.some((e) => String(e).includes('onOpen threw')));
          assert.ok(dialerErrors.some((e) => String(e).includes('onPublish threw')));
          assert.ok(dialerErrors.some((e) => String(e).includes('onClose threw')));
          // Each throwing onError went to console.error instead.
          assert.ok(printed.length >= reported.length + dialerErrors.length - 1);
          await h.healthy();
        });
      } finally {
        console.error = original;
      }
    },
  );
}
