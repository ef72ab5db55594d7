// Presence in a Durable Object room on a real workerd (miniflare): dialers over the `ws` package
// join through a route, follow the room's presence with presence(), and the room hibernates
// while one peer's grace runs; the object's alarm ends it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import WebSocket from 'ws';
import {
  connect,
  type Connection,
  type DialerSocketConstructor,
  presence,
  type PresenceFollower,
} from 'muxws';
import { bundleWorkerSource, startWorkerd, type WorkerdInstance } from '../_workerd.ts';

/** How long a closed peer's presence stays: longer than workerd takes to hibernate an object. */
const GRACE_MS = 15_000;

const ROOM_WORKER = `
import { Acceptor } from './lib/acceptor/acceptor.ts';
import { DurableObjectAcceptor, durableObjectPresence } from './lib/adapters/cloudflare.ts';

export class Room {
  constructor(ctx) {
    this.instance = crypto.randomUUID();
    this.wokenBy = undefined;
    const acceptor = new Acceptor({
      idleTimeoutMs: 0,
      authorize: (request) => ({ data: { user: new URL(request.url).searchParams.get('user') } }),
      presence: { store: durableObjectPresence(ctx.storage), graceMs: ${GRACE_MS}, batchMs: 0 },
      onStream: async (stream, peer) => {
        if (stream.payload.join) {
          acceptor.presence.track(peer, 'room', peer.data.user, { tab: stream.payload.join });
          await acceptor.presence.flush();
        }
        return {
          instance: this.instance,
          wokenBy: this.wokenBy,
          restored: this.muxws.restored,
          list: acceptor.presence.list('room'),
        };
      },
    });
    this.muxws = new DurableObjectAcceptor(ctx, acceptor);
  }
  fetch(request) {
    this.wokenBy ??= 'fetch';
    return this.muxws.upgrade(request, { tags: ['room'] });
  }
  webSocketMessage(ws, message) {
    this.wokenBy ??= 'message';
    this.muxws.webSocketMessage(ws, message);
  }
  webSocketClose(ws, code, reason) {
    this.wokenBy ??= 'close';
    this.muxws.webSocketClose(ws, code, reason);
  }
  alarm() {
    this.wokenBy ??= 'alarm';
    return this.muxws.alarm();
  }
}
export default {
  fetch(request, env) {
    return env.ROOM.get(env.ROOM.idFromName('presence')).fetch(request);
  },
};
`;

type Meta = { tab: number };
type Api = { ':presence': Meta };

/** What the room answers to every call: who answered, and its list('room'). */
interface View {
  instance: string;
  wokenBy: string;
  restored: number;
  list: Record<string, Meta[]>;
}

/** A dialer in the room, following its presence, with every callback recorded. */
interface Member {
  connection: Connection<Api>;
  follower: PresenceFollower<Meta>;
  /** `join <key>`, `leave <key>` and `sync`, in order. */
  events: string[];
}

/** Resolves once `check()` holds, polling every 20 ms; rejects after `ms`. */
async function until(check: () => boolean, what: string, ms = 5000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`Timed out after ${ms} ms waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

async function enter(worker: WorkerdInstance, user: string): Promise<Member> {
  const connection = await connect<Api>(worker.wsUrl(`/?user=${user}`), {
    WebSocket: WebSocket as unknown as DialerSocketConstructor,
    reconnect: false,
    heartbeat: false,
    handshakeTimeoutMs: 5000,
  });
  const events: string[] = [];
  const follower = presence(connection, 'room', {
    onSync: () => void events.push('sync'),
    onJoin: (key) => void events.push(`join ${key}`),
    onLeave: (key) => void events.push(`leave ${key}`),
  });
  await follower.ready;
  return { connection, follower, events };
}

function call(member: Member, payload: unknown): Promise<View> {
  return member.connection.request(payload, { timeoutMs: 5000 }) as Promise<View>;
}

/** Joins `member` as its user, and waits until every follower in `room` has seen it. */
async function join(member: Member, user: string, tab: number, room: Member[]): Promise<View> {
  const view = await call(member, { join: tab });
  for (const other of room) {
    await until(() => other.events.includes(`join ${user}`), `${user}'s join`);
  }
  return view;
}

/** Every follower's state equals the room's list(). */
async function converged(room: Member[], label: string): Promise<View> {
  const view = await call(room[0], {});
  for (const member of room) assert.deepEqual(member.follower.state, view.list, label);
  return view;
}

test(
  'WSM-PRS-001 WSM-PRS-002 a Durable Object room: followers match list() after each join and leave, and the state survives hibernation',
  {
    timeout: 40_000,
  },
  async () => {
    await using worker = await startWorkerd({
      script: await bundleWorkerSource(ROOM_WORKER),
      durableObjects: { ROOM: 'Room' },
    });
    const room: Member[] = [];
    try {
      const ada = await enter(worker, 'ada');
      room.push(ada);
      await join(ada, 'ada', 1, room);
      await converged(room, 'after ada joined');
      const bob = await enter(worker, 'bob');
      room.push(bob);
      await join(bob, 'bob', 1, room);
      await converged(room, 'after bob joined');
      // bob in a second tab: one key, two metas.
      const bobToo = await enter(worker, 'bob');
      room.push(bobToo);
      await call(bobToo, { join: 2 });
      await until(() => room.every((m) => m.follower.state.bob?.length === 2), "bob's second tab");
      await converged(room, "after bob's second tab joined");
      const cy = await enter(worker, 'cy');
      await join(cy, 'cy', 2, [...room, cy]);
      const before = await converged([...room, cy], 'after cy joined');
      assert.deepEqual(Object.keys(before.list).sort(), ['ada', 'bob', 'cy']);
      await cy.connection.close();
      const closedAt = Date.now();
      // cy is in grace: still listed.
      assert.deepEqual((await converged(room, 'while cy is in grace')).list, before.list);

      // Nothing happens now: workerd hibernates the object about 10 s after its last event, and
      // the alarm at the end of cy's grace wakes it.
      await until(() => ada.events.includes('leave cy'), "cy's leave", GRACE_MS + 15_000);
      for (const member of room) {
        await until(() => member.events.includes('leave cy'), "cy's leave");
      }
      assert.ok(Date.now() - closedAt >= GRACE_MS - 1000, 'cy left before its grace ended');
      const woken = await converged(room, 'after the wake');
      assert.notEqual(woken.instance, before.instance, 'the object did not hibernate');
      assert.equal(woken.wokenBy, 'alarm', 'the alarm woke the object');
      assert.equal(woken.restored, 3);
      const { cy: _, ...stayed } = before.list;
      assert.deepEqual(woken.list, stayed, 'the presences of the restored peers are unchanged');

      // A new join reaches the followers from before the sleep, with no new snapshot.
      const dan = await enter(worker, 'dan');
      room.push(dan);
      await join(dan, 'dan', 3, room);
      await converged(room, 'after dan joined');
      for (const member of [ada, bob, bobToo]) {
        assert.equal(member.events.filter((e) => e === 'sync').length, 1);
        assert.equal(member.events.filter((e) => e === 'join dan').length, 1);
      }
      assert.deepEqual(ada.events, [
        'sync',
        'join ada',
        'join bob',
        'join bob',
        'join cy',
        'leave cy',
        'join dan',
      ]);
    } finally {
      await Promise.all(room.map((member) => member.connection.close()));
    }
  },
);
