/**
 * Hostile-input tests of invalid arguments: Peer tags, and the dialer's close codes and reasons.
 * @module
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { eventually, within } from '../_acceptor_suite.ts';
import { type HostileRuntime, named, withServer } from './_harness.ts';

/** Registers the tests of this subject for `rt`. */
export function invalidArgumentsTests(rt: HostileRuntime): void {
  test(
    named(
      rt,
      'Peer tags throw TypeError for a tag longer than 256 characters, empty or not a string, and the peer keeps working',
      ['WSM-ACC-004'],
    ),
    async () => {
      await withServer(rt, {}, async (h) => {
        const c = await h.dial();
        await eventually(() => h.peers.length === 1, 5000, 'the peer');
        const peer = h.peers[0];
        for (const bad of ['x'.repeat(257), '', 5, null, undefined, { toString: () => 'x' }]) {
          assert.throws(() => peer.tags.add(bad as string), TypeError, `tag ${String(bad)}`);
        }
        assert.equal(peer.tags.size, 0, 'nothing was added');
        peer.tags.add('x'.repeat(256)).add('y');
        assert.equal(peer.tags.size, 2);
        await assert.rejects(h.acceptor.broadcast('x'.repeat(257), 1), TypeError);
        await assert.rejects(h.acceptor.broadcast('', 1), TypeError);
        await assert.rejects(h.acceptor.broadcast('y', 1, { except: [''] }), TypeError);
        assert.equal(await h.acceptor.broadcast('x'.repeat(256), 1), 1);
        assert.deepEqual(await within(c.request({ op: 'echo', value: 1 }), 5000, 'echo'), {
          echo: 1,
        });
      });
    },
  );

  test(
    named(
      rt,
      'dialer close() throws RangeError before sending anything for a code outside 1000 and 3000-4999 or a reason over 123 bytes',
      ['WSM-WIRE-009'],
    ),
    async () => {
      await withServer(rt, {}, async (h) => {
        const c = await h.dial();
        for (const code of [999, 1001, 1002, 1006, 1011, 1012, 1015, 2999, 5000, 3000.5, NaN]) {
          assert.throws(() => c.close(code), RangeError, `code ${code}`);
        }
        assert.throws(() => c.close(1000, 'é'.repeat(62)), RangeError, '124 bytes');
        assert.equal(c.state, 'open');
        assert.equal(h.peerCloses.length, 0, 'nothing reached the acceptor');
        assert.deepEqual(await within(c.request({ op: 'echo', value: 1 }), 5000, 'echo'), {
          echo: 1,
        });
        const info = await c.close(4999, 'é'.repeat(61) + 'a');
        assert.equal(info.code, 4999);
        await eventually(() => h.peerCloses.length === 1, 5000, 'the close at the acceptor');
        assert.equal(h.peerCloses[0].code, 4999);
        assert.equal(h.peerCloses[0].reason, 'é'.repeat(61) + 'a');
      });
    },
  );
}
