/**
 * muxws multiplexes many request/response and streaming exchanges over one WebSocket, redials
 * lost connections on a jittered exponential schedule, and runs unchanged on Deno, Bun,
 * Cloudflare Workers, browsers and Node, using web-standard APIs only.
 *
 * @example The reconnect schedule
 * ```ts
 * import { backoffDelay, Reconnect, seededDraw, shouldRetry, unjitteredDelay } from '@muxws/core';
 * import assert from 'node:assert/strict';
 *
 * // The defaults: 250 ms doubling to a 30000 ms cap, each delay jittered by up to ±30 %.
 * const schedule = new Reconnect();
 * assert.deepEqual(
 *   [0, 1, 2, 7, 50].map((attempt) => unjitteredDelay(attempt, schedule)),
 *   [250, 500, 1000, 30_000, 30_000],
 * );
 *
 * // A seeded draw gives one client a reproducible spread; the cap is jittered too.
 * const delay = backoffDelay(50, schedule, seededDraw('client-7'));
 * assert(delay >= 21_000 && delay < 39_000);
 * assert.equal(backoffDelay(50, schedule, seededDraw('client-7')), delay);
 *
 * // maxAttempts 3 allows attempts 0, 1 and 2.
 * const limited = new Reconnect({ maxAttempts: 3 });
 * assert.deepEqual([2, 3].map((attempt) => shouldRetry(attempt, limited)), [true, false]);
 * ```
 *
 * @example The error classes
 * ```ts
 * import { MuxwsError, StreamResetError } from '@muxws/core';
 * import assert from 'node:assert/strict';
 *
 * const error = new StreamResetError('Stream 1 was refused', { code: 'refused', remote: true });
 * assert(error instanceof MuxwsError);
 * ```
 *
 * @module
 */
export type * from './lib/routes/api.ts';
export * from './lib/routes/route.ts';
export { type Tracked, tracked } from './lib/routes/tracked.ts';
export * from './lib/wire/codec.ts';
export * from './lib/dialer/dialer.ts';
export * from './lib/errors.ts';
export * from './lib/dialer/hello.ts';
export * from './lib/session/limits.ts';
export * from './lib/dialer/schedule.ts';
export { Stream } from './lib/session/stream.ts';
export type { OpenOptions, PublishMessage, RequestOptions } from './lib/session/stream.ts';
export * from './lib/dialer/subscribe.ts';
export * from './lib/dialer/recovery.ts';
export * from './lib/dialer/wait_while_reconnecting.ts';
export * from './lib/dialer/online_hints.ts';
export { type EventHandler, on } from './lib/dialer/events.ts';
export { presence } from './lib/dialer/presence.ts';
