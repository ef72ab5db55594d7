/**
 * Tracked messages: a route's async generator yields `tracked(id, value)` to send `value` with its
 * `id`, so a standing subscription re-opened after a reconnect names the last id it received
 * (`ctx.lastEventId`) and the route continues after it.
 *
 * @module
 */
import { isEventId, MAX_EVENT_ID_LENGTH } from '../wire/reserved.ts';
import { describe, lengthNote } from '../util/describe.ts';

/**
 * A message with its id, as {@linkcode tracked} makes it: yielded by a route's async generator,
 * `value` is sent as the message and `id` beside it, and the subscription that receives it sends
 * `id` back as `ctx.lastEventId` when it is re-opened after a reconnect.
 *
 * @example
 * ```ts
 * import { type Tracked, tracked } from '@muxws/core';
 * import assert from 'node:assert/strict';
 *
 * const tick: Tracked<number> = tracked('7', 101);
 * assert.deepEqual([tick.id, tick.value], ['7', 101]);
 * ```
 */
export interface Tracked<T> {
  /** The message's id: 1 to 256 characters. */
  readonly id: string;
  /** The message. */
  readonly value: T;
}

/**
 * The mark of a value {@linkcode tracked} made: private to this module, so no other value can
 * pass for one. Both entries (`muxws` and `muxws/acceptor`) share this module.
 */
const TRACKED: symbol = Symbol('muxws.tracked');

/**
 * Tracks a message: yielded by a route's async generator (on the acceptor's routes or the
 * dialer's), `value` is sent as the message, with `id` in the reserved DATA header `:id`. A
 * standing subscription remembers the id of the last tracked message it received and, when it is
 * re-opened after a reconnect, sends it in its OPEN; the handler reads it as `ctx.lastEventId`
 * and yields what came after it. Untracked messages (plain yields) move no position. Only a
 * generator's yields are tracked: a `tracked()` value written with `ctx.stream.write()` is sent as
 * the plain object `{ id, value }`.
 *
 * Ids are the application's: any string of 1 to 256 characters that its handler can find its
 * place from (a sequence number, a database cursor, a timestamp).
 *
 * @example A feed that continues where its subscriber left off
 * ```ts
 * import { type RouteContext, tracked } from '@muxws/core';
 * import assert from 'node:assert/strict';
 *
 * const prices = [100, 101, 102, 103, 104];
 * async function* feed(_input: unknown, ctx: RouteContext) {
 *   const after = ctx.lastEventId === undefined ? -1 : Number(ctx.lastEventId);
 *   for (let i = after + 1; i < prices.length; i++) yield tracked(String(i), prices[i]);
 * }
 * const resumed = { lastEventId: '2' } as RouteContext;
 * const sent: number[] = [];
 * for await (const { value } of feed(undefined, resumed)) sent.push(value);
 * assert.deepEqual(sent, [103, 104]);
 * ```
 *
 * @param id The message's id: a string of 1 to 256 characters.
 * @param value The message.
 * @returns The tracked message, to yield.
 * @throws {TypeError} When `id` is not a non-empty string.
 * @throws {RangeError} When `id` is longer than 256 characters.
 */
export function tracked<T>(id: string, value: T): Tracked<T> {
  const found: unknown = id;
  if (!isEventId(found)) {
    const long = lengthNote(found, MAX_EVENT_ID_LENGTH);
    const message =
      `Cannot track a message as "id" must be a non-empty string of at most ${MAX_EVENT_ID_LENGTH} characters: current value is ${
        describe(found)
      }${long}`;
    throw long !== '' ? new RangeError(message) : new TypeError(message);
  }
  return Object.defineProperty({ id, value }, TRACKED, { value: true });
}

/** True for a value {@linkcode tracked} made. */
export function isTracked(value: unknown): value is Tracked<unknown> {
  return value !== null && typeof value === 'object' &&
    (value as Record<symbol, unknown>)[TRACKED] === true;
}
