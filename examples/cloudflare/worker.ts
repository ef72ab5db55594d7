/**
 * muxws on Cloudflare Workers: a plain Worker acceptor and a Durable Object chat room.
 *
 * - `GET /echo` (WebSocket): a plain Worker; each socket is served by the request that upgraded
 *   it (`upgrade()` from `@muxws/core/cloudflare`). `GET /hono` is the same through a Hono app
 *   (`muxws()` from `@muxws/core/hono`).
 * - `GET /room/<name>` (WebSocket): the Durable Object `Room` of that name, on the hibernation
 *   API (`DurableObjectAcceptor`): tags, broadcast to the room's peers, peers restored after the
 *   object hibernates, and heartbeats answered by the runtime without waking it.
 * - `POST /room/<name>/restart`: the room's acceptor closes gracefully (GOAWAY, drain, 1012) and
 *   a new one takes over; dialers redial on the fast path.
 *
 * Both serve the routes of one `Api` (api.ts), typed on both sides, through `routes`:
 * - the hello `{ user, topics? }` (`onHello`) tags the peer `user:<user>` and `topic:<t>` for
 *   each topic, keeps the user in the peer's `data`, and returns the welcome
 *   `{ user, peer, where }`;
 * - `echo` answers `{ echo: value }`; `wait` answers `'waited'` after up to 2 s;
 * - `ask` calls the dialer back (`peer.call('client.answer')`) and answers with what it said;
 * - `count` streams 1..n then `'done'`; `sum` sums the numbers the dialer writes to it; `push`
 *   opens `client.collect` on the dialer, writes the words to it, and answers with its replies;
 * - in a room only: `say` broadcasts `{ from, text }` to the peers holding `topic:<topic>` and
 *   answers how many it reached, and `who` lists the users;
 * - `stats` answers with the peer count and the asking peer's id, tags and user (in a room also
 *   which object instance answered and how many peers it restored when it woke up).
 *
 * A route neither acceptor serves is reset with `not_found`.
 *
 * Run it with `npx wrangler dev` in this folder; the tests run it in workerd (miniflare).
 *
 * @module
 */
import { Hono } from 'hono';
import { upgradeWebSocket } from 'hono/cloudflare-workers';
import { Acceptor, type Peer, type PeerHello } from '@muxws/core/acceptor';
import {
  DurableObjectAcceptor,
  type DurableObjectStateLike,
  upgrade,
  type WorkersWebSocket,
} from '@muxws/core/cloudflare';
import { muxws } from '@muxws/core/hono';
import type { RouteContext, Routes } from '@muxws/core';
import type { Api, Collected, Hello, Welcome } from './api.ts';

/** The part of a Durable Object namespace binding this Worker uses. */
interface RoomNamespace {
  idFromName(name: string): unknown;
  get(id: unknown): { fetch(request: Request): Promise<Response> };
}

/** The Worker's bindings (wrangler.toml). */
export interface Env {
  /** The `Room` Durable Object namespace. */
  ROOM: RoomNamespace;
}

/** What an acceptor keeps for each peer: the user its hello named (none before the hello). */
interface Member {
  user?: string;
}

/** The routes of one of the example's acceptors, typed from the `Api`. */
type ExampleRoutes = Routes<Api, RouteContext<Peer<Api, Member>>>;

/** What the answering acceptor adds to `stats`: its peer count, and in a room its instance. */
interface Census {
  peers: number;
  instance?: string;
  restored?: number;
}

/** The welcome: tags the peer `user:<user>` and `topic:<t>` for each topic it follows. */
function welcome(
  { payload }: PeerHello<Hello>,
  peer: Peer<Api, Member>,
  where: Welcome['where'],
): Welcome {
  // A hello is what a dialer sent: it may lack what the type promises.
  const user = typeof payload?.user === 'string' ? payload.user : 'anonymous';
  peer.data.user = user;
  peer.tags.add(`user:${user}`);
  for (const topic of Array.isArray(payload?.topics) ? payload.topics : []) {
    peer.tags.add(`topic:${topic}`);
  }
  return { user, peer: peer.id, where };
}

/** Resolves after `ms` milliseconds. */
function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** The routes both acceptors serve; `census` says what the answering one knows for `stats`. */
function sharedRoutes(where: Welcome['where'], census: () => Census): ExampleRoutes {
  return {
    echo: ({ value }) => ({ echo: value }),
    // A stream the acceptor writes to: 1..n, then 'done'; it ends once the generator returns.
    async *count({ n }) {
      for (let i = 1; i <= n; i++) yield i;
      yield 'done';
    },
    // A stream the dialer writes to: the sum of every number it sends, once it ends.
    async sum(_input, { stream }) {
      let sum = 0;
      for await (const value of stream) sum += value;
      return sum;
    },
    // A stream the acceptor opens on the dialer's `client.collect`, writes to and ends; what the
    // dialer answers comes back as this route's answer.
    async push({ words }, { peer }) {
      const down = peer.stream('client.collect', undefined);
      for (const word of words) await down.write(word);
      await down.end();
      const replies: Collected[] = [];
      for await (const reply of down) replies.push(reply);
      return { replies };
    },
    // Keeps a stream in flight for a while (at most 2 s): something for a drain to wait for.
    async wait({ ms }): Promise<'waited'> {
      await sleep(Math.min(ms, 2000));
      return 'waited';
    },
    ask: async ({ question }, { peer }) => ({
      answer: await peer.call('client.answer', { question }, { timeoutMs: 5000 }),
    }),
    stats: (_input, { peer }) => ({
      where,
      ...census(),
      you: { id: peer.id, tags: [...peer.tags].sort(), user: peer.data.user ?? null },
    }),
  };
}

