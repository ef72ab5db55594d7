/**
 * One attempt to establish a connection: resolve the target and the hello (calling their functions
 * with the attempt's {@linkcode DialContext}), open the transport offering `muxws.v1.<codec>`
 * first, check the selected subprotocol, then send the hello as the OPEN of stream 1 with END and
 * wait for the acceptor's END, whose last message is the welcome. `handshakeTimeoutMs` is one
 * deadline over everything up to the subprotocol check, the hello has its own `timeoutMs`, and
 * {@linkcode Attempt.abort} abandons it at any point. Internal.
 *
 * @module
 */
import { type Codec, subprotocol } from '../wire/codec.ts';
import type { DialContext } from './dialer_types.ts';
import { HelloRejectedError, ProtocolError, StreamResetError, TimeoutError } from '../errors.ts';
import { Hello } from './hello.ts';
import type { Session } from '../session/session.ts';
import type { Stream } from '../session/stream.ts';
import { CloseCode, closeCodeOf } from '../wire/codes.ts';
import {
  checkHello,
  type DialOptions,
  type FixedTarget,
  fixedTarget,
  type HelloFunction,
} from './_dial_options.ts';
import { describe } from '../util/describe.ts';
import { timerDelay } from '../util/delay.ts';
import type { CloseFields, OpenReport, Refusal, Transport, Wire } from './_transport.ts';

/** What the attempt needs of the link its host builds over an open wire. */
export interface AttemptLink {
  readonly session: Session;
  /** `hello` until established, `open` after, `done` once the session ended. */
  phase: 'hello' | 'open' | 'done';
  /** How the session ended, once it did. */
  endedWith?: { code: number; reason: string; local: boolean };
  /** The wire's close, once seen. */
  closeEvent?: CloseFields;
  /**
   * Set by the attempt while it waits for the hello's acknowledgement: the host hands it a protocol
   * error the session or the wire reports, which fails the attempt at once instead of after the
   * hello's timeout.
   */
  protocolError?: (error: ProtocolError) => void;
}

/** What an attempt needs of its connection. */
export interface AttemptHost<L extends AttemptLink> {
  /** The context a target or hello function is called with. */
  context(signal: AbortSignal): DialContext;
  /** Builds the link (its session) over an open wire. */
  link(wire: Wire): L;
  /** The code and reason `close()` asked for, once it did: a socket mid-attempt closes so. */
  closeRequest(): { code: number; reason: string } | undefined;
  /** The welcome: undefined once the wire opened, the acknowledgement's value once it came. */
  welcome(value: unknown): void;
  /**
   * The wire opened: the reserved headers its hello carries for recovery (`:resume`, a redial
   * with positions to resume, and `:dialer`), if any. With them, a hello is sent even when none
   * is configured: a null payload and only these headers (docs/recovery.md).
   */
  resume?(): Record<string, unknown> | undefined;
}

/** One attempt in progress, and after it failed, what its wire said. */
export interface Attempt<L> {
  /** Resolves with the established link; rejects with what failed the attempt. */
  readonly done: Promise<L>;
  /** How the attempt's wire closed, when it did. */
  close?: CloseFields;
  /** The HTTP refusal of the upgrade, where the transport exposes it. */
  refusal?: Refusal;
  /**
   * True when the transport failed to open the wire on its own (not the deadline, not an abort):
   * the usual causes are on the acceptor's side of the URL.
   */
  unopened?: boolean;
  /** Abandons the attempt with `reason` (its context's signal aborts); no-op once settled. */
  abort(reason: unknown): void;
}

/**
 * How the session of `link` ended, as close fields: its code (0 read as 1006), its reason, and
 * whether it was clean (a close of this side's own is clean with 1000 only, the wire's as its
 * close event said).
 */
export function endedClose(
  link: AttemptLink,
  ended: { code: number; reason: string; local: boolean },
): CloseFields {
  const code = closeCodeOf(ended.code);
  return {
    code,
    reason: ended.reason,
    wasClean: ended.local ? code === CloseCode.Normal : link.closeEvent?.wasClean ?? false,
  };
}

/** Races promises, marking the losers handled so a late rejection is never unhandled. */
function race<T>(promises: Promise<T>[]): Promise<T> {
  for (const p of promises) p.catch(() => {});
  return Promise.race(promises);
}

/**
 * Reads a stream to its END and resolves with the last message before it (undefined when none
 * came): the hello is acknowledged at the acceptor's END, not its first DATA.
 */
async function lastMessage(stream: Stream): Promise<unknown> {
  let last: unknown = undefined;
  for await (const value of stream) last = value;
  return last;
}

/** Calls the target function and checks what it returned. */
async function resolveTarget(
  fn: (ctx: DialContext) => unknown,
  ctx: DialContext,
): Promise<FixedTarget> {
  const value = await fn(ctx);
  const target = fixedTarget(value, 'dial');
  if (target !== undefined) return target;
  throw new TypeError(
    `Cannot dial as the target function must return a string, a URL or a DialTarget: current value is ${
      describe(value)
    }`,
  );
}

/**
 * Calls the hello function, turns what it returned into a {@linkcode Hello}, and checks that the
 * codec can encode it.
 */
async function resolveHello(fn: HelloFunction, ctx: DialContext, codec: Codec): Promise<Hello> {
  const value = await fn(ctx);
  if (value === undefined || value === null) return new Hello();
  if (typeof value !== 'object') {
    throw new TypeError(
      `Cannot dial as the hello function must return HelloOptions: current value is ${
        describe(value)
      }`,
    );
  }
  const hello = value instanceof Hello ? value : new Hello(value);
  checkHello(hello, codec);
  return hello;
}

