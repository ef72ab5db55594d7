/**
 * Receiving for one session: decoding an incoming message (size first, then its items, then the
 * codec, then the items again for a codec that transforms payloads, then the frame's shape) and dispatching its frame (OPEN, DATA, END, RESET, CREDIT, PING,
 * PONG, GOAWAY, PUBLISH) to the streams; the OPEN's refusals (parity, reused id, depth, no handler,
 * `maxStreams`; the acceptor's `Session` adds its own through `accept()`, and refuses a PUBLISH
 * through `published()`); the undecodable message (a `decode` reset of the stream its prefix
 * names); and the malformed one, counted against `maxProtocolErrors`
 * (docs/design/session-internals.md, "Order of checks on a received message").
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
import type { GoAway, SessionOptions, SessionSink } from './_session_options.ts';
import { SessionStreams } from './_session_streams.ts';
import { control, Stream } from './stream.ts';
import { readValue } from './stream_reads.ts';

/**
 * The rules one side adds to what its session takes from the other side, handed to the session
 * by its maker: the acceptor's (`lib/acceptor/_policy.ts`: refusals after a GOAWAY and before
 * the hello, the hello's route, no PUBLISH from a dialer, the smaller limits while a hello is
 * pending). A session without one (the dialer's) takes every OPEN and PUBLISH that passed the
 * frame checks, within its limits.
 */
export interface SessionPolicy {
  /** The most bytes the next message may take. */
  maxBytes(session: Receiver): number;
  /** The most items the next message may hold. */
  maxItems(session: Receiver): number;
  /**
   * True when `data` holds more than `maxItems` items, counted before decoding; undefined when
   * it cannot count, and the decoded value is counted instead. Without a policy, the codec's
   * `exceedsItems` counts.
   */
  exceedsItems(session: Receiver, data: string | Uint8Array, maxItems: number): boolean | undefined;
  /**
   * An OPEN of the other side that passed the frame checks: refuses it, or hands it to
   * `session.accept()`.
   */
  open(
    session: Receiver,
    id: number,
    flags: number,
    headers: Record<string, unknown> | null,
    payload: unknown,
  ): void;
  /** A PUBLISH arrived: counts it as malformed, or hands it to `session.published()`. */
  publish(
    session: Receiver,
    tag: string,
    headers: Record<string, unknown> | null,
    payload: unknown,
    units: number,
  ): void;
}

/**
 * The receiving half of one session, over its stream table ({@linkcode SessionStreams}, which it
 * extends): what arrived, and what it counts.
 */
export class Receiver extends SessionStreams {
  readonly #depthSkip: number;
  /**
   * True for the JSON wire, where every item takes at least one unit: a message of at most
   * `maxItems` units needs no count of its decoded value.
   */
  readonly #unitPerItem: boolean;
  #protocolErrors = 0;
  #goAway: GoAway | undefined;
  #lastReceivedAt: number;
  /** The highest id the other side opened, refused OPENs included (0 before any). */
  #highestRemote = 0;
  /** The side's rules for what arrives; none on the dialer. */
  readonly policy: SessionPolicy | undefined;

  constructor(
    sink: SessionSink,
    options: SessionOptions,
    limits: Readonly<Limits>,
    firstStreamId: number,
    policy?: SessionPolicy,
  ) {
    super(sink, options, limits, firstStreamId);
    this.policy = policy;
    this.#depthSkip = depthSkipOf(this.codec, limits.maxDepth);
    this.#unitPerItem = this.codec.decode === jsonDecode;
    this.#lastReceivedAt = this.now();
  }

  /** `now()` when the last message arrived (at construction before any). */
  get lastReceivedAt(): number {
    return this.#lastReceivedAt;
  }

  /** Malformed messages counted so far on this connection. */
  get protocolErrors(): number {
    return this.#protocolErrors;
  }

  /** The GOAWAY the other side sent, if any. */
  get goAwayReceived(): GoAway | undefined {
    return this.#goAway;
  }

  /** The highest id the other side opened, refused OPENs included (0 before any). */
  get highestRemote(): number {
    return this.#highestRemote;
  }

  /**
   * Feeds one received WebSocket message. Never throws: malformed input is reported through
   * `onError` and counted, and the limits close the connection.
   */
  receive(data: string | ArrayBuffer | ArrayBufferView): void {
    if (this.isClosed) return;
    try {
      this.#lastReceivedAt = this.now();
      this.#dispatch(data);
    } catch (error) {
      // Only a bug lands here: every expected failure is handled where it happens.
      this.report(error);
    }
  }

