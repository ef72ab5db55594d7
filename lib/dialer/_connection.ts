/**
 * The dialer's state machine: `connecting`, `open`, `reconnecting`, `closed`. It composes the
 * parts: an attempt (`lib/dialer/_attempt.ts`) over a transport (`lib/dialer/_transport.ts`), a
 * `Session` per established wire with its link (`lib/dialer/_link.ts`: the heartbeat of
 * `lib/dialer/_heartbeat.ts`, the GOAWAY drain), the redial decision (`lib/dialer/_redial.ts`),
 * where a request or stream goes (`lib/dialer/_dial_requests.ts`), and owns what is left: the
 * states, establishment and loss, the redial wait, and closing for good. The features an
 * application imports by name reach it only through their option values (`lib/dialer/_features.ts`:
 * recovery, waiting while reconnecting, online hints) or the hook of `lib/dialer/_extensions.ts`
 * (standing subscriptions, typed events, presence), so it imports none of them. User callbacks go
 * through `lib/util/contain.ts`. {@linkcode connectOver} is how `connect()`, and a test with a
 * transport of its own, start one. Internal.
 *
 * @module
 */
import type {
  CloseInfo,
  Connection,
  ConnectionState,
  ConnectOptions,
  DialContext,
  DialTargetInput,
  OpenedOptions,
} from './dialer_types.ts';
import { ClosedError, ConnectError, HelloRejectedError, TimeoutError } from '../errors.ts';
import type { Limits } from '../session/limits.ts';
import {
  NO_HELLO,
  type OpenOptions,
  type PublishMessage,
  type RequestOptions,
  type Stream,
} from '../session/stream.ts';
import {
  drain,
  type Link,
  type LinkHost,
  openLink,
  publishEarly,
  startHeartbeat,
  track,
} from './_link.ts';
import { CloseCode, HELLO_REQUIRED_REASON as HELLO_REQUIRED } from '../wire/codes.ts';
import { callContained, reportTo } from '../util/contain.ts';
import { timerDelay } from '../util/delay.ts';
import { checkClose, type DialOptions, resolveOptions } from './_dial_options.ts';
import { afterFailure, afterLoss } from './_redial.ts';
import { request, requireOpen, sendRequest, usableLink } from './_dial_requests.ts';
import { type Attempt, endedClose, startAttempt } from './_attempt.ts';
import { type Transport, webSocketTransport } from './_transport.ts';
import { type Extension, type ExtensionHost, EXTENSIONS, runStep } from './_extensions.ts';
import type { BroadcastReceiver, RequestWaiter } from './_features.ts';
import { receiveAsIs } from './_broadcasts.ts';
import { defineRouteCalls, makerOf, unroutedHandler } from '../routes/route_streams.ts';

const MAX_LOOKBACK_MS = 4_294_967_295;

/** What a first connection that failed before its socket opened most often means. */
const UNOPENED_CAUSES =
  'the usual causes are nothing listening at the URL, a wrong path (404), an origin or credentials the acceptor refuses (403, or 401 from authorize), wss:// to a server without TLS, or a subprotocol/codec it does not offer (400)';

/**
 * Starts a connection over `transport` and resolves once it is established; `connect()` is this
 * with the WebSocket transport.
 *
 * @param transport The carrier; `undefined` for the WebSocket transport over `options.WebSocket`.
 * @param target As `connect()` takes it.
 * @param options As `connect()` takes them.
 * @param now The clock, epoch ms.
 */
export async function connectOver(
  transport: Transport | undefined,
  target: DialTargetInput,
  options: ConnectOptions,
  now: () => number = () => Date.now(),
): Promise<Connection> {
  return await new DialerConnection(transport, target, options, now).start();
}

/** The redial (or first-dial spread) being waited for. */
interface Wait {
  timer: ReturnType<typeof setTimeout>;
  dueAt: number;
  run: () => void;
  cancel: ((reason: unknown) => void) | undefined;
}

/**
 * A dialled connection (see {@linkcode Connection} for the callback order). State first, then
 * user code, through one report. The route methods, `call()` and `stream()`, are
 * the unrouted forms with `:route` in their headers, defined on the prototype by the routes'
 * `defineRouteCalls()` (one copy for both sides).
 */
