// What must type-check for tracked messages: a route's generator yields bare and tracked
// messages of the route's type, reads `ctx.lastEventId`, on the acceptor's routes and the
// dialer's; the subscription's `onMessage` receives the bare message.
import {
  connect,
  type RouteContext,
  type Routes,
  serve,
  subscribe,
  type Tracked,
  tracked,
} from 'muxws';
import { Acceptor, type Peer, tracked as trackedFromAcceptor } from 'muxws/acceptor';

type Api = {
  feed: { input: { topic: string }; message: { price: number } };
  'client.log': { message: string };
};

const prices: { price: number }[] = [{ price: 1 }, { price: 2 }];

export const acceptor: Acceptor<Api> = new Acceptor<Api>({
  routes: {
    feed: async function* ({ topic }, { lastEventId, signal }) {
      const after: string | undefined = lastEventId;
      const start = after === undefined ? 0 : Number(after) + 1;
      for (let i = start; i < prices.length && !signal.aborted; i++) {
        yield tracked(`${topic}:${i}`, prices[i]);
      }
      yield { price: 0 }; // an untracked message beside them
    },
  },
});

export const routes: Routes<Api, RouteContext<Peer<Api>>> = {
  feed: async function* () {
    const tick: Tracked<{ price: number }> = trackedFromAcceptor('1', { price: 1 });
    yield tick;
  },
};

export async function dialer(): Promise<void> {
  const connection = await connect<Api>('wss://example.com/ws', {
    routes: serve({
      'client.log': async function* (_input, ctx) {
        yield tracked(ctx.lastEventId ?? 'first', 'line');
        yield 'plain';
      },
    }),
  });
  const feed = subscribe(connection, 'feed', { topic: 'a' }, {
    onMessage: (message) => message.price.toFixed(),
  });
  feed.unsubscribe();
  const value: { price: number } = tracked('1', { price: 1 }).value;
  const id: string = tracked('1', value).id;
  id.toUpperCase();
}
