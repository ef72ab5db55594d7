// The chat page's module (see index.html): joins "lobby" at `?ws=<url>` (default
// ws(s)://<host>/ws), says hello, tours the API with client.ts, and shows the outcome. The same
// state is on `globalThis.chatPage` for a test driving the page.
import { join, tour, type TourReport } from './client.ts';

/** What the page shows. */
export interface ChatPage {
  /** `loading`, `touring`, `done`, or `refused` when the acceptor would not take the page. */
  state: 'loading' | 'touring' | 'done' | 'refused';
  /** What the tour saw. */
  report?: TourReport;
  /** What went wrong, when it did. */
  error?: string;
  /** Lines broadcast to the room by others. */
  heard: string[];
}

/** The one browser global the page needs beyond those every runtime has. */
declare const document: {
  getElementById(id: string): { textContent: string | null } | null;
};

const page: ChatPage = { state: 'loading', heard: [] };
Object.assign(globalThis, { chatPage: page });

function show(): void {
  const state = document.getElementById('state');
  const log = document.getElementById('log');
  if (state) state.textContent = page.state;
  if (log) log.textContent = JSON.stringify(page, null, 2);
}

async function main(): Promise<void> {
  const scheme = location.protocol === 'https:' ? 'wss:' : 'ws:';
  const url = new URLSearchParams(location.search).get('ws') ?? `${scheme}//${location.host}/ws`;
  let connection;
  try {
    connection = await join(url, {
      room: 'lobby',
      onPublish: ({ payload }) => {
        page.heard.push(String(payload));
        show();
      },
    });
  } catch (error) {
    // No session cookie: `authorize` answered 401, a failed handshake to a browser.
    page.state = 'refused';
    page.error = String(error);
    return show();
  }
  page.state = 'touring';
  show();
  page.report = await tour(connection, {
    text: 'hi from the browser',
    symbol: 'ACME',
    ticks: 3,
    missing: 'NOPE',
    size: 1000,
    stopAfter: 3,
  });
  page.state = 'done';
  show();
}

main().catch((error) => {
  page.error = String(error);
  show();
});
