// The dialer in a real browser: Debian's Chromium (playwright-core) loads examples/browser/ from a
// local static server; its module (the dialer, bundled from the sources with esbuild) connects
// to the example's acceptor (examples/browser/acceptor.ts, on another port, so it allows the
// page's origin), calls its `echo` route every 200 ms, and survives an acceptor restart: GOAWAY +
// 1012, a second of downtime, then a new acceptor on the same port. The test reads the page's
// state. The acceptor is run on Deno (`Deno.serve` + ./deno, a child process:
// tests/_browser_acceptor_deno.ts) and on Node (`ws` + accept(), in this process).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import WebSocket from 'ws';
import type { Ping } from '../../examples/browser/api.ts';
import { createAcceptor } from '../../examples/browser/acceptor.ts';
import { bundleForBrowser, launchBrowser, readRepoFile } from '../_browser.ts';
import { repoRoot } from '../_repo.ts';
import { serveWs } from './_serve.ts';

/** The page's state (examples/browser/app.ts `PageState`), as read from the page. */
interface PageState {
  state: string;
  welcome: { hello: string; server: string } | undefined;
  opens: number;
  reconnected: boolean;
  ok: number;
  failed: number;
  closes: number[];
  log: string[];
}

interface AcceptorServer {
  port: number;
  /** Closes the acceptor gracefully (GOAWAY, then 1012), then the server. */
  restart(): Promise<void>;
  /** Closes everything at once. */
  stop(): Promise<void>;
}

function listen(server: Server, port: number): Promise<number> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', () => {
      server.off('error', reject);
      resolve((server.address() as AddressInfo).port);
    });
  });
}

function closeServer(server: Server): Promise<void> {
  return new Promise((resolve) => {
    server.closeAllConnections();
    server.close(() => resolve());
  });
}

/** Starts an acceptor for the page on `port` (0: ephemeral), named `generation <generation>`. */
type AcceptorFactory = (
  port: number,
  generation: number,
  pageOrigin: string,
) => Promise<AcceptorServer>;

/**
 * The project's Acceptor on Deno, as a child process (`Deno.serve` + ./deno); SIGTERM restarts
 * it gracefully (GOAWAY, drain, 1012), SIGKILL follows if it has not exited within 5 s.
 */
async function startDenoAcceptor(
  port: number,
  generation: number,
  pageOrigin: string,
): Promise<AcceptorServer> {
  const root = repoRoot();
  const child = spawn(join(root, 'node_modules', '.bin', 'deno'), [
    'run',
    '--allow-net',
    '--allow-env',
    '--no-check',
    '--quiet',
    'tests/_browser_acceptor_deno.ts',
    String(port),
    String(generation),
    pageOrigin,
  ], { cwd: root, stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, NO_COLOR: '1' } });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  let output = '';
  child.stderr!.setEncoding('utf8').on('data', (chunk: string) => output += chunk);
  const end = async (signal: 'SIGTERM' | 'SIGKILL') => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    child.kill(signal);
    let timer: ReturnType<typeof setTimeout> | undefined;
    const late = new Promise<boolean>((resolve) => timer = setTimeout(() => resolve(true), 5000));
    const slow = await Promise.race([exited.then(() => false), late]);
    clearTimeout(timer);
    if (slow) {
      child.kill('SIGKILL');
      await exited;
    }
  };
  try {
    const bound = await new Promise<number>((resolve, reject) => {
      const timer = setTimeout(
        () => reject(new Error(`The Deno acceptor did not listen within 30 s: ${output}`)),
        30_000,
      );
      child.stdout!.setEncoding('utf8').on('data', (chunk: string) => {
        output += chunk;
        const match = /listening (\d+)/.exec(output);
        if (match) {
          clearTimeout(timer);
          resolve(Number(match[1]));
        }
      });
      child.once('exit', (code, signal) => {
        clearTimeout(timer);
        reject(new Error(`The Deno acceptor exited (${code ?? signal}): ${output}`));
      });
    });
    return { port: bound, restart: () => end('SIGTERM'), stop: () => end('SIGKILL') };
  } catch (error) {
    await end('SIGKILL');
    throw error;
  }
}

/** The project's Acceptor behind Node's http server and `ws`, allowing `pageOrigin`. */
async function startNodeAcceptor(
  port: number,
  generation: number,
  pageOrigin: string,
): Promise<AcceptorServer> {
  const acceptor = createAcceptor({ server: `generation ${generation}`, origins: [pageOrigin] });
  const { server, wss, port: bound } = await serveWs(acceptor, port);
  const stop = async (graceMs = 0) => {
    // Let closing handshakes finish (at most graceMs) before cutting what is left.
    const open = [...wss.clients].filter((client) => client.readyState !== WebSocket.CLOSED);
    if (graceMs > 0 && open.length > 0) {
      let timer: ReturnType<typeof setTimeout> | undefined;
      await Promise.race([
        Promise.all(open.map((client) => new Promise((resolve) => client.once('close', resolve)))),
        new Promise((resolve) => timer = setTimeout(resolve, graceMs)),
      ]);
      clearTimeout(timer);
    }
    for (const client of wss.clients) client.terminate();
    wss.close();
    await closeServer(server);
  };
  return {
    port: bound,
    restart: async () => {
      await acceptor.close({ drainMs: 2000, spreadMs: 200 });
      await stop(1000);
    },
    stop: async () => {
      await acceptor.close({ drainMs: 0, spreadMs: 0 }).catch(() => {});
      await stop();
    },
  };
}

