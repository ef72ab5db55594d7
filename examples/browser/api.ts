// The browser example's API, shared by the page (app.ts) and its acceptor (acceptor.ts): the
// hello names the client and is answered with who answered; `echo` sends a ping back with the
// name of the acceptor that answered it, so a page can tell the acceptors of a restart apart.

/** What the page sends every 200 ms. */
export interface Ping {
  /** Who sent it: `page` for the page's own pings. */
  from: string;
  /** The ping's number, 1 and up. */
  n: number;
}

/** Route names to what the caller sends and what comes back. */
export type Api = {
  ':hello': { input: { client: string }; output: { hello: string; server: string } };
  echo: { input: Ping; output: { echo: Ping; server: string } };
};