class DialerConnection implements Connection {
  declare call: Connection['call'];
  declare stream: Connection['stream'];
  static {
    defineRouteCalls(this);
  }
  readonly #options: ConnectOptions;
  readonly #o: DialOptions;
  readonly #transport: Transport;
  readonly #now: () => number;
  #state: ConnectionState = 'connecting';
  #welcome: unknown = undefined;
  #link: Link | undefined;
  /** The last attempt started; aborting it is a no-op once it settled. */
  #pending: Attempt<Link> | undefined;
  #limits: Partial<Limits> | undefined;
  /** The code and reason `close()` asked for, used to close a socket mid-attempt. */
  #closeRequest: { code: number; reason: string } | undefined;
  #wait: Wait | undefined;
  #stableTimer: ReturnType<typeof setTimeout> | undefined;
  #attempts = 0;
  #lastFailureWasAuth = false;
  #disconnectedAt: number | undefined;
  #lastError: unknown = undefined;
  /** Settles one `opened()` promise: resolves it without an error, rejects it with one. */
  readonly #openedWaiters = new Set<(error?: unknown) => void>();
  /** Requests waiting for a connection; only with the `whileReconnecting` option. */
  readonly #waiting: RequestWaiter | undefined;
  readonly #closed: Promise<CloseInfo>;
  #resolveClosed!: (info: CloseInfo) => void;
  #removeHints: (() => void) | undefined;
  #removeSignal: (() => void) | undefined;
  readonly #report = (error: unknown): void => reportTo(this.#options.onError, error);
  readonly #linkHost: LinkHost;
  /** The dialer's side of recovery; only with the `recovery` option. */
  readonly #recovery: BroadcastReceiver | undefined;
  /** The features imported by name that extend this connection (`lib/dialer/_extensions.ts`). */
  readonly #extensions: Extension[] = [];
  /** What those features reach this connection through. */
  readonly [EXTENSIONS]: ExtensionHost;

