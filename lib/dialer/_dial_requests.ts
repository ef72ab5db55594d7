/**
 * Where a new request or stream of the dialer goes, given the connection's state and link: whether
 * a link is usable ({@linkcode usableLink}: open, no GOAWAY) and the error when none is
 * ({@linkcode requireOpen}); a `request()` sent at once on it with `requestTimeoutMs` when it sets
 * no timeout ({@linkcode sendRequest}), which, lost with its connection, says the acceptor may have
 * processed it; else refused, or with `waitWhileReconnecting()` held by the waiting requests
 * (`lib/dialer/_waiting.ts`, which the connection owns and sends on each establishment). Plain
 * functions over what they are handed, so they know nothing of the state machine. Internal.
 *
 * @module
 */
import type { ConnectionState } from './dialer_types.ts';
import { ClosedError, NotConnectedError, StreamResetError } from '../errors.ts';
import type { RequestOptions } from '../session/stream.ts';
import { ResetCode } from '../wire/codes.ts';
import { type Link, track } from './_link.ts';
import type { RequestWaiter } from './_features.ts';
import { MUXWS, type WithMuxws } from '../wire/reserved.ts';

/** The established link new streams may open on: none while not open or after a GOAWAY. */
export function usableLink(state: ConnectionState, link: Link | undefined): Link | undefined {
  return state === 'open' && link !== undefined && link.goAway === undefined ? link : undefined;
}

/**
 * The usable link, else the error of `Cannot <what>`: `ClosedError` once closed,
 * `NotConnectedError` while not open or draining after a GOAWAY.
 */
export function requireOpen(state: ConnectionState, link: Link | undefined, what: string): Link {
  if (state === 'closed') throw closedNow(what);
  if (state !== 'open' || link === undefined) {
    throw new NotConnectedError(`Cannot ${what}: the connection is ${state}`);
  }
  if (link.goAway !== undefined) {
    throw new NotConnectedError(
      `Cannot ${what}: the acceptor sent GOAWAY and the connection is draining`,
    );
  }
  return link;
}

/** The error of `Cannot <what>` on a connection closed for good. */
export function closedNow(what: string): ClosedError {
  return new ClosedError(`Cannot ${what}: the connection is closed`);
}

/**
 * A request: sent now when a connection is usable, else rejected at once or, with
 * `waitWhileReconnecting()`, held by `waiting` until the next establishment.
 *
 * @param state The connection's state.
 * @param link Its current link, if any.
 * @param waiting The requests waiting for a connection; undefined without `whileReconnecting`.
 * @param timeoutMs `requestTimeoutMs`: a request's timeout when it sets none.
 */
export function request(
  state: ConnectionState,
  link: Link | undefined,
  waiting: RequestWaiter | undefined,
  timeoutMs: number | undefined,
  payload: unknown,
  options: RequestOptions | undefined,
): Promise<unknown> {
  const usable = usableLink(state, link);
  if (usable !== undefined) return sendRequest(usable, timeoutMs, payload, options);
  if (state === 'closed' || waiting === undefined) {
    try {
      requireOpen(state, link, 'send a request');
    } catch (error) {
      return Promise.reject(error);
    }
  }
  return waiting!.hold(payload, options, options?.timeoutMs ?? timeoutMs, state);
}

/**
 * Sends a request on `link` with `timeoutMs` (`requestTimeoutMs`) when it sets no timeout. Lost
 * with its connection it rejects with `connection_lost`, saying the acceptor may have processed it.
 */
export function sendRequest(
  link: Link,
  timeoutMs: number | undefined,
  payload: unknown,
  options: RequestOptions | undefined,
): Promise<unknown> {
  const pending = link.session.request(
    payload,
    options?.timeoutMs !== undefined || timeoutMs === undefined
      ? options
      : withTimeout(options, timeoutMs),
  );
  const answer = pending.catch(mayHaveBeenProcessed);
  track(link, answer);
  return answer;
}

/**
 * `options` with `timeoutMs`, as `{ ...options, timeoutMs }` makes them. The options of a routed
 * call carry muxws's part under a symbol, and an object spread copying a symbol key takes V8's slow
 * path, which every routed call would pay, so those are copied key by key.
 */
function withTimeout(
  options: WithMuxws<RequestOptions> | undefined,
  timeoutMs: number,
): WithMuxws<RequestOptions> {
  const muxws = options?.[MUXWS];
  if (muxws === undefined) return { ...options, timeoutMs };
  const copy: Record<string | symbol, unknown> = {};
  for (const key of Object.keys(options!)) copy[key] = (options as Record<string, unknown>)[key];
  copy.timeoutMs = timeoutMs;
  copy[MUXWS] = muxws;
  return copy as WithMuxws<RequestOptions>;
}

/** A request lost with its connection says that the acceptor may have processed it. */
function mayHaveBeenProcessed(error: unknown): never {
  if (error instanceof StreamResetError && error.code === ResetCode.ConnectionLost) {
    throw new StreamResetError(
      `${error.message}: the request was sent, so the acceptor may have processed it`,
      { code: error.code, remote: false, cause: error },
    );
  }
  throw error;
}
