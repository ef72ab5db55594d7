// redisHistory() against a real redis-server (tests/_redis.ts starts one per test on a loopback
// port; CI installs redis-server, so these never skip): the conformance suite every History
// passes, then what is Redis's own: the key layout, a lost counter, a Redis restart with and
// without persistence, command failures and timeouts.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createCluster } from 'redis';
import {
  type RedisHistory,
  redisHistory,
  type RedisHistoryOptions,
  type RedisScriptClient,
} from 'muxws/redis';
import { MuxwsError, TimeoutError } from 'muxws';
import { historySuite } from '../_history_suite.ts';
import { type Client, connectClient, destroy, startRedis, startRedisCluster } from '../_redis.ts';
import { fakeTime } from '../_fake_time.ts';
import { waitFor, within } from '../_wait.ts';

historySuite('redisHistory()', async (options) => {
  const redis = await startRedis();
  const clients: Client[] = [];
  try {
    clients.push(await connectClient(redis.url), await connectClient(redis.url));
  } catch (error) {
    clients.forEach(destroy);
    await redis.stop();
    throw error;
  }
  const stores = [
    redisHistory({ client: clients[0], ...options }),
    redisHistory({ client: clients[1], ...options }),
  ] as const;
  return {
    stores,
    // Redis restarted without persistence, as far as the keys go: the same stores over nothing.
    async lose() {
      await clients[0].flushAll();
      return stores;
    },
    async close() {
      clients.forEach(destroy);
      await redis.stop();
    },
  };
});

/** One Redis, one client, one store; all closed in `finally`. */
async function withRedis(
  options: Omit<RedisHistoryOptions, 'client'>,
  body: (history: RedisHistory, client: Client) => Promise<void>,
): Promise<void> {
  const redis = await startRedis();
  let client: Client | undefined;
  try {
    client = await connectClient(redis.url);
    await body(redisHistory({ client, ...options }), client);
  } finally {
    destroy(client);
    await redis.stop();
  }
}

test(
  'redisHistory() keeps a stream of <seq>-0 ids and a counter hash per tag under hash-tagged keys (WSM-REC-005)',
  {
    timeout: 30_000,
  },
  async () => {
    await withRedis({ prefix: 'app:' }, async (history, client) => {
      assert.equal(history.prefix, 'app:');
      const before = Date.now();
      const first = await history.append('room:1', 'hello');
      const after = Date.now();
      // The first number is drawn from the clock: floor(now) * 1024 + 1.
      assert.ok(
        first >= before * 1024 + 1 && first <= after * 1024 + 1,
        `first seq ${first} drawn between ${before} and ${after} ms`,
      );
      await history.append('room:1', new Uint8Array([0, 255]));
      assert.equal(await client.type('app:{room:1}:log'), 'stream');
      assert.equal(await client.type('app:{room:1}:seq'), 'hash');
      const log = (await client.xRange('app:{room:1}:log', '-', '+')) ?? [];
      assert.deepEqual(log.map((entry) => entry.id), [`${first}-0`, `${first + 1}-0`]);
      assert.equal(log[0].message.k, 's');
      assert.equal(log[0].message.d, 'hello');
      assert.equal(log[1].message.k, 'b');
      assert.equal(log[1].message.d, 'AP8=');
      const counter = await client.hGetAll('app:{room:1}:seq');
      assert.equal(counter.seq, String(first + 1));
      assert.equal(counter.origin, String(first));
      assert.match(counter.epoch, /^[0-9a-f-]{36}$/);
      const range = await history.range('room:1', 0, 10);
      assert.equal(range.epoch, counter.epoch);
      // The log expires maxAgeMs after its last append; the counter never does.
      const logTtl = await client.pTTL('app:{room:1}:log');
      assert.ok(logTtl > 0 && logTtl <= 120_000, `log TTL ${logTtl}`);
      assert.equal(await client.pTTL('app:{room:1}:seq'), -1);
    });
  },
);

