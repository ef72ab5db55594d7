// The chat's API, shared by the acceptor (server.ts) and every dialer (client.ts, the page): the
// hello picks a room and is answered with the room's message of the day; `chat.say` is a request;
// `ticker` a feed of prices (subscribed to); `download` a stream of chunks the caller may stop.

/** One price of the `ticker` feed. */
export interface Price {
  symbol: string;
  price: number;
}

/** One chunk of a `download`. */
export interface Chunk {
  seq: number;
  data: string;
}

/** Route names to what the caller sends and what comes back. */
export type Api = {
  ':hello': { input: { room: string }; output: { motd: string } };
  'chat.say': { input: { text: string }; output: { delivered: number } };
  ticker: { input: { symbol: string }; message: Price };
  download: { input: { size: number }; message: Chunk };
};
