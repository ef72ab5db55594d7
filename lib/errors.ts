/**
 * The error classes of muxws.
 *
 * Every class extends {@linkcode MuxwsError}, sets `name` to its own class name, and accepts a
 * `cause`. They are thrown or rejected for conditions a caller is expected to catch: a failed
 * first connection, a reset stream, a call made while disconnected. Configuration mistakes are
 * plain `Error`, `TypeError` or `RangeError`, thrown at construction.
 *
 * Each `name` is a string literal, not read from the class, so it survives a minifier that
 * renames classes. A subclass of your own inherits its parent's `name` (as a subclass of
 * `TypeError` does) unless it sets one.
 *
 * @module
 */
import { describe } from './util/describe.ts';
import { type Issue, NO_ISSUES, readIssues } from './util/issues.ts';

export type { Issue } from './util/issues.ts';

/** The pattern every reset code matches. */
export const RESET_CODE_PATTERN: RegExp = /^[a-z][a-z0-9_.-]{0,63}$/;

/** Options accepted by every muxws error constructor. */
export interface MuxwsErrorOptions {
  /** The underlying error or value that caused this one. */
  cause?: unknown;
}

/**
 * The base class of every error muxws throws for a runtime condition.
 *
 * @example Catch every muxws error at once
 * ```ts
 * import { MuxwsError, NotConnectedError } from '@muxws/core';
 * import assert from 'node:assert/strict';
 *
 * const error: Error = new NotConnectedError('Cannot open a stream: the connection is reconnecting');
 * assert(error instanceof MuxwsError);
 * assert(error.name === 'NotConnectedError');
 * ```
 */
export class MuxwsError extends Error {
  /** The class name, as a literal so that minified bundles keep it. */
  override name: string = 'MuxwsError';

  /**
   * Creates the error.
   *
   * @param message What failed, why, and the value found.
   * @param options `cause`: what caused it.
   */
  constructor(message: string, options?: MuxwsErrorOptions) {
    super(message, options);
  }
}

/**
 * The first connection of `connect()` failed. Its `cause` says which step failed:
 * the target function, the socket, the subprotocol, the hello or the handshake deadline.
 *
 * @example
 * ```ts
 * import { ConnectError, TimeoutError } from '@muxws/core';
 * import assert from 'node:assert/strict';
 *
 * const error = new ConnectError('Cannot connect to ws://127.0.0.1:1/', {
 *   cause: new TimeoutError('The handshake did not finish within 15000 ms'),
 * });
 * assert(error.cause instanceof TimeoutError);
 * ```
 */
export class ConnectError extends MuxwsError {
  /** `'ConnectError'`. */
  override name: string = 'ConnectError';
}

/**
 * The other side broke the protocol: a wrong subprotocol, a malformed frame, a forbidden id.
 *
 * @example
 * ```ts
 * import { ProtocolError } from '@muxws/core';
 * import assert from 'node:assert/strict';
 *
 * const error = new ProtocolError('Expected subprotocol "muxws.v1.json": found ""');
 * assert(error.name === 'ProtocolError');
 * ```
 */
export class ProtocolError extends MuxwsError {
  /** `'ProtocolError'`. */
  override name: string = 'ProtocolError';
}

/**
 * A call that needs an open connection was made while it was not open, or after a GOAWAY. Nothing is queued.
 *
 * @example
 * ```ts
 * import { NotConnectedError } from '@muxws/core';
 * import assert from 'node:assert/strict';
 *
 * const error = new NotConnectedError('Cannot open a stream: the connection is reconnecting');
 * assert(error.message.includes('reconnecting'));
 * ```
 */
export class NotConnectedError extends MuxwsError {
  /** `'NotConnectedError'`. */
  override name: string = 'NotConnectedError';
}

/** Options of {@linkcode HelloRejectedError}. */
export interface HelloRejectedErrorOptions extends MuxwsErrorOptions {
  /** The reset code the acceptor answered the hello with, e.g. `unauthorized`. */
  code: string;
  /** What the acceptor's check found wrong in the hello, when it refused it with them. @default {[]} */
  issues?: readonly Issue[];
}

/**
 * The acceptor reset the hello stream. `code` is the reset's code; the message
 * includes the reset's message.
 *
 * @example
 * ```ts
 * import { HelloRejectedError } from '@muxws/core';
 * import assert from 'node:assert/strict';
 *
 * const error = new HelloRejectedError('The hello was rejected with "unauthorized": token expired', {
 *   code: 'unauthorized',
 * });
 * assert(error.code === 'unauthorized');
 * ```
 */
export class HelloRejectedError extends MuxwsError {
  /** `'HelloRejectedError'`. */
  override name: string = 'HelloRejectedError';
  /** The reset code the acceptor answered the hello with. */
  readonly code: string;
  /**
   * What the acceptor's check found wrong in the hello (`{ path, message }` each), when it
   * refused it with them (`invalid`); empty otherwise.
   */
  readonly issues: readonly Issue[];

  /**
   * Creates the error.
   *
   * @param message What failed, including the reset's own message.
   * @param options `code`: the reset code; `issues`: what was wrong; `cause`: what caused it.
   */
  constructor(message: string, options: HelloRejectedErrorOptions) {
    super(message, options);
    this.code = options.code;
    this.issues = options.issues ?? NO_ISSUES;
  }
}