test(
  'redisHistory() runs on a Redis Cluster, both keys of a tag on one slot (WSM-REC-005)',
  { timeout: 30_000 },
  async () => {
    // One node serving every slot: Redis still refuses a script whose keys hash apart.
    const redis = await startRedisCluster();
    let cluster: ReturnType<typeof createCluster> | undefined;
    try {
      cluster = createCluster({ rootNodes: [{ url: redis.url }] });
      cluster.on('error', () => {});
      await within(cluster.connect(), 5000, 'the cluster client to connect');
      const history = redisHistory({ client: cluster });
      for (const tag of ['room:1', 'a}b', '{x}']) {
        const first = await history.append(tag, 'one');
        assert.equal(await history.append(tag, new Uint8Array([7])), first + 1);
        const { entries, gap, head } = await history.range(tag, 0, 10);
        assert.deepEqual(entries, [
          { seq: first, data: 'one' },
          { seq: first + 1, data: new Uint8Array([7]) },
        ]);
        assert.equal(gap, false);
        assert.equal(head, first + 1);
      }
    } finally {
      await cluster?.destroy();
      await redis.stop();
    }
  },
);

test(
  'redisHistory() sends a script by its SHA1, and its body only when Redis does not hold it (WSM-REC-005)',
  { timeout: 30_000 },
  async () => {
    await withRedis({}, async (_, real) => {
      const calls: string[] = [];
      const counting: RedisScriptClient = {
        eval(script, options) {
          calls.push('eval');
          return real.eval(script, options);
        },
        evalSha(sha1, options) {
          calls.push('evalSha');
          return real.evalSha(sha1, options);
        },
      };
      // On a clock at 0 numbers start at 1.
      const history = redisHistory({ client: counting, now: () => 0 });
      for (let i = 1; i <= 3; i++) assert.equal(await history.append('room', `m${i}`), i);
      assert.deepEqual(calls, ['eval', 'evalSha', 'evalSha']);
      calls.length = 0;
      await real.scriptFlush();
      // The refused call ran nothing, so sent again as EVAL it takes the next seq.
      assert.equal(await history.append('room', 'm4'), 4);
      assert.deepEqual(calls, ['evalSha', 'eval']);
    });
  },
);

/**
 * A client over `real` that logs each call (`eval m5`, `evalSha m5`) and each answer (`ok m5`,
 * `NOSCRIPT m5`) by the data of the append, and keeps the scripts it was sent.
 */
function loggingClient(
  real: Client,
  log: string[],
  scripts: Set<string>,
): Required<Pick<RedisScriptClient, 'eval' | 'evalSha'>> {
  const logged = (how: string, data: string | undefined, reply: Promise<unknown>) => {
    log.push(`${how} ${data}`);
    return reply.then((value) => {
      log.push(`ok ${data}`);
      return value;
    }, (error) => {
      log.push(`${String(error?.message).split(' ')[0]} ${data}`);
      throw error;
    });
  };
  return {
    eval(script, options) {
      scripts.add(script);
      return logged('eval', options.arguments[5], real.eval(script, options));
    },
    evalSha(sha1, options) {
      return logged('evalSha', options.arguments[5], real.evalSha(sha1, options));
    },
  };
}

test(
  'redisHistory() applies concurrent appends to one tag refused with NOSCRIPT in the order of their calls, loading the script once (WSM-REC-005)',
  { timeout: 30_000 },
  async () => {
    await withRedis({}, async (_, real) => {
      const log: string[] = [];
      let late: Promise<number> | undefined;
      const logging = loggingClient(real, log, new Set());
      const client: RedisScriptClient = {
        eval(script, options) {
          // An append called while the refused ones are sent again waits behind them.
          if (options.arguments[5] === 'm5') late = history.append('room', 'm10');
          return logging.eval(script, options);
        },
        evalSha: logging.evalSha,
      };
      // On a clock at 0 numbers start at 1.
      const history = redisHistory({ client, now: () => 0 });
      for (let i = 1; i <= 4; i++) assert.equal(await history.append('room', `m${i}`), i);
      await real.scriptFlush();
      log.length = 0;
      const names = ['m5', 'm6', 'm7', 'm8', 'm9'];
      const seqs = await Promise.all(names.map((name) => history.append('room', name)));
      assert.deepEqual(seqs, [5, 6, 7, 8, 9]);
      assert.equal(await within(late!, 5000, 'the append that waited'), 10);
      assert.deepEqual(log, [
        ...names.map((name) => `evalSha ${name}`),
        ...names.map((name) => `NOSCRIPT ${name}`),
        'eval m5',
        ...names.slice(1).map((name) => `evalSha ${name}`),
        ...names.map((name) => `ok ${name}`),
        'evalSha m10',
        'ok m10',
      ]);
      const { entries } = await history.range('room', 0, 20);
      assert.deepEqual(entries.map((e) => e.data), [...Array(10)].map((_, i) => `m${i + 1}`));
      assert.deepEqual(entries.map((e) => e.seq), [...Array(10)].map((_, i) => i + 1));
    });
  },
);

