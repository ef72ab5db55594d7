/**
 * The acceptor's rules for what a peer sends, as the {@linkcode SessionPolicy} the acceptor hands
 * each peer's session: the session calls them where it takes an OPEN, a PUBLISH and the size and
 * items of the next message, so no session class overrides a receiving step for them, and a
 * `connect` bundle carries none of them (docs/design/session.md).
 *
 * Private to `lib/acceptor/`.
 *
 * @module
 */
import { ResetCode } from '../wire/codes.ts';
import { mustBe } from '../util/describe.ts';
import { FrameError, hasHello, isStreamId, RESET } from '../wire/frame.ts';
import {
  accept,
  malformed,
  published,
  refuse,
  type Session,
  type SessionOptions,
  type SessionPolicy,
} from '../session/session.ts';
import { control } from '../session/stream.ts';
import { decode as jsonDecode, exceedsItems as jsonExceedsItems } from '../wire/json.ts';

/** The message of the `refused` RESET an OPEN draws after a GOAWAY. */
const GOING_AWAY = 'The connection is going away';

/**
 * Before a required hello is acknowledged, a message may hold one item per this many bytes of
 * `limits.maxHelloBytes` (4,096 items with the default 64 KiB).
 */
const HELLO_BYTES_PER_ITEM = 16;

/** The acceptor's policy: one object, shared by every session, holding no state of its own. */
export const acceptorPolicy: SessionPolicy = {
  /**
   * `side` is `"dialer"` or `"acceptor"`, `codec` has `encode` and `decode`, and `firstStreamId`
   * (a restored peer's `nextStreamId`), when given, is a positive safe integer of the side's
   * parity (odd for the dialer, even for the acceptor).
   */
  check(options: SessionOptions): void {
    if (options?.side !== 'dialer' && options?.side !== 'acceptor') {
      throw new TypeError(
        mustBe('create Session', 'side', '"dialer" or "acceptor"', options?.side),
      );
    }
    const codec = options.codec;
    if (
      // An object or a function (`jsonCodec` is both) with `encode` and `decode`.
      typeof codec?.encode !== 'function' || typeof codec.decode !== 'function'
    ) {
      throw new TypeError(mustBe('create Session', 'codec', 'a Codec', codec));
    }
    const parity = options.side === 'dialer' ? 1 : 0;
    const first = options.firstStreamId ?? 2 - parity;
    if (!isStreamId(first) || first % 2 !== parity) {
      throw new RangeError(
        mustBe(
          'create Session',
          'firstStreamId',
          `a positive safe integer of the ${options.side}'s parity (${
            parity === 1 ? 'odd' : 'even'
          })`,
          first,
        ),
      );
    }
  },

  /** `maxMessageBytes`, or `maxHelloBytes` when smaller while a required hello is pending. */
  maxBytes(session: Session): number {
    const limits = session.limits;
    return session.options.helloPending === true
      ? Math.min(limits.maxMessageBytes, limits.maxHelloBytes)
      : limits.maxMessageBytes;
  },

  /**
   * `maxMessageItems`, or while a required hello is pending one item per
   * {@linkcode HELLO_BYTES_PER_ITEM} bytes of `maxHelloBytes` when fewer.
   */
  maxItems(session: Session): number {
    const limits = session.limits;
    return session.options.helloPending === true
      ? Math.min(limits.maxMessageItems, Math.floor(limits.maxHelloBytes / HELLO_BYTES_PER_ITEM))
      : limits.maxMessageItems;
  },

  /**
   * As the codec's `exceedsItems` counts, and for a codec decoding with the JSON wire's `decode`
   * without `exceedsItems` (the default codec, whose `exceedsItems` a `connect` bundle leaves
   * out), with the JSON wire's scan.
   */
  exceedsItems(
    session: Session,
    data: string | Uint8Array,
    maxItems: number,
  ): boolean | undefined {
    const codec = session.codec;
    return codec.exceedsItems === undefined && codec.decode === jsonDecode
      ? jsonExceedsItems(data, maxItems)
      : codec.exceedsItems?.(data, maxItems);
  },

  /**
   * An OPEN of the other side that passed the frame checks, with the acceptor's refusals first:
   * `refused` once this side sent GOAWAY (not counted against the reset budget: these are the OPENs
   * already in flight, and this side closes once its streams drained) or above the `lastId` of one
   * received (counted, as every refusal the other side draws at will), `hello_required` before the
   * hello is acknowledged; the hello goes to `onHello` (else `onStream`, marked `isHello`), and
   * neither it nor the others while it is open count it against `maxStreams`. The rest is the
   * session's `accept()`.
   */
  open(
    session: Session,
    id: number,
    flags: number,
    headers: Record<string, unknown> | null,
    payload: unknown,
  ): void {
    const options = session.options;
    // parseFrame let HELLO through on stream 1 only, and only a dialer opens odd ids.
    const isHello = id === 1 && hasHello(flags);
    const goAway = session.goAwayReceived;
    if (session.goingAway) {
      // Not counted; a reply all the same, so a peer that never reads is closed at the cap.
      session.reply(session.codec.encode([RESET, id, ResetCode.Refused, GOING_AWAY]));
      return;
    }
    if (goAway !== undefined && session.side === 'acceptor' && id > goAway.lastId) {
      refuse(session, id, ResetCode.Refused, GOING_AWAY);
      return;
    }
    if (!isHello && options.helloPending === true) {
      refuse(session, id, ResetCode.HelloRequired, 'The hello must be acknowledged first');
      return;
    }
    const onStream = isHello ? options.onHello ?? options.onStream : options.onStream;
    accept(
      session,
      id,
      flags,
      headers,
      payload,
      isHello && onStream !== undefined
        ? (stream) => {
          control.markHello(stream);
          return onStream(stream);
        }
        : onStream,
      isHello ? Infinity : session.get(1)?.isHello === true ? 1 : 0,
    );
  },

  /** A PUBLISH arrived: malformed when the other side is a dialer, else the session's. */
  publish(
    session: Session,
    tag: string,
    headers: Record<string, unknown> | null,
    payload: unknown,
    units: number,
  ): void {
    if (session.side === 'acceptor') {
      malformed(session, new FrameError('Malformed frame: PUBLISH sent by a dialer'));
    } else published(session, tag, headers, payload, units);
  },
};
