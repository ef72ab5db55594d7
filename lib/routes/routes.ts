/**
 * Routes, the part both sides share: the reserved `:route` header, the checks on route names, and
 * {@linkcode serveRoute}, what a receiving side does with a stream whose OPEN names a route.
 * Internal: the dialer and the acceptor build on it.
 *
 * @module
 */
import { EVENT_ID, isName } from '../wire/reserved.ts';
import type { RouteContext, StandardSchemaV1, StandardSchemaV1Issue } from './api.ts';
import { StreamError, StreamResetError } from '../errors.ts';
import { control, type Stream } from '../session/stream.ts';
import { iteratorOf, readableOf } from '../session/stream_reads.ts';
import { ResetCode } from '../wire/codes.ts';
import { describe, lengthNote } from '../util/describe.ts';
import { pathStep } from '../util/value_path.ts';
import { isTracked } from './tracked.ts';

/** The OPEN header carrying the route name (a string). */
export const ROUTE_HEADER = ':route';

/** The longest route name, in UTF-16 code units. */
const MAX_ROUTE_NAME_LENGTH = 256;

/** The longest `invalid` message {@linkcode summariseIssues} writes. */
const MAX_ISSUES_SUMMARY_LENGTH = 200;

/** A handler as this module calls it: any route handler fits. */
type AnyHandler = (input: never, ctx: never) => unknown;

/** A route given as an object: its handler, and the schemas of its input and uploads. */
interface RouteObject {
  readonly input?: StandardSchemaV1<unknown, unknown>;
  readonly upload?: StandardSchemaV1<unknown, unknown>;
  readonly handler: AnyHandler;
}

/** A route as this module serves it: any `Routes<Api, Ctx>` fits. */
export interface ServedRoutes {
  readonly [name: string]: AnyHandler | RouteObject | undefined;
}

/**
 * Throws unless `name` is a route name: a non-empty string of at most 256 characters, not
 * starting with `:`.
 *
 * @param name The value to check.
 * @param what What was attempted, for the message.
 * @throws {TypeError} Naming the value found.
 */
export function checkRouteName(
  name: unknown,
  what: string = 'use a route',
): asserts name is string {
  if (isName(name)) return;
  throw new TypeError(
    `Cannot ${what} as the route name must be a non-empty string of at most ${MAX_ROUTE_NAME_LENGTH} characters not starting with ":": current value is ${
      describe(name)
    }${lengthNote(name, MAX_ROUTE_NAME_LENGTH)}`,
  );
}

/**
 * Throws unless `routes` is a valid `routes` option: `undefined`, or an object whose keys are
 * route names and whose values are handlers or `{ input?, upload?, handler }`, `input` and
 * `upload` being Standard Schemas when given.
 *
 * @param routes The option's value.
 * @param what What was attempted, for the message: `create Acceptor`, `connect`.
 * @throws {TypeError} Naming the route and the value found.
 */
export function checkRoutes(
  routes: unknown,
  what: string,
): asserts routes is ServedRoutes | undefined {
  if (routes === undefined) return;
  if (routes === null || typeof routes !== 'object' || Array.isArray(routes)) {
    throw new TypeError(
      `Cannot ${what} as "routes" must be an object of route handlers: current value is ${
        describe(routes)
      }`,
    );
  }
  for (const [name, definition] of Object.entries(routes)) {
    checkRouteName(name, `${what} with route ${describe(name)}`);
    if (definition === undefined || typeof definition === 'function') continue;
    const where = `"routes[${JSON.stringify(name)}]"`;
    if (definition === null || typeof definition !== 'object') {
      throw new TypeError(
        `Cannot ${what} as ${where} must be a function or { input?, upload?, handler }: current value is ${
          describe(definition)
        }`,
      );
    }
    const { handler } = definition as { handler?: unknown };
    if (typeof handler !== 'function') {
      throw new TypeError(
        `Cannot ${what} as ${where}.handler must be a function: current value is ${
          describe(handler)
        }`,
      );
    }
    for (const part of ['input', 'upload'] as const) {
      const schema = (definition as Record<string, unknown>)[part];
      if (schema === undefined) continue;
      const standard =
        schema !== null && (typeof schema === 'object' || typeof schema === 'function')
          ? (schema as { '~standard'?: { validate?: unknown } })['~standard']
          : undefined;
      if (typeof standard?.validate !== 'function') {
        throw new TypeError(
          `Cannot ${what} as ${where}.${part} must be a Standard Schema (with "~standard".validate): current value is ${
            describe(schema)
          }`,
        );
      }
    }
  }
}

