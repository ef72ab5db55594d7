/**
 * Hostile-input tests of the Redis backplane going down during broadcasts (a real `redis-server`,
 * see `_redis.ts`).
 * @module
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createClient } from 'redis';
import { type RedisBackplane, redisBackplane } from 'muxws/redis';
import { BackplaneError, BackplaneGapError } from 'muxws/backplane';
import { eventually, within } from '../_acceptor_suite.ts';
import { startRedis } from '../_redis.ts';
import { type HostileRuntime, named, sleep, withServer } from './_harness.ts';

/** Registers the tests of this subject for `rt`. */
export function backplaneTests(rt: HostileRuntime): void {
  test(
    named(
      rt,
      'acceptor keeps delivering broadcasts locally without a gap while Redis is down and reports the failures and the gap',
      ['WSM-BP-004'],
    ),
    { timeout: 60_000 },
    async () => {
      const redis = await startRedis();
      const clients: Array<{ destroy(): void }> = [];
      const backplaneErrors: unknown[] = [];
      let backplane: RedisBackplane | undefined;
      try {
        const publisher = createClient({
          url: redis.url,
          socket: { reconnectStrategy: () => 100 },
        });
        const subscriber = publisher.duplicate();
        for (const client of [publisher, subscriber]) {
          client.on('error', () => {});
          clients.push(client);
        }
        await within(Promise.all([publisher.connect(), subscriber.connect()]), 5000, 'Redis');
        backplane = redisBackplane({
          publisher,
          subscriber,
          channel: 'muxws-hostile',
          onError: (error) => backplaneErrors.push(error),
        });
        await within(backplane.ready(), 5000, 'the subscription');
        await withServer(rt, { backplane }, async (h) => {
          const received: unknown[] = [];
          await h.dial({
            hello: { payload: { op: 'hello', tags: ['room'] } },
            onPublish: (m) => void received.push(m.payload),
          });
          let n = 0;
          const counts: number[] = [];
          const tick = async () => counts.push(await h.acceptor.broadcast('room', ++n));
          for (let i = 0; i < 20; i++) {
            await tick();
            await sleep(10);
          }
          await redis.stop();
          for (let i = 0; i < 100; i++) {
            await tick();
            await sleep(10);
          }
          await redis.start();
          for (let i = 0; i < 20; i++) {
            await tick();
            await sleep(10);
          }
          assert.deepEqual(counts, Array(n).fill(1), 'every broadcast reached the local peer');
          await eventually(() => received.length === n, 5000, 'every local delivery');
          assert.deepEqual(received, Array.from({ length: n }, (_, i) => i + 1));
          assert.ok(
            h.errors.some((e) => e instanceof BackplaneError),
            'the failed publishes were reported through onError',
          );
          await eventually(
            () => backplaneErrors.some((e) => e instanceof BackplaneGapError),
            10_000,
            'the gap report',
          );
        });
      } finally {
        await backplane?.close().catch(() => {});
        for (const client of clients) {
          try {
            client.destroy();
          } catch {
            // already closed
          }
        }
        await redis.stop();
      }
    },
  );
}