test(
  'redisHistory() rejects an append refused with NOSCRIPT once a later append of its tag was applied, so seqs keep the order of the calls (WSM-REC-005)',
  { timeout: 30_000 },
  async () => {
    await withRedis({}, async (_, real) => {
      const log: string[] = [];
      const scripts = new Set<string>();
      const logging = loggingClient(real, log, scripts);
      const client: RedisScriptClient = {
        eval: logging.eval,
        evalSha(sha1, options) {
          if (options.arguments[5] !== 'm3') return logging.evalSha(sha1, options);
          // Another client loads the script between the two appends.
          return Promise.all([...scripts].map((script) => real.scriptLoad(script)))
            .then(() => logging.evalSha(sha1, options));
        },
      };
      // On a clock at 0 numbers start at 1.
      const history = redisHistory({ client, now: () => 0 });
      assert.equal(await history.append('room', 'm1'), 1);
      await real.scriptFlush();
      const results = await Promise.allSettled([
        history.append('room', 'm2'),
        history.append('room', 'm3'),
      ]);
      assert.equal(results[0].status, 'rejected');
      assert.match(
        String((results[0] as PromiseRejectedResult).reason.message),
        /^Cannot append to the history of tag "room" in Redis: NOSCRIPT/,
      );
      assert.deepEqual(results[1], { status: 'fulfilled', value: 2 });
      assert.equal(await history.append('room', 'm4'), 3);
      const { entries } = await history.range('room', 0, 10);
      assert.deepEqual(entries.map((e) => e.data), ['m1', 'm3', 'm4']);
    });
  },
);

test(
  'redisHistory() sends an append as EVALSHA while an earlier one of its tag is, even after another tag was refused with NOSCRIPT, so both keep call order (WSM-REC-005)',
  { timeout: 30_000 },
  async () => {
    await withRedis({}, async (_, real) => {
      let late: Promise<number> | undefined;
      const logging = loggingClient(real, [], new Set());
      const client: RedisScriptClient = {
        eval(script, options) {
          // Called once "other" was refused (the script is known gone) while m5 is in flight.
          if (options.arguments[5] === 'x') late = history.append('room', 'm6');
          return logging.eval(script, options);
        },
        evalSha: logging.evalSha,
      };
      // On a clock at 0 numbers start at 1.
      const history = redisHistory({ client, now: () => 0 });
      for (let i = 1; i <= 4; i++) assert.equal(await history.append('room', `m${i}`), i);
      await real.scriptFlush();
      const other = history.append('other', 'x');
      const early = history.append('room', 'm5');
      assert.equal(await other, 1);
      assert.deepEqual(await Promise.all([early, late!]), [5, 6]);
      const { entries } = await history.range('room', 0, 10);
      assert.deepEqual(entries.map((e) => e.data), ['m1', 'm2', 'm3', 'm4', 'm5', 'm6']);
    });
  },
);

test(
  'redisHistory() applies concurrent appends to one tag in call order right after Redis restarted without persistence (WSM-REC-005)',
  { timeout: 30_000 },
  async () => {
    const redis = await startRedis();
    let client: Client | undefined;
    try {
      client = await connectClient(redis.url);
      const history = redisHistory({ client });
      for (let i = 1; i <= 3; i++) await history.append('room', `old ${i}`);
      const old = await history.head('room');
      await redis.stop();
      await redis.start();
      await waitFor(() => client!.isReady, 5000, 'the client to reconnect', 20);
      const names = ['m1', 'm2', 'm3', 'm4', 'm5'];
      const seqs = await within(
        Promise.all(names.map((name) => history.append('room', name))),
        5000,
        'the appends after the restart',
      );
      // Numbered on from the clock, above the seqs Redis lost, one by one in call order.
      assert.ok(seqs[0] > old, `the first seq after the restart ${seqs[0]} is above ${old}`);
      assert.deepEqual(seqs, [0, 1, 2, 3, 4].map((i) => seqs[0] + i));
      const { entries } = await history.range('room', 0, 10);
      assert.deepEqual(entries.map((e) => e.data), names);
    } finally {
      destroy(client);
      await redis.stop();
    }
  },
);

