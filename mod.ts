/**
 * muxws multiplexes many request/response and streaming exchanges over one WebSocket, redials
 * lost connections on a jittered exponential schedule, and runs unchanged on Deno, Bun,
 * Cloudflare Workers, browsers and Node, using web-standard APIs only.
 *
 * @example The error classes
 * ```ts
 * import { MuxwsError, StreamResetError } from 'muxws';
 * import assert from 'node:assert/strict';
 *
 * const error = new StreamResetError('Stream 1 was refused', { code: 'refused', remote: true });
 * assert(error instanceof MuxwsError);
 * ```
 *
 * @module
 */
export * from './lib/errors.ts';
