// Must compile (`deno check`): a typed Stream reads its declared message type and writes its own,
// and an untyped Stream keeps accepting and giving `unknown`.
import type { Stream } from 'muxws';

export async function typed(stream: Stream<{ n: number }, string>): Promise<number> {
  let total = 0;
  for await (const message of stream) total += message.n;
  const reader = stream.readable.getReader();
  const first = await reader.read();
  if (!first.done) total += first.value.n;
  await stream.write('more');
  await stream.end('last');
  await stream.end();
  stream.signal.throwIfAborted();
  return total;
}

export async function untyped(stream: Stream): Promise<unknown[]> {
  const seen: unknown[] = [];
  for await (const message of stream) seen.push(message);
  await stream.write({ any: 'value' });
  await stream.end(42);
  return seen;
}

/** A typed stream goes where an untyped one is expected. */
export function widen(stream: Stream<{ n: number }, string>): Stream {
  return stream;
}

export async function refusals(stream: Stream<{ n: number }, string>): Promise<void> {
  // @ts-expect-error: this stream writes strings
  await stream.write(1);
  // @ts-expect-error: and ends with a string
  await stream.end({ n: 1 });
  for await (const message of stream) {
    // @ts-expect-error: its messages have no `m`
    void message.m;
  }
}