/** The `:route` of an OPEN's headers, or `undefined` when it names none. */
export function routeOf(headers: Readonly<Record<string, unknown>> | null): unknown {
  return headers !== null && Object.hasOwn(headers, ROUTE_HEADER)
    ? headers[ROUTE_HEADER]
    : undefined;
}

/** Renders an issue's path: `a.b[0]`, `["a b"].c`, `[Symbol(s)]`; `''` for the root. */
export function renderPath(path: StandardSchemaV1Issue['path']): string {
  const text = Array.isArray(path)
    ? Array.from(path as readonly unknown[], (segment) =>
      pathStep(
        segment !== null && typeof segment === 'object'
          ? (segment as { key?: unknown }).key
          : segment,
      )).join('')
    : '';
  return text.charCodeAt(0) === 46 /* '.' */ ? text.slice(1) : text;
}

/**
 * The `invalid` reset message for a schema's issues, naming the first with its path: `Invalid
 * input at todo.title: Expected string (and 2 more issues)`; `Invalid input: <message>` for the
 * value's root; cut with `…` so the whole stays within 200 characters, the count kept. The issues
 * themselves travel beside it, in the RESET's `:issues` header.
 *
 * @param issues What the schema found.
 * @param what What the schema refused: `input` (the OPEN's payload), `upload` (a message after
 * it), `hello`.
 * @returns The summary.
 */
export function summariseIssues(
  issues: readonly StandardSchemaV1Issue[],
  what: string = 'input',
): string {
  const list: readonly unknown[] = Array.isArray(issues) ? issues : [];
  if (list.length === 0) return `Invalid ${what}`;
  const first = list[0] as Partial<StandardSchemaV1Issue> | null | undefined;
  const message = typeof first?.message === 'string' ? first.message : describe(first?.message);
  const path = renderPath(first?.path);
  let head = `Invalid ${what}${path === '' ? '' : ` at ${path}`}: ${message}`;
  const more = list.length - 1;
  const tail = more === 0 ? '' : ` (and ${more} more issue${more === 1 ? '' : 's'})`;
  if (head.length + tail.length > MAX_ISSUES_SUMMARY_LENGTH) {
    let end = MAX_ISSUES_SUMMARY_LENGTH - tail.length - 1;
    const code = head.charCodeAt(end - 1);
    if (code >= 0xd800 && code <= 0xdbff) end--; // never split a surrogate pair
    head = head.slice(0, end) + '…';
  }
  return head + tail;
}

const ABORTED: unique symbol = Symbol('aborted');

function noop(): void {}

