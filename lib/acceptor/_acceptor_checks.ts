/**
 * The acceptor's argument checks, thrown before anything happens: its options
 * ({@linkcode checkAcceptorOptions}), a close's code and reason ({@linkcode checkClose}) and a
 * duration ({@linkcode checkMs}). Messages say what was expected and the value found.
 *
 * Private to `lib/acceptor/`, never re-exported.
 *
 * @module
 */
import type { AcceptorOptions } from './acceptor_types.ts';
import type { PresenceStore } from '../broadcast/presence.ts';
import { ACCEPTOR_CODES_TEXT, acceptorMaySend, MAX_CLOSE_REASON_BYTES } from '../wire/codes.ts';
import { describe } from '../util/describe.ts';

const encoder = new TextEncoder();

/**
 * Checks a close an acceptor sends.
 *
 * @param what The start of the error message, such as `Cannot close a Peer`.
 * @throws {RangeError} For a code an acceptor may not send, or a reason that is not a string of
 * at most 123 UTF-8 bytes.
 */
export function checkClose(what: string, code: unknown, reason: unknown): void {
  if (!acceptorMaySend(code)) {
    throw new RangeError(
      `${what} as "code" must be ${ACCEPTOR_CODES_TEXT}: current value is ${describe(code)}`,
    );
  }
  if (typeof reason !== 'string' || encoder.encode(reason).byteLength > MAX_CLOSE_REASON_BYTES) {
    throw new RangeError(
      `${what} as "reason" must be a string of at most ${MAX_CLOSE_REASON_BYTES} UTF-8 bytes: current value is ${
        describe(reason)
      }`,
    );
  }
}

/**
 * Returns `value` when it is a finite number of at least 0.
 *
 * @throws {RangeError} Otherwise, naming `field`.
 */
export function checkMs(what: string, field: string, value: unknown): number {
  if (typeof value !== 'number' || !Number.isFinite(value) || value < 0) {
    throw new RangeError(
      `${what} as "${field}" must be a finite number of at least 0: current value is ${
        describe(value)
      }`,
    );
  }
  return value;
}

/** What {@linkcode checkAcceptorOptions} resolved. */
interface CheckedAcceptorOptions {
  /** The idle timeout in ms, `0` when the sweep is off. */
  idleTimeoutMs: number;
  /** Whether a hello is required. */
  requireHello: boolean;
  /** How long a peer may take to send a required hello. */
  helloTimeoutMs: number;
  /** The presence options, resolved. */
  presence: CheckedPresenceOptions;
}

/** The `presence` option, resolved: see `PresenceOptions`. */
export interface CheckedPresenceOptions {
  /** The store given; `undefined` for this acceptor's own `memoryPresence()`. */
  store: PresenceStore | undefined;
  graceMs: number;
  nodeTimeoutMs: number;
  batchMs: number;
}

/**
 * Checks the options of the acceptor that the acceptor reads itself (the origin policy and the
 * limits are checked where they are built): `idleTimeoutMs`, the callbacks, the hello options,
 * `backplane` and `nodeId`.
 *
 * @throws {TypeError} For a callback that is not a function, a `requireHello` that is not a
 * boolean or is `true` without `onHello`, a backplane without `publish()` and `subscribe()`, or
 * an empty or non-string `nodeId`, a `presence` that is not an object or whose `store` lacks
 * `open()`, `apply()`, `load()` or `close()`.
 * @throws {RangeError} When `idleTimeoutMs` is not `false` or a finite number of at least 0,
 * `helloTimeoutMs` or `presence.nodeTimeoutMs` is not a finite number above 0, or
 * `presence.graceMs` or `presence.batchMs` is not a finite number of at least 0.
 */
export function checkAcceptorOptions(options: AcceptorOptions): CheckedAcceptorOptions {
  const what = 'Cannot create Acceptor';
  const idle = options.idleTimeoutMs ?? 60_000;
  const idleTimeoutMs = idle === false ? 0 : checkMs(what, 'idleTimeoutMs', idle);
  for (
    const name of ['onStream', 'onPeer', 'onPeerClose', 'onError', 'onHello', 'authorize'] as const
  ) {
    const value = options[name];
    if (value !== undefined && typeof value !== 'function') {
      throw new TypeError(
        `${what} as "${name}" must be a function: current value is ${describe(value)}`,
      );
    }
  }
  const hasHello = options.onHello !== undefined;
  const requireHello = options.requireHello ?? hasHello;
  if (typeof requireHello !== 'boolean') {
    throw new TypeError(
      `${what} as "requireHello" must be a boolean: current value is ${describe(requireHello)}`,
    );
  }
  if (requireHello && !hasHello) {
    throw new TypeError(
      `${what} as "requireHello" needs "onHello" to acknowledge the hello: current value of "onHello" is undefined`,
    );
  }
  const helloTimeoutMs = checkMs(what, 'helloTimeoutMs', options.helloTimeoutMs ?? 10_000);
  if (helloTimeoutMs === 0) {
    throw new RangeError(
      `${what} as "helloTimeoutMs" must be a finite number above 0: current value is 0`,
    );
  }
  const backplane = options.backplane;
  if (
    backplane !== undefined &&
    (backplane === null || typeof backplane.publish !== 'function' ||
      typeof backplane.subscribe !== 'function')
  ) {
    throw new TypeError(
      `${what} as "backplane" must have publish() and subscribe(): current value is ${
        describe(backplane)
      }`,
    );
  }
  const nodeId = options.nodeId;
  if (nodeId !== undefined && (typeof nodeId !== 'string' || nodeId === '')) {
    throw new TypeError(
      `${what} as "nodeId" must be a non-empty string: current value is ${describe(nodeId)}`,
    );
  }
  return { idleTimeoutMs, requireHello, helloTimeoutMs, presence: checkPresence(options.presence) };
}

/** The `presence` option: an object (or nothing) of a store and three durations. */
function checkPresence(presence: unknown): CheckedPresenceOptions {
  const what = 'Cannot create Acceptor';
  if (presence === undefined) {
    return { store: undefined, graceMs: 5000, nodeTimeoutMs: 10_000, batchMs: 50 };
  }
  if (typeof presence !== 'object' || presence === null || Array.isArray(presence)) {
    throw new TypeError(
      `${what} as "presence" must be an object: current value is ${describe(presence)}`,
    );
  }
  const o = presence as Record<string, unknown>;
  const store = o.store as Partial<PresenceStore> | null | undefined;
  if (
    store !== undefined &&
    (store === null || typeof store !== 'object' ||
      (['open', 'apply', 'load', 'close'] as const).some((m) => typeof store[m] !== 'function') ||
      (store.beat !== undefined && typeof store.beat !== 'function'))
  ) {
    throw new TypeError(
      `${what} as "presence.store" must have open(), apply(), load() and close(): current value is ${
        describe(store)
      }`,
    );
  }
  const graceMs = checkMs(what, 'presence.graceMs', o.graceMs ?? 5000);
  const nodeTimeoutMs = checkMs(what, 'presence.nodeTimeoutMs', o.nodeTimeoutMs ?? 10_000);
  if (nodeTimeoutMs === 0) {
    throw new RangeError(
      `${what} as "presence.nodeTimeoutMs" must be a finite number above 0: current value is 0`,
    );
  }
  const batchMs = checkMs(what, 'presence.batchMs', o.batchMs ?? 50);
  return { store: store as PresenceStore | undefined, graceMs, nodeTimeoutMs, batchMs };
}
