/**
 * The acceptor's decision on an upgrade request, before any socket exists, as plain functions over
 * a `Request` or an adapter's {@linkcode UpgradeHead}: the `Origin` policy
 * ({@linkcode originCheck}), the subprotocol offer ({@linkcode offers}), the refusals
 * ({@linkcode checkUpgrade}: 426, 503 with `Retry-After` while the acceptor closes, 403, 400) and
 * the application's `authorize` ({@linkcode authorizeUpgrade}: 403, its `Response`, 500).
 *
 * Private to `lib/acceptor/`; what adapters may use of it, the adapter kit
 * (`lib/acceptor/kit.ts`) re-exports.
 *
 * @module
 */
import type {
  AttachedPeer,
  AttachOptions,
  AuthorizeInfo,
  AuthorizeResult,
  OriginPolicy,
  PeerSink,
  UpgradeAccepted,
} from './acceptor_types.ts';
import { describe } from '../util/describe.ts';
import { isTag, MAX_TAG_LENGTH } from '../wire/frame.ts';
import { DEFAULT_LIMITS } from '../session/limits.ts';

/**
 * What the checks read of an upgrade request: a `Request` is one, and so is an adapter's view of
 * its runtime's own request head (Node's `IncomingMessage`), which builds the `Request` only when
 * `request()` is called: for an origin predicate or `authorize`, which are handed a real one.
 */
export interface UpgradeHead {
  /** The HTTP method. */
  readonly method: string;
  /** The request's URL (the default origin policy reads it only when `Host` is missing). */
  readonly url: string;
  /** The request's headers, read by name. */
  readonly headers: { get(name: string): string | null };
  /** The request as a web `Request`, built once when first asked. */
  request?(): Request;
}

/** The `Request` of `request`: itself, or what its head builds. */
export function requestOf(request: Request | UpgradeHead): Request {
  return typeof (request as UpgradeHead).request === 'function'
    ? (request as UpgradeHead).request!()
    : request as Request;
}

/** An origin policy made callable: whether an upgrade with this `Origin` may proceed. */
export type OriginCheck = (origin: string | null, request: Request | UpgradeHead) => boolean;

/** What {@linkcode checkUpgrade} needs of the acceptor. */
export interface UpgradeRules {
  /** The muxws token of the acceptor's codec, such as `muxws.v1.json`. */
  readonly protocol: string;
  /** The acceptor's origin policy, from {@linkcode originCheck}. */
  readonly origin: OriginCheck;
  /** True once the acceptor began to close: upgrades are refused with 503. */
  readonly closing: boolean;
  /** Takes what a throwing origin predicate or `authorize` threw; the upgrade is then refused. */
  report(error: unknown): void;
}

/** The acceptor's `authorize` option. */
export type Authorize = (
  request: Request,
  info: AuthorizeInfo,
) => AuthorizeResult | Promise<AuthorizeResult>;

/** An acceptor's whole upgrade decision ({@linkcode Acceptor.checkUpgrade}) over any head. */
export type UpgradeCheck = (request: Request | UpgradeHead) => Promise<UpgradeAccepted | Response>;

/** What an acceptor registers for its adapters: one entry per acceptor, never per upgrade. */
interface Registered {
  /** The decision, for an adapter with a request head rather than a `Request` (Node's). */
  readonly check: UpgradeCheck;
  /** The acceptor's `maxMessageBytes`, for the runtime's own limit on a message it buffers. */
  readonly maxMessageBytes: number;
  /** `attach()` returning the peer's link itself ({@linkcode attachSink}). */
  readonly attach: AttachSink;
}

/** Attaches a push-style socket's sink; the handle's methods are called on it. */
type AttachSink = (sink: PeerSink, options: AttachOptions) => AttachedPeer;

/** The acceptor's part for its adapters: a module-private symbol on the public `Acceptor`. */
const REGISTERED: unique symbol = Symbol('muxws.upgrade');

/** An object that may carry a {@linkcode REGISTERED} part. */
type MaybeRegistered = { [REGISTERED]?: Registered };

/** Registers `acceptor`'s decision, message limit and attach for its adapters. */
export function registerUpgradeCheck(
  acceptor: object,
  check: UpgradeCheck,
  maxMessageBytes: number,
  attach: AttachSink,
): void {
  Object.defineProperty(acceptor, REGISTERED, { value: { check, maxMessageBytes, attach } });
}

/**
 * `acceptor.attach(sink, options)` for an adapter that keeps the handle and calls its methods on
 * it: the peer's link itself, whose methods are on a shared prototype, rather than a handle of
 * three closures per peer (an idle peer's memory, docs/performance.md). The public `attach()`
 * for an object that registered none.
 */
export function attachSink(
  acceptor: { attach(sink: PeerSink, options?: AttachOptions): AttachedPeer },
  sink: PeerSink,
  options: AttachOptions<unknown>,
): AttachedPeer {
  const checked = options as AttachOptions;
  const registered = (acceptor as MaybeRegistered)[REGISTERED];
  return registered === undefined
    ? acceptor.attach(sink, checked)
    : registered.attach(sink, checked);
}