/** Serves examples/browser/index.html and its module, bundled now. */
async function startStatic(): Promise<{ server: Server; origin: string }> {
  const html = readRepoFile('examples/browser/index.html');
  const script = await bundleForBrowser('examples/browser/app.ts');
  const server = createServer((request, response) => {
    const path = new URL(request.url ?? '/', 'http://localhost').pathname;
    if (path === '/' || path === '/index.html') {
      response.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(html);
    } else if (path === '/app.js') {
      response.writeHead(200, { 'content-type': 'text/javascript; charset=utf-8' }).end(script);
    } else {
      response.writeHead(404).end();
    }
  });
  const port = await listen(server, 0);
  return { server, origin: `http://127.0.0.1:${port}` };
}

async function restartScenario(startAcceptor: AcceptorFactory): Promise<void> {
  let site: { server: Server; origin: string } | undefined;
  let first: AcceptorServer | undefined;
  let second: AcceptorServer | undefined;
  let browser: Awaited<ReturnType<typeof launchBrowser>> | undefined;
  try {
    site = await startStatic();
    first = await startAcceptor(0, 1, site.origin);
    browser = await launchBrowser();
    const page = await browser.context.newPage();
    const read = () =>
      page.evaluate(() => (globalThis as unknown as { muxwsPage: PageState }).muxwsPage);
    // Every wait on the page is bounded; the predicate runs in the page.
    const waitFor = (predicate: string, timeout: number) =>
      page.waitForFunction(predicate, undefined, { timeout, polling: 50 });

    await page.goto(`${site.origin}/?ws=ws://127.0.0.1:${first.port}/ws`, { timeout: 10_000 });
    await waitFor('globalThis.muxwsPage?.state === "open" && globalThis.muxwsPage.ok >= 3', 10_000);
    const before = await read();
    assert.deepEqual(before.welcome, { hello: 'browser', server: 'generation 1' });
    assert.equal(before.opens, 1);
    assert.equal(before.failed, 0);
    assert.equal(await page.textContent('#state'), 'open');

    // Restart: GOAWAY + 1012 from the acceptor, then a second with nothing listening.
    const port = first.port;
    await first.restart();
    first = undefined;
    await waitFor('globalThis.muxwsPage.state === "reconnecting"', 5_000);
    await new Promise((resolve) => setTimeout(resolve, 1000));
    const down = await read();
    // After a GOAWAY the dialer closes with 1000 itself once its streams are done, unless the
    // acceptor's 1012 came first (WSM-WIRE-003); either way the next dial is a service restart's.
    assert.ok([1000, 1012].includes(down.closes[0]), `closed with ${down.closes[0]}`);

    second = await startAcceptor(port, 2, site.origin);
    await waitFor(
      `globalThis.muxwsPage.state === "open" ` +
        `&& globalThis.muxwsPage.welcome?.server === "generation 2" ` +
        `&& globalThis.muxwsPage.ok >= ${down.ok + 3}`,
      15_000,
    );
    const after = await read();
    assert.equal(after.opens, 2);
    assert.equal(after.reconnected, true);
    assert.ok(after.ok >= before.ok + 3, `requests after the restart: ${after.ok}`);
    assert.ok(
      after.log.some((line) => line.includes('after a service restart')),
      `the first redial was not marked as after a service restart:\n${after.log.join('\n')}`,
    );
    // A call made from the test through the page's connection reaches the new acceptor.
    const answer = await page.evaluate(() =>
      (globalThis as unknown as { muxwsEcho(ping: Ping): Promise<unknown> })
        .muxwsEcho({ from: 'test', n: 0 })
    );
    assert.deepEqual(answer, { echo: { from: 'test', n: 0 }, server: 'generation 2' });
    assert.equal(await page.textContent('#state'), 'open');
  } finally {
    await browser?.close();
    await first?.stop();
    await second?.stop();
    if (site) await closeServer(site.server);
  }
}

test('WSM-RCN-020 WSM-APP-003 the browser dialer in Chromium calls a route and redials through a Deno acceptor restart (GOAWAY + 1012)', async () => {
  await restartScenario(startDenoAcceptor);
});

test('WSM-RCN-020 WSM-APP-003 the browser dialer in Chromium calls a route and redials through a Node acceptor restart (GOAWAY + 1012)', async () => {
  await restartScenario(startNodeAcceptor);
});
