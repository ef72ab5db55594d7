/**
 * Serves the browser example on Deno: the page, its module (app.ts bundled with esbuild on
 * start), and its acceptor (acceptor.ts) on `/ws` of the same origin, so the default Origin
 * policy admits the page. Each `echo` call is answered with its ping and the acceptor's name.
 *
 * ```sh
 * deno run -A examples/browser/serve.ts      # then open http://127.0.0.1:8080/
 * ```
 *
 * `PORT` sets the port. Stop it with Ctrl-C: the acceptor closes gracefully (GOAWAY, then 1012),
 * so start it again within a few seconds and watch the page redial.
 *
 * @module
 */
import * as esbuild from 'esbuild';
import { fileURLToPath } from 'node:url';
import { upgrade } from '@muxws/core/deno';
import { createAcceptor } from './acceptor.ts';

const here = (name: string) => fileURLToPath(new URL(name, import.meta.url));
const built = await esbuild.build({
  entryPoints: [here('./app.ts')],
  bundle: true,
  write: false,
  format: 'esm',
  platform: 'browser',
  target: 'es2022',
  logLevel: 'warning',
});
await esbuild.stop();
const script = built.outputFiles[0].text;
const html = await Deno.readTextFile(here('./index.html'));

const acceptor = createAcceptor({ server: `deno ${Deno.pid}` });

const server = Deno.serve({
  hostname: '127.0.0.1',
  port: Number(Deno.env.get('PORT') ?? 8080),
  onListen: ({ port }) => console.log(`open http://127.0.0.1:${port}/`),
}, (request) => {
  const path = new URL(request.url).pathname;
  if (path === '/ws') return upgrade(request, acceptor);
  if (path === '/app.js') {
    return new Response(script, { headers: { 'content-type': 'text/javascript; charset=utf-8' } });
  }
  if (path === '/' || path === '/index.html') {
    return new Response(html, { headers: { 'content-type': 'text/html; charset=utf-8' } });
  }
  return new Response('Not found', { status: 404 });
});

Deno.addSignalListener('SIGINT', async () => {
  console.log('closing: GOAWAY to every page, then 1012');
  await acceptor.close({ drainMs: 2000, spreadMs: 500 });
  await server.shutdown();
  Deno.exit(0);
});
