// The chat's acceptor, runtime-neutral: serve_deno.ts and serve_bun.ts put it behind a server.
//
// A peer is signed in by a `session=<name>` cookie, read by `authorize` before any socket
// exists. A browser cannot set a header on a WebSocket from script, but it sends the cookies of
// the acceptor's host with the upgrade: cookies are scoped by host, not port, so a page served
// from 127.0.0.1:8000 that set `session=ada` signs in to an acceptor on 127.0.0.1:9000. One
// credential path for every client; a non-browser dialer sets the Cookie header itself.
import { Acceptor, type OriginPolicy } from '@muxws/core/acceptor';
import { StreamError, StreamResetError } from '@muxws/core';
import type { Api, Chunk, Price } from './api.ts';

/** What the acceptor keeps for each peer: who signed in, and the room its hello chose. */
export interface ChatUser {
  user: string;
  room: string;
}

/** How one `download` ended: every chunk sent, or stopped early because the caller aborted. */
export interface DownloadRecord {
  user: string;
  size: number;
  sent: number;
  stoppedEarly: boolean;
}

/** Options of {@linkcode createChat}. */
export interface ChatOptions {
  /** The names a `session` cookie may carry. */
  users: readonly string[];
  /** The starting price of each ticker symbol; another symbol is refused with `not_found`. */
  prices?: Readonly<Record<string, number>>;
  /** Milliseconds between two ticks of a ticker. @default {1000} */
  tickMs?: number;
  /** Pages allowed to dial (other ports of the host are other origins). */
  origins?: OriginPolicy;
  /** Called when a `download` handler has returned. */
  onDownload?: (record: DownloadRecord) => void;
}

/** The chat's acceptor and what it recorded. */
export interface Chat {
  acceptor: Acceptor<Api, ChatUser>;
  downloads: DownloadRecord[];
}

/** The `session` cookie's value in `request`, or undefined. */
function sessionOf(request: Request): string | undefined {
  for (const pair of (request.headers.get('cookie') ?? '').split(';')) {
    const [name, value] = pair.trim().split('=');
    if (name === 'session' && value) return decodeURIComponent(value);
  }
  return undefined;
}

/** Resolves after `ms`, or at once when `signal` aborts. */
function tick(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(done, ms);
    signal.addEventListener('abort', done, { once: true });
    function done(): void {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    }
  });
}

/** Builds the chat's acceptor. */
export function createChat(options: ChatOptions): Chat {
  const { users, prices = { ACME: 100 }, tickMs = 1000, origins, onDownload } = options;
  const downloads: DownloadRecord[] = [];
  const acceptor: Acceptor<Api, ChatUser> = new Acceptor<Api, ChatUser>({
    origins,
    authorize(request) {
      const user = sessionOf(request);
      if (user === undefined || !users.includes(user)) {
        return new Response('Sign in first: no valid session cookie', { status: 401 });
      }
      // The room is chosen by the hello, once the socket is open.
      return { data: { user, room: '' } };
    },
    onHello({ payload }, peer) {
      if (typeof payload?.room !== 'string' || payload.room === '') {
        throw new StreamError(
          'invalid',
          `Expected a room name in the hello, found ${payload?.room}`,
        );
      }
      peer.data.room = payload.room;
      peer.tags.add(`room:${payload.room}`);
      return { motd: `Welcome to ${payload.room}, ${peer.data.user}` };
    },
    routes: {
      async 'chat.say'({ text }, { peer }) {
        const line = `${peer.data.user}: ${text}`;
        const delivered = await acceptor.broadcast(`room:${peer.data.room}`, line, {
          except: [peer],
        });
        return { delivered };
      },
      async *ticker({ symbol }, { signal }): AsyncGenerator<Price> {
        const start = prices[symbol];
        if (start === undefined) throw new StreamError('not_found', `No ticker for ${symbol}`);
        for (let n = 0; !signal.aborted; n++) {
          yield { symbol, price: start + n };
          await tick(tickMs, signal);
        }
      },
      async download({ size }, { peer, stream, signal }) {
        const record = { user: peer.data.user, size, sent: 0, stoppedEarly: false };
        try {
          while (record.sent < size && !signal.aborted) {
            const chunk: Chunk = { seq: record.sent, data: 'x'.repeat(1024) };
            await stream.write(chunk);
            record.sent++;
          }
        } catch (error) {
          // Once the caller resets the stream, a pending write rejects (and `signal` aborts).
          if (!(error instanceof StreamResetError)) throw error;
        }
        record.stoppedEarly = record.sent < size;
        downloads.push(record);
        onDownload?.(record);
      },
    },
  });
  return { acceptor, downloads };
}
