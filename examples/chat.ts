// A room chat in one process: a Deno acceptor tags each peer with the room its hello names, and
// `chat.say` is broadcast to the caller's room. Run: deno run -A examples/chat.ts
// (examples/chat/ is the fuller chat: sign-in, a feed, a download, on Deno, Bun and a browser.)
import { connect } from '@muxws/core';
import { Acceptor } from '@muxws/core/acceptor';
import { upgrade } from '@muxws/core/deno';

/** The hello joins a room; `chat.say` speaks in it and answers with how many peers it reached. */
type Api = {
  ':hello': { input: { room: string; user: string }; output: string };
  'chat.say': { input: { text: string; room?: string }; output: number };
};

/** Who a peer is and where its hello put it. */
interface Member {
  user: string;
  room: string;
}

const acceptor: Acceptor<Api, Member> = new Acceptor<Api, Member>({
  onHello({ payload: { room, user } }, peer) {
    peer.data = { user, room };
    peer.tags.add(`room:${room}`);
    return `${user} joined ${room}`;
  },
  routes: {
    // `room` says somewhere else than the caller's own room.
    'chat.say': ({ text, room }, { peer }) =>
      acceptor.broadcast(`room:${room ?? peer.data.room}`, `${peer.data.user}: ${text}`),
  },
});
const server = Deno.serve(
  { hostname: '127.0.0.1', port: 0, onListen() {} },
  (request) => upgrade(request, acceptor),
);
const join = (user: string) =>
  connect<Api>(`ws://127.0.0.1:${server.addr.port}`, {
    hello: { payload: { room: 'lobby', user } },
    onPublish: ({ payload }) => console.log(`[${user}'s screen] ${payload}`),
  });

const ada = await join('ada');
const bob = await join('bob');
console.log(ada.welcome, '/', bob.welcome);
console.log('reached', await ada.call('chat.say', { text: 'hi bob' }), 'peers');
console.log('reached', await bob.call('chat.say', { text: 'hi ada' }), 'peers');
await ada.call('chat.say', { text: 'nobody hears this', room: 'elsewhere' });
await Promise.all([ada.close(), bob.close()]);
await acceptor.close();
await server.shutdown();
