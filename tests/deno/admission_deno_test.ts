// Peers not yet accepted and the order around the hello on Deno: Deno.serve with the ./deno
// adapter on 127.0.0.1:0, and Deno's global WebSocket as the dialer's socket.
import { admissionRealSuite } from '../_admission_real.ts';
import { upgrade } from 'muxws/deno';

admissionRealSuite('Deno', (acceptor) => {
  const server = Deno.serve(
    { hostname: '127.0.0.1', port: 0, onListen() {} },
    (request) => upgrade(request, acceptor),
  );
  return { url: `ws://127.0.0.1:${server.addr.port}/ws`, close: () => server.shutdown() };
});
