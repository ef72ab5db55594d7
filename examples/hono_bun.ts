// A muxws acceptor in a Hono app on Bun.
// Run: bun examples/hono_bun.ts   (PORT sets the port, default 8000)
// Then dial ws://localhost:8000/ws with connect<Api>() from the package, sending a hello, and
// `call('echo', { text })`.
import { Hono } from 'hono';
import { upgradeWebSocket, websocket } from 'hono/bun';
import { Acceptor } from '@muxws/core/acceptor';
import { muxws } from '@muxws/core/hono';

/** Bun's global, typed here so that `deno check` can check this file too. */
declare const Bun: {
  env: Record<string, string | undefined>;
  serve(options: { port: number; fetch: unknown; websocket: unknown }): {
    stop(closeActiveConnections?: boolean): Promise<void>;
  };
};

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

const server = Bun.serve({ port: Number(Bun.env.PORT ?? 8000), fetch: app.fetch, websocket });

// On a deploy or Ctrl-C: GOAWAY, let streams finish, close with 1012 so dialers redial at once.
process.on('SIGINT', async () => {
  await acceptor.close();
  await server.stop();
  process.exit(0);
});
