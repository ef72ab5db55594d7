// The cluster chat's API, shared by node.ts and chat.ts: the hello joins a room and is answered
// with a line naming the node; `chat.say` broadcasts to the room and answers with how many of
// the node's own peers it reached.

/** Route names to what the caller sends and what comes back. */
export type Api = {
  ':hello': { input: { room: string; user: string }; output: string };
  'chat.say': { input: { text: string }; output: number };
};
