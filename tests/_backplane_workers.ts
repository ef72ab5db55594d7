/**
 * The body of the "BroadcastChannel between a worker and the main isolate" tests, shared by
 * tests/deno and tests/bun (Node runs bundled tests and cannot start a TypeScript worker).
 */
import assert from 'node:assert/strict';
import {
  type BackplaneError,
  BackplaneGapError,
  type BackplaneMessage,
  broadcastChannelBackplane,
} from 'muxws/backplane';
import { within } from './_wait.ts';

function frame(tag: string, n: number): BackplaneMessage {
  return {
    tag,
    headers: null,
    payload: JSON.stringify([9, tag, null, n]),
    except: [],
    origin: 'main',
    codec: 'json',
  };
}

/** What one round trip saw, on each side. */
export interface RoundTrip {
  /** Messages published by the main side (the burst plus one binary message). */
  published: number;
  /** Messages the worker received and echoed. */
  echoed: number;
  /** Messages the worker's backplane reported missed. */
  missedByWorker: number;
  /** Echoes the main side received. */
  echoes: number;
  /** Echoes the main side's backplane reported missed. */
  missedByMain: number;
}

/**
 * Starts the echo worker, publishes `count` text messages and one binary one from this isolate,
 * waits until the echoes stop (at most 10 s), stops the worker, and checks what must hold on
 * every runtime: each side received messages at most once and in order, none of its own, the
 * binary frame unchanged, and every message either arrived or was reported missed by a
 * `BackplaneGapError`. Returns the counts, for the caller's runtime-specific expectations.
 */
export async function workerRoundTrip(count: number): Promise<RoundTrip> {
  const name = `muxws-worker-${crypto.randomUUID()}`;
  let missedByMain = 0;
  const otherErrors: BackplaneError[] = [];
  const backplane = broadcastChannelBackplane(name, {
    onError: (error) => {
      if (error instanceof BackplaneGapError) missedByMain += error.missed ?? 0;
      else otherErrors.push(error);
    },
  });
  const worker = new Worker(new URL('./_backplane_worker.ts', import.meta.url).href, {
    type: 'module',
  });
  try {
    // A worker that fails (its module, its handler) fails the wait at once instead of timing out.
    let failed: (error: unknown) => void = () => {};
    const failure = new Promise<never>((_, reject) => (failed = reject));
    failure.catch(() => {});
    worker.addEventListener('error', (event: Event) => {
      event.preventDefault();
      failed(new Error(`The worker failed: ${(event as ErrorEvent).message}`));
    });
    const fromWorker = (predicate: (data: Record<string, unknown>) => boolean) =>
      Promise.race([
        failure,
        new Promise<Record<string, unknown>>((resolve) => {
          worker.addEventListener('message', (event: MessageEvent) => {
            if (predicate(event.data)) resolve(event.data);
          });
        }),
      ]);
    const ready = fromWorker((data) => data.ready === true);
    worker.postMessage({ name });
    // Generous: starting a worker loads (and on Deno type-checks) its modules, slow on a busy CI.
    await within(ready, 60_000, 'the worker to join the channel');

    const echoes: BackplaneMessage[] = [];
    let lastAt = Date.now();
    let final: (() => void) | undefined;
    const finalArrived = new Promise<void>((resolve) => (final = resolve));
    let warm: (() => void) | undefined;
    const warmed = new Promise<void>((resolve) => (warm = resolve));
    backplane.subscribe((message) => {
      lastAt = Date.now();
      if (message.tag === 'final') final!();
      else if (message.tag === 'warmup') warm!();
      else echoes.push(message);
    });
    // One round trip first, so each side has seen the other's first sequence number and can
    // count any later loss (a receiver cannot tell a lost first message from a late join).
    await backplane.publish(frame('warmup', 0));
    await within(warmed, 10_000, 'the warm-up echo');
    const bytes = new Uint8Array([0x94, 0x09, 0xa1, 0x74, 0xc0, 0xcc, 0xff]);
    const published: Promise<void>[] = [];
    for (let n = 1; n <= count; n++) published.push(backplane.publish(frame('room', n)));
    published.push(backplane.publish({
      ...frame('room', 0),
      headers: { binary: true },
      payload: bytes,
      except: ['muted'],
      codec: 'msgpack',
    }));
    await Promise.all(published);
    // The echoes stop when the worker has answered all it received: wait for 300 ms of quiet.
    const deadline = Date.now() + 10_000;
    while (Date.now() - lastAt < 300 || echoes.length === 0) {
      if (Date.now() > deadline) throw new Error('The echoes did not settle within 10 s');
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    const done = fromWorker((data) => data.done === true);
    await backplane.publish(frame('stop', 0));
    const report = await within(done, 10_000, 'the worker to stop');
    await within(finalArrived, 10_000, 'the final message');

    const result: RoundTrip = {
      published: count + 1,
      echoed: report.echoed as number,
      missedByWorker: report.missed as number,
      echoes: echoes.length,
      missedByMain,
    };
    assert.equal(report.otherErrors, 0);
    assert.deepEqual(otherErrors, []);
    assert.equal(report.inOrder, true, 'the worker received the burst in order, once');
    assert.ok(echoes.every((m) => m.origin === 'worker' && m.tag === 'echo'), 'none of its own');
    const numbers = echoes.filter((m) => typeof m.payload === 'string')
      .map((m) => JSON.parse(m.payload as string)[3] as number);
    for (let i = 1; i < numbers.length; i++) {
      assert.ok(numbers[i] > numbers[i - 1], `echo ${numbers[i]} after ${numbers[i - 1]}`);
    }
    // Every message arrived or was reported missed: nothing is lost silently.
    assert.equal(result.echoed + result.missedByWorker, result.published);
    assert.equal(result.echoes + result.missedByMain, result.echoed);
    const binary = echoes.find((m) => m.payload instanceof Uint8Array);
    if (binary) {
      assert.deepEqual([...(binary.payload as Uint8Array)], [...bytes]);
      assert.deepEqual(binary.except, ['muted']);
      assert.deepEqual(binary.headers, { binary: true });
    }
    return result;
  } finally {
    worker.terminate();
    backplane.close();
    await afterLastChannelClosed();
  }
}

/**
 * Deno 2.9 breaks a `BroadcastChannel` created in the same task that closed the isolate's last
 * one (its `postMessage` then throws `TypeError: expected i32`): let that close finish first.
 */
export function afterLastChannelClosed(): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, 10));
}
