/**
 * Receiving for one session: decoding an incoming message (size first, then its items, then the
 * codec, then the items again for a codec that transforms payloads, then the frame's shape) and dispatching its frame (OPEN, DATA, END, RESET, CREDIT, PING,
 * PONG, GOAWAY, PUBLISH) to the streams; the OPEN's refusals (parity, reused id, depth, no handler,
 * `maxStreams`; the acceptor's policy adds its own before `accept()`, and refuses a PUBLISH
 * before `published()`); the undecodable message (a `decode` reset of the stream its prefix
 * names); and the malformed one, counted against `maxProtocolErrors`
 * (docs/design/session-internals.md, "Order of checks on a received message").
 *
 * Receiving is functions over the session's state, not a class the session extends: each takes
 * the session as its host ({@linkcode ReceiverHost}), whose receiving fields (what it counts, the
 * GOAWAY received, the highest id the other side opened) only these functions write.
 *
 * Private to `lib/session/`.
 *
 * @module
 */
import type { Codec } from '../wire/codec.ts';
import { decode as jsonDecode } from '../wire/json.ts';
import { ProtocolError } from '../errors.ts';
import { type ProvokedResetCode, ResetCode, SESSION_CLOSE } from '../wire/codes.ts';
import { describe } from '../util/describe.ts';
import { readIssues } from '../util/issues.ts';
import { ISSUES } from '../wire/reserved.ts';
import {
  CREDIT,
  DATA,
  END,
  FrameError,
  GOAWAY,
  hasEnd,
  isStreamId,
  itemsOver,
  OPEN,
  overLimit,
  parseFrame,
  PING,
  PONG,
  PUBLISH,
  RESET,
  tooDeep,
} from '../wire/frame.ts';
import type { Limits } from './limits.ts';
import type { GoAway, SessionOptions } from './_session_options.ts';
import { control, Stream, type StreamHost } from './stream.ts';
import { readValue } from './stream_reads.ts';

/**
 * What receiving needs of its session: the stream table, the socket, containment, the end, and
 * the state receiving keeps (its writable fields, written only by this file's functions).
 */
export interface ReceiverHost extends StreamHost {
  /** The side's rules for what arrives; none on the dialer. */
  readonly policy: SessionPolicy | undefined;
  /**
   * The message length up to which no payload can nest deeper than `maxDepth`
   * ({@linkcode depthSkipOf}).
   */
  readonly depthSkip: number;
  /**
   * True for the JSON wire, where every item takes at least one unit: a message of at most
   * `maxItems` units needs no count of its decoded value.
   */
  readonly unitPerItem: boolean;
  /** Malformed messages counted so far on this connection. */
  protocolErrors: number;
  /** `now()` when the last message arrived (at construction before any). */
  lastReceivedAt: number;
  /** The highest id the other side opened, refused OPENs included (0 before any). */
  highestRemote: number;
  /** The GOAWAY the other side sent, if any. */
  goAwayReceived: GoAway | undefined;
  /** Which side this is. */
  readonly side: 'dialer' | 'acceptor';
  /** The resolved limits. */
  readonly limits: Readonly<Limits>;
  /** The options the session was made with. */
  readonly options: SessionOptions;
  /** True once the session ended. */
  readonly isClosed: boolean;
  /** True once this side sent GOAWAY. */
  readonly goingAway: boolean;
  /** The parity of the ids the other side opens. */
  readonly remoteParity: number;
  /** The id the next stream this side opens will take. */
  readonly nextStreamId: number;
  /** Open streams the other side opened. */
  readonly remoteActive: number;
  /** The open stream `id` names, if any. */
  get(id: number): Stream | undefined;
  /** Adds a stream to the table. */
  add(stream: Stream): void;
  /** Answers a PING. */
  pong(): void;
  /** Counts one reset the other side caused at will; past the budget the session closes. */
  countReset(): void;
  /** Calls a user callback with `value`, contained. */
  emit<T>(callback: ((value: T) => unknown) | undefined, value: T): void;
  /** Closes the transport from this side, then ends the session. */
  close(code: number, reason: string): void;
}

/**
 * The rules one side adds to what its session takes from the other side, handed to the session
 * by its maker: the acceptor's (`lib/acceptor/_policy.ts`: refusals after a GOAWAY and before
 * the hello, the hello's route, no PUBLISH from a dialer, the smaller limits while a hello is
 * pending). A session without one (the dialer's) takes every OPEN and PUBLISH that passed the
 * frame checks, within its limits.
 */