/** Options of {@linkcode StreamResetError}. */
export interface StreamResetErrorOptions extends MuxwsErrorOptions {
  /** The reset code: `cancel`, `refused`, `internal`, `timeout`, `connection_lost`, or an application's. */
  code: string;
  /** True when the other side sent the RESET; false when this side reset or lost the stream. */
  remote: boolean;
  /** What a schema found wrong, for an `invalid` reset that carried them. @default {[]} */
  issues?: readonly Issue[];
}

/**
 * A stream was reset, by either side, or lost with its connection. `refused` means
 * the other side did not process it and a retry is safe; `connection_lost` means it may or may
 * not have been processed.
 *
 * @example
 * ```ts
 * import { StreamResetError } from '@muxws/core';
 * import assert from 'node:assert/strict';
 *
 * const error = new StreamResetError('Stream 3 was lost with its connection', {
 *   code: 'connection_lost',
 *   remote: false,
 * });
 * assert(error.code === 'connection_lost' && !error.remote);
 * ```
 */
export class StreamResetError extends MuxwsError {
  /** `'StreamResetError'`. */
  override name: string = 'StreamResetError';
  /** The reset code. */
  readonly code: string;
  /** True when the other side sent the RESET. */
  readonly remote: boolean;
  /**
   * What the other side's schema found wrong (`{ path, message }` each, the path as keys from
   * the value's root), when the reset carried them: an `invalid` reset of a route whose `input`
   * or `upload` schema refused the value. Empty for every other reset, and from a peer that sends
   * none. At most 16, each message at most 256 characters, each path at most 32 keys.
   */
  readonly issues: readonly Issue[];

  /**
   * Creates the error.
   *
   * @param message What happened to which stream.
   * @param options `code`, `remote`, `issues` and `cause`.
   */
  constructor(message: string, options: StreamResetErrorOptions) {
    super(message, options);
    this.code = options.code;
    this.remote = options.remote;
    this.issues = options.issues ?? NO_ISSUES;
  }
}

/** Options of {@linkcode StreamError}. */
export interface StreamErrorOptions extends MuxwsErrorOptions {
  /**
   * What a schema found wrong, sent with the reset for the other side to read as `issues`: a
   * Standard Schema's `issues` as they are, or `{ path, message }` objects. Kept bounded (16
   * issues, messages of 256 characters, paths of 32 keys); an entry of another shape is left
   * out.
   *
   * @default {[]}
   */
  issues?: ReadonlyArray<{
    readonly message: string;
    readonly path?: ReadonlyArray<PropertyKey | { readonly key: PropertyKey }> | undefined;
  }>;
}

/**
 * Thrown by a stream handler to reset its stream with a chosen code and message, which are sent
 * to the other side as they are, with its `issues` when it has some. Any other error a handler
 * throws resets the stream with `internal` and a generic message.
 *
 * @example
 * ```ts
 * import { StreamError } from '@muxws/core';
 * import assert from 'node:assert/strict';
 *
 * const error = new StreamError('not_found', 'No room named "lobby"');
 * assert(error.code === 'not_found');
 * ```
 */
export class StreamError extends MuxwsError {
  /** `'StreamError'`. */
  override name: string = 'StreamError';
  /** The reset code sent to the other side. */
  readonly code: string;
  /** The issues sent with the reset, bounded (see {@linkcode StreamErrorOptions.issues}). */
  readonly issues: readonly Issue[];

  /**
   * Creates the error.
   *
   * @param code A reset code matching `^[a-z][a-z0-9_.-]{0,63}$`.
   * @param message The message sent with the reset; keep server detail out of it.
   * @param options `issues`: sent with the reset; `cause`: kept locally, never sent.
   * @throws {TypeError} When `code` does not match the reset code pattern.
   */
  constructor(code: string, message: string = '', options?: StreamErrorOptions) {
    if (typeof code !== 'string' || !RESET_CODE_PATTERN.test(code)) {
      throw new TypeError(
        `Cannot create StreamError as "code" must match ${RESET_CODE_PATTERN}: current value is ${
          describe(code)
        }`,
      );
    }
    super(message, options);
    this.code = code;
    this.issues = readIssues(options?.issues);
  }
}

/**
 * Something did not happen in time: a request, a hello, a handshake.
 *
 * @example
 * ```ts
 * import { TimeoutError } from '@muxws/core';
 * import assert from 'node:assert/strict';
 *
 * assert(new TimeoutError('The request did not answer within 5000 ms').name === 'TimeoutError');
 * ```
 */
export class TimeoutError extends MuxwsError {
  /** `'TimeoutError'`. */
  override name: string = 'TimeoutError';
}

/**
 * The connection or acceptor was closed for good, by `close()` or by giving up.
 *
 * @example
 * ```ts
 * import { ClosedError } from '@muxws/core';
 * import assert from 'node:assert/strict';
 *
 * assert(new ClosedError('The connection was closed').name === 'ClosedError');
 * ```
 */
export class ClosedError extends MuxwsError {
  /** `'ClosedError'`. */
  override name: string = 'ClosedError';
}