test('redisHistory() sends an append refused with NOSCRIPT again with the deadline of its call, and times it out commandTimeoutMs after the call (WSM-REC-005)', async () => {
  const sends: {
    how: string;
    args: string[];
    answer: { resolve(reply: unknown): void; reject(error: Error): void };
  }[] = [];
  const held = (how: string, args: string[]) =>
    new Promise<unknown>((resolve, reject) =>
      sends.push({ how, args, answer: { resolve, reject } })
    );
  const client: RedisScriptClient = {
    eval: (_, options) => held('eval', options.arguments),
    evalSha: (_, options) => held('evalSha', options.arguments),
  };
  const history = redisHistory({ client, commandTimeoutMs: 1000 });
  // The digest of the script is computed asynchronously: append until it is sent by its SHA1.
  for (let seq = 1; sends.at(-1)?.how !== 'evalSha'; seq++) {
    assert.ok(seq < 100, 'the append script was never sent as EVALSHA');
    const appended = history.append('room', 'warm');
    sends.at(-1)!.answer.resolve([seq, Date.now()]);
    await appended;
    await new Promise((resolve) => setTimeout(resolve, 0));
  }
  sends.length = 0;
  using clock = fakeTime();
  const seen: unknown[] = ['pending', 'pending'];
  ['a', 'b'].forEach((data, i) => {
    history.append('room', data).then((seq) => (seen[i] = seq), (error) => (seen[i] = error));
  });
  assert.deepEqual(sends.map((send) => send.how), ['evalSha', 'evalSha']);
  await clock.tickAsync(600);
  for (const send of sends) send.answer.reject(new Error('NOSCRIPT No matching script'));
  await clock.tickAsync(0);
  assert.deepEqual(sends.map((send) => send.how), ['evalSha', 'evalSha', 'eval', 'evalSha']);
  const deadlines = sends.map((send) => send.args[6]);
  assert.ok(Number(deadlines[0]) > 0, `deadline ${deadlines[0]}`);
  assert.deepEqual(deadlines.slice(2), deadlines.slice(0, 2));
  await clock.tickAsync(399);
  assert.deepEqual([...seen], ['pending', 'pending']);
  await clock.tickAsync(1);
  for (const outcome of seen) {
    assert.ok(outcome instanceof TimeoutError, String(outcome));
    assert.equal(
      outcome.message,
      'Cannot append to the history of tag "room" in Redis: no answer within 1000 ms',
    );
  }
  assert.equal(clock.countTimers(), 0);
});

test(
  'redisHistory() removes entries older than maxAgeMs from Redis as it appends (WSM-REC-005)',
  { timeout: 30_000 },
  async () => {
    let time = 1_700_000_000_000;
    await withRedis({ maxAgeMs: 60_000, now: () => time }, async (history, client) => {
      const base = await history.append('room', 'old 1') - 1;
      for (let i = 2; i <= 50; i++) await history.append('room', `old ${i}`);
      time += 30_000;
      await history.append('room', 'young 51');
      time += 30_001; // 1 to 50 are 60001 ms old now
      const aged = await history.range('room', 0, 100);
      assert.deepEqual(aged.entries.map((e) => e.seq), [base + 51]);
      assert.equal(await client.xLen('muxws:history:{room}:log'), 51, 'reads trim nothing');
      assert.equal(await history.append('room', 'new 52'), base + 52);
      const log = (await client.xRange('muxws:history:{room}:log', '-', '+')) ?? [];
      assert.deepEqual(log.map((entry) => entry.id), [`${base + 51}-0`, `${base + 52}-0`]);
    });
  },
);

test(
  'redisHistory() continues above the log when its counter was deleted, never going backwards (WSM-REC-005)',
  {
    timeout: 30_000,
  },
  async () => {
    await withRedis({}, async (history, client) => {
      const base = await history.append('room', 'm1') - 1;
      for (let i = 2; i <= 5; i++) await history.append('room', `m${i}`);
      await client.del('muxws:history:{room}:seq');
      assert.equal(await history.head('room'), base + 5);
      assert.equal(await history.append('room', 'm6'), base + 6);
      // With every entry trimmed away too, the stream's last id still holds the count.
      await client.del('muxws:history:{room}:seq');
      await client.xTrim('muxws:history:{room}:log', 'MAXLEN', 0);
      assert.equal(await history.head('room'), base + 6);
      assert.equal(await history.append('room', 'm7'), base + 7);
    });
  },
);