export interface SessionPolicy {
  /**
   * Checks the options a session of this side is made with, before the session reads them:
   * `new Session()` throws what this throws. The acceptor's checks `side`, `codec` and a restored
   * peer's `firstStreamId`; a session without a policy (the dialer's) takes the options its maker
   * checked (`connect()`'s) as they are.
   *
   * @throws {TypeError} When `side` or `codec` is invalid.
   * @throws {RangeError} When `firstStreamId` is not a positive safe integer of the side's parity.
   */
  check(options: SessionOptions): void;
  /** The most bytes the next message may take. */
  maxBytes(session: ReceiverHost): number;
  /** The most items the next message may hold. */
  maxItems(session: ReceiverHost): number;
  /**
   * True when `data` holds more than `maxItems` items, counted before decoding; undefined when
   * it cannot count, and the decoded value is counted instead. Without a policy, the codec's
   * `exceedsItems` counts.
   */
  exceedsItems(
    session: ReceiverHost,
    data: string | Uint8Array,
    maxItems: number,
  ): boolean | undefined;
  /**
   * An OPEN of the other side that passed the frame checks: refuses it, or hands it to
   * `accept()`.
   */
  open(
    session: ReceiverHost,
    id: number,
    flags: number,
    headers: Record<string, unknown> | null,
    payload: unknown,
  ): void;
  /** A PUBLISH arrived: counts it as malformed, or hands it to `published()`. */
  publish(
    session: ReceiverHost,
    tag: string,
    headers: Record<string, unknown> | null,
    payload: unknown,
    units: number,
  ): void;
}

/**
 * Feeds one received WebSocket message. Never throws: malformed input is reported through
 * `onError` and counted, and the limits close the connection.
 */
export function receive(session: ReceiverHost, data: string | ArrayBuffer | ArrayBufferView): void {
  if (session.isClosed) return;
  try {
    session.lastReceivedAt = session.now();
    dispatch(session, data);
  } catch (error) {
    // Only a bug lands here: every expected failure is handled where it happens.
    session.report(error);
  }
}

/** Handles one received message of a live session; throws only on a bug. */
function dispatch(session: ReceiverHost, raw: string | ArrayBuffer | ArrayBufferView): void {
  const limits = session.limits;
  let data: string | Uint8Array;
  if (typeof raw === 'string') data = raw;
  else if (raw instanceof Uint8Array) data = raw;
  else if (ArrayBuffer.isView(raw)) {
    data = new Uint8Array(raw.buffer, raw.byteOffset, raw.byteLength);
  } else if (raw instanceof ArrayBuffer) data = new Uint8Array(raw);
  else {
    malformed(
      session,
      new FrameError(`Malformed message: expected text or bytes: found ${describe(raw)}`),
    );
    return;
  }
  const policy = session.policy;
  const maxBytes = policy === undefined ? limits.maxMessageBytes : policy.maxBytes(session);
  if (overLimit(data, maxBytes)) {
    tooLarge(session, `larger than ${maxBytes} bytes`);
    return;
  }
  const maxItems = policy === undefined ? limits.maxMessageItems : policy.maxItems(session);
  const over = policy === undefined
    ? session.codec.exceedsItems?.(data, maxItems)
    : policy.exceedsItems(session, data, maxItems);
  if (over === true) {
    tooLarge(session, `holding more than ${maxItems} items`);
    return;
  }
  const units = typeof data === 'string' ? data.length : data.byteLength;
  let value: unknown;
  try {
    value = session.codec.decode(data);
  } catch (error) {
    undecodable(session, data, error);
    return;
  }
  if (
    (over === undefined && (units > maxItems || !session.unitPerItem) ||
      session.codec.transforms === true) && itemsOver(value, maxItems)
  ) {
    tooLarge(session, `holding more than ${maxItems} items`);
    return;
  }
  let frame;
  try {
    frame = parseFrame(value);
  } catch (error) {
    malformed(session, error);
    return;
  }
  switch (frame[0]) {
    case OPEN:
      onOpen(session, frame[1], frame[2], frame[3], frame[4], units);
      return;
    case DATA: {
      const stream = lookup(session, frame[1], 'DATA');
      if (stream === undefined) return;
      if (units > session.depthSkip && tooDeep(frame[3], limits.maxDepth)) {
        decodeReset(session, stream, `its payload nests deeper than ${limits.maxDepth}`);
        return;
      }
      const message = readValue(stream, frame[3], frame[4]);
      if (!control.data(stream, message, units, hasEnd(frame[2]))) {
        malformed(session, new FrameError(`Malformed frame: DATA on stream ${frame[1]} after END`));
      }
      return;
    }
    case END: {
      const stream = lookup(session, frame[1], 'END');
      if (stream !== undefined && !control.end(stream)) {
        malformed(session, new FrameError(`Malformed frame: a second END on stream ${frame[1]}`));
      }
      return;
    }
    case RESET: {
      const stream = lookup(session, frame[1], 'RESET');
      if (stream !== undefined) {
        control.reset(stream, frame[2], frame[3], readIssues(frame[4]?.[ISSUES]));
      }
      return;
    }
    case CREDIT: {
      const stream = lookup(session, frame[1], 'CREDIT');
      if (stream !== undefined) control.credit(stream, frame[2]);
      return;
    }
    case PING:
      session.pong();
      return;
    case PONG:
      return;
    case GOAWAY: {
      const goAway: GoAway = {
        lastId: frame[1],
        code: frame[2],
        message: frame[3],
        spreadMs: frame[4],
      };
      session.goAwayReceived = goAway;
      session.emit(session.options.onGoAway, goAway);
      return;
    }
    case PUBLISH:
      if (policy === undefined) published(session, frame[1], frame[2], frame[3], units);
      else policy.publish(session, frame[1], frame[2], frame[3], units);
      return;
  }
}