  constructor(
    transport: Transport | undefined,
    target: DialTargetInput,
    options: ConnectOptions,
    now: () => number,
  ) {
    this.#o = resolveOptions(target, options, transport === undefined);
    this.#transport = transport ?? webSocketTransport(this.#o.WebSocket!, now);
    this.#limits = this.#o.limits;
    this.#options = options;
    this.#now = now;
    // Route serving is reached only through what serve() returned: a bundle without it has none.
    const make = makerOf<Connection>(options.routes) ?? unroutedHandler;
    const onStream = make(options.onStream, this);
    const extensions = this.#extensions;
    const deliver = (message: PublishMessage) => {
      if (!runStep(extensions, 'publish', this.#report, message)) {
        callContained(this.#report, options.onPublish, message);
      }
    };
    const recovery = this.#recovery = this.#o.recovery?.(deliver, this.#report);
    const receive = recovery === undefined
      ? receiveAsIs(deliver)
      : (message: PublishMessage) => recovery.receive(message);
    this.#linkHost = {
      codec: this.#o.codec,
      limits: () => this.#limits,
      now,
      onStream,
      // A feature's own frames (presence's) are taken before recovery strips reserved headers.
      publish: (message) => {
        if (!runStep(extensions, 'arrived', this.#report, message)) receive(message);
      },
      report: this.#report,
      lost: (link, info) => this.#lost(link, info),
    };
    this[EXTENSIONS] = {
      extend: (extension) => {
        extensions.push(extension);
        return () => {
          const at = extensions.indexOf(extension);
          if (at !== -1) extensions.splice(at, 1);
        };
      },
      open: (payload, openOptions) =>
        usableLink(this.#state, this.#link)?.session.open(payload, openOptions),
      report: this.#report,
    };
    this.#waiting = this.#o.waiting?.(now);
    this.#closed = new Promise((resolve) => this.#resolveClosed = resolve);
  }

  get state(): ConnectionState {
    return this.#state;
  }

  get welcome(): unknown {
    return this.#welcome;
  }

  get closed(): Promise<CloseInfo> {
    return this.#closed;
  }

  /** Runs the first connection; resolves with this connection or rejects with ConnectError. */
  async start(): Promise<this> {
    const o = this.#o;
    const signal = o.signal;
    if (signal?.aborted) {
      this.#state = 'closed';
      throw new ConnectError('Cannot connect: the signal was already aborted', {
        cause: signal.reason,
      });
    }
    if (signal) {
      const onAbort = () => this.#shutdown(CloseCode.Normal, '', signal.reason);
      signal.addEventListener('abort', onAbort, { once: true });
      this.#removeSignal = () => signal.removeEventListener('abort', onAbort);
    }
    this.#removeHints = o.hints?.(() => this.#online(), () => this.#offline());
    let link: Link;
    let attempt: Attempt<Link> | undefined;
    try {
      if (o.firstDialDelayMs > 0) {
        const spread = (o.draw() + 1) / 2 * o.firstDialDelayMs;
        await new Promise<void>((resolve, reject) => this.#schedule(spread, resolve, reject));
      }
      attempt = this.#attempt('initial', false);
      link = await attempt.done;
    } catch (error) {
      if (this.#state !== 'closed') {
        this.#state = 'closed';
        this.#cleanup();
        this.#resolveClosed(attemptCloseInfo(attempt, error, 0));
      }
      const cause = signal?.aborted && !(error instanceof TimeoutError) ? signal.reason : error;
      const target = o.target;
      const where = typeof target === 'function' ? "the target function's URL" : target.url;
      const hint = attempt?.unopened && cause === error ? `; ${UNOPENED_CAUSES}` : '';
      throw new ConnectError(
        `Cannot connect to ${where}: ${
          cause instanceof Error ? cause.message : String(cause)
        }${hint}`,
        { cause },
      );
    }
    this.#established(link, false);
    return this;
  }

  opened(options: OpenedOptions = {}): Promise<void> {
    // Draining after a GOAWAY, the connection refuses new requests: resolving now would turn
    // "retry once opened()" into a loop of refusals that never yields to the event loop.
    if (this.#state === 'open' && this.#link?.goAway === undefined) return Promise.resolve();
    if (this.#state === 'closed') {
      return Promise.reject(new ClosedError('Cannot wait for the connection: it is closed'));
    }
    const signal = options.signal;
    if (signal?.aborted) return Promise.reject(signal.reason);
    return new Promise<void>((resolve, reject) => {
      const settle = (error?: unknown) => {
        this.#openedWaiters.delete(settle);
        signal?.removeEventListener('abort', onAbort);
        if (error === undefined) resolve();
        else reject(error);
      };
      // An aborted signal's reason is never undefined (abort() defaults it to an AbortError).
      const onAbort = () => settle(signal!.reason);
      this.#openedWaiters.add(settle);
      signal?.addEventListener('abort', onAbort, { once: true });
    });
  }

  open(payload: unknown, options?: OpenOptions): Stream {
    const link = requireOpen(this.#state, this.#link, 'open a stream');
    const stream = link.session.open(payload, options);
    track(link, stream.closed);
    return stream;
  }

  request(payload: unknown, options?: RequestOptions): Promise<unknown> {
    const timeoutMs = this.#o.requestTimeoutMs;
    return request(this.#state, this.#link, this.#waiting, timeoutMs, payload, options);
  }

  close(code: number = CloseCode.Normal, reason: string = ''): Promise<CloseInfo> {
    checkClose(code, reason);
    this.#shutdown(code, reason, new ClosedError('The connection was closed by close()'));
    return this.#closed;
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.close();
  }

  // ---- attempts ----

  /** Starts an attempt as the pending one. */
  #attempt(reason: 'initial' | 'reconnect', fast: boolean): Attempt<Link> {
    return this.#pending = startAttempt<Link>(this.#o, this.#transport, {
      context: (signal) => this.#dialContext(reason, fast, signal),
      link: (wire) => {
        const link = openLink(wire, this.#linkHost);
        // The first session checked the limits; later ones take them resolved (sessionLimits).
        this.#limits = link.session.limits;
        return link;
      },
      closeRequest: () => this.#closeRequest,
      welcome: (value) => this.#welcome = value,
      resume: () => this.#recovery?.resume(),
    });
  }

  /** The context of one attempt, frozen, as its target and hello read it. */
  #dialContext(reason: 'initial' | 'reconnect', fast: boolean, signal: AbortSignal): DialContext {
    const disconnectedAt = reason === 'initial' ? undefined : this.#disconnectedAt;
    return Object.freeze({
      attempt: this.#attempts,
      reason,
      resumedFromServiceRestart: fast,
      disconnectedAt,
      replayLookbackMs: disconnectedAt === undefined
        ? 0
        : Math.min(Math.ceil(this.#now() - disconnectedAt + 5000), MAX_LOOKBACK_MS),
      lastError: this.#lastError,
      signal,
    });
  }

  #established(link: Link, reconnected: boolean): void {
    if (this.#state === 'closed' || link.phase === 'done') {
      // close() won the race with the acknowledgement
      if (link.phase !== 'done') link.session.close(CloseCode.Normal, '');
      return;
    }
    const o = this.#o;
    const attemptsBefore = this.#attempts;
    link.phase = 'open';
    this.#link = link;
    this.#state = 'open';
    this.#lastFailureWasAuth = false;
    this.#disconnectedAt = undefined;
    if (o.stableAfterMs === 0) this.#attempts = 0;
    else {
      this.#stableTimer = setTimeout(() => {
        this.#stableTimer = undefined;
        this.#attempts = 0;
      }, timerDelay(o.stableAfterMs));
    }
    if (o.heartbeat !== false) startHeartbeat(link, o.heartbeat, this.#now);
    runStep(this.#extensions, 'established', this.#report);
    if (this.#link !== link) return;
    if (link.goAway === undefined) {
      const timeoutMs = o.requestTimeoutMs;
      this.#waiting?.send((payload, options) => sendRequest(link, timeoutMs, payload, options));
    }
    drain(link); // a GOAWAY that arrived during the hello
    for (const settle of [...this.#openedWaiters]) settle();
    callContained(this.#report, this.#options.onOpen, {
      reconnected,
      attempts: attemptsBefore,
      welcome: this.#welcome,
    });
    publishEarly(link, this.#linkHost);
  }

  // ---- losing a connection, redialling ----

  #lost(link: Link, info: { code: number; reason: string; local: boolean }): void {
    if (this.#link !== link || this.#state === 'closed') return;
    this.#link = undefined;
    link.heartbeat?.stop();
    const { code, wasClean } = endedClose(link, info);
    const error = link.lossError;
    const now = this.#disconnectedAt = this.#now();
    const flapped = this.#stableTimer !== undefined;
    // established but not yet stable: the flap counts as a failed attempt (WSM-RCN-003)
    clearTimeout(this.#stableTimer);
    this.#stableTimer = undefined;
    // Only a dialer that sent no hello is closed so: a hello goes first on every connection.
    const noHello = code === CloseCode.Policy && info.reason === HELLO_REQUIRED;
    this.#lastError = error ?? new Error(
      `The connection closed with code ${code}${info.reason ? ` (${info.reason})` : ''}${
        noHello ? `: ${NO_HELLO}` : ''
      }`,
    );
    const { kind, attempts, delayMs } = afterLoss(this.#o, {
      code,
      attempts: this.#attempts,
      flapped,
      goAway: link.goAway,
      now,
    });
    this.#attempts = attempts;
    const willRetry = kind !== 'terminal';
    const closeInfo: CloseInfo = { code, reason: info.reason, wasClean, willRetry, attempts };
    if (error !== undefined || noHello) closeInfo.error = this.#lastError;
    if (kind === 'terminal') {
      this.#finish(closeInfo);
      return;
    }
    closeInfo.delayMs = delayMs;
    this.#state = 'reconnecting';
    callContained(this.#report, this.#options.onClose, closeInfo);
    // onClose may have closed the connection for good: then there is nothing to wait for
    if (this.#state === 'reconnecting') {
      this.#retry(delayMs, kind === 'fast', attempts, this.#lastError);
    }
  }

  /** Waits `delayMs` for the next redial, and tells `onReconnecting` so. */
  #retry(delayMs: number, fast: boolean, attempts: number, error: unknown): void {
    this.#schedule(delayMs, () => this.#redial(fast).catch(this.#report));
    callContained(this.#report, this.#options.onReconnecting, {
      attempt: attempts,
      delayMs,
      error,
    });
  }

  async #redial(fast: boolean): Promise<void> {
    if (this.#state !== 'reconnecting') return;
    const attempt = this.#attempt('reconnect', fast);
    let link: Link;
    try {
      link = await attempt.done;
    } catch (error) {
      if (this.#state === 'reconnecting') this.#failedRedial(attempt, error, fast);
      return;
    }
    this.#established(link, true);
  }

  #failedRedial(attempt: Attempt<Link>, error: unknown, fast: boolean): void {
    this.#lastError = error;
    const { kind, attempts, delayMs, auth } = afterFailure(this.#o, {
      attempts: this.#attempts,
      fast,
      closeCode: attempt.close?.code,
      helloRejection: error instanceof HelloRejectedError ? error.code : undefined,
      lastWasAuth: this.#lastFailureWasAuth,
      retryAfterMs: attempt.refusal?.retryAfterMs,
    });
    this.#attempts = attempts;
    this.#lastFailureWasAuth = auth;
    if (kind === 'terminal') {
      this.#finish(attemptCloseInfo(attempt, error, attempts));
      return;
    }
    this.#retry(delayMs, false, attempts, error);
  }

  #schedule(ms: number, run: () => void, cancel?: (reason: unknown) => void): void {
    const delay = timerDelay(ms);
    const wait: Wait = {
      timer: setTimeout(() => {
        if (this.#wait === wait) this.#wait = undefined;
        run();
      }, delay),
      dueAt: this.#now() + delay,
      run,
      cancel,
    };
    this.#wait = wait;
  }

  /** An `online` hint while reconnecting replaces a longer wait with a short jittered one. */
  #online(): void {
    const wait = this.#wait;
    if (this.#state !== 'reconnecting' || wait === undefined) return;
    const shortMs = (this.#o.draw() + 1) / 2 * this.#o.serviceRestartDelayMs;
    if (this.#now() + shortMs >= wait.dueAt) return;
    clearTimeout(wait.timer);
    this.#schedule(shortMs, wait.run, wait.cancel);
  }

  /** An `offline` hint while open probes the heartbeat at once. */
  #offline(): void {
    if (this.#state === 'open') this.#link?.heartbeat?.probe();
  }

  // ---- closing for good ----

  /** close(), the signal option: cancels everything, fires onClose once. */
  #shutdown(code: number, reason: string, abortReason: unknown): void {
    if (this.#state === 'closed') return;
    this.#closeRequest = { code, reason };
    this.#finish(
      { code, reason, wasClean: true, willRetry: false, attempts: this.#attempts },
      abortReason,
    );
  }

  /**
   * `abortReason` is the reason the last attempt (a no-op once it settled) and a wait for the
   * first dial are cancelled with.
   */
  #finish(
    info: CloseInfo,
    abortReason: unknown = new ClosedError('The connection was closed for good'),
  ): void {
    this.#state = 'closed';
    const link = this.#link;
    this.#link = undefined;
    this.#pending?.abort(abortReason);
    this.#pending = undefined;
    if (link !== undefined) {
      link.heartbeat?.stop();
      if (link.phase !== 'done') link.session.close(info.code, info.reason);
    }
    const wait = this.#wait;
    this.#wait = undefined;
    if (wait !== undefined) {
      clearTimeout(wait.timer);
      wait.cancel?.(abortReason);
    }
    this.#cleanup();
    runStep(this.#extensions.splice(0), 'closed', this.#report);
    this.#waiting?.fail(() =>
      new ClosedError('The request was never sent: the connection closed for good', {
        cause: info.error,
      })
    );
    if (this.#openedWaiters.size > 0) {
      const closedError = new ClosedError('The connection closed for good', { cause: info.error });
      for (const settle of [...this.#openedWaiters]) settle(closedError);
    }
    callContained(this.#report, this.#options.onClose, info);
    this.#resolveClosed(info);
  }

  /** Once, as the connection closes for good: stops its stable timer, its hints and its signal. */
  #cleanup(): void {
    clearTimeout(this.#stableTimer);
    this.#removeHints?.();
    this.#removeSignal?.();
  }
}

/** The final close information after a failed attempt: its wire's close, if it saw one. */
function attemptCloseInfo(
  attempt: Attempt<unknown> | undefined,
  error: unknown,
  attempts: number,
): CloseInfo {
  const { code = CloseCode.Abnormal, reason = '', wasClean = false } = attempt?.close ?? {};
  return { code, reason, wasClean, willRetry: false, error, attempts };
}
