// Recovery over real sockets on one runtime's server (WSM-REC-002..004): a dialer whose TCP
// connection is reset gets, after its redial, what was broadcast meanwhile, once and in order,
// then live broadcasts. Loopback ephemeral ports, bounded waits, everything closed in `finally`.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Acceptor, memoryHistory } from 'muxws/acceptor';
import { connect, type PublishMessage, type RecoveredInfo, recovery } from 'muxws';
import { startFaultProxy } from './_fault_proxy.ts';
import { until } from './_dialer_real.ts';

/** What a suite's server factory returns. */
export interface RecoveryServer {
  port: number;
  path: string;
  close(): Promise<void>;
}

/** Runs the real-socket recovery test with `serve` (the runtime's server and adapter). */
export function recoveryRealSuite(
  name: string,
  serve: (acceptor: Acceptor) => Promise<RecoveryServer>,
): void {
  test(`${name}: a dialer whose connection was reset recovers what it missed, once and in order (WSM-REC-003, WSM-REC-004)`, async () => {
    const acceptor = new Acceptor({
      idleTimeoutMs: 0,
      history: memoryHistory(),
      onHello: (hello, peer) =>
        void peer.tags.add(`room:${(hello.payload as { room: string }).room}`),
    });
    const server = await serve(acceptor);
    const proxy = await startFaultProxy(server.port);
    const seen: PublishMessage[] = [];
    const recovered: RecoveredInfo[] = [];
    const connection = await connect(`ws://127.0.0.1:${proxy.port}${server.path}`, {
      hello: { payload: { room: 'a' } },
      heartbeat: false,
      reconnect: { initialDelayMs: 300, jitter: 0 },
      onPublish: (message) => void seen.push(message),
      recovery: recovery({ onRecovered: (info) => void recovered.push(info) }),
    });
    try {
      await until(() => [...acceptor.peers('room:a')].length === 1, 2000, 'the tag');
      await acceptor.broadcast('room:a', 1);
      await until(() => seen.length === 1, 2000, 'the first broadcast');
      proxy.reset();
      await until(() => connection.state === 'reconnecting', 2000, 'the loss');
      for (let i = 2; i <= 50; i++) await acceptor.broadcast('room:a', i);
      await until(() => recovered.length === 1, 5000, 'the recovery');
      await acceptor.broadcast('room:a', 51);
      await until(() => seen.length >= 51, 2000, 'the live broadcast');
      assert.deepEqual(seen.map((m) => m.payload), Array.from({ length: 51 }, (_, i) => i + 1));
      const first = seen[0].seq!; // drawn from the clock
      assert.deepEqual(seen.map((m) => m.seq), Array.from({ length: 51 }, (_, i) => first + i));
      assert.deepEqual(recovered, [{ tag: 'room:a', replayed: 49, gap: false }]);
    } finally {
      await connection.close();
      await acceptor.close({ drainMs: 0 });
      await proxy.close();
      await server.close();
    }
  });
}