/**
 * Starts one attempt. A fixed target is dialled before this returns. Only a target or hello
 * function sees the {@linkcode DialContext}, so without one no context is made, and a fixed
 * target and hello are used at once, without a promise round.
 */
export function startAttempt<L extends AttemptLink>(
  o: DialOptions,
  transport: Transport,
  host: AttemptHost<L>,
): Attempt<L> {
  const controller = new AbortController();
  // The other fields start absent; `done` is set below, before anyone reads it.
  const attempt = {
    abort(reason: unknown) {
      if (!attempt.settled) controller.abort(reason);
    },
  } as Progress<L>;
  attempt.done = run(o, transport, host, attempt, controller);
  return attempt;
}

/** An attempt as {@linkcode run} fills it in. */
interface Progress<L> extends Attempt<L>, OpenReport {
  done: Promise<L>;
  settled?: boolean;
}

async function run<L extends AttemptLink>(
  o: DialOptions,
  transport: Transport,
  host: AttemptHost<L>,
  attempt: Progress<L>,
  controller: AbortController,
): Promise<L> {
  const signal = controller.signal;
  const fixed = o.target;
  const fixedHello = o.hello;
  const aborted = new Promise<never>((_, reject) => {
    signal.addEventListener('abort', () => reject(signal.reason), { once: true });
  });
  aborted.catch(() => {});
  const deadline = setTimeout(() => {
    controller.abort(
      new TimeoutError(`The handshake did not finish within ${o.handshakeTimeoutMs} ms`),
    );
  }, timerDelay(o.handshakeTimeoutMs));
  const ctx = typeof fixed === 'function' || !(fixedHello instanceof Hello)
    ? host.context(signal)
    : undefined;
  let wire: Wire | undefined;
  let link: L | undefined;
  let helloTimer: ReturnType<typeof setTimeout> | undefined;
  /** Closes the wire (through its session once there is one) with a code of this side's own. */
  const closeWith = (code: number, reason: string) => {
    attempt.close = { code, reason, wasClean: true };
    if (link === undefined) wire!.close(code, reason);
    else link.session.close(code, reason);
  };
  try {
    const target = typeof fixed === 'function'
      ? await race([resolveTarget(fixed, ctx!), aborted])
      : fixed;
    const hello = fixedHello instanceof Hello
      ? fixedHello
      : await race([resolveHello(fixedHello, ctx!, o.codec), aborted]);
    const expected = subprotocol(o.codec);
    wire = await race([
      transport.open(target.url, [expected, ...target.protocols], signal, attempt).catch(
        (error) => {
          attempt.unopened = !signal.aborted;
          throw error;
        },
      ),
      aborted,
    ]);
    clearTimeout(deadline);
    if (wire.protocol !== expected) {
      const found = wire.protocol;
      closeWith(CloseCode.DialerProtocol, 'unexpected subprotocol');
      throw new ProtocolError(
        `Expected the acceptor to select subprotocol "${expected}": found ${describe(found)}`,
      );
    }
    link = host.link(wire);
    host.welcome(undefined);
    const resume = host.resume?.();
    if (hello.configured || resume !== undefined) {
      const timeoutMs = hello.timeoutMs;
      const helloTimeout = new Promise<never>((_, reject) => {
        helloTimer = setTimeout(() => {
          reject(new TimeoutError(`The hello was not acknowledged within ${timeoutMs} ms`));
        }, timerDelay(timeoutMs));
      });
      const broken = new Promise<never>((_, reject) => link!.protocolError = reject);
      try {
        const helloStream = link.session.openHello(
          hello.payloadForWire(),
          hello.headersForWire() ?? null,
          resume,
        );
        host.welcome(await race([lastMessage(helloStream), helloTimeout, broken, aborted]));
      } catch (error) {
        if (error instanceof TimeoutError && !signal.aborted) {
          closeWith(CloseCode.HelloTimeout, 'hello timeout');
        } else if (error instanceof ProtocolError && link.phase !== 'done') {
          closeWith(CloseCode.DialerProtocol, 'protocol error during the hello');
        }
        if (error instanceof StreamResetError && error.remote) {
          throw new HelloRejectedError(
            `The hello was rejected with ${JSON.stringify(error.code)}: ${error.message}`,
            { code: error.code, issues: error.issues, cause: error },
          );
        }
        const endedWith = link.endedWith;
        if (error instanceof StreamResetError && endedWith !== undefined) {
          // the hello stream failed because the connection ended: say how it ended
          throw new Error(
            `The connection closed with code ${
              endedWith.code || CloseCode.Abnormal
            } before the hello was acknowledged`,
            { cause: error },
          );
        }
        throw error;
      }
    }
    if (signal.aborted) throw signal.reason;
    return link;
  } catch (error) {
    const request = host.closeRequest();
    const endedWith = link?.endedWith;
    // the socket closed during the hello: its code decides the policy
    if (endedWith !== undefined) attempt.close ??= endedClose(link!, endedWith);
    if (link !== undefined) {
      if (link.phase !== 'done') {
        link.session.close(request?.code ?? CloseCode.Normal, request?.reason ?? '');
      }
    } else wire?.close(request?.code, request?.reason);
    throw error;
  } finally {
    if (link !== undefined) link.protocolError = undefined;
    attempt.settled = true;
    clearTimeout(deadline);
    clearTimeout(helloTimer);
  }
}