test('redisHistory() rejects with the tag and what Redis said when a command fails (WSM-REC-005)', {
  timeout: 30_000,
}, async () => {
  await withRedis({}, async (history, client) => {
    await client.set('muxws:history:{room}:log', 'not a stream');
    for (
      const [call, start] of [
        [
          () => history.append('room', 'x'),
          'Cannot append to the history of tag "room" in Redis: ',
        ],
        [() => history.range('room', 0, 10), 'Cannot read the history of tag "room" in Redis: '],
        [() => history.head('room'), 'Cannot read the head of tag "room" in Redis: '],
      ] as const
    ) {
      await assert.rejects(call(), (error: Error) => {
        assert.ok(error instanceof MuxwsError, String(error));
        assert.ok(error.message.startsWith(start), error.message);
        assert.match(error.message, /WRONGTYPE/);
        assert.ok(error.cause instanceof Error);
        return true;
      });
    }
  });
});

test(
  'redisHistory() rejects during a Redis restart, then numbers on above the lost seqs with a gap and a new epoch when nothing persisted (WSM-REC-005)',
  {
    timeout: 30_000,
  },
  async () => {
    const redis = await startRedis();
    let client: Client | undefined;
    try {
      client = await connectClient(redis.url);
      const history = redisHistory({ client, commandTimeoutMs: 1000 });
      for (let i = 1; i <= 3; i++) await history.append('room', `m${i}`);
      const before = await history.range('room', 0, 10);
      await redis.stop();
      // Right after the stop, node-redis may not have seen the connection die yet: then it
      // queues the append, the history times it out, and the client sends it after the
      // reconnect, where it must not be applied. Once it has seen it, the append fails at once.
      const started = Date.now();
      await assert.rejects(within(history.append('room', 'lost'), 3000, 'the append to fail'), (
        error: Error,
      ) => {
        assert.ok(error instanceof MuxwsError, String(error));
        assert.match(error.message, /^Cannot append to the history of tag "room" in Redis: /);
        return true;
      });
      assert.ok(Date.now() - started <= 1500, `rejected after ${Date.now() - started} ms`);
      await redis.start();
      await waitFor(() => client!.isReady, 5000, 'the client to reconnect', 20);
      const fresh = await history.append('room', 'after');
      assert.ok(fresh > before.head, `the seq after the restart ${fresh} is above ${before.head}`);
      // A dialer at the old head asks: it gets what was logged since, with a gap for what the
      // old log held.
      const after = await history.range('room', before.head, 10);
      assert.deepEqual(after.entries, [{ seq: fresh, data: 'after' }]);
      assert.equal(after.gap, true);
      assert.equal(after.head, fresh);
      assert.notEqual(after.epoch, before.epoch);
      const fromZero = await history.range('room', 0, 10);
      assert.deepEqual(fromZero.entries, [{ seq: fresh, data: 'after' }]);
      assert.equal(fromZero.gap, false);
    } finally {
      destroy(client);
      await redis.stop();
    }
  },
);

test(
  'redisHistory() continues above the old seqs after a restart of a Redis that persisted (WSM-REC-005)',
  {
    timeout: 30_000,
  },
  async () => {
    const dir = mkdtempSync(join(tmpdir(), 'muxws-redis-'));
    const redis = await startRedis({ dir });
    let client: Client | undefined;
    try {
      client = await connectClient(redis.url);
      const history = redisHistory({ client });
      for (let i = 1; i <= 3; i++) await history.append('room', `m${i}`);
      const before = await history.range('room', 0, 10);
      await redis.stop();
      await redis.start();
      await waitFor(() => client!.isReady, 5000, 'the client to reconnect', 20);
      assert.equal(await history.append('room', 'm4'), before.head + 1);
      const after = await history.range('room', 0, 10);
      assert.deepEqual(after.entries.map((entry) => entry.data), ['m1', 'm2', 'm3', 'm4']);
      assert.equal(after.gap, false);
      assert.equal(after.epoch, before.epoch);
    } finally {
      destroy(client);
      await redis.stop();
      rmSync(dir, { recursive: true, force: true });
    }
  },
);

test(
  'redisHistory() never applies an append that timed out, even when Redis runs it later (WSM-REC-005)',
  {
    timeout: 30_000,
  },
  async () => {
    const redis = await startRedis();
    let client: Client | undefined;
    try {
      const real = client = await connectClient(redis.url);
      // A client that holds calls back while `held` is set, as node-redis does with a command it
      // queued on a connection it has not yet seen die, and sends after the reconnect.
      let held: Promise<void> | undefined;
      let sent: Promise<unknown> = Promise.resolve();
      const delaying: RedisScriptClient = {
        eval(script, options) {
          const wait = held;
          sent = (async () => {
            await wait;
            return await real.eval(script, options);
          })();
          return sent;
        },
      };
      // On a clock at 0 numbers start at 1.
      const history = redisHistory({ client: delaying, commandTimeoutMs: 200, now: () => 0 });
      assert.equal(await history.append('room', 'first'), 1);
      let release = () => {};
      held = new Promise((resolve) => (release = resolve));
      await assert.rejects(
        within(history.append('room', 'late'), 5000, 'the append to time out'),
        TimeoutError,
      );
      held = undefined;
      release();
      await within(sent, 5000, 'Redis to run the late append');
      assert.equal(await history.append('room', 'next'), 2);
      const { entries } = await history.range('room', 0, 10);
      assert.deepEqual(entries.map((entry) => entry.data), ['first', 'next']);
    } finally {
      destroy(client);
      await redis.stop();
    }
  },
);