/**
 * Serves a stream whose OPEN carries `:route`: finds the route (`not_found` when there is none),
 * validates the OPEN's payload with the route's `input` schema if it has one (`invalid` with
 * {@linkcode summariseIssues} and the issues when refused; the schema's output, not the raw
 * payload, is the input), then calls the handler with `(input, ctx)`. With an `upload` schema,
 * every message the handler reads from `ctx.stream` passes it first (`checkUploads()`): the handler
 * reads the schema's output, and a message it refuses resets the stream with `invalid` (counted
 * toward the reset budget) and rejects that read with the `StreamError`.
 *
 * An async iterable the handler returns (an async generator) has each value it yields written to
 * `stream` in order, each write awaited (so within the other side's credit), a `tracked()` value as
 * its `value` with its id in the DATA's `:id` header; the iteration stops early, closing the
 * iterator with `return()`, when `ctx.signal` aborts or the stream is reset; then the stream is
 * ended and this resolves to `undefined`. A generator's own return value is not sent. Anything else
 * the handler returns is what this resolves to, for the session to send as the last message with
 * END.
 *
 * @param routes The side's routes.
 * @param stream The received stream.
 * @param ctx The handler's context (its `stream` is `stream`).
 * @returns What to send as the last message, or `undefined`.
 * @throws Rejects with {@linkcode StreamError} `not_found` or `invalid`, as an outcome; with
 * whatever the handler, the schema or the iterator threw; and with a write's `TypeError` or
 * `RangeError` (a yielded value the codec cannot send).
 */
export async function serveRoute(
  routes: ServedRoutes,
  stream: Stream,
  ctx: RouteContext<unknown>,
): Promise<unknown> {
  return await answerRoute(routes, stream, ctx);
}

/**
 * {@linkcode serveRoute} without its promise where none is needed: a route without a schema whose
 * handler returns a value (neither a thenable nor an async iterable) answers at once, with that
 * value; every other route answers with a promise, as `serveRoute` does.
 *
 * @throws As `serveRoute` rejects, synchronously for `not_found` and for what a handler without a
 * schema throws.
 */
export function answerRoute(
  routes: ServedRoutes,
  stream: Stream,
  ctx: RouteContext<unknown>,
): unknown {
  const name = routeOf(stream.headers);
  const definition = typeof name === 'string' && Object.hasOwn(routes, name)
    ? routes[name]
    : undefined;
  if (definition === undefined || definition === null) {
    throw new StreamError(ResetCode.NotFound, `No route ${describe(name)}`);
  }
  if (typeof definition !== 'function') return validateThenHandle(definition, stream, ctx);
  const result = (definition as (input: unknown, ctx: RouteContext<unknown>) => unknown)(
    stream.payload,
    ctx,
  );
  if (isThenable(result)) {
    return Promise.resolve(result).then((value) => answerWith(value, stream, ctx));
  }
  return answerWith(result, stream, ctx);
}

/** True for a value `await` would wait for: an object or function with a `then` method. */
export function isThenable(value: unknown): value is PromiseLike<unknown> {
  return value !== null && (typeof value === 'object' || typeof value === 'function') &&
    typeof (value as PromiseLike<unknown>).then === 'function';
}

/** What a handler's (awaited) result answers: the value, or an async iterable's pumped end. */
function answerWith(result: unknown, stream: Stream, ctx: RouteContext<unknown>): unknown {
  return isAsyncIterable(result) ? pump(result, stream, ctx.signal).then(noop) : result;
}

async function validateThenHandle(
  definition: RouteObject,
  stream: Stream,
  ctx: RouteContext<unknown>,
): Promise<unknown> {
  if (definition.upload !== undefined) checkUploads(stream, definition.upload);
  const schema = definition.input;
  const input = schema === undefined ? stream.payload : await validate(schema, stream.payload);
  const result = await (definition.handler as (
    input: unknown,
    ctx: RouteContext<unknown>,
  ) => unknown)(input, ctx);
  if (isAsyncIterable(result)) {
    await pump(result, stream, ctx.signal);
    return undefined;
  }
  return result;
}

async function validate(
  schema: StandardSchemaV1<unknown, unknown>,
  value: unknown,
  what?: 'upload',
): Promise<unknown> {
  const result = await schema['~standard'].validate(value);
  const issues = result.issues;
  if (issues !== undefined) {
    throw new StreamError(ResetCode.Invalid, summariseIssues(issues, what), { issues });
  }
  return result.value;
}

