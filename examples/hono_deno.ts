// A muxws acceptor in a Hono app on Deno (Deno Deploy runs it as it is).
// Run: deno run -A examples/hono_deno.ts   (PORT sets the port, default 8000)
// Then dial ws://localhost:8000/ws with connect<Api>() from the package, sending a hello, and
// `call('echo', { text })`.
import { Hono } from 'hono';
import { upgradeWebSocket } from 'hono/deno';
import { Acceptor } from '@muxws/core/acceptor';
import { muxws } from '@muxws/core/hono';

/** What the dialers may call: the hello is answered with the peer's id, `echo` echoes. */
type Api = {
  ':hello': { output: { welcome: string } };
  echo: { input: { text: string }; output: { echo: string } };
};

const acceptor = new Acceptor<Api>({
  onHello: (_hello, peer) => ({ welcome: peer.id }),
  routes: { echo: ({ text }) => ({ echo: text }) },
  onError: (error, peer) => console.error('muxws', peer?.id ?? '', error),
});

const app = new Hono();
app.get('/', (c) => c.text('muxws acceptor: dial /ws'));
app.get('/ws', muxws(acceptor, { upgradeWebSocket }));

const server = Deno.serve({ port: Number(Deno.env.get('PORT') ?? 8000) }, app.fetch);

// On a deploy or Ctrl-C: GOAWAY, let streams finish, close with 1012 so dialers redial at once.
Deno.addSignalListener('SIGINT', async () => {
  await acceptor.close();
  await server.shutdown();
});
