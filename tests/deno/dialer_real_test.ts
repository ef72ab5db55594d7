// The dialer on real sockets on Deno: Deno.serve + Deno.upgradeWebSocket (the ./deno adapter)
// on 127.0.0.1:0, and Deno's global WebSocket as the dialer's socket.
import { dialerRealSuite, dialerRefusalSuite } from '../_dialer_real.ts';
import { upgrade } from 'muxws/deno';

dialerRealSuite('Deno', (acceptor) => {
  let listening = true;
  const server = Deno.serve(
    { hostname: '127.0.0.1', port: 0, onListen() {} },
    (request) => {
      if (!listening) return new Response('Stopped', { status: 503 });
      return upgrade(request, acceptor);
    },
  );
  let shutdown: Promise<void> | undefined;
  return {
    port: server.addr.port,
    stopListening: () => {
      listening = false;
      shutdown = server.shutdown();
    },
    close: () => shutdown ?? server.shutdown(),
  };
});

dialerRefusalSuite('Deno', () => {
  const server = Deno.serve(
    { hostname: '127.0.0.1', port: 0, onListen() {} },
    () => new Response('Not Found', { status: 404 }),
  );
  return { port: server.addr.port, stopListening: () => {}, close: () => server.shutdown() };
});