/**
 * Makes every read of `stream` (its async iteration and its `readable`) pass each message through
 * `schema` first, giving its output: own properties over the class's, reading through the class's
 * own iterator (so flow control, the end and a reset are the stream's). A message `schema` refuses
 * resets the stream with `invalid` and rejects that read with the `StreamError`.
 */
function checkUploads(stream: Stream, schema: StandardSchemaV1<unknown, unknown>): void {
  const messages = stream[Symbol.asyncIterator]();
  const read = () =>
    messages.next().then(async (result): Promise<IteratorResult<unknown>> => {
      if (result.done) return result;
      try {
        return { value: await validate(schema, result.value, 'upload'), done: false };
      } catch (error) {
        if (error instanceof StreamError) {
          control.fail(stream, ResetCode.Invalid, error.message, error.issues);
        }
        throw error;
      }
    });
  const stop = () => void messages.return!();
  let readable: ReadableStream<unknown> | undefined;
  Object.defineProperties(stream, {
    [Symbol.asyncIterator]: { value: () => iteratorOf(read, stop) },
    readable: { get: () => readable ??= readableOf(read, stop) },
  });
}

/** True for a value `for await` can iterate: one with a `Symbol.asyncIterator` method. */
export function isAsyncIterable(value: unknown): value is AsyncIterable<unknown> {
  return value !== null && (typeof value === 'object' || typeof value === 'function') &&
    typeof (value as AsyncIterable<unknown>)[Symbol.asyncIterator] === 'function';
}

/**
 * Writes what `iterable` yields to `stream` until it is done, `signal` aborts or the stream is
 * reset; closes the iterator when it stopped early; then ends the stream.
 */
async function pump(
  iterable: AsyncIterable<unknown>,
  stream: Stream,
  signal: AbortSignal,
): Promise<void> {
  const iterator = iterable[Symbol.asyncIterator]();
  // One listener for the whole iteration, waking whichever step is waiting: a `Promise.race`
  // against one abort promise would keep a reaction per step until the abort.
  let wake: ((aborted: typeof ABORTED) => void) | undefined;
  const onAbort = () => wake?.(ABORTED);
  signal.addEventListener('abort', onAbort, { once: true });
  const untilAborted = <T>(promise: Promise<T>): Promise<T | typeof ABORTED> => {
    if (signal.aborted) return Promise.resolve(ABORTED);
    return new Promise<T | typeof ABORTED>((resolve, reject) => {
      wake = resolve;
      promise.then(resolve, reject);
    });
  };
  let finished = false; // the iterator reported done or threw: nothing to close
  let inFlight = false; // a next() is still running: its return() would wait for it
  try {
    while (!signal.aborted) {
      const next = Promise.resolve(iterator.next());
      let step: IteratorResult<unknown> | typeof ABORTED;
      try {
        step = await untilAborted(next);
      } catch (error) {
        finished = true;
        throw error;
      }
      if (step === ABORTED) {
        inFlight = true;
        next.catch(noop);
        break;
      }
      if (step.done) {
        finished = true;
        break;
      }
      const value = step.value;
      const write = isTracked(value)
        ? control.write(stream, value.value, { [EVENT_ID]: value.id })
        : stream.write(value);
      let written: void | typeof ABORTED;
      try {
        written = await untilAborted(write);
      } catch (error) {
        if (error instanceof StreamResetError) break; // reset or lost: stop quietly
        throw error;
      }
      if (written === ABORTED) {
        write.catch(noop);
        break;
      }
    }
  } catch (error) {
    if (!finished) Promise.resolve(iterator.return?.()).catch(noop);
    throw error;
  } finally {
    wake = undefined;
    signal.removeEventListener('abort', onAbort);
  }
  if (!finished && iterator.return !== undefined) {
    if (inFlight) Promise.resolve(iterator.return()).catch(noop);
    else await iterator.return();
  }
  try {
    await stream.end();
  } catch (error) {
    if (!(error instanceof StreamResetError)) throw error;
  }
}