/** The plain Worker's acceptor: made on first use (nothing may be drawn at module load). */
let echoAcceptor: Acceptor<Api, Member> | undefined;

function echo(): Acceptor<Api, Member> {
  if (echoAcceptor) return echoAcceptor;
  const acceptor: Acceptor<Api, Member> = new Acceptor<Api, Member>({
    // idleTimeoutMs: 0, since a sweep timer would belong to one request of this isolate.
    idleTimeoutMs: 0,
    onHello: (hello, peer) => welcome(hello, peer, 'worker'),
    routes: sharedRoutes('worker', () => ({ peers: acceptor.stats.peers })),
  });
  return echoAcceptor = acceptor;
}

/** A chat room: one Durable Object per room name. */
export class Room {
  readonly #state: DurableObjectStateLike;
  #acceptor!: Acceptor<Api, Member>;
  #muxws!: DurableObjectAcceptor;
  /** Changes every time the runtime constructs the object, i.e. after each hibernation. */
  readonly #instance: string = crypto.randomUUID();

  /** Restores the peers of the sockets the object still holds. */
  constructor(state: DurableObjectStateLike) {
    this.#state = state;
    this.#open();
  }

  #open(): void {
    const acceptor: Acceptor<Api, Member> = new Acceptor<Api, Member>({
      // No idle sweep: a pending timer would keep the object from hibernating.
      idleTimeoutMs: 0,
      onHello: (hello, peer) => welcome(hello, peer, 'room'),
      routes: {
        ...sharedRoutes('room', () => ({ peers: acceptor.stats.peers, ...this.info() })),
        say: async ({ topic, text }, { peer }) => ({
          delivered: await acceptor.broadcast(`topic:${topic}`, {
            from: peer.data.user ?? null,
            text,
          }),
        }),
        who: () => [...acceptor.peers('room')].map((p) => p.data.user ?? null).sort(),
      },
    });
    this.#acceptor = acceptor;
    this.#muxws = new DurableObjectAcceptor(this.#state, acceptor);
  }

  /**
   * Upgrades a socket into the room (every peer starts with the tag `room`), or, for
   * `POST /room/<name>/restart`, restarts the room's acceptor: GOAWAY to every peer, each closed
   * with 1012 once its streams are done, dialers redialling spread over 200 ms. (An admin
   * operation: protect it before deploying this example.)
   */
  async fetch(request: Request): Promise<Response> {
    if (request.method === 'POST' && new URL(request.url).pathname.endsWith('/restart')) {
      await this.#acceptor.close({ drainMs: 5000, spreadMs: 200 });
      this.#open();
      return new Response('restarted');
    }
    return this.#muxws.upgrade(request, { tags: ['room'] });
  }

  /** Hibernation API: a message. */
  webSocketMessage(ws: WorkersWebSocket, message: string | ArrayBuffer): void {
    this.#muxws.webSocketMessage(ws, message);
  }

  /** Hibernation API: a close. */
  webSocketClose(ws: WorkersWebSocket, code: number, reason: string, wasClean: boolean): void {
    this.#muxws.webSocketClose(ws, code, reason, wasClean);
  }

  /** Hibernation API: an error. */
  webSocketError(ws: WorkersWebSocket, error: unknown): void {
    this.#muxws.webSocketError(ws, error);
  }

  /** Which object instance this is, and how many peers it restored when it was constructed. */
  info(): { instance: string; restored: number } {
    return { instance: this.#instance, restored: this.#muxws.restored };
  }
}

/**
 * The same plain Worker acceptor behind Hono: `muxws()` from `@muxws/core/hono` answers with its own
 * `WebSocketPair` 101 on Workers (Hono's Workers helper omits `Sec-WebSocket-Protocol`).
 */
const app = new Hono();
app.get('/hono', (c, next) => muxws(echo(), { upgradeWebSocket })(c, next));

/** Routes `/echo` (and `/hono`) to the plain Worker acceptor and `/room/<name>` to that room. */
async function fetch(request: Request, env: Env): Promise<Response> {
  const path = new URL(request.url).pathname;
  if (path === '/echo') return upgrade(request, echo());
  if (path === '/hono') return await app.fetch(request, env);
  const room = /^\/room\/([\w-]{1,64})(\/restart)?$/.exec(path);
  if (room) return await env.ROOM.get(env.ROOM.idFromName(room[1])).fetch(request);
  return new Response('Not found', { status: 404 });
}

export default { fetch };
