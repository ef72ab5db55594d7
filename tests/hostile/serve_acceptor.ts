/**
 * An acceptor in its own process, for the hostile-input tests that kill it or measure it alone
 * and for the chaos run: serves the acceptor of `_child_acceptor.ts` on `/ws` on 127.0.0.1 and an
 * ephemeral port with Deno.serve or Bun.serve, whichever runtime runs it, and prints `PORT <n>` on
 * stdout once listening. `/stats` and `/kick` are its control endpoints (see
 * `_child_acceptor.ts`).
 *
 * `MUXWS_IDLE_MS` sets `idleTimeoutMs` (default 30000); `MUXWS_CHILD=recovery` serves the acceptor
 * of `_child_recovery.ts` instead.
 *
 * Run: `deno run -A tests/hostile/serve_acceptor.ts` or `bun tests/hostile/serve_acceptor.ts`.
 */
import process from 'node:process';
import { upgrade } from 'muxws/deno';
import { bunHandlers } from 'muxws/bun';
import { childAcceptor } from './_child_acceptor.ts';
import { recoveryChild } from './_child_recovery.ts';

const idleMs = Number(process.env.MUXWS_IDLE_MS ?? 30_000);
const { acceptor, control } = process.env.MUXWS_CHILD === 'recovery'
  ? recoveryChild(idleMs)
  : childAcceptor(idleMs);

// deno-lint-ignore no-explicit-any
const runtime = globalThis as any;
if (runtime.Bun) {
  const { fetch, websocket } = bunHandlers(acceptor);
  const server = runtime.Bun.serve({
    hostname: '127.0.0.1',
    port: 0,
    // deno-lint-ignore no-explicit-any
    fetch: (request: Request, srv: any) => control(request) ?? fetch(request, srv),
    websocket,
  });
  console.log(`PORT ${server.port}`);
} else {
  const server = runtime.Deno.serve(
    { hostname: '127.0.0.1', port: 0, onListen() {} },
    (request: Request) => control(request) ?? upgrade(request, acceptor),
  );
  console.log(`PORT ${server.addr.port}`);
}
