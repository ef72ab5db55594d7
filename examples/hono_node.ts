// A muxws acceptor in a Hono app on Node (@hono/node-server + @hono/node-ws).
// Run (Node 20 runs JavaScript, so bundle it first with the esbuild dev dependency):
//   npx esbuild examples/hono_node.ts --bundle --platform=node --format=esm \
//     --packages=external --outfile=dist/examples/hono_node.mjs && node dist/examples/hono_node.mjs
// or run the file directly with Deno or Bun. PORT sets the port, default 8000.
// Then dial ws://localhost:8000/ws with connect<Api>() from the package, sending a hello, and
// `call('echo', { text })`.
import { serve } from '@hono/node-server';
import { createNodeWebSocket } from '@hono/node-ws';
import { Hono } from 'hono';
import process from 'node:process';
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
const { injectWebSocket, upgradeWebSocket } = createNodeWebSocket({ app });
app.get('/', (c) => c.text('muxws acceptor: dial /ws'));
app.get('/ws', muxws(acceptor, { upgradeWebSocket }));

const server = serve({ fetch: app.fetch, port: Number(process.env.PORT ?? 8000) });
injectWebSocket(server);

// On a deploy or Ctrl-C: GOAWAY, let streams finish, close with 1012 so dialers redial at once.
process.on('SIGINT', async () => {
  await acceptor.close();
  server.close();
});
