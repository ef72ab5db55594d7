/**
 * Hostile-input tests of an acceptor process killed with SIGKILL and restarted under its dialers.
 * @module
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { type CloseInfo, type Connection, StreamResetError } from 'muxws';
import { eventually, within } from '../_acceptor_suite.ts';
import { startFaultProxy } from '../_fault_proxy.ts';
import { dialOn, type HostileRuntime, named, settleCounter, sleep } from './_harness.ts';

/** Registers the tests of this subject for `rt`. */
export function restartsTests(rt: HostileRuntime): void {
  test(
    named(
      rt,
      'dialers all come back and no promise hangs when the acceptor is killed with SIGKILL and restarted',
      ['WSM-RCN-001', 'WSM-STR-006'],
    ),
    async () => {
      let child = await rt.spawnAcceptor();
      const proxy = await startFaultProxy(child.port);
      const dialers: Connection[] = [];
      try {
        const url = `ws://127.0.0.1:${proxy.port}/ws`;
        const closes: CloseInfo[][] = [];
        for (let i = 0; i < 10; i++) {
          const mine: CloseInfo[] = [];
          closes.push(mine);
          dialers.push(
            await within(
              dialOn(rt, url, {
                reconnect: { initialDelayMs: 50, maxDelayMs: 200, jitter: 0.2 },
                heartbeat: false,
                onClose: (info) => mine.push(info),
              }),
              5000,
              'connect()',
            ),
          );
        }
        const settled = settleCounter();
        for (const c of dialers) {
          for (let i = 0; i < 5; i++) settled.track(c.request({ op: 'hold', ms: 60_000 }));
        }
        await child.kill();
        await eventually(() => settled.outcomes.every((o) => o.times > 0), 5000, 'every settle');
        for (const o of settled.outcomes) {
          assert.equal(o.ok, false);
          assert.ok(o.value instanceof StreamResetError, `settled with ${o.value}`);
          assert.equal(o.value.code, 'connection_lost');
        }
        await eventually(() => closes.every((c) => c.length === 1), 5000, 'every loss');
        for (const [first] of closes) assert.equal(first.willRetry, true);
        // While it is down, requests fail at once instead of queueing.
        await assert.rejects(dialers[0].request({ op: 'echo' }), /not|closed|connect/i);
        await sleep(300);
        child = await rt.spawnAcceptor();
        proxy.target = child.port;
        await within(Promise.all(dialers.map((c) => c.opened())), 10_000, 'every dialer back');
        const answers = await within(
          Promise.all(dialers.map((c, i) => c.request({ op: 'echo', value: i }))),
          5000,
          'the answers',
        );
        assert.deepEqual(answers, dialers.map((_, i) => ({ echo: i })));
        for (const o of settled.outcomes) assert.equal(o.times, 1);
      } finally {
        await Promise.allSettled(dialers.map((c) => within(c.close(), 5000, 'a dialer close')));
        await proxy.close();
        await child.kill();
      }
    },
  );
}
