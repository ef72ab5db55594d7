/**
 * Hostile-input tests of network faults injected by the fault proxy of `_fault_proxy.ts`: a TCP
 * reset mid-stream, a blackhole, a close handshake that never completes, and a cut at every byte
 * offset of an exchange.
 * @module
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  type CloseInfo,
  ConnectError,
  type Connection,
  NotConnectedError,
  StreamResetError,
} from 'muxws';
import { eventually, within } from '../_acceptor_suite.ts';
import {
  dialOn,
  gate,
  type HostileRuntime,
  named,
  settleCounter,
  sleep,
  withServer,
} from './_harness.ts';

/** Registers the tests of this subject for `rt`. */
export function networkFaultsTests(rt: HostileRuntime): void {
  test(
    named(
      rt,
      'dialer settles every request once with connection_lost on a TCP reset mid-stream and redials',
      ['WSM-STR-006', 'WSM-DIAL-011'],
    ),
    async () => {
      await withServer(rt, {}, async (h) => {
        const proxy = await h.proxy();
        const closes: CloseInfo[] = [];
        const c = await h.dial({
          reconnect: { initialDelayMs: 20, jitter: 0 },
          onClose: (info) => closes.push(info),
        }, `ws://127.0.0.1:${proxy.port}/ws`);
        const settled = settleCounter();
        for (let i = 0; i < 20; i++) settled.track(c.request({ op: 'hold' }));
        // A download held mid-stream: its reader waits after the first message until the
        // reset happened, so the stream cannot finish first.
        const download = c.open({ op: 'write', n: 1000, size: 100 }, { end: true });
        const reads: unknown[] = [];
        const afterReset = gate();
        settled.track((async () => {
          for await (const value of download) {
            reads.push(value);
            if (reads.length === 1) await afterReset.wait;
          }
        })());
        await eventually(() => h.state.gates.length === 20 && reads.length > 0, 5000, 'traffic');
        proxy.reset();
        afterReset.open();
        await eventually(() => settled.outcomes.every((o) => o.times > 0), 5000, 'every settle');
        await sleep(50);
        for (const o of settled.outcomes) {
          assert.equal(o.times, 1, 'settled once');
          assert.equal(o.ok, false, `settled with ${JSON.stringify(o.value)}`);
          assert.ok(o.value instanceof StreamResetError, `settled with ${o.value}`);
          assert.equal(o.value.code, 'connection_lost');
          assert.equal(o.value.remote, false);
        }
        assert.ok(reads.length < 1001, 'the download was cut mid-stream');
        assert.equal(closes.length, 1, `closes ${JSON.stringify(closes)}`);
        assert.equal(closes[0].willRetry, true);
        await within(c.opened(), 5000, 'the redial');
        assert.equal(proxy.accepted, 2, 'one redial');
        assert.deepEqual(await within(c.request({ op: 'echo', value: 2 }), 5000, 'echo'), {
          echo: 2,
        });
      });
    },
  );

  test(
    named(
      rt,
      'dialer declares a blackholed connection lost with 4000 within heartbeat interval + timeout',
      ['WSM-DIAL-009'],
    ),
    async () => {
      await withServer(rt, {}, async (h) => {
        const proxy = await h.proxy();
        const closes: { info: CloseInfo; at: number }[] = [];
        const c = await h.dial({
          heartbeat: { intervalMs: 300, timeoutMs: 300 },
          onClose: (info) => closes.push({ info, at: Date.now() }),
        }, `ws://127.0.0.1:${proxy.port}/ws`);
        assert.deepEqual(await within(c.request({ op: 'echo', value: 1 }), 5000, 'echo'), {
          echo: 1,
        });
        const pending = c.request({ op: 'hold' }).catch((e) => e);
        proxy.mode = { kind: 'blackhole' };
        const startedAt = Date.now();
        await eventually(() => closes.length === 1, 5000, 'the heartbeat loss');
        const elapsed = closes[0].at - startedAt;
        assert.equal(closes[0].info.code, 4000);
        assert.equal(closes[0].info.reason, 'heartbeat timeout');
        assert.ok(elapsed >= 290, `declared lost after ${elapsed} ms: not before the timeout`);
        assert.ok(elapsed <= 600 + 150, `declared lost after ${elapsed} ms`);
        const error = await within(pending, 1000, 'the pending request');
        assert.ok(error instanceof StreamResetError);
        assert.equal(error.code, 'connection_lost');
      });
    },
  );

  test(
    named(
      rt,
      'dialer is not held by a close handshake that never completes: it redials, and close() settles at once',
      ['WSM-DIAL-007', 'WSM-DIAL-009'],
    ),
    async () => {
      await withServer(rt, {}, async (h) => {
        const proxy = await h.proxy();
        const dials: number[] = [];
        const closes: CloseInfo[] = [];
        const c = await h.dial({
          heartbeat: { intervalMs: 200, timeoutMs: 200 },
          reconnect: { initialDelayMs: 10, jitter: 0 },
          onClose: (info) => closes.push(info),
        }, () => {
          dials.push(Date.now());
          return `ws://127.0.0.1:${proxy.port}/ws`;
        });
        // The dialer's close frame (4000) vanishes and no answer ever comes back on that socket.
        proxy.mode = { kind: 'blackhole' };
        const startedAt = Date.now();
        await eventually(() => closes.length === 1, 5000, 'the heartbeat loss');
        proxy.mode = { kind: 'pass' };
        await eventually(() => dials.length === 2, 2000, 'the redial');
        assert.ok(
          dials[1] - startedAt <= 400 + 10 + 300,
          `redialled after ${dials[1] - startedAt} ms`,
        );
        await within(c.opened(), 5000, 'the new connection');
        // close() on a blackholed socket: the closing handshake never completes, close() settles.
        proxy.mode = { kind: 'blackhole' };
        const closing = Date.now();
        const info = await within(c.close(4000, 'bye'), 1000, 'close() on a blackholed socket');
        assert.ok(Date.now() - closing < 1000);
        assert.equal(info.willRetry, false);
        assert.equal(c.state, 'closed');
      });
    },
  );

  test(
    named(
      rt,
      'connection cut at any byte offset of a 3-message exchange never delivers half a message and settles every promise',
      ['WSM-WIRE-002'],
    ),
    async () => {
      await withServer(rt, {}, async (h) => {
        const proxy = await h.proxy();
        const url = `ws://127.0.0.1:${proxy.port}/ws`;
        const hello = { op: 'hello', tags: ['cut'] };
        const question = { op: 'echo', value: 'v'.repeat(40) };
        const attempt = async (): Promise<'answered' | 'failed'> => {
          let c: Connection;
          try {
            c = await dialOn(rt, url, {
              reconnect: false,
              heartbeat: false,
              handshakeTimeoutMs: 3000,
              hello: { payload: hello, timeoutMs: 3000 },
            });
          } catch (error) {
            assert.ok(error instanceof ConnectError, `connect() rejected with ${error}`);
            return 'failed';
          }
          try {
            const answer = await c.request(question, { timeoutMs: 3000 });
            assert.deepEqual(answer, { echo: question.value });
            return 'answered';
          } catch (error) {
            assert.ok(
              (error instanceof StreamResetError && error.code === 'connection_lost') ||
                error instanceof NotConnectedError,
              `the request failed with ${error}`,
            );
            return 'failed';
          } finally {
            await c.close();
          }
        };
        // The exchange's size, uncut: upgrade, hello, request one way; 101, welcome, answer back.
        assert.equal(await within(attempt(), 5000, 'the uncut exchange'), 'answered');
        const total = { ...proxy.forwarded };
        const outcomes = { answered: 0, failed: 0 };
        for (const direction of ['up', 'down'] as const) {
          // Every offset inside the exchange, and a few past it (the close handshake's bytes).
          for (let n = 0; n <= total[direction] + 4; n++) {
            proxy.mode = { kind: 'cut', afterBytes: n, direction };
            outcomes[await within(attempt(), 10_000, `the exchange cut at ${direction} ${n}`)]++;
          }
        }
        proxy.mode = { kind: 'pass' };
        // Every payload a handler saw was whole.
        for (const p of h.state.payloads) {
          assert.ok(
            JSON.stringify(p) === JSON.stringify(hello) ||
              JSON.stringify(p) === JSON.stringify(question),
            `a handler saw ${JSON.stringify(p)}`,
          );
        }
        assert.ok(outcomes.failed >= total.up + total.down, 'every cut inside the exchange failed');
        assert.ok(outcomes.answered >= 1, 'cuts past the exchange do not disturb it');
        console.log(
          `cut exchange: ${total.up} + ${total.down} offsets, ${outcomes.answered} answered, ${outcomes.failed} failed cleanly`,
        );
        await h.healthy();
      });
    },
  );
}