/** A message over the size or item limits: closes the connection (acceptor 1009, dialer 4009). */
function tooLarge(session: ReceiverHost, what: string): void {
  session.close(SESSION_CLOSE[session.side].tooLarge, `message ${what}`);
}

/**
 * A PUBLISH arrived (`units` long): handed to `onPublish` unless it nests too deep. The
 * acceptor's policy counts one as malformed instead: only an acceptor publishes.
 */
export function published(
  session: ReceiverHost,
  tag: string,
  headers: Record<string, unknown> | null,
  payload: unknown,
  units: number,
): void {
  const max = session.limits.maxDepth;
  if (units > session.depthSkip && (tooDeep(headers, max) || tooDeep(payload, max))) {
    session.report(
      new ProtocolError(
        `Cannot decode a PUBLISH to ${describe(tag)}: it nests deeper than ${max}`,
      ),
    );
    return;
  }
  const onPublish = session.options.onPublish;
  if (onPublish !== undefined) session.emit(onPublish, { tag, headers, payload });
}

/**
 * The stream `id` names, for a frame other than OPEN: undefined when the frame is to be
 * ignored (a finished id) or was malformed (never opened).
 */
function lookup(session: ReceiverHost, id: number, kind: string): Stream | undefined {
  const stream = session.get(id);
  if (stream !== undefined) return stream;
  if (!opened(session, id)) {
    malformed(session, new FrameError(`Malformed frame: ${kind} for stream ${id}, never opened`));
  }
  return undefined;
}

/** True when `id` was opened, by either side, whether or not its stream is still open. */
function opened(session: ReceiverHost, id: number): boolean {
  return id % 2 === session.remoteParity ? id <= session.highestRemote : id < session.nextStreamId;
}

function onOpen(
  session: ReceiverHost,
  id: number,
  flags: number,
  headers: Record<string, unknown> | null,
  payload: unknown,
  units: number,
): void {
  if (id % 2 !== session.remoteParity) {
    malformed(
      session,
      new FrameError(`Malformed frame: OPEN of stream ${id} has this side's parity`),
    );
    return;
  }
  if (id <= session.highestRemote) {
    malformed(
      session,
      new FrameError(
        `Malformed frame: OPEN of stream ${id} is not above the highest id seen, ${session.highestRemote}`,
      ),
    );
    return;
  }
  session.highestRemote = id;
  const limits = session.limits;
  const max = limits.maxDepth;
  if (units > session.depthSkip && (tooDeep(headers, max) || tooDeep(payload, max))) {
    session.report(
      new ProtocolError(`Cannot decode the OPEN of stream ${id}: it nests deeper than ${max}`),
    );
    refuse(session, id, ResetCode.Decode, `The OPEN nests deeper than ${max}`);
    return;
  }
  const policy = session.policy;
  if (policy === undefined) {
    accept(session, id, flags, headers, payload, session.options.onStream, 0);
  } else policy.open(session, id, flags, headers, payload);
}

