// The browser example's acceptor, runtime-neutral: serve.ts puts it behind `Deno.serve` with the
// page, and the browser test behind Deno and Node servers.
import { Acceptor, type OriginPolicy } from '@muxws/core/acceptor';
import type { Api } from './api.ts';

/** Options of {@linkcode createAcceptor}. */
export interface BrowserAcceptorOptions {
  /** The name the welcome and every answer carry, telling acceptors apart. */
  server: string;
  /** Pages allowed to dial (by default, those of the acceptor's own host). */
  origins?: OriginPolicy;
}

/** The acceptor the page dials: the hello is answered with its name, `echo` with the ping. */
export function createAcceptor(options: BrowserAcceptorOptions): Acceptor<Api> {
  const { server, origins } = options;
  return new Acceptor<Api>({
    origins,
    onHello: ({ payload }) => ({ hello: payload.client, server }),
    routes: { echo: (ping) => ({ echo: ping, server }) },
  });
}
