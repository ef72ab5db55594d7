/**
 * The reading side of one stream as the application sees it: {@linkcode ReadQueue}, the messages
 * that arrived and are not read yet and the reads waiting for the next one, and the two ways to
 * read them, {@linkcode readableOf} (a `ReadableStream`) and {@linkcode iteratorOf} (an async
 * iterator). The stream makes its queue when the first message must wait for a reader, or the
 * first read must wait for a message; a stream that never reads nor receives holds none.
 *
 * A message is consumed (its credit counted toward the next CREDIT) when a read takes it: the
 * queue calls back with its units. Flow control itself is the stream's.
 *
 * Internal: imported from `lib/` only.
 *
 * @module
 */
import { advance } from './_queue_head.ts';

/** A read waiting for the next message. */
interface Reader {
  resolve: (result: IteratorResult<unknown>) => void;
  reject: (error: unknown) => void;
}

/** The end of the messages. */
const DONE: IteratorResult<unknown> = Object.freeze({ value: undefined, done: true });
/** The end of the messages, as a read's result. */
export const DONE_PROMISE: Promise<IteratorResult<unknown>> = Promise.resolve(DONE);

/** The unread messages and the waiting reads of one stream (see the module doc). */
export class ReadQueue {
  /** Unread messages as pairs: value, then its units; `#head` indexes the next value. */
  #queue: unknown[] = [];
  #head = 0;
  /** Reads waiting for a message, oldest first (never while a message is queued). */
  #readers: Reader[] | undefined;
  readonly #consume: (units: number) => void;

  /** @param consume Called with a message's units once a read took it. */
  constructor(consume: (units: number) => void) {
    this.#consume = consume;
  }

  /** True while a message waits to be read. */
  get queued(): boolean {
    return this.#head < this.#queue.length;
  }

  /** A message arrived: the oldest waiting read takes it (consumed at once), or it queues. */
  put(value: unknown, units: number): void {
    const reader = this.#readers?.shift();
    if (reader === undefined) this.#queue.push(value, units);
    else {
      this.#consume(units);
      reader.resolve({ value, done: false });
    }
  }

  /** Takes the oldest unread message (call only while {@linkcode ReadQueue.queued}). */
  take(): unknown {
    const queue = this.#queue;
    const head = this.#head;
    const value = queue[head];
    const units = queue[head + 1] as number;
    queue[head] = undefined;
    this.#head = advance(queue, head + 2);
    this.#consume(units);
    return value;
  }

  /** A read that found nothing queued: settles with the next message, the end, or the error. */
  wait(): Promise<IteratorResult<unknown>> {
    return new Promise((resolve, reject) => (this.#readers ??= []).push({ resolve, reject }));
  }

  /** The reader stopped: every queued message is consumed unread, and waiting reads end. */
  discard(): void {
    while (this.queued) this.take();
    this.ended();
  }

  /** No more messages will come: waiting reads end (a waiting read means nothing is queued). */
  ended(): void {
    const readers = this.#readers;
    this.#readers = undefined;
    if (readers !== undefined) { for (const reader of readers) reader.resolve(DONE); }
  }

  /** The stream failed: unread messages are dropped and waiting reads reject with `error`. */
  fail(error: unknown): void {
    const readers = this.#readers;
    this.#readers = undefined;
    this.#queue.length = 0;
    this.#head = 0;
    if (readers !== undefined) { for (const reader of readers) reader.reject(error); }
  }
}

/**
 * The messages `read` returns as a `ReadableStream` that reads nothing ahead (`highWaterMark: 0`,
 * so a message is consumed only when the application reads it); `cancel()` calls `stop`.
 */
export function readableOf<T>(
  read: () => Promise<IteratorResult<T>>,
  stop: () => void,
): ReadableStream<T> {
  return new ReadableStream<T>({
    pull: (controller) =>
      read().then((result) => {
        if (result.done) controller.close();
        else controller.enqueue(result.value);
      }),
    cancel: stop,
  }, { highWaterMark: 0 });
}

/** The messages `read` returns as an async iterator; leaving a loop early calls `stop`. */
export function iteratorOf<T>(
  read: () => Promise<IteratorResult<T>>,
  stop: () => void,
): AsyncIterableIterator<T> {
  const iterator: AsyncIterableIterator<T> = {
    next: read,
    return: () => {
      stop();
      return DONE_PROMISE as Promise<IteratorResult<T>>;
    },
    [Symbol.asyncIterator]: () => iterator,
  };
  return iterator;
}

/**
 * What a reader muxws owns makes of a message whose DATA has trailing headers: a standing
 * subscription takes each with its `:id`.
 */
export type ReadMap = (value: unknown, headers: Readonly<Record<string, unknown>>) => unknown;

/** The streams whose reader maps the messages that have headers, and how. */
const readMaps = new WeakMap<object, ReadMap>();

/**
 * From now on `stream`'s reader takes each message whose DATA has headers as `map` makes it, and
 * any other as it is: for a reader muxws owns, never an application's.
 */
export function mapReads(stream: object, map: ReadMap): void {
  readMaps.set(stream, map);
}

/**
 * What `stream`'s reader takes of a DATA carrying `value` and `headers` (its optional trailing
 * element): `value`, or what the stream's {@linkcode ReadMap} makes of them.
 */
export function readValue(
  stream: object,
  value: unknown,
  headers: Readonly<Record<string, unknown>> | null | undefined,
): unknown {
  if (headers == null) return value;
  const map = readMaps.get(stream);
  return map === undefined ? value : map(value, headers);
}
