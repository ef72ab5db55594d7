/**
 * The features an application gives `connect()` as option values a function it imports makes
 * (`recovery: recovery()`, `whileReconnecting: waitWhileReconnecting()`,
 * `onlineHints: onlineHints()`): each value carries, under the module-private
 * {@linkcode FEATURE} symbol, the factory the connection calls at construction. The connection
 * knows only the factories' interfaces below, so a bundle that imports none of the functions
 * carries none of their code. Internal.
 *
 * @module
 */
import type { PublishMessage, RequestOptions } from '../session/stream.ts';
import type { Report } from '../util/contain.ts';
import { mustBe } from '../util/describe.ts';

/** The key under which an option value carries its factory; module-private to the dialer. */
const FEATURE: unique symbol = /* @__PURE__ */ Symbol('muxws.feature');

/** What the dialer's side of recovery gives the connection: where its broadcasts go. */
export interface BroadcastReceiver {
  /** A PUBLISH arrived: hand it to the application, or keep or drop it. */
  receive(message: PublishMessage): void;
  /**
   * A redial's hello is about to be sent: its reserved headers (`:resume`, `:dialer`), or
   * undefined when there are none.
   */
  resume(): Record<string, unknown> | undefined;
}

/**
 * Makes a connection's {@linkcode BroadcastReceiver}.
 *
 * @param deliver Hands a broadcast to the application (contained by the connection).
 * @param report Where a throwing callback of the feature goes.
 */
export type RecoveryFactory = (
  deliver: (message: PublishMessage) => void,
  report: Report,
) => BroadcastReceiver;

/** Sends a request on the connection just established. */
export type SendRequest = (payload: unknown, options: RequestOptions) => Promise<unknown>;

/** What waiting while reconnecting gives the connection: the requests that wait for it. */
export interface RequestWaiter {
  /**
   * Holds a request until the next establishment.
   *
   * @param timeoutMs Its timeout, the wait included; undefined for none.
   * @param state The connection's state, for a refusal's message.
   */
  hold(
    payload: unknown,
    options: RequestOptions | undefined,
    timeoutMs: number | undefined,
    state: string,
  ): Promise<unknown>;
  /** A connection was established: sends every waiting request with `send`, in order. */
  send(send: SendRequest): void;
  /** The connection closed for good: every waiting request rejects with `error()`, unsent. */
  fail(error: () => unknown): void;
}

/** Makes a connection's {@linkcode RequestWaiter}, reading the clock `now` (epoch ms). */
export type WaitingFactory = (now: () => number) => RequestWaiter;

/**
 * Starts listening for online and offline hints for one connection.
 *
 * @returns A function that stops listening, or undefined when nothing was listened to.
 */
export type HintsFactory = (
  onOnline: () => void,
  onOffline: () => void,
) => (() => void) | undefined;

/**
 * Makes the value of an option: `feature` (the option's name), frozen, carrying `factory` under
 * {@linkcode FEATURE}.
 */
export function featureValue<V extends { readonly feature: string }>(
  feature: V['feature'],
  factory: unknown,
): V {
  return Object.freeze({ feature, [FEATURE]: factory }) as unknown as V;
}

/**
 * The factory an option's value carries; undefined without the option.
 *
 * @param field The option's name, which is also its value's `feature`.
 * @param call How the option's value is made, for the error: `recovery({ onRecovered })`.
 * @throws {TypeError} When the value is anything but what the feature's function returns.
 */
export function factoryOf<F>(value: unknown, field: string, call: string): F | undefined {
  if (value === undefined) return undefined;
  const factory = (value as { [FEATURE]?: unknown } | null)?.[FEATURE];
  if (typeof factory !== 'function' || (value as { feature?: unknown }).feature !== field) {
    throw new TypeError(mustBe('connect', field, `what ${call} returns${FROM}`, value));
  }
  return factory as F;
}

/** Where the features' functions are imported from, for the messages. */
const FROM = ", imported from '@muxws/core'";

/**
 * The message for an option that moved into a feature's function: `onRecovered` into
 * `recovery()`.
 */
export function movedOption(field: string, call: string, option: string): string {
  return `Cannot connect with "${field}": it is an option of ${call}${FROM} (${option}: ${call})`;
}
