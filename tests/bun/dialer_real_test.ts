// The dialer on real sockets on Bun: Bun.serve with the ./bun adapter on 127.0.0.1:0, and Bun's
// global WebSocket as the dialer's socket.
import { dialerRealSuite, dialerRefusalSuite } from '../_dialer_real.ts';
import { bunHandlers } from 'muxws/bun';

/** The part of Bun's API this file uses (typed here, so `deno check` needs no Bun types). */
interface BunServe {
  serve(
    options:
      & { hostname: string; port: number }
      & (ReturnType<typeof bunHandlers> | { fetch(request: Request): Response }),
  ): {
    readonly port: number | undefined;
    stop(closeActiveConnections?: boolean): Promise<void>;
  };
}
const { Bun } = globalThis as unknown as { Bun: BunServe };

dialerRealSuite('Bun', (acceptor) => {
  const server = Bun.serve({ hostname: '127.0.0.1', port: 0, ...bunHandlers(acceptor) });
  return {
    port: server.port!,
    // stop() resolves only once open connections end: do not wait for it here
    stopListening: () => {
      void server.stop();
    },
    close: () => server.stop(true),
  };
});

dialerRefusalSuite('Bun', () => {
  const server = Bun.serve({
    hostname: '127.0.0.1',
    port: 0,
    fetch: () => new Response('Not Found', { status: 404 }),
  });
  return { port: server.port!, stopListening: () => {}, close: () => server.stop(true) };
});
