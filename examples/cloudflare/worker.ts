/**
 * muxws on Cloudflare Workers: a plain Worker acceptor and a Durable Object chat room.
 *
 * - `GET /echo` (WebSocket): a plain Worker; each socket is served by the request that upgraded
 *   it (`upgrade()` from `muxws/cloudflare`). `GET /hono` is the same through a Hono app
 *   (`muxws()` from `muxws/hono`).
 * - `GET /room/<name>` (WebSocket): the Durable Object `Room` of that name, on the hibernation
 *   API (`DurableObjectAcceptor`): tags, broadcast to the room's peers, peers restored after the
 *   object hibernates, and heartbeats answered by the runtime without waking it.
 * - `POST /room/<name>/restart`: the room's acceptor closes gracefully (GOAWAY, drain, 1012) and
 *   a new one takes over; dialers redial on the fast path.
 *
 * Both speak the same small protocol, one request per operation (`{ op, ... }`):
 * - the hello `{ op: 'hello', user, topics? }` (`onHello`) tags the peer `user:<user>` and
 *   `topic:<t>` for each topic and returns the welcome `{ user, peer, where }`;
 * - `{ op: 'echo', value }` returns `{ echo: value }`;
 * - `{ op: 'ask', question }` asks the dialer back (`peer.request()`) and returns its answer;
 * - `{ op: 'count', n }` streams 1..n then `'done'`; `{ op: 'sum' }` sums the numbers the dialer
 *   streams; `{ op: 'push', words }` opens a stream to the dialer, writes the words, and returns
 *   the dialer's replies; `{ op: 'wait', ms }` answers `'waited'` after up to 2 s;
 * - in a room only: `{ op: 'say', topic, text }` broadcasts `{ from, text }` to the peers holding
 *   `topic:<topic>` and returns how many it reached, and `{ op: 'who' }` lists the users;
 * - `{ op: 'stats' }` returns the peer count and the asking peer's id, tags and user (in a room
 *   also which object instance answered and how many peers it restored when it woke up).
 *
 * Run it with `npx wrangler dev` in this folder; the tests run it in workerd (miniflare).
 *
 * @module
 */
import { Hono } from 'hono';
import { upgradeWebSocket } from 'hono/cloudflare-workers';
import { Acceptor, type Peer, type PeerHello } from '../../lib/acceptor.ts';
import {
  DurableObjectAcceptor,
  type DurableObjectStateLike,
  upgrade,
  type WorkersWebSocket,
} from '../../lib/adapters/cloudflare.ts';
import { muxws } from '../../lib/adapters/hono.ts';
import { StreamError } from '../../lib/errors.ts';
import type { Stream } from '../../lib/stream.ts';
import type { WelcomeOf } from '../../lib/api.ts';

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

type Operation = { op?: unknown; [field: string]: unknown };

/** The hello every dialer sends: who it is, and the topics it follows. */
interface HelloPayload {
  op?: 'hello';
  user?: string;
  topics?: readonly string[];
}

/** The example's API: only the hello is typed; the other operations are `{ op, ... }` requests. */
type Api = {
  ':hello': { input: HelloPayload; output: { user: string; peer: string; where: string } };
};

/** The welcome: tags the peer `user:<user>` and `topic:<t>` for each topic it follows. */
function welcome(
  { payload }: PeerHello<HelloPayload>,
  peer: Peer<Api>,
  where: string,
): WelcomeOf<Api> {
  const user = String(payload?.user ?? 'anonymous');
  peer.data.user = user;
  peer.tags.add(`user:${user}`);
  for (const topic of Array.isArray(payload?.topics) ? payload.topics : []) {
    peer.tags.add(`topic:${topic}`);
  }
  return { user, peer: peer.id, where };
}

/** Serves one request of the example protocol; `room` is set inside a Durable Object. */
async function serve(
  stream: Stream,
  peer: Peer<Api>,
  acceptor: Acceptor<Api>,
  room?: Room,
): Promise<unknown> {
  const where = room ? 'room' : 'worker';
  const request = (stream.payload ?? {}) as Operation;
  switch (request.op) {
    case 'echo':
      return { echo: request.value };
    case 'count': {
      // A stream the acceptor writes to: 1..n, then 'done' with END.
      for (let i = 1; i <= Number(request.n ?? 0); i++) await stream.write(i);
      return 'done';
    }
    case 'sum': {
      // A stream the dialer writes to: the sum of every number it sends, once it ends.
      let sum = 0;
      for await (const value of stream) sum += Number(value);
      return sum;
    }
    case 'push': {
      // A stream the acceptor opens to the dialer, writes to and ends; the dialer's reply comes
      // back as the answer.
      const down = peer.open({ op: 'push' });
      for (const word of Array.isArray(request.words) ? request.words : []) await down.write(word);
      await down.end();
      const replies: unknown[] = [];
      for await (const reply of down) replies.push(reply);
      return { replies };
    }
    case 'wait':
      // Keeps a stream in flight for a while (at most 2 s): something for a drain to wait for.
      await new Promise((resolve) => setTimeout(resolve, Math.min(Number(request.ms) || 0, 2000)));
      return 'waited';
    case 'ask':
      return { answer: await peer.request({ question: request.question }, { timeoutMs: 5000 }) };
    case 'stats':
      return {
        where,
        peers: acceptor.stats.peers,
        you: { id: peer.id, tags: [...peer.tags].sort(), user: peer.data.user ?? null },
        ...room?.info(),
      };
  }
  if (room) return await room.serve(request, peer);
  throw new StreamError('unknown_op', `Unknown operation ${JSON.stringify(request.op)}`);
}

/** The plain Worker's acceptor: made on first use (nothing may be drawn at module load). */
let echoAcceptor: Acceptor<Api> | undefined;

function echo(): Acceptor<Api> {
  // idleTimeoutMs: 0, since a sweep timer would belong to one request of this isolate.
  echoAcceptor ??= new Acceptor<Api>({
    idleTimeoutMs: 0,
    onHello: (hello, peer) => welcome(hello, peer, 'worker'),
    onStream: (stream, peer) => serve(stream, peer, echoAcceptor!),
  });
  return echoAcceptor;
}

/** A chat room: one Durable Object per room name. */
export class Room {
  readonly #state: DurableObjectStateLike;
  #acceptor!: Acceptor<Api>;
  #muxws!: DurableObjectAcceptor;
  /** Changes every time the runtime constructs the object, i.e. after each hibernation. */
  readonly #instance: string = crypto.randomUUID();

  /** Restores the peers of the sockets the object still holds. */
  constructor(state: DurableObjectStateLike) {
    this.#state = state;
    this.#open();
  }

  #open(): void {
    const acceptor: Acceptor<Api> = new Acceptor<Api>({
      // No idle sweep: a pending timer would keep the object from hibernating.
      idleTimeoutMs: 0,
      onHello: (hello, peer) => welcome(hello, peer, 'room'),
      onStream: (stream, peer) => serve(stream, peer, acceptor, this),
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

  /** The room's own operations. */
  async serve(request: Operation, peer: Peer<Api>): Promise<unknown> {
    switch (request.op) {
      case 'say': {
        const delivered = await this.#acceptor.broadcast(`topic:${request.topic}`, {
          from: peer.data.user,
          text: request.text,
        });
        return { delivered };
      }
      case 'who':
        return [...this.#acceptor.peers('room')].map((p) => p.data.user ?? null).sort();
    }
    throw new StreamError('unknown_op', `Unknown operation ${JSON.stringify(request.op)}`);
  }
}

/**
 * The same plain Worker acceptor behind Hono: `muxws()` from `muxws/hono` answers with its own
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
