// The Cloudflare example's API, shared by the Worker and the Durable Object room (worker.ts) and
// every dialer (the tests): the hello names the user and the topics it follows; the acceptors
// serve the routes below (the room also `say` and `who`), and the dialer serves the two
// `client.*` routes the acceptors call back. A route whose caller writes to it after the OPEN
// (`sum`, `client.collect`) declares those writes as its `upload` and is opened with `stream()`,
// which reads its `output` as the stream's one message.

/** Any value JSON carries: what `echo` sends back as it came. */
export type Json = null | boolean | number | string | readonly Json[] | {
  readonly [key: string]: Json;
};

/** The hello: who the dialer is, and the topics whose broadcasts it wants. */
export interface Hello {
  user: string;
  topics?: readonly string[];
}

/** The welcome: the user the hello named, the peer's id, and which acceptor took it. */
export interface Welcome {
  user: string;
  peer: string;
  where: 'worker' | 'room';
}

/** What `client.answer` answers: who answered, and the question it heard. */
export interface Answer {
  from: string;
  heard: { question: string };
}

/** What `client.collect` answers once the acceptor ended its stream: every word it wrote. */
export interface Collected {
  got: string[];
}

/** What `stats` answers: where it ran, how many peers, and the caller's peer. */
export interface Stats {
  where: 'worker' | 'room';
  peers: number;
  you: { id: string; tags: string[]; user: string | null };
  /** In a room: which object instance answered (a new one after each hibernation). */
  instance?: string;
  /** In a room: how many peers the instance restored when it was constructed. */
  restored?: number;
}

/** One message `say` broadcasts to the peers following its topic. */
export interface Said {
  from: string | null;
  text: string;
}

/** Route names to what the caller sends and what comes back. */
export type Api = {
  ':hello': { input: Hello; output: Welcome };
  /** Answers with the value it was sent. */
  echo: { input: { value: Json }; output: { echo: Json } };
  /** Writes 1..n, then `'done'`. */
  count: { input: { n: number }; message: number | 'done' };
  /** Reads the numbers the caller writes and answers with their sum once the caller ends. */
  sum: { upload: number; output: number };
  /** Opens `client.collect` on the caller, writes the words to it, answers with its replies. */
  push: { input: { words: string[] }; output: { replies: Collected[] } };
  /** Answers `'waited'` after `ms` milliseconds (at most 2000). */
  wait: { input: { ms: number }; output: 'waited' };
  /** Calls `client.answer` on the caller and answers with what it said. */
  ask: { input: { question: string }; output: { answer: Answer } };
  stats: { output: Stats };
  /** Room only: broadcasts a {@linkcode Said} to the topic, answers how many peers it reached. */
  say: { input: { topic: string; text: string }; output: { delivered: number } };
  /** Room only: the users in the room, sorted. */
  who: { output: Array<string | null> };
  /** Served by the dialer: who it is and what it was asked. */
  'client.answer': { input: { question: string }; output: Answer };
  /** Served by the dialer: reads words until the acceptor ends, then answers with them. */
  'client.collect': { upload: string; output: Collected };
};
