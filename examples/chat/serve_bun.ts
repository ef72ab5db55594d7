// The chat on Bun: `Bun.serve` and the ./bun adapter. Run:
//   bun examples/chat/serve_bun.ts 8000
// then sign in with the cookie `session=ada` (or bob) and dial ws://127.0.0.1:8000/ws.
import { bunHandlers, type BunServer, type BunWebSocketHandlers } from '@muxws/core/bun';
import { type Chat, type ChatOptions, createChat } from './server.ts';

/** Bun's global, typed here so that `deno check` can check this file too. */
declare const Bun: {
  argv: string[];
  serve(options: {
    hostname: string;
    port: number;
    fetch: (request: Request, server: BunServer) => Promise<Response | undefined> | Response;
    websocket: BunWebSocketHandlers;
  }): { readonly port: number | undefined; stop(closeActiveConnections?: boolean): Promise<void> };
};

/** The chat behind `Bun.serve` on 127.0.0.1:`port` (0: an ephemeral one). */
export interface ServedChat extends Chat {
  port: number;
  /** Closes the acceptor (GOAWAY, then 1012), then the server. */
  close(): Promise<void>;
}

/** Serves the chat at `/ws` on 127.0.0.1:`port`. */
export function serve(port: number, options: ChatOptions): ServedChat {
  const chat = createChat(options);
  const { fetch, websocket } = bunHandlers(chat.acceptor);
  const server = Bun.serve({
    hostname: '127.0.0.1',
    port,
    fetch: (request, bun) =>
      new URL(request.url).pathname === '/ws'
        ? fetch(request, bun)
        : new Response('Not found', { status: 404 }),
    websocket,
  });
  return {
    ...chat,
    port: server.port ?? port,
    close: async () => {
      await chat.acceptor.close({ drainMs: 1000 });
      await server.stop(true);
    },
  };
}

if (import.meta.main) {
  const served = serve(Number(Bun.argv[2] ?? 8000), {
    users: ['ada', 'bob'],
    origins: Bun.argv.slice(3),
  });
  console.log(`listening ${served.port}`);
}
