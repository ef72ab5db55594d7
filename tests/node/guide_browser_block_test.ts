// The ```ts browser block of the user guide (docs/guide/getting-started.md) in a real browser, as
// a user ships it: the block is bundled for the browser with esbuild (its `muxws` imports resolved
// to the sources) and loaded as the module of a page with a `#status` element, served on
// 127.0.0.1 by a node:http server that also serves the project's Acceptor (the built package)
// on /ws, so the page and the WebSocket share a host as the block assumes. Debian's Chromium
// (headless, playwright-core) opens the page; the test reads `#status` and the console.
//
// The block dials `wss://${location.host}/ws`. The page is served over plain HTTP on loopback, so
// the harness substitutes the scheme only: a script run before the page's own installs a
// `WebSocket` subclass that turns `wss://<the page's host>/` into `ws://<the page's host>/` and
// changes nothing else. The sign-in token is put in (or left out of) localStorage the same way.
// The block's code is bundled as it stands.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Acceptor } from 'muxws/acceptor';
import { attach } from 'muxws/node';
import { StreamError } from 'muxws';
import { bundleSourceForBrowser, launchBrowser } from '../_browser.ts';
import { repoRoot } from '../_repo.ts';
import { muxwsSources } from '../_muxws_sources.ts';

/** The page's ```ts browser blocks, with the line each starts on. */
function browserBlocks(): { line: number; code: string }[] {
  const text = readFileSync(join(repoRoot(), 'docs', 'guide', 'getting-started.md'), 'utf8');
  return [...text.matchAll(/^```ts browser\n([\s\S]*?)^```$/gm)].map((m) => ({
    line: text.slice(0, m.index).split('\n').length,
    code: m[1],
  }));
}

type Api = {
  ':hello': { input: { token: string }; output: { user: string } };
  add: { input: { a: number; b: number }; output: number };
};

const TOKEN = 'ada-token';

/** Runs before the page's scripts: the token, and `wss://` to the page's host made `ws://`. */
function harness(token: string | null): string {
  return `
    ${
    token === null
      ? `localStorage.removeItem('token');`
      : `localStorage.setItem('token', ${JSON.stringify(token)});`
  }
    const Native = globalThis.WebSocket;
    globalThis.WebSocket = class extends Native {
      constructor(url, protocols) {
        const secure = 'wss://' + location.host + '/';
        const href = String(url);
        super(href.startsWith(secure) ? 'ws://' + href.slice(6) : href, protocols);
      }
    };
  `;
}

const blocks = browserBlocks();

test('the guide has one browser block', () => {
  assert.equal(blocks.length, 1);
});

for (const block of blocks) {
  test(`the browser block at docs/guide/getting-started.md:${block.line} signs in, calls, and shows a refused hello's reason`, async () => {
    const script = await bundleSourceForBrowser(block.code, [muxwsSources()]);
    const acceptor = new Acceptor<Api>({
      onHello: ({ payload }) => {
        if (payload.token !== TOKEN) throw new StreamError('unauthorized', 'unknown token');
        return { user: 'ada' };
      },
      routes: { add: ({ a, b }) => a + b },
    });
    const server = createServer((request, response) => {
      if (request.url === '/app.js') {
        response.writeHead(200, { 'content-type': 'text/javascript' }).end(script);
      } else if (request.url === '/') {
        response.writeHead(200, { 'content-type': 'text/html' }).end(
          '<!doctype html><title>app</title><link rel="icon" href="data:,"><p id="status"></p>' +
            '<script type="module" src="/app.js"></script>',
        );
      } else {
        response.writeHead(404).end();
      }
    });
    attach(server, acceptor, { path: '/ws' });
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(0, '127.0.0.1', () => resolve());
    });
    const { port } = server.address() as AddressInfo;
    const browser = await launchBrowser();
    try {
      /**
       * Opens the page with `token` in localStorage, waits (bounded) for `#status` to match
       * `settled` and, if given, for the console to print `log`; returns the status and console.
       */
      const visit = async (token: string | null, settled: RegExp, log?: string) => {
        const page = await browser.context.newPage();
        const logs: string[] = [];
        const errors: string[] = [];
        let printed!: () => void;
        const logged = new Promise<void>((resolve) => printed = resolve);
        page.on('console', (message) => {
          logs.push(message.text());
          if (message.text() === log) printed();
        });
        page.on('pageerror', (error) => errors.push(String(error)));
        try {
          await page.addInitScript(harness(token));
          await page.goto(`http://127.0.0.1:${port}/`, { timeout: 10_000 });
          await page.locator('#status').filter({ hasText: settled }).waitFor({ timeout: 10_000 })
            .catch(() => {});
          if (log !== undefined) {
            let timer: ReturnType<typeof setTimeout> | undefined;
            await Promise.race([
              logged,
              new Promise<void>((resolve) => timer = setTimeout(resolve, 5000)),
            ]);
            clearTimeout(timer);
          }
          return { status: await page.textContent('#status'), logs, errors };
        } finally {
          await page.close();
        }
      };

      const signedIn = await visit(TOKEN, /^signed in|cannot connect|unknown token/, '3');
      assert.deepEqual(signedIn.errors, []);
      assert.equal(signedIn.status, 'signed in as ada');
      assert.deepEqual(signedIn.logs, ['3']);

      const refused = await visit(null, /unknown token|cannot connect|^signed in/);
      assert.deepEqual(refused.errors, []);
      assert.match(refused.status ?? '', /unknown token/);
    } finally {
      await browser.close();
      await acceptor.close();
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    }
  });
}
