// The chat example (examples/chat/) run end to end by one runtime: its acceptor behind that
// runtime's server, two dialers from examples/chat/client.ts signed in by their cookie. Shared
// by tests/deno/chat_example_test.ts and tests/bun/chat_example_test.ts, which only say how to
// serve it and how to put a cookie on a WebSocket.
import assert from 'node:assert/strict';
import type { Acceptor } from 'muxws/acceptor';
import type { DialerSocketConstructor, PublishMessage } from 'muxws';
import type { Api } from '../examples/chat/api.ts';
import type { ChatOptions, ChatUser, DownloadRecord } from '../examples/chat/server.ts';
import { join, tour } from '../examples/chat/client.ts';

/** The chat served by the runtime under test. */
export interface ServedChat {
  port: number;
  acceptor: Acceptor<Api, ChatUser>;
  close(): Promise<void>;
}

/** Rejects with `what` when `promise` has not settled within `ms`. */
export function within<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} did not happen within ${ms} ms`)), ms);
  });
  return Promise.race([promise, late]).finally(() => clearTimeout(timer));
}

/** An upgrade request to the chat, with a `Cookie` header when `cookie` is given. */
function upgradeRequest(port: number, cookie?: string): Request {
  const headers = new Headers({
    upgrade: 'websocket',
    connection: 'Upgrade',
    'sec-websocket-key': 'dGhlIHNhbXBsZSBub25jZQ==',
    'sec-websocket-version': '13',
    'sec-websocket-protocol': 'muxws.v1.json',
  });
  if (cookie !== undefined) headers.set('cookie', cookie);
  return new Request(`http://127.0.0.1:${port}/ws`, { headers });
}

/**
 * Serves the chat with `serve`, then checks every route with two dialers: `socketFor(cookie)`
 * is a WebSocket constructor sending that `Cookie` header with its upgrade.
 */
export async function chatScenario(
  serve: (options: ChatOptions) => Promise<ServedChat>,
  socketFor: (cookie: string | undefined) => DialerSocketConstructor,
): Promise<void> {
  let stopped: (record: DownloadRecord) => void = () => {};
  const download = new Promise<DownloadRecord>((resolve) => stopped = resolve);
  const chat = await serve({
    users: ['ada', 'bob'],
    prices: { ACME: 100 },
    tickMs: 10,
    onDownload: stopped,
  });
  const url = `ws://127.0.0.1:${chat.port}/ws`;
  const closing: Array<() => Promise<unknown>> = [];
  try {
    // authorize: no cookie, or a name it does not know, is refused with 401 before any socket.
    for (const cookie of [undefined, 'session=eve', 'theme=dark']) {
      const check = await chat.acceptor.checkUpgrade(upgradeRequest(chat.port, cookie));
      assert.equal(check instanceof Response ? check.status : 101, 401, `cookie ${cookie}`);
    }
    await assert.rejects(
      within(join(url, { room: 'lobby', WebSocket: socketFor(undefined) }), 10_000, 'a refusal'),
      (error: Error) => error.name === 'ConnectError',
    );
    assert.equal(chat.acceptor.stats.peers, 0);

    const heard: PublishMessage[] = [];
    let heardOne: () => void = () => {};
    const bobHeard = new Promise<void>((resolve) => heardOne = resolve);
    const bob = await within(
      join(url, {
        room: 'lobby',
        WebSocket: socketFor('session=bob'),
        onPublish: (message) => {
          heard.push(message);
          heardOne();
        },
      }),
      10_000,
      "bob's connection",
    );
    closing.push(() => bob.close());
    const ada = await within(
      join(url, { room: 'lobby', WebSocket: socketFor('theme=dark; session=ada') }),
      10_000,
      "ada's connection",
    );
    closing.push(() => ada.close());
    assert.deepEqual(bob.welcome, { motd: 'Welcome to lobby, bob' });

    const report = await within(
      tour(ada, {
        text: 'hi bob',
        symbol: 'ACME',
        ticks: 3,
        missing: 'NOPE',
        size: 1000,
        stopAfter: 3,
      }),
      10_000,
      "ada's tour",
    );
    assert.equal(report.motd, 'Welcome to lobby, ada');
    assert.equal(report.delivered, 1, 'bob, and not ada herself');
    await within(bobHeard, 5000, "bob's publish");
    assert.deepEqual(heard.map(({ tag, payload }) => [tag, payload]), [[
      'room:lobby',
      'ada: hi bob',
    ]]);
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
  } finally {
    for (const close of closing) await close().catch(() => {});
    await chat.close();
  }
}
