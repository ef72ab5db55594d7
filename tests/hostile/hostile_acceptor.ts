/**
 * Hostile-input tests of a hostile acceptor: malformed, oversized and deeply nested messages sent
 * to the dialer through the Peer's own socket.
 * @module
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { type CloseInfo, ProtocolError } from 'muxws';
import { eventually, within } from '../_acceptor_suite.ts';
import { type HostileRuntime, named, rawSend, withServer } from './_harness.ts';
import { nestedJson } from './_raw.ts';

/** Registers the tests of this subject for `rt`. */
export function hostileAcceptorTests(rt: HostileRuntime): void {
  test(
    named(
      rt,
      'dialer reports 16 non-frame messages from a hostile acceptor, closes with 4002 at the 17th and redials',
      ['WSM-WIRE-007', 'WSM-WIRE-009'],
    ),
    async () => {
      await withServer(rt, {}, async (h) => {
        const errors: unknown[] = [];
        const closes: CloseInfo[] = [];
        const c = await h.dial({
          reconnect: { initialDelayMs: 20, jitter: 0 },
          onError: (error) => void errors.push(error),
          onClose: (info) => void closes.push(info),
        });
        await eventually(() => h.peers.length === 1, 5000, 'the peer');
        const send = rawSend(h.peers[0]);
        for (let i = 0; i < 16; i++) send(i % 2 === 0 ? 'garbage' : '[99]');
        await eventually(() => errors.length === 16, 5000, '16 reports');
        for (const e of errors) assert.ok(e instanceof ProtocolError, `reported ${e}`);
        assert.deepEqual(await within(c.request({ op: 'echo', value: 1 }), 5000, 'echo'), {
          echo: 1,
        });
        assert.equal(closes.length, 0);
        send('{"seventeenth":true}');
        await eventually(() => closes.length === 1, 5000, 'the 4002 close');
        assert.equal(closes[0].code, 4002);
        assert.equal(closes[0].willRetry, true);
        await within(c.opened(), 5000, 'the redial');
        assert.deepEqual(await within(c.request({ op: 'echo', value: 2 }), 5000, 'echo'), {
          echo: 2,
        });
      });
    },
  );

  test(
    named(
      rt,
      'dialer closes with 4009 on a message over its maxMessageBytes',
      ['WSM-WIRE-007', 'WSM-WIRE-009'],
    ),
    async () => {
      await withServer(rt, {}, async (h) => {
        const closes: CloseInfo[] = [];
        const c = await h.dial({
          limits: { maxMessageBytes: 4096 },
          onClose: (info) => void closes.push(info),
        });
        await eventually(() => h.peers.length === 1, 5000, 'the peer');
        rawSend(h.peers[0])(`[9,"t",null,${JSON.stringify('z'.repeat(5000))}]`);
        await within(c.closed, 5000, 'the 4009 close');
        assert.equal(closes.length, 1);
        assert.equal(closes[0].code, 4009);
        await eventually(() => h.peerCloses.length === 1, 5000, 'the close at the acceptor');
        assert.equal(h.peerCloses[0].code, 4009);
      });
    },
  );

  test(
    named(
      rt,
      'dialer reports a PUBLISH nested 10,000 deep and never hands it to onPublish',
      ['WSM-WIRE-008'],
    ),
    async () => {
      await withServer(rt, {}, async (h) => {
        const errors: unknown[] = [];
        const published: unknown[] = [];
        const c = await h.dial({
          hello: { payload: { op: 'hello', tags: ['room'] } },
          onError: (error) => void errors.push(error),
          onPublish: (m) => void published.push(m.payload),
        });
        rawSend(h.peers[0])(`[9,"room",null,${nestedJson(10_000)}]`);
        assert.equal(await h.acceptor.broadcast('room', 'after'), 1);
        await eventually(() => published.length === 1, 5000, 'the valid broadcast');
        assert.deepEqual(published, ['after']);
        assert.equal(errors.length, 1);
        assert.ok(errors[0] instanceof ProtocolError, `reported ${errors[0]}`);
        assert.equal(c.state, 'open');
      });
    },
  );
}
