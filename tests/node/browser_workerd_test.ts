// Chromium against workerd: why the Cloudflare adapters answer the upgrade themselves. Hono's own
// Workers helper (`upgradeWebSocket` from hono/cloudflare-workers) returns its 101 without
// `Sec-WebSocket-Protocol`, and Chrome fails a handshake whose offered subprotocol is not
// selected; `upgrade()` from muxws/cloudflare and `muxws()` from muxws/hono on Workers select it.
// The page is served by the same Worker, so its Origin is the acceptor's own host.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import type { Page } from 'playwright-core';
import { launchBrowser, type TestBrowser } from '../_browser.ts';
import { bundleWorkerSource, startWorkerd, type WorkerdInstance } from '../_workerd.ts';

const WORKER = `
import { Hono } from 'hono';
import { upgradeWebSocket } from 'hono/cloudflare-workers';
import { Acceptor } from './lib/acceptor/acceptor.ts';
import { upgrade } from './lib/adapters/cloudflare.ts';
import { muxws } from './lib/adapters/hono.ts';

let acceptor;
const shared = () => acceptor ??= new Acceptor({ idleTimeoutMs: 0, onStream: (s) => s.payload });
const app = new Hono();
// Hono's helper alone: it cannot select a subprotocol.
app.get('/hono-helper', upgradeWebSocket(() => ({ onMessage: (event, ws) => ws.send(event.data) })));
app.get('/hono', (c, next) => muxws(shared(), { upgradeWebSocket })(c, next));
app.get('/cloudflare', (c) => upgrade(c.req.raw, shared()));
app.get('/', (c) => c.html('<!doctype html><title>muxws</title>'));
export default app;
`;

let worker: WorkerdInstance;
let browser: TestBrowser;

before(async () => {
  worker = await startWorkerd({ script: await bundleWorkerSource(WORKER) });
  browser = await launchBrowser();
});

after(async () => {
  await browser?.close();
  await worker?.stop();
});

/** Opens a WebSocket in `page` offering the muxws subprotocol: `open <protocol>` or `close <code>`. */
function handshake(page: Page, path: string): Promise<string> {
  return page.evaluate(
    (url) =>
      new Promise<string>((resolve) => {
        const socket = new WebSocket(url, ['muxws.v1.json']);
        const timer = setTimeout(() => resolve('no answer in 5000 ms'), 5000);
        socket.onopen = () => {
          clearTimeout(timer);
          resolve(`open ${socket.protocol}`);
          socket.close(1000);
        };
        socket.onclose = (event) => {
          clearTimeout(timer);
          resolve(`close ${event.code}`);
        };
      }),
    worker.wsUrl(path),
  );
}

test("WSM-ACC-003 Chrome fails the handshake of Hono's own Workers helper (no Sec-WebSocket-Protocol), so the adapters answer it themselves", async () => {
  const page = await browser.context.newPage();
  await page.goto(worker.httpUrl('/'), { timeout: 10_000 });
  assert.equal(await handshake(page, '/hono-helper'), 'close 1006');
  assert.equal(await handshake(page, '/cloudflare'), 'open muxws.v1.json');
  assert.equal(await handshake(page, '/hono'), 'open muxws.v1.json');
});
