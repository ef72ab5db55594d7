// Peers not yet accepted and the order around the hello on Bun: Bun.serve with the ./bun adapter
// on 127.0.0.1:0 (broadcasts take Bun's native topics), and Bun's global WebSocket as the
// dialer's socket.
import { admissionRealSuite } from '../_admission_real.ts';
import { serveAcceptorOnBun } from './_serve.ts';

admissionRealSuite('Bun', async (acceptor) => {
  const served = await serveAcceptorOnBun(acceptor);
  return { url: `ws://127.0.0.1:${served.port}${served.path}`, close: () => served.close() };
});
