// The chat example in a real browser: Debian's Chromium (playwright-core) loads
// examples/chat/index.html and its module (bundled with esbuild) from a local static server, and
// the module dials the chat's acceptor, served on Node by `ws` in this process (on another port,
// so the acceptor allows the page's origin). Without the `session` cookie the page is refused;
// with it (set on the page's host, which the acceptor shares) it tours every route while a
// second peer, dialled from Node, sits in the same room.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import WebSocket from 'ws';
import type { Connection, DialerSocketConstructor, PublishMessage } from 'muxws';
import type { Api } from '../../examples/chat/api.ts';
import { join, type TourReport } from '../../examples/chat/client.ts';
import { type Chat, createChat, type DownloadRecord } from '../../examples/chat/server.ts';
import { bundleForBrowser, launchBrowser, readRepoFile } from '../_browser.ts';
import { within } from '../_chat_example.ts';
import { serveWs, type WsServer } from './_serve.ts';

/** The page's state (examples/chat/app.ts `ChatPage`), as read from the page. */
interface ChatPage {
  state: string;
  report?: TourReport;
  error?: string;
  heard: string[];
}

/** `ws`'s WebSocket sending `cookie` with its upgrade. */
function cookieSocket(cookie: string): DialerSocketConstructor {
  class CookieSocket extends WebSocket {
    constructor(url: string, protocols?: string | string[]) {
      super(url, protocols, { headers: { cookie } });
    }
  }
  return CookieSocket as unknown as DialerSocketConstructor;
}

function closeServer(server: Server): Promise<void> {
  return new Promise((resolve) => {
    server.closeAllConnections();
    server.close(() => resolve());
  });
}

/** Serves examples/chat/index.html and its module, bundled now. */
async function startStatic(): Promise<{ server: Server; origin: string }> {
  const html = readRepoFile('examples/chat/index.html');
  const script = await bundleForBrowser('examples/chat/app.ts');
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
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  return { server, origin: `http://127.0.0.1:${(server.address() as AddressInfo).port}` };
}

test('the chat example in Chromium is refused without its session cookie, then with it is welcomed and serves every route (WSM-APP-001 WSM-APP-002 WSM-APP-003 WSM-APP-004)', async () => {
  let site: { server: Server; origin: string } | undefined;
  let served: WsServer | undefined;
  let bob: Connection<Api> | undefined;
  let browser: Awaited<ReturnType<typeof launchBrowser>> | undefined;
  let stopped: (record: DownloadRecord) => void = () => {};
  const download = new Promise<DownloadRecord>((resolve) => stopped = resolve);
  let chat: Chat | undefined;
  try {
    site = await startStatic();
    const origin = site.origin;
    chat = createChat({
      users: ['ada', 'bob'],
      tickMs: 10,
      origins: [origin],
      onDownload: stopped,
    });
    served = await serveWs(chat.acceptor);
    const url = `ws://127.0.0.1:${served.port}/ws`;
    const heard: PublishMessage[] = [];
    bob = await within(
      join(url, {
        room: 'lobby',
        WebSocket: cookieSocket('session=bob'),
        onPublish: (message) => heard.push(message),
      }),
      10_000,
      "bob's connection",
    );

    browser = await launchBrowser();
    const page = await browser.context.newPage();
    const read = async (): Promise<ChatPage> => await page.evaluate('globalThis.chatPage');
    const waitFor = (predicate: string, timeout: number) =>
      page.waitForFunction(predicate, undefined, { timeout, polling: 50 });
    const address = `${origin}/?ws=${url}`;

    // No cookie yet: authorize answers 401, the browser's handshake fails.
    await page.goto(address, { timeout: 10_000 });
    await waitFor('globalThis.chatPage?.state === "refused"', 10_000);
    assert.equal(await page.textContent('#state'), 'refused');
    assert.equal(chat.acceptor.stats.peers, 1, 'only bob');

    // Signed in on the page's host: the acceptor's port shares its cookies.
    await browser.context.addCookies([{ name: 'session', value: 'ada', url: origin }]);
    await page.goto(address, { timeout: 10_000 });
    await waitFor('globalThis.chatPage?.state === "done" || globalThis.chatPage?.error', 15_000);
    const seen = await read();
    assert.equal(seen.error, undefined);
    const report = seen.report!;
    assert.equal(report.motd, 'Welcome to lobby, ada');
    assert.equal(report.delivered, 1, 'bob, and not ada herself');
    assert.deepEqual(report.prices, [
      { symbol: 'ACME', price: 100 },
      { symbol: 'ACME', price: 101 },
      { symbol: 'ACME', price: 102 },
    ]);
    assert.equal(report.refused, 'refused not_found');
    assert.equal(report.chunks, 3);
    const record = await within(download, 5000, 'the download handler stopping');
    assert.equal(record.user, 'ada');
    assert.equal(record.stoppedEarly, true);
    assert.ok(record.sent >= 3 && record.sent < 1000, `chunks written: ${record.sent}`);
    assert.deepEqual(heard.map(({ tag, payload }) => [tag, payload]), [
      ['room:lobby', 'ada: hi from the browser'],
    ]);

    // And the other way: bob's line reaches the page's onPublish.
    assert.deepEqual(await bob.call('chat.say', { text: 'hi ada' }), { delivered: 1 });
    await waitFor('globalThis.chatPage.heard.length === 1', 5000);
    assert.deepEqual((await read()).heard, ['bob: hi ada']);
  } finally {
    await browser?.close();
    await bob?.close().catch(() => {});
    await chat?.acceptor.close({ drainMs: 0 }).catch(() => {});
    if (served) {
      for (const client of served.wss.clients) client.terminate();
      served.wss.close();
      await closeServer(served.server);
    }
    if (site) await closeServer(site.server);
  }
});
