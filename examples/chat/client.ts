// The chat's dialer side, shared by the tests (Deno, Bun) and the browser page (app.ts): join a
// room, then tour the API — say something, follow a ticker, be refused one it does not know, and stop
// a download after a few chunks.
import {
  connect,
  type Connection,
  type DialerSocketConstructor,
  type PublishMessage,
  StreamResetError,
  subscribe,
  waitWhileReconnecting,
} from '@muxws/core';
import type { Api, Price } from './api.ts';

/** Options of {@linkcode join}. */
export interface JoinOptions {
  /** The room to join. */
  room: string;
  /** Each message broadcast to the room by another peer. */
  onPublish?: (message: PublishMessage) => void;
  /** The WebSocket constructor; a non-browser one may add the `session` cookie. */
  WebSocket?: DialerSocketConstructor;
}

/** Joins `room` at `url`; the welcome (`connection.welcome.motd`) is there once it resolves. */
export function join(url: string, options: JoinOptions): Promise<Connection<Api>> {
  return connect<Api>(url, {
    hello: { payload: { room: options.room } },
    // A call made while a redial is under way is sent once the connection is back.
    whileReconnecting: waitWhileReconnecting(),
    requestTimeoutMs: 5000,
    onPublish: options.onPublish,
    WebSocket: options.WebSocket,
  });
}

/** What {@linkcode tour} saw. */
export interface TourReport {
  motd: string;
  delivered: number;
  prices: Price[];
  refused: string;
  chunks: number;
}

/** Options of {@linkcode tour}. */
export interface TourOptions {
  /** Said in the room. */
  text: string;
  /** A symbol the ticker knows, and how many prices to wait for. */
  symbol: string;
  ticks: number;
  /** A symbol it does not know. */
  missing: string;
  /** How many chunks to ask for, and after how many to stop. */
  size: number;
  stopAfter: number;
}

/** Resolves once `count` prices arrived on a `ticker` subscription to `symbol`. */
async function follow(
  connection: Connection<Api>,
  symbol: string,
  count: number,
): Promise<Price[]> {
  const prices: Price[] = [];
  let enough = (): void => {};
  const done = new Promise<void>((resolve) => enough = resolve);
  const feed = subscribe(connection, 'ticker', { symbol }, {
    onMessage(price) {
      prices.push(price);
      if (prices.length === count) enough();
    },
  });
  try {
    await feed.ready; // the acceptor took it: the first price is in
    await done;
    return prices;
  } finally {
    feed.unsubscribe();
  }
}

/** The reset code the acceptor refused a `ticker` subscription to `symbol` with. */
async function refusal(connection: Connection<Api>, symbol: string): Promise<string> {
  const feed = subscribe(connection, 'ticker', { symbol }, { onMessage() {} });
  try {
    await feed.ready;
  } catch (error) {
    if (error instanceof StreamResetError) return `${feed.state} ${error.code}`;
    throw error;
  }
  feed.unsubscribe();
  throw new Error(`Expected the ticker to refuse ${symbol}, found it active`);
}

/** Reads `stopAfter` chunks of a `download`, then aborts it. */
async function sample(
  connection: Connection<Api>,
  size: number,
  stopAfter: number,
): Promise<number> {
  const controller = new AbortController();
  const stream = connection.stream('download', { size }, { end: true, signal: controller.signal });
  let chunks = 0;
  for await (const _chunk of stream) {
    if (++chunks === stopAfter) break;
  }
  controller.abort(); // resets the stream with `cancel`: the handler's signal aborts
  return chunks;
}

/** Runs through every route of the chat's API once. */
export async function tour(connection: Connection<Api>, options: TourOptions): Promise<TourReport> {
  const { delivered } = await connection.call('chat.say', { text: options.text });
  return {
    motd: connection.welcome?.motd ?? '',
    delivered,
    prices: await follow(connection, options.symbol, options.ticks),
    refused: await refusal(connection, options.missing),
    chunks: await sample(connection, options.size, options.stopAfter),
  };
}
