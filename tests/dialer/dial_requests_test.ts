// Where a dialer's request or new stream goes: the usable link, the refusals, and a sent request's
// default timeout and its loss with the connection (WSM-STR-005, WSM-APP-006).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { request, requireOpen, sendRequest, usableLink } from '../../lib/dialer/_dial_requests.ts';
import { WaitingRequests } from '../../lib/dialer/_waiting.ts';
import type { Link } from '../../lib/dialer/_link.ts';
import {
  ClosedError,
  type ConnectionState,
  NotConnectedError,
  type RequestOptions,
  StreamResetError,
} from 'muxws';
import { MUXWS } from '../../lib/wire/reserved.ts';

/** A link whose session records each request's options and answers with `answer`. */
function fakeLink(
  answer: () => Promise<unknown> = () => Promise.resolve('ok'),
  goAway?: { at: number; spreadMs: number },
): Link & { sent: (RequestOptions | undefined)[] } {
  const sent: (RequestOptions | undefined)[] = [];
  const session = {
    request: (_payload: unknown, options?: RequestOptions) => {
      sent.push(options);
      return answer();
    },
  };
  return { phase: 'open', inflight: 0, goAway, session, sent } as unknown as
    & Link
    & { sent: (RequestOptions | undefined)[] };
}

const DRAINING = { at: 0, spreadMs: 0 };

test('usableLink() and requireOpen() allow a link only while open and before a GOAWAY', () => {
  const cases: [ConnectionState, 'link' | 'draining' | 'none', string][] = [
    ['open', 'link', 'usable'],
    [
      'open',
      'draining',
      'NotConnectedError: Cannot go: the acceptor sent GOAWAY and the connection is draining',
    ],
    ['open', 'none', 'NotConnectedError: Cannot go: the connection is open'],
    ['connecting', 'none', 'NotConnectedError: Cannot go: the connection is connecting'],
    ['reconnecting', 'link', 'NotConnectedError: Cannot go: the connection is reconnecting'],
    ['closed', 'link', 'ClosedError: Cannot go: the connection is closed'],
  ];
  for (const [state, which, expected] of cases) {
    const link = which === 'none'
      ? undefined
      : fakeLink(undefined, which === 'draining' ? DRAINING : undefined);
    assert.equal(
      usableLink(state, link),
      expected === 'usable' ? link : undefined,
      `${state} ${which}`,
    );
    let got: string;
    try {
      got = requireOpen(state, link, 'go') === link ? 'usable' : 'another link';
    } catch (error) {
      got = `${(error as Error).name}: ${(error as Error).message}`;
    }
    assert.equal(got, expected, `${state} ${which}`);
  }
});

test('sendRequest() adds requestTimeoutMs only to a request that sets no timeout', async () => {
  const cases: [number | undefined, RequestOptions | undefined, number | undefined][] = [
    [5000, undefined, 5000],
    [5000, {}, 5000],
    [5000, { timeoutMs: 10 }, 10],
    [undefined, { timeoutMs: 10 }, 10],
    [undefined, undefined, undefined],
  ];
  for (const [defaultMs, options, expected] of cases) {
    const link = fakeLink();
    assert.equal(await sendRequest(link, defaultMs, 'p', options), 'ok');
    assert.equal(link.sent[0]?.timeoutMs, expected, `${defaultMs} ${JSON.stringify(options)}`);
    assert.equal(link.inflight, 0);
  }
});

test("sendRequest() adds requestTimeoutMs to a routed call's options and keeps muxws's part", async () => {
  const link = fakeLink();
  const muxws = { headers: { ':route': 'echo' }, operation: 'call()' };
  const signal = new AbortController().signal;
  const options = { headers: { trace: 'a' }, signal, [MUXWS]: muxws };
  assert.equal(await sendRequest(link, 5000, 'p', options), 'ok');
  const sent = link.sent[0] as typeof options & { timeoutMs?: number };
  assert.notEqual(sent, options, "the caller's options are not changed");
  assert.deepEqual(Object.keys(sent), ['headers', 'signal', 'timeoutMs']);
  assert.equal(sent.headers, options.headers);
  assert.equal(sent.signal, signal);
  assert.equal(sent.timeoutMs, 5000);
  assert.equal(sent[MUXWS], muxws);
  assert.equal((options as { timeoutMs?: number }).timeoutMs, undefined);
});

test('sendRequest() says a request lost with its connection may have been processed', async () => {
  const lost = new StreamResetError('The connection was lost', {
    code: 'connection_lost',
    remote: false,
  });
  const link = fakeLink(() => Promise.reject(lost));
  const pending = sendRequest(link, undefined, 'p', undefined);
  assert.equal(link.inflight, 1);
  await assert.rejects(pending, (error: StreamResetError) => {
    assert.equal(error.code, 'connection_lost');
    assert.equal(error.cause, lost);
    assert.match(error.message, /the request was sent, so the acceptor may have processed it$/);
    return true;
  });
  const other = new StreamResetError('Refused', { code: 'refused', remote: true });
  await assert.rejects(
    sendRequest(fakeLink(() => Promise.reject(other)), undefined, 'p', undefined),
    (e) => e === other,
  );
});

test('request() sends on a usable link, refuses without waiting, and holds with it', async () => {
  const link = fakeLink();
  assert.equal(await request('open', link, undefined, undefined, 'p', undefined), 'ok');
  await assert.rejects(
    request('reconnecting', undefined, undefined, undefined, 'p', undefined),
    NotConnectedError,
  );
  const waiting = new WaitingRequests(10, () => 0);
  await assert.rejects(
    request('closed', undefined, waiting, undefined, 'p', undefined),
    ClosedError,
  );
  const held = request('reconnecting', undefined, waiting, undefined, 'p', undefined);
  const later = fakeLink();
  waiting.send((payload, options) => sendRequest(later, 7, payload, options));
  assert.equal(await held, 'ok');
  assert.deepEqual(later.sent, [{ timeoutMs: 7 }]);
});
