// An Acceptor served by Deno.serve through the ./deno adapter, as the Deno tests use it: on
// 127.0.0.1 (an ephemeral port), upgrades on `/ws` only, 404 for anything else.
import type { Acceptor } from 'muxws/acceptor';
import { upgrade } from 'muxws/deno';

/** A served acceptor as the shared suites take it: where to dial, and how to stop. */
export interface ServedDeno {
  /** The port, on 127.0.0.1. */
  port: number;
  /** The path dialers use. */
  path: string;
  /** Shuts the server down. */
  close(): Promise<void>;
}

/** Serves `acceptor` (of any `Api` and peer data) with Deno.serve on `/ws`. */
// deno-lint-ignore no-explicit-any
export function servedDeno(acceptor: Acceptor<any, any>): Promise<ServedDeno> {
  const server = Deno.serve(
    { hostname: '127.0.0.1', port: 0, onListen() {} },
    (request) =>
      new URL(request.url).pathname === '/ws'
        ? upgrade(request, acceptor)
        : new Response('Not found', { status: 404 }),
  );
  return Promise.resolve({ port: server.addr.port, path: '/ws', close: () => server.shutdown() });
}
