// Subscriptions that resume over real sockets on one runtime's server (WSM-API-005): a routed
// subscription to a real Acceptor whose route yields tracked messages; the TCP connection is
// reset, the dialer redials, and the route continues after the last id the dialer received.
// Loopback ephemeral ports, bounded waits, everything closed in `finally`.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Acceptor } from 'muxws/acceptor';
import { connect, type ConnectOptions, subscribe, tracked } from 'muxws';
import { startFaultProxy } from './_fault_proxy.ts';
import { until } from './_dialer_real.ts';

/** What a suite's server factory returns. */
export interface TrackedServer {
  port: number;
  path: string;
  close(): Promise<void>;
}

type Api = { feed: { input: { topic: string }; message: number } };

/**
 * Runs the real-socket resume test with `serve` (the runtime's server and adapter); `dial` adds
 * the dialer's options the runtime needs (a `WebSocket` class on Node).
 */
export function trackedRealSuite(
  name: string,
  serve: (acceptor: Acceptor<Api>) => Promise<TrackedServer>,
  dial: ConnectOptions<Api> = {},
): void {
  test(`${name}: a subscription re-opened after its connection was reset continues after the last id it received (WSM-API-005)`, async () => {
    const opens: Array<string | undefined> = [];
    const acceptor = new Acceptor<Api>({
      idleTimeoutMs: 0,
      routes: {
        feed: async function* (_input, ctx) {
          opens.push(ctx.lastEventId);
          const start = ctx.lastEventId === undefined ? 1 : Number(ctx.lastEventId) + 1;
          for (let n = start; n < start + 3; n++) yield tracked(String(n), n);
          await new Promise((resolve) => {
            ctx.signal.addEventListener('abort', resolve, { once: true });
          });
        },
      },
    });
    const server = await serve(acceptor);
    const proxy = await startFaultProxy(server.port);
    const got: number[] = [];
    const connection = await connect<Api>(`ws://127.0.0.1:${proxy.port}${server.path}`, {
      heartbeat: false,
      reconnect: { initialDelayMs: 50, jitter: 0 },
      ...dial,
    });
    try {
      subscribe(connection, 'feed', { topic: 'a' }, { onMessage: (n) => void got.push(n) });
      await until(() => got.length === 3, 2000, 'the first three messages');
      proxy.reset();
      await until(() => got.length === 6, 5000, 'the three after the last id');
      assert.deepEqual(got, [1, 2, 3, 4, 5, 6]);
      assert.deepEqual(opens, [undefined, '3']);
    } finally {
      await connection.close();
      await acceptor.close({ drainMs: 0 });
      await proxy.close();
      await server.close();
    }
  });
}
