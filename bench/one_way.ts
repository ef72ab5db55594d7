/**
 * Scenario `one-way`: `count` ~100-byte JSON messages sent one way on one connection. muxws
 * writes them on one stream (`await stream.write()` each, flow control on: the writer waits for
 * credit), then ends it; the server's handler reads them to the end and answers with the count.
 * Raw: `#sink <count>`, then `count` sends without waiting; the server answers `#done` after the
 * last. socket.io: `sink`, then `count` emits; the server emits `done` after the last.
 *
 * One repetition reports the messages received per second, from the first send to the answer.
 *
 * @module
 */
import type { BenchClient } from './_clients.ts';
import { PAYLOADS } from './_common.ts';

/** Sends `count` messages over `client`; returns messages received per second. */
export async function oneWay(client: BenchClient, count: number): Promise<number> {
  const started = performance.now();
  await client.sink(count, (i) => PAYLOADS[i & 1023]);
  return count / ((performance.now() - started) / 1000);
}
