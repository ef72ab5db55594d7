/**
 * The browser page's module (see index.html): dials an acceptor with the muxws dialer, calls its
 * `echo` route every 200 ms (typed by the shared `Api` of api.ts), and shows what happens live:
 * the connection's state, each redial (attempt, delay, whether the last close was a service
 * restart), and calls that succeeded or failed.
 *
 * Everything it shows is also on `globalThis.muxwsPage` (a {@linkcode PageState}), so a test
 * driving the page can read it, and `globalThis.muxwsEcho(ping)` makes one call.
 *
 * The acceptor (acceptor.ts) is `?ws=<url>` of the page's address, by default
 * `ws(s)://<host>/ws`. Its welcome is shown as is.
 *
 * @module
 */
import {
  type CloseInfo,
  connect,
  type ConnectionState,
  type OutputOf,
  type WelcomeOf,
} from '@muxws/core';
import type { Api, Ping } from './api.ts';

/** What the page shows, kept on `globalThis.muxwsPage`. */
export interface PageState {
  /** The connection's state, `loading` before `connect()` settles, `failed` if it rejected. */
  state: ConnectionState | 'loading' | 'failed';
  /** The acceptor's welcome on the current (or last) connection. */
  welcome: WelcomeOf<Api> | undefined;
  /** Establishments: 1 after the first connection, +1 after each redial. */
  opens: number;
  /** Whether the latest establishment was a redial. */
  reconnected: boolean;
  /** Calls answered. */
  ok: number;
  /** Calls that failed (not connected, reset, timed out). */
  failed: number;
  /** The last answer. */
  last: OutputOf<Api, 'echo'> | undefined;
  /** Close codes seen, in order. */
  closes: number[];
  /** Timeline lines, newest last. */
  log: string[];
}

/** The one browser global the page needs beyond those every runtime has (typed here). */
declare const document: {
  getElementById(id: string): { textContent: string | null } | null;
};

const started = Date.now();

const view: PageState = {
  state: 'loading',
  welcome: undefined,
  opens: 0,
  reconnected: false,
  ok: 0,
  failed: 0,
  last: undefined,
  closes: [],
  log: [],
};
Object.assign(globalThis, { muxwsPage: view });

function render(): void {
  const text = (id: string, value: string) => {
    const element = document.getElementById(id);
    if (element) element.textContent = value;
  };
  text('state', view.state);
  text('counts', `calls ok ${view.ok}, failed ${view.failed}; connections ${view.opens}`);
  text('log', view.log.join('\n'));
}

function note(line: string): void {
  view.log.push(`${((Date.now() - started) / 1000).toFixed(2).padStart(7)} s  ${line}`);
  if (view.log.length > 200) view.log.shift();
  render();
}

function describeClose(info: CloseInfo): string {
  const retry = info.willRetry ? `redial in ${Math.round(info.delayMs ?? 0)} ms` : 'no redial';
  return `closed ${info.code}${info.reason ? ` (${info.reason})` : ''}, ${retry}`;
}

const scheme = location.protocol === 'https:' ? 'wss:' : 'ws:';
const url = new URLSearchParams(location.search).get('ws') ??
  `${scheme}//${location.host}/ws`;

note(`dialling ${url}`);
try {
  const connection = await connect<Api>((ctx) => {
    if (ctx.reason === 'reconnect') {
      const why = ctx.resumedFromServiceRestart ? ', after a service restart' : '';
      note(`redialling (${ctx.attempt} failed so far${why})`);
    }
    return url;
  }, {
    hello: { payload: { client: 'browser' } },
    onOpen: ({ reconnected, welcome }) => {
      view.state = 'open';
      view.opens++;
      view.reconnected = reconnected;
      view.welcome = welcome;
      note(`${reconnected ? 'reconnected' : 'connected'}, welcome ${JSON.stringify(welcome)}`);
    },
    onClose: (info) => {
      view.closes.push(info.code);
      view.state = info.willRetry ? 'reconnecting' : 'closed';
      note(describeClose(info));
    },
    onReconnecting: ({ attempt, delayMs }) => {
      view.state = 'reconnecting';
      note(`next dial in ${Math.round(delayMs)} ms (${attempt} failed so far)`);
    },
  });
  view.state = connection.state;
  view.welcome = connection.welcome;
  render();

  let n = 0;
  const echo = async (ping: Ping): Promise<OutputOf<Api, 'echo'>> => {
    try {
      const answer = await connection.call('echo', ping, { timeoutMs: 2000 });
      view.ok++;
      view.last = answer;
      return answer;
    } catch (error) {
      view.failed++;
      throw error;
    } finally {
      render();
    }
  };
  Object.assign(globalThis, { muxwsEcho: echo });
  setInterval(() => {
    echo({ from: 'page', n: ++n }).catch(() => {});
  }, 200);
} catch (error) {
  view.state = 'failed';
  note(`could not connect: ${error}`);
}
