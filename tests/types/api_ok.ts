// What must type-check: both sides typed end to end from one Api, through `connect<Api>()` and
// `new Acceptor<Api, PeerData>()`. Checked by tests/types_test.ts with `deno check`; nothing
// here runs.
import {
  type Caller,
  connect,
  type Connection,
  onlineHints,
  recovery,
  serve,
  type Stream,
  subscribe,
  waitWhileReconnecting,
} from 'muxws';
import { Acceptor, type Peer } from 'muxws/acceptor';

type Equal<A, B> = (<T>() => T extends A ? 1 : 2) extends (<T>() => T extends B ? 1 : 2) ? true
  : false;
function expectType<T extends true>(): T | undefined {
  return undefined;
}

type Price = { symbol: string; price: number };
type Api = {
  ':hello': { input: { room: string }; output: { motd: string } };
  'chat.say': { input: { text: string }; output: { delivered: number } };
  ticker: { input: { symbol: string }; message: Price };
  'client.locale': { output: string };
};
type PeerData = { user: string; room: string };

export async function dialer(): Promise<void> {
  const connection = await connect<Api>('wss://example.com/ws', {
    hello: { payload: { room: 'lobby' } },
    routes: serve({
      'client.locale': (_input, { peer }) => peer.state === 'open' ? 'en-GB' : 'en',
    }),
    onOpen: ({ welcome }) => expectType<Equal<typeof welcome, { motd: string } | undefined>>(),
  });
  expectType<Equal<typeof connection, Connection<Api>>>();
  const { delivered } = await connection.call('chat.say', { text: 'hi' }, { timeoutMs: 5000 });
  expectType<Equal<typeof delivered, number>>();
  expectType<Equal<typeof connection.welcome, { motd: string } | undefined>>();
  const feed = connection.stream('ticker', { symbol: 'ACME' });
  expectType<Equal<typeof feed, Stream<Price>>>();
  for await (const tick of feed) tick.price.toFixed(2);
  feed.reset('cancel');
  const subscription = await subscribe(connection, 'ticker', { symbol: 'ACME' }, {
    onMessage: (tick) => tick.price.toFixed(2),
  });
  subscription.unsubscribe();
  // The unrouted forms keep working, untyped.
  const answer = await connection.request({ op: 'time' });
  expectType<Equal<typeof answer, unknown>>();
  await subscribe(connection, { room: 'lobby' }, { onMessage: (message) => message });
  // The features imported by name are option values.
  await connect<Api>('wss://example.com/ws', {
    hello: { payload: { room: 'lobby' } },
    recovery: recovery({ onRecovered: ({ tag, replayed, gap }) => `${tag} ${replayed} ${gap}` }),
    whileReconnecting: waitWhileReconnecting({ maxWaiting: 100 }),
    onlineHints: onlineHints(),
  });

  // Untyped code is unchanged: every part unknown.
  const plain = await connect('wss://example.com/ws');
  expectType<Equal<typeof plain, Connection>>();
  const anything = await plain.call('whatever', 1);
  expectType<Equal<typeof anything, unknown>>();
}

// The hello an Api declares: fixed, as HelloOptions, or a function; an Api without ':hello' and
// the untyped form need no options at all.
export async function hellos(): Promise<void> {
  await connect<Api>('wss://example.com/ws', { hello: { payload: { room: 'a' }, timeoutMs: 5 } });
  await connect<Api>('wss://example.com/ws', { hello: () => ({ payload: { room: 'b' } }) });
  type NoHello = Omit<Api, ':hello'>;
  const plain: Connection<NoHello> = await connect<NoHello>('wss://example.com/ws');
  await plain.call('chat.say', { text: 'hi' });
  await connect<NoHello>('wss://example.com/ws', { heartbeat: false });
  await connect('wss://example.com/ws');
  await connect('wss://example.com/ws', { hello: { payload: 1 } });
}

export const acceptor = new Acceptor<Api, PeerData>({
  onPeer: (peer) => {
    expectType<Equal<typeof peer, Peer<Api, PeerData>>>();
    peer.data.user.toUpperCase();
  },
  routes: {
    'chat.say': ({ text }, { peer, signal }) => ({
      delivered: signal.aborted ? 0 : text.length + peer.data.room.length,
    }),
    ticker: async function* ({ symbol }, { signal }) {
      while (!signal.aborted) yield { symbol, price: 1 };
    },
  },
  onStream: (stream, peer) => peer.data.user + String(stream.payload),
});

export async function acceptorCalls(peer: Peer<Api, PeerData>): Promise<string> {
  const locale = await peer.call('client.locale', undefined);
  expectType<Equal<typeof locale, string>>();
  return locale + peer.data.user;
}

// One function that only calls takes either side: a Peer and a Connection are both a Caller.
async function sayHi(caller: Caller<Api>): Promise<number> {
  const { delivered } = await caller.call('chat.say', { text: 'hi' });
  const feed = caller.stream('ticker', { symbol: 'ACME' });
  expectType<Equal<typeof feed, Stream<Price>>>();
  feed.reset('cancel');
  caller.open({ op: 'raw' }).reset('cancel');
  expectType<Equal<Awaited<ReturnType<typeof caller.request>>, unknown>>();
  return delivered;
}

export async function callers(
  peer: Peer<Api, PeerData>,
  connection: Connection<Api>,
): Promise<number> {
  const callers: Caller<Api>[] = [peer, connection];
  return await sayHi(peer) + await sayHi(connection) + callers.length;
}