/** The decision `acceptor` registered, if any. */
export function upgradeCheckOf(acceptor: object): UpgradeCheck | undefined {
  return (acceptor as MaybeRegistered)[REGISTERED]?.check;
}

/**
 * The largest message `acceptor` takes, in bytes: the limit an adapter hands the runtime, so a
 * larger message is refused as its first frame header arrives (1009) rather than buffered whole
 * before the session sees it. The default limit for an object that registered none.
 */
export function messageLimitOf(acceptor: object): number {
  return (acceptor as MaybeRegistered)[REGISTERED]?.maxMessageBytes ??
    DEFAULT_LIMITS.maxMessageBytes;
}

/** How long a refused dialer is asked to wait while the acceptor closes, in seconds. */
const CLOSING_RETRY_AFTER_S = '1';

/**
 * Decides an upgrade request. In order: 426 when it is not a WebSocket upgrade (`GET` with
 * `Upgrade: websocket`), 503 with `Retry-After` while the acceptor closes, 403 when its `Origin`
 * is not allowed (a throwing predicate is reported and refuses), 400 when the muxws subprotocol
 * is not offered.
 *
 * @param request The incoming HTTP request.
 * @param rules The acceptor's token, origin check and closing state.
 * @returns `{ protocol }` to select, or the refusal `Response` to send as it is.
 */
export function checkUpgrade(
  request: Request | UpgradeHead,
  rules: UpgradeRules,
): UpgradeAccepted | Response {
  const upgrade = request.headers.get('upgrade');
  if (request.method !== 'GET' || upgrade === null || upgrade.toLowerCase() !== 'websocket') {
    return refusal(426, 'Expected a WebSocket upgrade request', { upgrade: 'websocket' });
  }
  if (rules.closing) {
    return refusal(503, 'The acceptor is closing', { 'retry-after': CLOSING_RETRY_AFTER_S });
  }
  let allowed = false;
  try {
    allowed = rules.origin(request.headers.get('origin'), request) === true;
  } catch (error) {
    rules.report(error);
  }
  if (!allowed) return refusal(403, 'Origin not allowed');
  if (!offers(request.headers.get('sec-websocket-protocol'), rules.protocol)) {
    return refusal(400, `Expected the subprotocol ${rules.protocol} to be offered`);
  }
  return { protocol: rules.protocol };
}

/**
 * Runs `authorize` on an upgrade {@linkcode checkUpgrade} accepted: `true` keeps it, `false`
 * refuses with 403, a `Response` is the refusal as given, an object keeps it with the object's
 * `data` and `tags`; a throw, a rejection or any other value (reported as a `TypeError`) refuses
 * with 500, the error going to `report`.
 */
export async function authorizeUpgrade(
  request: Request | UpgradeHead,
  accepted: UpgradeAccepted,
  authorize: Authorize,
  report: (error: unknown) => void,
): Promise<UpgradeAccepted | Response> {
  try {
    const protocols = offeredList(request.headers.get('sec-websocket-protocol'));
    const decision: unknown = await authorize(requestOf(request), { protocols });
    if (decision === true) return accepted;
    if (decision === false) return refusal(403, 'Not authorized');
    if (decision instanceof Response) return decision;
    return { ...accepted, ...seed(decision) };
  } catch (error) {
    report(error);
    return refusal(500, 'The upgrade could not be authorized');
  }
}

/**
 * The 400 answer to an upgrade the runtime could not complete (`Deno.upgradeWebSocket` threw,
 * Bun's `server.upgrade()` returned false): muxws's own text, naming the header at fault when
 * one is, never the runtime's error.
 */
export function malformedUpgrade(request: Request | UpgradeHead): Response {
  const headers = request.headers;
  let found = 'a handshake the runtime could not complete';
  if (!listHas(headers.get('connection'), 'upgrade')) found = 'no "Upgrade" in Connection';
  else if (headers.get('sec-websocket-key') === null) found = 'no Sec-WebSocket-Key';
  else if (headers.get('sec-websocket-version')?.trim() !== '13') {
    found = 'a Sec-WebSocket-Version other than 13';
  }
  return refusal(
    400,
    `Bad WebSocket upgrade request: expected Connection: Upgrade, a Sec-WebSocket-Key and Sec-WebSocket-Version 13; found ${found}`,
  );
}

/** Whether the comma-separated header value `list` holds `token`, compared without case. */
function listHas(list: string | null, token: string): boolean {
  if (list === null) return false;
  return list.split(',').some((item) => item.trim().toLowerCase() === token);
}

