/**
 * The wire's policy as data: one table of close codes and one of reset codes, mirroring
 * docs/protocol.md §8 ("Close codes") and §4 ("Reset codes"), plus the few pure functions every
 * side needs over them (which codes a side may send, the 0 → 1006 normalisation, the reason
 * length). Code names these values rather than writing the numbers and strings again.
 *
 * @module
 */

/**
 * Close codes muxws sends or reacts to, by name. Each entry says who sends it and what a dialer
 * does after it: {@linkcode DEFAULT_TERMINAL} stop, {@linkcode DEFAULT_SERVICE_RESTART} redial
 * fast, every other code backs off. An enum, so that a bundle inlines each value and carries no
 * table.
 */
export enum CloseCode {
  /**
   * Either side: an application close, or the dialer's close once idle after GOAWAY. Dialer then:
   * backs off (own close: nothing).
   */
  Normal = 1000,
  /** Acceptor: nothing arrived for `idleTimeoutMs`. Dialer then: backs off. */
  Idle = 1001,
  /** Acceptor: more than `maxProtocolErrors` malformed messages. Dialer then: stops. */
  Protocol = 1002,
  /** Either side's runtime: unsupported data. Dialer then: stops. */
  Unsupported = 1003,
  /**
   * Never sent: the runtime reports it for a socket that closed without a close frame. Dialer then:
   * backs off.
   */
  Abnormal = 1006,
  /** Either side's runtime: data inconsistent with its type (bad UTF-8). Dialer then: stops. */
  InvalidData = 1007,
  /**
   * Acceptor: a flood (rapid reset, provoked resets) or an unmet hello requirement. Dialer then:
   * stops.
   */
  Policy = 1008,
  /** Acceptor: a message over `maxMessageBytes`. Dialer then: stops. */
  TooLarge = 1009,
  /** Runtime of a dialer: a required extension was missing. Dialer then: stops. */
  Extension = 1010,
  /** Acceptor: its socket threw on send (an internal error). Dialer then: backs off. */
  Internal = 1011,
  /** Acceptor: after GOAWAY, the service restarts. Dialer then: redials fast. */
  ServiceRestart = 1012,
  /**
   * Acceptor: a peer whose recovery held more than `maxHeldBytes` of broadcasts for it, or
   * waited for its socket longer than `stallTimeoutMs`. Dialer then: backs off.
   */
  TryAgainLater = 1013,
  /** Dialer: a PING got nothing back in time. Dialer then (own close): backs off. */
  Heartbeat = 4000,
  /**
   * Dialer: wrong subprotocol, malformed messages or a flood (it cannot send 1002/1008). Dialer
   * then (own close): backs off.
   */
  DialerProtocol = 4002,
  /** Dialer: the hello was not acknowledged in time. Dialer then (own close): backs off. */
  HelloTimeout = 4008,
  /**
   * Dialer: a message over `maxMessageBytes` (it cannot send 1009). Dialer then (own close): backs
   * off.
   */
  DialerTooLarge = 4009,
  /** Acceptor application: the credentials were refused. Dialer then: stops. */
  Unauthorized = 4401,
  /** Acceptor application: the identity may not connect. Dialer then: stops. */
  Forbidden = 4403,
}

/** The close codes a side sends for the conditions the session detects itself, by side. */
export const SESSION_CLOSE: {
  readonly [side in 'dialer' | 'acceptor']: {
    readonly protocol: CloseCode;
    readonly tooLarge: CloseCode;
    readonly flood: CloseCode;
  };
} = {
  dialer: {
    protocol: CloseCode.DialerProtocol,
    tooLarge: CloseCode.DialerTooLarge,
    flood: CloseCode.DialerProtocol,
  },
  acceptor: { protocol: CloseCode.Protocol, tooLarge: CloseCode.TooLarge, flood: CloseCode.Policy },
};

/** Codes after which a dialer redials fast, consuming no attempt. */
export const DEFAULT_SERVICE_RESTART: readonly number[] = [CloseCode.ServiceRestart];

/** Codes after which a dialer never redials. */
export const DEFAULT_TERMINAL: readonly number[] = [
  CloseCode.Protocol,
  CloseCode.Unsupported,
  CloseCode.InvalidData,
  CloseCode.Policy,
  CloseCode.TooLarge,
  CloseCode.Extension,
  CloseCode.Unauthorized,
  CloseCode.Forbidden,
];

/**
 * A close reason is at most this many UTF-8 bytes (RFC 6455 §5.5: a control frame's 125, less the
 * code).
 */
export const MAX_CLOSE_REASON_BYTES = 123;

/**
 * The code a close event reports, with a missing or 0 code read as 1006 (some runtimes report a
 * failed connection so).
 */
export function closeCodeOf(code: unknown): number {
  return typeof code === 'number' && code > 0 ? code : CloseCode.Abnormal;
}

/** Whether a dialer may close with `code`: 1000 or 3000–4999 (what a browser allows). */
export function dialerMaySend(code: unknown): code is number {
  return Number.isInteger(code) &&
    (code === CloseCode.Normal || ((code as number) >= 3000 && (code as number) <= 4999));
}