  /** Handles one received message of a live session; throws only on a bug. */
  #dispatch(raw: string | ArrayBuffer | ArrayBufferView): void {
    const limits = this.limits;
    let data: string | Uint8Array;
    if (typeof raw === 'string') data = raw;
    else if (raw instanceof Uint8Array) data = raw;
    else if (ArrayBuffer.isView(raw)) {
      data = new Uint8Array(raw.buffer, raw.byteOffset, raw.byteLength);
    } else if (raw instanceof ArrayBuffer) data = new Uint8Array(raw);
    else {
      this.malformed(
        new FrameError(`Malformed message: expected text or bytes: found ${describe(raw)}`),
      );
      return;
    }
    const policy = this.policy;
    const maxBytes = policy === undefined ? limits.maxMessageBytes : policy.maxBytes(this);
    if (overLimit(data, maxBytes)) {
      this.#tooLarge(`larger than ${maxBytes} bytes`);
      return;
    }
    const maxItems = policy === undefined ? limits.maxMessageItems : policy.maxItems(this);
    const over = policy === undefined
      ? this.codec.exceedsItems?.(data, maxItems)
      : policy.exceedsItems(this, data, maxItems);
    if (over === true) {
      this.#tooLarge(`holding more than ${maxItems} items`);
      return;
    }
    const units = typeof data === 'string' ? data.length : data.byteLength;
    let value: unknown;
    try {
      value = this.codec.decode(data);
    } catch (error) {
      this.#undecodable(data, error);
      return;
    }
    if (
      (over === undefined && (units > maxItems || !this.#unitPerItem) ||
        this.codec.transforms === true) && itemsOver(value, maxItems)
    ) {
      this.#tooLarge(`holding more than ${maxItems} items`);
      return;
    }
    let frame;
    try {
      frame = parseFrame(value);
    } catch (error) {
      this.malformed(error);
      return;
    }
    switch (frame[0]) {
      case OPEN:
        this.#onOpen(frame[1], frame[2], frame[3], frame[4], units);
        return;
      case DATA: {
        const stream = this.#lookup(frame[1], 'DATA');
        if (stream === undefined) return;
        if (units > this.#depthSkip && tooDeep(frame[3], limits.maxDepth)) {
          this.#decodeReset(stream, `its payload nests deeper than ${limits.maxDepth}`);
          return;
        }
        const message = readValue(stream, frame[3], frame[4]);
        if (!control.data(stream, message, units, hasEnd(frame[2]))) {
          this.malformed(new FrameError(`Malformed frame: DATA on stream ${frame[1]} after END`));
        }
        return;
      }
      case END: {
        const stream = this.#lookup(frame[1], 'END');
        if (stream !== undefined && !control.end(stream)) {
          this.malformed(new FrameError(`Malformed frame: a second END on stream ${frame[1]}`));
        }
        return;
      }
      case RESET: {
        const stream = this.#lookup(frame[1], 'RESET');
        if (stream !== undefined) {
          control.reset(stream, frame[2], frame[3], readIssues(frame[4]?.[ISSUES]));
        }
        return;
      }
      case CREDIT: {
        const stream = this.#lookup(frame[1], 'CREDIT');
        if (stream !== undefined) control.credit(stream, frame[2]);
        return;
      }
      case PING:
        this.pong();
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
        this.#goAway = goAway;
        this.emit(this.options.onGoAway, goAway);
        return;
      }
      case PUBLISH:
        if (policy === undefined) this.published(frame[1], frame[2], frame[3], units);
        else policy.publish(this, frame[1], frame[2], frame[3], units);
        return;
    }
  }

  /** A message over the size or item limits: closes the connection (acceptor 1009, dialer 4009). */
  #tooLarge(what: string): void {
    this.close(SESSION_CLOSE[this.side].tooLarge, `message ${what}`);
  }

  /**
   * A PUBLISH arrived (`units` long): handed to `onPublish` unless it nests too deep. The
   * acceptor's policy counts one as malformed instead: only an acceptor publishes.
   */
  published(
    tag: string,
    headers: Record<string, unknown> | null,
    payload: unknown,
    units: number,
  ): void {
    const max = this.limits.maxDepth;
    if (units > this.#depthSkip && (tooDeep(headers, max) || tooDeep(payload, max))) {
      this.report(
        new ProtocolError(
          `Cannot decode a PUBLISH to ${describe(tag)}: it nests deeper than ${max}`,
        ),
      );
      return;
    }
    const onPublish = this.options.onPublish;
    if (onPublish !== undefined) this.emit(onPublish, { tag, headers, payload });
  }

  /**
   * The stream `id` names, for a frame other than OPEN: undefined when the frame is to be
   * ignored (a finished id) or was malformed (never opened).
   */
  #lookup(id: number, kind: string): Stream | undefined {
    const stream = this.get(id);
    if (stream !== undefined) return stream;
    if (!this.#opened(id)) {
      this.malformed(new FrameError(`Malformed frame: ${kind} for stream ${id}, never opened`));
    }
    return undefined;
  }

  /** True when `id` was opened, by either side, whether or not its stream is still open. */
  #opened(id: number): boolean {
    return id % 2 === this.remoteParity ? id <= this.#highestRemote : id < this.nextStreamId;
  }

  #onOpen(
    id: number,
    flags: number,
    headers: Record<string, unknown> | null,
    payload: unknown,
    units: number,
  ): void {
    if (id % 2 !== this.remoteParity) {
      this.malformed(
        new FrameError(`Malformed frame: OPEN of stream ${id} has this side's parity`),
      );
      return;
    }
    if (id <= this.#highestRemote) {
      this.malformed(
        new FrameError(
          `Malformed frame: OPEN of stream ${id} is not above the highest id seen, ${this.#highestRemote}`,
        ),
      );
      return;
    }
    this.#highestRemote = id;
    const limits = this.limits;
    const max = limits.maxDepth;
    if (units > this.#depthSkip && (tooDeep(headers, max) || tooDeep(payload, max))) {
      this.report(
        new ProtocolError(`Cannot decode the OPEN of stream ${id}: it nests deeper than ${max}`),
      );
      this.refuse(id, ResetCode.Decode, `The OPEN nests deeper than ${max}`);
      return;
    }
    const policy = this.policy;
    if (policy === undefined) this.accept(id, flags, headers, payload, this.options.onStream, 0);
    else policy.open(this, id, flags, headers, payload);
  }

  /**
   * An OPEN of the other side that passed the frame checks: refused without a handler or over
   * `maxStreams` (less `exempt`, streams open that do not count), else a stream for `onStream`.
   * The acceptor's policy refuses more first (after a GOAWAY, before the hello) and hands the
   * hello to `onHello`; a dialer is never sent a hello.
   */
  accept(
    id: number,
    flags: number,
    headers: Record<string, unknown> | null,
    payload: unknown,
    onStream: ((stream: Stream) => unknown) | undefined,
    exempt: number,
  ): void {
    if (onStream === undefined) {
      this.refuse(id, ResetCode.Refused, 'No stream handler');
      return;
    }
    const maxStreams = this.limits.maxStreams;
    if (this.remoteActive - exempt >= maxStreams) {
      this.refuse(id, ResetCode.Refused, `Too many streams: the limit is ${maxStreams}`);
      return;
    }
    const stream = new Stream(this, id, headers, payload, false, hasEnd(flags));
    this.add(stream);
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
  refuse(id: number, code: ProvokedResetCode, message: string): void {
    this.countReset();
    this.reply(this.codec.encode([RESET, id, code, message]));
  }

  #decodeReset(stream: Stream, why: string): void {
    this.report(
      new ProtocolError(`Cannot decode a message of stream ${stream.id}: ${why}`),
    );
    control.fail(stream, ResetCode.Decode, 'A payload could not be decoded');
  }

  /** `decode` threw: reset the stream the prefix names, or count a malformed message. */
  #undecodable(data: string | Uint8Array, error: unknown): void {
    let named: readonly [number, number] | undefined;
    try {
      named = this.codec.identify?.(data);
    } catch {
      named = undefined;
    }
    if (named !== undefined && isStreamId(named[1])) {
      const [kind, id] = named;
      if (kind === OPEN) {
        if (id % 2 === this.remoteParity && id > this.#highestRemote) {
          this.#highestRemote = id;
          this.report(
            new ProtocolError(`Cannot decode the OPEN of stream ${id}`, { cause: error }),
          );
          this.refuse(id, ResetCode.Decode, 'The OPEN could not be decoded');
          return;
        }
      } else if (kind === DATA) {
        const stream = this.get(id);
        if (stream !== undefined) {
          this.report(
            new ProtocolError(`Cannot decode a message of stream ${id}`, { cause: error }),
          );
          control.fail(stream, ResetCode.Decode, 'A payload could not be decoded');
          return;
        }
        if (this.#opened(id)) return;
      }
    }
    this.malformed(
      new FrameError('Malformed message: the codec cannot decode it', { cause: error }),
    );
  }

  /** Counts a malformed message and reports it; past `maxProtocolErrors` the session closes. */
  malformed(error: unknown): void {
    const max = this.limits.maxProtocolErrors;
    this.#protocolErrors++;
    this.report(error);
    if (this.#protocolErrors > max && !this.isClosed) {
      this.close(SESSION_CLOSE[this.side].protocol, `more than ${max} malformed messages`);
    }
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
function depthSkipOf(codec: Codec, maxDepth: number): number {
  return codec.decode === jsonDecode ? 2 * maxDepth : 0;
}