/** The `data` and `tags` of what `authorize` returned. @throws {TypeError} For anything else. */
function seed(decision: unknown): Pick<UpgradeAccepted, 'data' | 'tags'> {
  const what = 'Cannot authorize an upgrade';
  if (typeof decision !== 'object' || decision === null || Array.isArray(decision)) {
    throw new TypeError(
      `${what} as "authorize" must return true, false, a Response or { data, tags }: current value is ${
        describe(decision)
      }`,
    );
  }
  const { data, tags } = decision as { data?: unknown; tags?: unknown };
  if (data !== undefined && (typeof data !== 'object' || data === null)) {
    throw new TypeError(
      `${what} as the "data" authorize returned must be an object: current value is ${
        describe(data)
      }`,
    );
  }
  if (tags === undefined) return { data: data as UpgradeAccepted['data'] };
  if (
    typeof tags !== 'object' || tags === null ||
    typeof (tags as Iterable<unknown>)[Symbol.iterator] !== 'function' || typeof tags === 'string'
  ) {
    throw new TypeError(
      `${what} as the "tags" authorize returned must be an iterable of tags: current value is ${
        describe(tags)
      }`,
    );
  }
  const list: string[] = [];
  for (const tag of tags as Iterable<unknown>) {
    if (!isTag(tag)) {
      throw new TypeError(
        `${what} as every tag authorize returned must be a string of 1 to ${MAX_TAG_LENGTH} characters: current value is ${
          describe(tag)
        }`,
      );
    }
    list.push(tag);
  }
  return { data: data as UpgradeAccepted['data'], tags: list };
}

/** The tokens of a `Sec-WebSocket-Protocol` value, in order, trimmed. */
function offeredList(offered: string | null): string[] {
  if (offered === null) return [];
  return offered.split(',').map((token) => token.trim()).filter((token) => token !== '');
}

function refusal(status: number, message: string, headers?: Record<string, string>): Response {
  return new Response(message, {
    status,
    headers: { 'content-type': 'text/plain; charset=utf-8', ...headers },
  });
}

/**
 * Whether a `Sec-WebSocket-Protocol` value (or several) offers `token`. Runs on every upgrade
 * (twice on Node: `handleProtocols` and the acceptor's `checkUpgrade`), so the usual offer,
 * exactly the token, is answered without splitting anything.
 */
export function offers(
  offered: string | readonly string[] | null | undefined,
  token: string,
): boolean {
  if (offered === null || offered === undefined) return false;
  if (typeof offered === 'string') return listOffers(offered, token);
  for (const item of offered) {
    if (typeof item === 'string' && listOffers(item, token)) return true;
  }
  return false;
}

/** Whether the comma-separated `list` holds `token` (surrounding spaces ignored). */
function listOffers(list: string, token: string): boolean {
  if (list === token) return true;
  if (!list.includes(token)) return false;
  let start = 0;
  while (start <= list.length) {
    let end = list.indexOf(',', start);
    if (end === -1) end = list.length;
    if (list.slice(start, end).trim() === token) return true;
    start = end + 1;
  }
  return false;
}

/** The URL origin of `value`, or undefined when it has none (`null`) or is no URL. */
function originOf(value: string): string | undefined {
  try {
    const origin = new URL(value).origin;
    return origin === 'null' ? undefined : origin;
  } catch {
    return undefined;
  }
}

/** The default policy: no `Origin`, or one whose host is the request's `Host`. */
function sameHost(origin: string | null, request: Request | UpgradeHead): boolean {
  if (origin === null) return true;
  let url: URL;
  try {
    url = new URL(origin);
  } catch {
    return false;
  }
  if (url.origin === 'null') return false;
  const host = request.headers.get('host');
  let expected: string;
  try {
    expected = host ? new URL(`${url.protocol}//${host}`).host : new URL(request.url).host;
  } catch {
    return false;
  }
  return url.host === expected;
}

function anyOrigin(): boolean {
  return true;
}

/**
 * The check of an {@linkcode OriginPolicy}: same host when `undefined`, anything for `'*'`, the
 * predicate as it is, or membership of a list compared as URL origins (a request without
 * `Origin` passes a list).
 *
 * @throws {TypeError} When `policy` is none of those, or a list entry is not an origin.
 */
export function originCheck(policy: OriginPolicy | undefined): OriginCheck {
  if (policy === undefined) return sameHost;
  if (policy === '*') return anyOrigin;
  if (typeof policy === 'function') {
    return (origin, request) => policy(origin, requestOf(request));
  }
  if (Array.isArray(policy)) {
    const allowed = new Set<string>();
    for (const entry of policy as readonly unknown[]) {
      const origin = typeof entry === 'string' ? originOf(entry) : undefined;
      if (origin === undefined) {
        throw new TypeError(
          `Cannot create Acceptor as "origins" must list origins such as "https://app.example": found ${
            describe(entry)
          }`,
        );
      }
      allowed.add(origin);
    }
    return (origin) => {
      if (origin === null) return true;
      const normalized = originOf(origin);
      return normalized !== undefined && allowed.has(normalized);
    };
  }
  throw new TypeError(
    `Cannot create Acceptor as "origins" must be '*', a list of origins or a function: current value is ${
      describe(policy)
    }`,
  );
}
