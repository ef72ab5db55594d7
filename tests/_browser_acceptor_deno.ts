/**
 * The Deno acceptor of the browser test (tests/node/browser_test.ts), run as its own process:
 *
 * ```sh
 * deno run --allow-net --allow-env tests/_browser_acceptor_deno.ts <port> <generation> <origin>
 * ```
 *
 * Serves the project's `Acceptor` with `Deno.serve` and the `./deno` adapter on 127.0.0.1:`port`
 * (0 for an ephemeral one), allowing pages of `origin`; prints `listening <port>` once it is.
 * The acceptor is the example's (examples/browser/acceptor.ts), named `generation <generation>`.
 * On SIGTERM or SIGINT it restarts gracefully: GOAWAY to every peer (200 ms spread), drain (at
 * most 2 s), close with 1012, then exits.
 */
import { upgrade } from 'muxws/deno';
import { createAcceptor } from '../examples/browser/acceptor.ts';

const [portArg, generation, origin] = Deno.args;
const acceptor = createAcceptor({ server: `generation ${generation}`, origins: [origin] });
const server = Deno.serve({
  hostname: '127.0.0.1',
  port: Number(portArg),
  onListen: ({ port }) => console.log(`listening ${port}`),
}, (request) => upgrade(request, acceptor));

let stopping = false;
async function stop(): Promise<void> {
  if (stopping) return;
  stopping = true;
  await acceptor.close({ drainMs: 2000, spreadMs: 200 });
  // The sessions have ended; give the sockets' closing handshakes a moment before exiting.
  await new Promise((resolve) => setTimeout(resolve, 300));
  await server.shutdown();
  Deno.exit(0);
}
Deno.addSignalListener('SIGTERM', stop);
Deno.addSignalListener('SIGINT', stop);
