// deno-fmt-ignore-file: each wrong use must stay on the one line after its directive
// What must NOT type-check, end to end: each wrong use sits on the line after a
// `@ts-expect-error`, so this file checks only while every one of them is an error.
// tests/types_test.ts also checks that, with those comments removed, the file fails.
import { type Caller, connect, onlineHints, serve, subscribe } from 'muxws';
import { Acceptor, type Peer } from 'muxws/acceptor';

type Api = {
  ':hello': { input: { room: string }; output: { motd: string } };
  'chat.say': { input: { text: string }; output: { delivered: number } };
  ticker: { input: { symbol: string }; message: { price: number } };
  'client.locale': { output: string };
};
type PeerData = { user: string };

export async function dialer(): Promise<void> {
  const connection = await connect<Api>('wss://example.com/ws', { hello: { payload: { room: 'lobby' } } });
  // @ts-expect-error the input of chat.say has a string `text`
  await connection.call('chat.say', { text: 1 });
  // @ts-expect-error no route is called chat.shout
  await connection.call('chat.shout', { text: 'hi' });
  // @ts-expect-error the output of chat.say has no `sent`
  (await connection.call('chat.say', { text: 'hi' })).sent;
  // @ts-expect-error the reserved hello key is not a route
  await connection.call(':hello', { room: 'lobby' });
  // @ts-expect-error a ticker message has no `symbol`
  subscribe(connection, 'ticker', { symbol: 'A' }, { onMessage: (tick) => tick.symbol });
  // @ts-expect-error the input of ticker has a `symbol`
  connection.stream('ticker', { sym: 'A' });
  // @ts-expect-error a ticker message read from its stream has no `symbol`
  for await (const tick of connection.stream('ticker', { symbol: 'A' })) tick.symbol;
  // @ts-expect-error the welcome is { motd: string } | undefined
  connection.welcome.motd;
  // @ts-expect-error the hello payload has a string `room`
  await connect<Api>('wss://example.com/ws', { hello: { payload: { room: 1 } } });
  // @ts-expect-error client.locale, served by the dialer, answers a string
  await connect<Api>('wss://example.com/ws', { routes: serve({ 'client.locale': () => 1 }) });
  // @ts-expect-error routes are what serve() returns, not a plain object
  await connect<Api>('wss://example.com/ws', { routes: { 'client.locale': () => 'en' } });
  // @ts-expect-error a standing subscription is subscribe(connection, …), imported by name
  connection.subscribe('ticker', { symbol: 'A' }, { onMessage: () => {} });
  // @ts-expect-error a routed subscription's input is typed: ticker has a `symbol`
  subscribe(connection, 'ticker', { sym: 'A' }, { onMessage: () => {} });
  // @ts-expect-error waiting while reconnecting is waitWhileReconnecting(), imported by name
  await connect('wss://example.com/ws', { whileReconnecting: 'wait' });
  // @ts-expect-error onRecovered is an option of recovery(), imported by name
  await connect('wss://example.com/ws', { onRecovered: () => {} });
  // @ts-expect-error the recovery option is what recovery() returns
  await connect('wss://example.com/ws', { recovery: onlineHints() });
}

export const wrongOutput = new Acceptor<Api, PeerData>({
  routes: {
    // @ts-expect-error chat.say answers { delivered: number }
    'chat.say': ({ text }) => ({ delivered: text }),
  },
});

export const wrongData = new Acceptor<Api, PeerData>({
  // @ts-expect-error peer.data has no `room`
  onPeer: (peer) => peer.data.room,
});

export const unknownRoute = new Acceptor<Api, PeerData>({
  // @ts-expect-error no route is called chat.shout
  routes: { 'chat.shout': () => ({ delivered: 1 }) },
});

export async function acceptorCalls(peer: Peer<Api, PeerData>): Promise<void> {
  // @ts-expect-error client.locale answers a string
  (await peer.call('client.locale', undefined)).toFixed();
}

// An Api that declares ':hello' needs its hello passed to connect().
export async function forgottenHello(): Promise<void> {
  // @ts-expect-error Api declares ':hello': connect() needs options with its hello
  await connect<Api>('wss://example.com/ws');
  // @ts-expect-error options without the hello
  await connect<Api>('wss://example.com/ws', { heartbeat: false });
  // @ts-expect-error the hello's payload has a `room`
  await connect<Api>('wss://example.com/ws', { hello: { payload: { rooms: 'lobby' } } });
}

// A Caller is typed by its Api as both sides are, and holds only what both sides share.
export async function callers(caller: Caller<Api>): Promise<void> {
  // @ts-expect-error the input of chat.say has a string `text`
  await caller.call('chat.say', { text: 1 });
  // @ts-expect-error no route is called chat.shout
  caller.stream('chat.shout', { text: 'hi' });
  // @ts-expect-error closing is each side's own: a Caller cannot close
  caller.close();
}