/**
 * An OPEN of the other side that passed the frame checks: refused without a handler or over
 * `maxStreams` (less `exempt`, streams open that do not count), else a stream for `onStream`.
 * The acceptor's policy refuses more first (after a GOAWAY, before the hello) and hands the
 * hello to `onHello`; a dialer is never sent a hello.
 */
export function accept(
  session: ReceiverHost,
  id: number,
  flags: number,
  headers: Record<string, unknown> | null,
  payload: unknown,
  onStream: ((stream: Stream) => unknown) | undefined,
  exempt: number,
): void {
  if (onStream === undefined) {
    refuse(session, id, ResetCode.Refused, 'No stream handler');
    return;
  }
  const maxStreams = session.limits.maxStreams;
  if (session.remoteActive - exempt >= maxStreams) {
    refuse(session, id, ResetCode.Refused, `Too many streams: the limit is ${maxStreams}`);
    return;
  }
  const stream = new Stream(session, id, headers, payload, false, hasEnd(flags));
  session.add(stream);
  let result: unknown;
  try {
    result = onStream(stream);
    if (
      result !== null && (typeof result === 'object' || typeof result === 'function') &&
      typeof (result as PromiseLike<unknown>).then === 'function'
    ) {
      Promise.resolve(result as PromiseLike<unknown>).then(
        (value) => control.settle(stream, value),
        (error) => control.failHandler(stream, error),
      );
      return;
    }
  } catch (error) {
    control.failHandler(stream, error);
    return;
  }
  control.settle(stream, result);
}

/**
 * Refuses an OPEN the other side sent (`decode`, or `refused` for want of a handler, over
 * `maxStreams` or after its GOAWAY): the refusal counts toward the reset budget first, so the
 * OPEN that exceeds it closes the connection instead of drawing one more RESET. The RESET is a
 * reply, which a socket over `maxBufferedBytes` does not take.
 */
export function refuse(
  session: ReceiverHost,
  id: number,
  code: ProvokedResetCode,
  message: string,
): void {
  session.countReset();
  session.reply(session.codec.encode([RESET, id, code, message]));
}

function decodeReset(session: ReceiverHost, stream: Stream, why: string): void {
  session.report(
    new ProtocolError(`Cannot decode a message of stream ${stream.id}: ${why}`),
  );
  control.fail(stream, ResetCode.Decode, 'A payload could not be decoded');
}

/** `decode` threw: reset the stream the prefix names, or count a malformed message. */
function undecodable(session: ReceiverHost, data: string | Uint8Array, error: unknown): void {
  let named: readonly [number, number] | undefined;
  try {
    named = session.codec.identify?.(data);
  } catch {
    named = undefined;
  }
  if (named !== undefined && isStreamId(named[1])) {
    const [kind, id] = named;
    if (kind === OPEN) {
      if (id % 2 === session.remoteParity && id > session.highestRemote) {
        session.highestRemote = id;
        session.report(
          new ProtocolError(`Cannot decode the OPEN of stream ${id}`, { cause: error }),
        );
        refuse(session, id, ResetCode.Decode, 'The OPEN could not be decoded');
        return;
      }
    } else if (kind === DATA) {
      const stream = session.get(id);
      if (stream !== undefined) {
        session.report(
          new ProtocolError(`Cannot decode a message of stream ${id}`, { cause: error }),
        );
        control.fail(stream, ResetCode.Decode, 'A payload could not be decoded');
        return;
      }
      if (opened(session, id)) return;
    }
  }
  malformed(
    session,
    new FrameError('Malformed message: the codec cannot decode it', { cause: error }),
  );
}

/** Counts a malformed message and reports it; past `maxProtocolErrors` the session closes. */
export function malformed(session: ReceiverHost, error: unknown): void {
  const max = session.limits.maxProtocolErrors;
  session.protocolErrors++;
  session.report(error);
  if (session.protocolErrors > max && !session.isClosed) {
    session.close(
      SESSION_CLOSE[session.side].protocol,
      `more than ${max} malformed messages`,
    );
  }
}

/**
 * The message length (characters or bytes) up to which no payload of it can nest deeper than
 * `maxDepth`, so the receiver skips the depth walk for such messages: most messages are short,
 * and the walk is a visible part of their cost. The JSON codec spends at least 2 characters per
 * level (`[` and `]`), and so does every codec decoding with it (`jsonCodec({ strict: true })`); every other
 * codec gets every payload walked (0), since the session cannot know what one level costs in its
 * encoding.
 */
export function depthSkipOf(codec: Codec, maxDepth: number): number {
  return codec.decode === jsonDecode ? 2 * maxDepth : 0;
}
