// The chat on Deno: `Deno.serve` and the ./deno adapter. Run:
//   deno run --allow-net examples/chat/serve_deno.ts 8000
// then sign in with the cookie `session=ada` (or bob) and dial ws://127.0.0.1:8000/ws.
import { upgrade } from '@muxws/core/deno';
import { type Chat, type ChatOptions, createChat } from './server.ts';

/** The chat behind `Deno.serve` on 127.0.0.1:`port` (0: an ephemeral one). */
export interface ServedChat extends Chat {
  port: number;
  /** Closes the acceptor (GOAWAY, then 1012), then the server. */
  close(): Promise<void>;
}

/** Serves the chat at `/ws` on 127.0.0.1:`port`. */
export function serve(port: number, options: ChatOptions): Promise<ServedChat> {
  const chat = createChat(options);
  const { promise, resolve } = Promise.withResolvers<number>();
  const server = Deno.serve(
    { hostname: '127.0.0.1', port, onListen: (addr) => resolve(addr.port) },
    (request) =>
      new URL(request.url).pathname === '/ws'
        ? upgrade(request, chat.acceptor)
        : new Response('Not found', { status: 404 }),
  );
  return promise.then((bound) => ({
    ...chat,
    port: bound,
    close: async () => {
      await chat.acceptor.close({ drainMs: 1000 });
      await server.shutdown();
    },
  }));
}

if (import.meta.main) {
  const served = await serve(Number(Deno.args[0] ?? 8000), {
    users: ['ada', 'bob'],
    origins: Deno.args.slice(1),
  });
  console.log(`listening ${served.port}`);
  Deno.addSignalListener('SIGINT', () => served.close().then(() => Deno.exit(0)));
}
