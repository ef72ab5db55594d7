/**
 * Scenarios `req-resp-1` and `req-resp-64`: request/response with 1 and with 64 requests in
 * flight on one connection, ~100-byte JSON each way. muxws `request()` (answered by a handler
 * returning the payload) vs the runtime's raw WebSocket echo (the server sends each text message
 * back verbatim; the client stringifies and parses, matching answers to requests in order) vs
 * socket.io `emitWithAck` (the server acks with the payload).
 *
 * One repetition makes `count` requests and reports round trips/s and the p50/p99 latency of a
 * single request in µs (from just before the call to its answer).
 *
 * @module
 */
import type { BenchClient } from './_clients.ts';
import { PAYLOADS, quantile } from './_common.ts';

/** What one repetition measured. */
export interface ReqRespResult {
  /** Round trips per second. */
  rate: number;
  /** Median latency in µs. */
  p50: number;
  /** 99th percentile latency in µs. */
  p99: number;
}

/** Makes `count` requests over `client`, `inFlight` at a time. */
export async function reqResp(
  client: BenchClient,
  inFlight: number,
  count: number,
): Promise<ReqRespResult> {
  const latencies = new Float64Array(count);
  let next = 0;
  async function worker(): Promise<void> {
    while (next < count) {
      const i = next++;
      const started = performance.now();
      const answer = await client.request(PAYLOADS[i & 1023]) as { id?: unknown };
      latencies[i] = performance.now() - started;
      if (answer?.id !== (PAYLOADS[i & 1023] as { id: unknown }).id) {
        throw new Error(`request ${i} was answered with ${JSON.stringify(answer)}`);
      }
    }
  }
  const started = performance.now();
  await Promise.all(Array.from({ length: inFlight }, worker));
  const elapsed = performance.now() - started;
  const sorted = Array.from(latencies);
  return {
    rate: count / (elapsed / 1000),
    p50: quantile(sorted, 0.5) * 1000,
    p99: quantile(sorted, 0.99) * 1000,
  };
}
