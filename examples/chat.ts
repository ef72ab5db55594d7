// A room chat in one process: a Deno acceptor tags each peer with its room, and a message is
// broadcast to the room. Run: deno run -A examples/chat.ts
import { connect } from '../mod.ts';
import { Acceptor } from '../lib/acceptor.ts';
import { upgrade } from '../lib/adapters/deno.ts';

const acceptor: Acceptor = new Acceptor({
  onStream(stream, peer) {
    const { room, user, text } = stream.payload as { room: string; user?: string; text?: string };
    if (user !== undefined) { // the hello: join the room
      peer.data.user = user;
      peer.tags.add(`room:${room}`);
      return `${user} joined ${room}`;
    }
    return acceptor.broadcast(`room:${room}`, `${peer.data.user}: ${text}`);
  },
});
const server = Deno.serve(
  { hostname: '127.0.0.1', port: 0, onListen() {} },
  (request) => upgrade(request, acceptor),
);
const join = (user: string) =>
  connect(`ws://127.0.0.1:${server.addr.port}`, {
    hello: { payload: { room: 'lobby', user } },
    onPublish: ({ payload }) => console.log(`[${user}'s screen] ${payload}`),
  });

const ada = await join('ada');
const bob = await join('bob');
console.log(ada.welcome, '/', bob.welcome);
console.log('reached', await ada.request({ room: 'lobby', text: 'hi bob' }), 'peers');
console.log('reached', await bob.request({ room: 'lobby', text: 'hi ada' }), 'peers');
await ada.request({ room: 'elsewhere', text: 'nobody hears this' });
await Promise.all([ada.close(), bob.close()]);
await acceptor.close();
await server.shutdown();