test('redisHistory() rejects with a TimeoutError when Redis does not answer within commandTimeoutMs (WSM-REC-005)', async () => {
  using clock = fakeTime();
  const silent: RedisScriptClient = { eval: () => new Promise(() => {}) };
  const history = redisHistory({ client: silent, commandTimeoutMs: 2000 });
  const pending = history.append('room', 'x');
  const seen: { outcome: unknown } = { outcome: 'pending' };
  pending.then((value) => (seen.outcome = value), (error) => (seen.outcome = error));
  await clock.tickAsync(1999);
  assert.equal(String(seen.outcome), 'pending');
  await clock.tickAsync(1);
  assert.ok(seen.outcome instanceof TimeoutError, String(seen.outcome));
  assert.equal(
    seen.outcome.message,
    'Cannot append to the history of tag "room" in Redis: no answer within 2000 ms',
  );
  assert.equal(clock.countTimers(), 0);
});

test('redisHistory() rejects at once while the client is not ready, sending nothing (WSM-REC-005)', async () => {
  let sent = 0;
  const offline: RedisScriptClient = {
    isReady: false,
    eval: () => {
      sent++;
      return Promise.resolve(1);
    },
  };
  const history = redisHistory({ client: offline });
  await assert.rejects(history.head('room'), {
    name: 'MuxwsError',
    message: 'Cannot read the head of tag "room" in Redis: the client is not connected',
  });
  assert.equal(sent, 0);
});

test('redisHistory() rejects a bad tag, data, position or limit without sending a command (WSM-REC-005)', async () => {
  let sent = 0;
  const client: RedisScriptClient = {
    eval: () => {
      sent++;
      return Promise.resolve(1);
    },
  };
  const history = redisHistory({ client });
  await assert.rejects(history.append('', 'x'), {
    name: 'TypeError',
    message:
      'Cannot append to the history as the tag must be a string of 1 to 256 characters: current value is ""',
  });
  await assert.rejects(history.append('room', 5 as unknown as string), {
    name: 'TypeError',
    message:
      'Cannot append to the history of tag "room" as the data must be a string or a Uint8Array: current value is 5',
  });
  await assert.rejects(history.range('room', -1, 10), {
    name: 'RangeError',
    message:
      'Cannot read the history of tag "room" as "after" must be an integer of at least 0: current value is -1',
  });
  await assert.rejects(history.range('room', 0, 0), {
    name: 'RangeError',
    message:
      'Cannot read the history of tag "room" as "limit" must be an integer of at least 1: current value is 0',
  });
  assert.equal(sent, 0);
});

test('redisHistory() validates its options at construction (WSM-REC-005)', () => {
  const client: RedisScriptClient = { eval: () => Promise.resolve(0) };
  assert.throws(
    () => redisHistory({ client: {} as RedisScriptClient }),
    {
      name: 'TypeError',
      message:
        'Cannot create redisHistory as "client" must have an eval() method: current value is undefined',
    },
  );
  assert.throws(
    () => redisHistory(null as unknown as RedisHistoryOptions),
    /"options" must be an object/,
  );
  assert.throws(() => redisHistory({ client, maxEntries: 0 }), {
    name: 'RangeError',
    message:
      'Cannot create redisHistory as "maxEntries" must be an integer of at least 1: current value is 0',
  });
  assert.throws(() => redisHistory({ client, maxAgeMs: '1' as unknown as number }), {
    name: 'TypeError',
  });
  assert.throws(() => redisHistory({ client, commandTimeoutMs: 1.5 }), { name: 'RangeError' });
  assert.throws(
    () => redisHistory({ client, prefix: 1 as unknown as string }),
    /"prefix" must be a string/,
  );
  assert.throws(
    () => redisHistory({ client, now: 1 as unknown as () => number }),
    /"now" must be a function/,
  );
});
