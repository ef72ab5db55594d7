/**
 * The dialers of the `presence` scenario (`bench/presence.ts`): `<runtime>
 * bench/_presence_dialers.ts --ports <a>,<b> --count <n> --followers <f>`.
 *
 * It opens `count` dialers, dialer i to node a when i is even and to node b when it is odd, each
 * tracked by its node as `?user=u<i>`, 50 at a time, and one mover per node (`?mover=1`, not
 * tracked: the peer the rounds track and untrack). It prints `OPEN <n>` once all are
 * established, then answers lines on stdin:
 * - `follow`: the first `followers` dialers (half on each node) follow `room:1` with
 *   `presence()`; once every one has its snapshot (at most 60 s), prints `SYNCED
 *   {"ms":[…],"bytes":…,"keys":…}`: each follower's time from its follow to its `onSync`, the
 *   bytes received over all sockets meanwhile divided by the followers (one snapshot each, as
 *   nothing else is sent then), and the keys the first follower holds;
 * - `await join|leave <key> <ms>`: prints `ARMED`, then, once every follower has called
 *   `onJoin` (or `onLeave`) for `key`, or after `ms`, `SEEN {"last":…,"count":…}`: the epoch
 *   time of the last of those callbacks and how many followers called it;
 * - `quit` (or the end of stdin): closes every dialer and exits.
 *
 * @module
 */
import process from 'node:process';
import { connect, type Connection, presence, type PresenceFollower } from 'muxws';
import { DialerWebSocket } from './_clients.ts';
import { epochMs, numberOption, option, readLines } from './_common.ts';

const [portA, portB] = option('ports', '').split(',').map(Number);
const count = numberOption('count', 1000);
const followerCount = Math.min(count, numberOption('followers', 100));

/** Bytes received over every socket of this process, counted as messages arrive. */
let received = 0;
function size(data: unknown): number {
  if (typeof data === 'string') return new TextEncoder().encode(data).length;
  if (data instanceof ArrayBuffer) return data.byteLength;
  if (ArrayBuffer.isView(data)) return data.byteLength;
  return 0;
}

/** The dialer's WebSocket, counting what each socket receives. */
const Counting = class extends (DialerWebSocket as unknown as typeof WebSocket) {
  constructor(url: string | URL, protocols?: string | string[]) {
    super(url, protocols);
    this.addEventListener('message', (event) => (received += size(event.data)));
  }
} as unknown as typeof DialerWebSocket;

function open(port: number, query: string): Promise<Connection> {
  return connect(`ws://127.0.0.1:${port}/presence?${query}`, {
    WebSocket: Counting,
    onError: () => {},
  });
}

/** Who called back for what: `join:<key>` or `leave:<key>` → epoch times, one per follower. */
const seen = new Map<string, number[]>();
/** The callback `await` waits on, and what for. */
let waiting: { what: string; done(): void } | undefined;
function note(what: string): void {
  let times = seen.get(what);
  if (!times) seen.set(what, times = []);
  times.push(epochMs());
  if (waiting?.what === what && times.length >= followers.length) waiting.done();
}

const connections: Connection[] = [];
const ports = [portA, portB];
for (let i = 0; i < count; i += 50) {
  const batch: Promise<Connection>[] = [];
  for (let k = i; k < Math.min(count, i + 50); k++) {
    batch.push(open(ports[k % 2], `user=u${k}&n=${k}`));
  }
  connections.push(...await Promise.all(batch));
}
const movers = await Promise.all(ports.map((port) => open(port, 'mover=1')));
console.log(`OPEN ${connections.length}`);

const followers: PresenceFollower<unknown>[] = [];

async function follow(): Promise<string> {
  received = 0;
  const ms: number[] = [];
  const started = connections.slice(0, followerCount).map((connection) => {
    const at = epochMs();
    const follower = presence(connection, 'room:1', {
      onJoin: (key) => note(`join:${key}`),
      onLeave: (key) => note(`leave:${key}`),
    });
    followers.push(follower);
    return follower.ready.then(() => void ms.push(epochMs() - at));
  });
  let timer: ReturnType<typeof setTimeout> | undefined;
  await Promise.race([
    Promise.all(started),
    new Promise((resolve) => (timer = setTimeout(resolve, 60_000))),
  ]);
  clearTimeout(timer);
  const bytes = ms.length ? received / ms.length : 0;
  const keys = followers.length ? Object.keys(followers[0].state).length : 0;
  return `SYNCED ${JSON.stringify({ ms, bytes, keys })}`;
}

async function awaitAll(what: string, ms: number): Promise<string> {
  seen.delete(what);
  let timer: ReturnType<typeof setTimeout> | undefined;
  const all = new Promise<void>((resolve) => {
    waiting = { what, done: resolve };
    timer = setTimeout(resolve, ms);
  });
  console.log('ARMED');
  await all;
  clearTimeout(timer);
  waiting = undefined;
  const times = seen.get(what) ?? [];
  return `SEEN ${JSON.stringify({ last: Math.max(0, ...times), count: times.length })}`;
}

function quit(): void {
  for (const follower of followers) follower.stop();
  for (const connection of [...connections, ...movers]) void connection.close().catch(() => {});
  setTimeout(() => process.exit(0), 200);
}

readLines((line) => {
  const [command, ...rest] = line.split(' ');
  if (command === 'follow') void follow().then((text) => console.log(text));
  if (command === 'await') {
    void awaitAll(`${rest[0]}:${rest[1]}`, Number(rest[2])).then((text) => console.log(text));
  }
  if (command === 'quit') quit();
});
process.stdin.on('end', quit);
