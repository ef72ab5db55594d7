/**
 * How a feature the application imports by name reaches the connection it works on. A feature
 * such as typed events or standing subscriptions is a function that takes a
 * {@linkcode Connection}; it finds the connection's {@linkcode ExtensionHost} through a
 * module-private symbol (the floor plan's idiom for what must travel through a public object)
 * and adds an {@linkcode Extension}: the steps of the connection's life it needs to hear of.
 * The connection knows nothing of any feature, so a bundle that imports none carries none.
 * Internal.
 *
 * @module
 */
import type { PublishMessage, Stream } from '../session/stream.ts';
import type { OpenOptions } from '../session/stream.ts';
import type { WithMuxws } from '../wire/reserved.ts';
import type { Report } from '../util/contain.ts';
import { mustBe } from '../util/describe.ts';

/** The steps of a connection's life an imported feature hears of. Each is optional. */
export interface Extension {
  /**
   * The connection was established, the first time or after a redial: called after the state is
   * `open` and before `onOpen`.
   */
  established?(): void;
  /**
   * A PUBLISH as it arrived, before recovery or anything else reads it or strips its reserved
   * headers: returns true when the feature consumed it (a frame of its own, such as presence's),
   * and nothing else sees it then.
   */
  arrived?(message: PublishMessage): boolean;
  /**
   * A broadcast for the application (already past recovery's at-most-once check), before
   * `onPublish`: returns true when the feature delivered it, and `onPublish` is then not called.
   */
  publish?(message: PublishMessage): boolean;
  /** The connection closed for good: called before `onClose`. */
  closed?(): void;
}

/** What a connection gives the features that extend it. */
export interface ExtensionHost {
  /**
   * Adds `extension` to the connection's steps, after those added before it.
   *
   * @returns A function that removes it (idempotent).
   */
  extend(extension: Extension): () => void;
  /**
   * Opens a stream on the established connection; `undefined` while none is established or it
   * drains after a GOAWAY.
   */
  open(payload: unknown, options: WithMuxws<OpenOptions>): Stream | undefined;
  /** Where a feature's callback errors go: the connection's `onError`. */
  readonly report: Report;
}

/** The key of a connection's {@linkcode ExtensionHost}; module-private to the dialer. */
export const EXTENSIONS: unique symbol = Symbol('muxws.extensions');

/** An object that may carry an {@linkcode ExtensionHost}. */
interface Extensible {
  readonly [EXTENSIONS]?: ExtensionHost;
}

/**
 * The host of `connection`.
 *
 * @param what What the caller was doing, for the error (`'listen for events'`).
 * @throws {TypeError} When `connection` is not a connection `connect()` made.
 */
export function hostOf(connection: unknown, what: string): ExtensionHost {
  const host = (connection as Extensible | null | undefined)?.[EXTENSIONS];
  if (host === undefined) {
    throw new TypeError(mustBe(what, 'connection', 'a Connection from connect()', connection));
  }
  return host;
}

/**
 * Runs `step` of each extension in `list`, in order, each contained by `report`, and stops at the
 * first that returns true (an `arrived` step that consumed its message, a `publish` step that
 * delivered it).
 *
 * @returns True when one returned true.
 */
export function runStep<S extends keyof Extension>(
  list: readonly Extension[],
  step: S,
  report: Report,
  ...args: Parameters<NonNullable<Extension[S]>>
): boolean {
  for (const extension of [...list]) {
    try {
      // deno-lint-ignore no-explicit-any
      if ((extension[step] as any)?.(...args) === true) return true;
    } catch (error) {
      report(error);
    }
  }
  return false;
}
