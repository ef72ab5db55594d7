/**
 * One backplane node in its own process, for tests/node/redis_backplane_runtimes_test.ts: run as
 * `deno run -A tests/_redis_backplane_node.ts <redis url> <origin> <count> <peers>` or
 * `bun tests/_redis_backplane_node.ts …`.
 *
 * It connects two `redis` clients, makes a `redisBackplane`, prints `READY`, waits for `GO` on
 * stdin, publishes `count` JSON frames and one binary frame, then waits (at most 15 s) until it has
 * received `count + 1` messages from each of `peers` other nodes, and prints `RESULT <json>`: what
 * it received per origin (the numbers in arrival order, the binary frames as byte arrays, the
 * runtime that published them) and every error reported. Exits 0 after cleaning up.
 */
import process from 'node:process';
import { createClient } from 'redis';
import type { BackplaneError, BackplaneMessage } from 'muxws/backplane';
import { redisBackplane } from 'muxws/redis';

const [url, origin, countText, peersText] = process.argv.slice(2);
const count = Number(countText);
const peers = Number(peersText);
const runtime = 'Bun' in globalThis ? 'bun' : 'Deno' in globalThis ? 'deno' : 'node';

const publisher = createClient({ url, socket: { reconnectStrategy: () => 100 } });
const subscriber = publisher.duplicate();
publisher.on('error', () => {});
subscriber.on('error', () => {});
await Promise.all([publisher.connect(), subscriber.connect()]);

const errors: string[] = [];
const received = new Map<
  string,
  { numbers: number[]; binary: number[][]; runtimes: string[]; excepts: string[][] }
>();
const backplane = redisBackplane({
  publisher,
  subscriber,
  channel: 'muxws-runtimes',
  onError: (error: BackplaneError) => errors.push(`${error.name}: ${error.message}`),
});
let total = 0;
let resolveAll: () => void = () => {};
const all = new Promise<void>((resolve) => (resolveAll = resolve));
backplane.subscribe((message: BackplaneMessage) => {
  let entry = received.get(message.origin);
  if (!entry) {
    received.set(message.origin, entry = { numbers: [], binary: [], runtimes: [], excepts: [] });
  }
  if (typeof message.payload === 'string') {
    entry.numbers.push(JSON.parse(message.payload)[3]);
  } else {
    entry.binary.push([...message.payload]);
  }
  const runtimeHeader = message.headers?.runtime;
  if (typeof runtimeHeader === 'string' && !entry.runtimes.includes(runtimeHeader)) {
    entry.runtimes.push(runtimeHeader);
  }
  entry.excepts.push([...message.except]);
  if (++total === peers * (count + 1)) resolveAll();
});
await backplane.ready();
console.log('READY');

let input = '';
await new Promise<void>((resolve) => {
  process.stdin.on('data', (chunk: Uint8Array) => {
    input += new TextDecoder().decode(chunk);
    if (input.includes('GO')) resolve();
  });
});

const published: Promise<void>[] = [];
for (let n = 1; n <= count; n++) {
  published.push(backplane.publish({
    tag: 'room',
    headers: { runtime },
    payload: JSON.stringify([9, 'room', { runtime }, n]),
    except: ['muted'],
    origin,
    codec: 'json',
  }));
}
const bytes = new Uint8Array(256).map((_, i) => 255 - i);
published.push(backplane.publish({
  tag: 'room',
  headers: { runtime },
  payload: bytes,
  except: [],
  origin,
  codec: 'msgpack',
}));
await Promise.all(published);

let timer: ReturnType<typeof setTimeout> | undefined;
await Promise.race([all, new Promise((resolve) => (timer = setTimeout(resolve, 15_000)))]);
clearTimeout(timer);
console.log(
  `RESULT ${JSON.stringify({ runtime, received: Object.fromEntries(received), errors })}`,
);
await backplane.close();
publisher.destroy();
subscriber.destroy();
process.exit(0);