/**
 * Whether an acceptor may close with `code`: 1000–1003, 1007–1014 and 3000–4999 (RFC 6455 §7.4;
 * 1004–1006 and 1015 are never sent on the wire).
 */
export function acceptorMaySend(code: unknown): code is number {
  if (!Number.isInteger(code)) return false;
  const c = code as number;
  return (c >= 1000 && c <= 1003) || (c >= 1007 && c <= 1014) || (c >= 3000 && c <= 4999);
}

/**
 * What a closing acceptor tells each peer (docs/protocol.md §9): the GOAWAY code and the reason
 * of the close that follows it.
 */
interface ClosingTerms {
  /** The GOAWAY's code string. */
  readonly goAway: 'restart' | 'shutdown';
  /** The close frame's reason. */
  readonly reason: 'service restart' | 'shutdown';
}

const RESTARTING: ClosingTerms = { goAway: 'restart', reason: 'service restart' };
const SHUTTING_DOWN: ClosingTerms = { goAway: 'shutdown', reason: 'shutdown' };

/**
 * The terms of an acceptor's close with `code`: 1012 (a service restart) sends GOAWAY `restart`
 * and closes with the reason `service restart`; any other code sends GOAWAY `shutdown` and
 * closes with the reason `shutdown`.
 */
export function closingTerms(code: number): ClosingTerms {
  return code === CloseCode.ServiceRestart ? RESTARTING : SHUTTING_DOWN;
}

/**
 * The reason of the acceptor's 1008 close of a peer whose required hello did not come within
 * `helloTimeoutMs`; a dialer that sees it says to pass `hello` to `connect()`.
 */
export const HELLO_REQUIRED_REASON = 'hello required';

/** The wording of the legal ranges, for error messages. */
export const DIALER_CODES_TEXT = '1000 or from 3000 to 4999';
/** The wording of the legal ranges, for error messages. */
export const ACCEPTOR_CODES_TEXT = '1000–1003, 1007–1014 or 3000–4999';

/**
 * Reset codes muxws sends, by name (an enum, inlined by a bundle). Each entry says who sends it and
 * what the receiver does. Applications send their own codes through `StreamError`.
 */
export enum ResetCode {
  /**
   * Either side: the application gave up on the stream (abort, unsubscribe). Receiver: stops the
   * handler's work.
   */
  Cancel = 'cancel',
  /**
   * Either side: not processed at all (no handler, `maxStreams`, after GOAWAY). Receiver: may retry
   * safely.
   */
  Refused = 'refused',
  /** Either side: the handler failed; the message is generic. Receiver: reports the failure. */
  Internal = 'internal',
  /** Either side: the sender stopped waiting for an answer. Receiver: stops the handler's work. */
  Timeout = 'timeout',
  /** Either side: a payload could not be decoded or nests too deep. Receiver: fix the sender. */
  Decode = 'decode',
  /** Either side: more DATA arrived than the credit allowed. Receiver: fix the sender. */
  Flow = 'flow',
  /** Reserved for a message over the size limit; not sent (the connection closes instead). */
  TooLarge = 'too_large',
  /** Never sent: what a local stream fails with when its connection is lost. */
  ConnectionLost = 'connection_lost',
  /**
   * Acceptor: an OPEN arrived before the hello was acknowledged, from a dialer of an acceptor that
   * requires one. Receiver: send the hello first.
   */
  HelloRequired = 'hello_required',
  /**
   * Either side: the OPEN's `:route` names no route this side serves. Receiver: fix the caller
   * (a subscription is not re-opened).
   */
  NotFound = 'not_found',
  /**
   * Either side: the input failed the route's schema; the message summarises the issues.
   * Receiver: fix the input (a subscription is not re-opened).
   */
  Invalid = 'invalid',
}

/**
 * The reset codes the other side can make a session send at will, each counted toward the reset
 * budget (`limits.maxResetRate` within any 1000 ms, docs/security.md "The reset budget"):
 * `decode` for an undecodable or too deep OPEN or DATA on a stream it opened, `flow` for DATA past
 * the window and one overshooting message, `refused` for an OPEN with no stream handler or over
 * `maxStreams`, `hello_required` for an OPEN before the hello an acceptor requires, `not_found`
 * and `invalid` for a routed OPEN naming no route or with an input the route refuses. A RESET the
 * other side sends itself on a live stream it opened counts too (any
 * code). Not counted: `refused` for an OPEN after this side sent GOAWAY, and every reset the
 * application asks for. A new code a peer can draw at will joins this list, and the session then
 * counts it where it sends it.
 */
export type ProvokedResetCode =
  | ResetCode.Decode
  | ResetCode.Flow
  | ResetCode.Refused
  | ResetCode.HelloRequired
  | ResetCode.NotFound
  | ResetCode.Invalid;

/** The {@linkcode ProvokedResetCode}s as a list, for checks over the whole set. */
export const PROVOKED_RESET_CODES: readonly ProvokedResetCode[] = [
  ResetCode.Decode,
  ResetCode.Flow,
  ResetCode.Refused,
  ResetCode.HelloRequired,
  ResetCode.NotFound,
  ResetCode.Invalid,
];
