/**
 * {@linkcode route}: a route declared with Standard Schemas, its handler typed from them, so that
 * {@linkcode ApiOf} can give the Api of a routes object and no one writes it by hand.
 *
 * @module
 */
import type {
  InputOf,
  RouteContext,
  RouteResultOf,
  RouteSpec,
  RouteSpecOf,
  SchemaInput,
  SchemaOutput,
  StandardSchemaV1,
} from './api.ts';
import { isAsyncIterable, isThenable, renderPath, routeOf } from './routes.ts';
import { describe } from '../util/describe.ts';

/**
 * The schemas of a route, each a {@linkcode StandardSchemaV1} (zod, valibot, arktype and others
 * implement it), each optional:
 *
 * - `input` checks the OPEN's payload before the handler runs; one it refuses resets the stream
 *   with `invalid`, and the handler receives the schema's output;
 * - `upload` checks each message the caller writes after the OPEN, as the handler reads it;
 * - `output` checks what the handler returns before it is sent; a value it refuses is the
 *   handler's fault: the stream is reset with `internal` and the error, naming the route, the
 *   first issue and the value, goes where the side reports errors (the acceptor's `onError`);
 * - `message` checks each value the handler yields, in the same way; what the handler writes to
 *   `ctx.stream` itself is not checked.
 *
 * @example
 * ```ts
 * import type { RouteSchemas, StandardSchemaV1 } from '@muxws/core';
 * import assert from 'node:assert/strict';
 *
 * const anything: StandardSchemaV1 = {
 *   '~standard': { version: 1, vendor: 'example', validate: (value) => ({ value }) },
 * };
 * const schemas: RouteSchemas = { input: anything, output: anything };
 * assert.equal(Object.keys(schemas).length, 2);
 * ```
 */
export interface RouteSchemas {
  /** Checks the OPEN's payload; the handler receives its output. */
  readonly input?: StandardSchemaV1;
  /** Checks each message the caller writes after the OPEN; the handler reads its output. */
  readonly upload?: StandardSchemaV1;
  /** Checks what the handler returns; its output is sent. */
  readonly output?: StandardSchemaV1;
  /** Checks each value the handler yields; its output is sent. */
  readonly message?: StandardSchemaV1;
}

/**
 * What the handler given to {@linkcode route} may return for `Schemas`: with a `message`
 * schema, an async iterable of what it accepts (an async generator) or nothing; with an
 * `output` schema, what it accepts or a promise of it; else anything.
 *
 * @example
 * ```ts
 * import type { RouteReturn, StandardSchemaV1 } from '@muxws/core';
 * import assert from 'node:assert/strict';
 *
 * type Count = { output: StandardSchemaV1<number> };
 * const answer: RouteReturn<Count> = Promise.resolve(3);
 * assert.equal(await answer, 3);
 * ```
 */
export type RouteReturn<Schemas extends RouteSchemas> = Schemas extends
  { readonly message: infer M } ? AsyncIterable<SchemaInput<M>> | void | Promise<void>
  : Schemas extends { readonly output: infer O } ? SchemaInput<O> | Promise<SchemaInput<O>>
  : unknown;

/**
 * What the handler of a route made by {@linkcode route} writes to `ctx.stream`: what its
 * `message` schema accepts, else what its `output` schema accepts, else `unknown`.
 *
 * @example
 * ```ts
 * import type { RouteWrite, StandardSchemaV1 } from '@muxws/core';
 * import assert from 'node:assert/strict';
 *
 * const tick: RouteWrite<{ message: StandardSchemaV1<{ price: number }> }> = { price: 1 };
 * assert.equal(tick.price, 1);
 * ```
 */
export type RouteWrite<Schemas extends RouteSchemas> = Schemas extends { readonly message: infer M }
  ? SchemaInput<M>
  : Schemas extends { readonly output: infer O } ? SchemaInput<O>
  : unknown;

/**
 * A route made by {@linkcode route}: its schemas and its handler, and `Spec`, what
 * {@linkcode ApiOf} reads: what the caller sends (`input`, `upload`) and receives (`output` or
 * `message`). It is a routes entry of the object form, so it goes in an acceptor's `routes` or in
 * the dialer's `serve()`; its handler is typed there by the caller's view of `Spec` (the handler
 * given to `route()` was typed by the schemas).
 *
 * @example
 * ```ts
 * import { type Route, route } from '@muxws/core';
 * import assert from 'node:assert/strict';
 *
 * const ping: Route<{ input: unknown; output: string }> = route({}, () => 'pong');
 * assert.equal(typeof ping.handler, 'function');
 * ```
 */
export interface Route<Spec extends RouteSpec = RouteSpec> {
  /** Checks the OPEN's payload. */
  readonly input?: StandardSchemaV1<unknown, never>;
  /** Checks each message the caller writes after the OPEN. */
  readonly upload?: StandardSchemaV1<unknown, never>;
  /** Checks what the handler returns. */
  readonly output?: StandardSchemaV1<unknown, never>;
  /** Checks each value the handler yields. */
  readonly message?: StandardSchemaV1<unknown, never>;
  /** The handler, with what it answers checked by the `output` and `message` schemas. */
  handler(input: InputOf<{ route: Spec }, 'route'>, ctx: never): RouteResultOf<
    { route: Spec },
    'route'
  >;
  /** The route's types, for inference only (never present at run time). */
  readonly '~types'?: Spec;
}

/** The schemas' names, in the order a route's parts are checked. */
const PARTS = ['input', 'upload', 'output', 'message'] as const;

/**
 * Declares a route with Standard Schemas (zod, valibot, arktype…) and types its handler from
 * them: the handler receives what the `input` schema gives, reads from `ctx.stream` what the
 * `upload` schema gives, and must return what the `output` schema accepts (or yield what the
 * `message` schema accepts). {@linkcode ApiOf} then gives the Api of the routes object, the
 * caller sending what the `input` schema accepts and receiving what `output` or `message` gives.
 * See {@linkcode RouteSchemas} for what each schema checks when. `ctx.peer` is `unknown` unless
 * the handler's `ctx` parameter is annotated (`ctx: RouteContext<Peer<ApiSpec, PeerData>>`).
 *
 * @param schemas The route's schemas: `{ input?, upload?, output?, message? }`.
 * @param handler Called with the input and the context; its answer as for any route handler.
 * @returns The route, for a `routes` object.
 * @throws {TypeError} When a schema is not a Standard Schema or `handler` is not a function.
 *
 * @example A route with an input schema, served and called
 * ```ts
 * import { type ApiOf, connect, route, type StandardSchemaV1 } from '@muxws/core';
 * import { Acceptor } from '@muxws/core/acceptor';
 * import { upgrade } from '@muxws/core/deno';
 * import assert from 'node:assert/strict';
 *
 * // Any Standard Schema: zod's z.object({ a: z.number(), b: z.number() }) is one.
 * const Pair: StandardSchemaV1<{ a: number; b: number }> = {
 *   '~standard': {
 *     version: 1,
 *     vendor: 'example',
 *     validate: (value) => {
 *       const { a, b } = (value ?? {}) as { a?: unknown; b?: unknown };
 *       return typeof a === 'number' && typeof b === 'number'
 *         ? { value: { a, b } }
 *         : { issues: [{ message: 'Expected two numbers', path: ['a'] }] };
 *     },
 *   },
 * };
 * const routes = { add: route({ input: Pair }, ({ a, b }) => a + b) };
 * type Api = ApiOf<typeof routes>;
 *
 * const acceptor = new Acceptor<Api>({ routes });
 * const server = Deno.serve(
 *   { hostname: '127.0.0.1', port: 0, onListen() {} },
 *   (request) => upgrade(request, acceptor),
 * );
 * const connection = await connect<Api>(`ws://127.0.0.1:${server.addr.port}`);
 * const sum: number = await connection.call('add', { a: 1, b: 2 });
 * assert.equal(sum, 3);
 * await assert.rejects(connection.call('add', { a: 1 } as never), { code: 'invalid' });
 * await connection.close();
 * await acceptor.close();
 * await server.shutdown();
 * ```
 */
export function route<
  Schemas extends RouteSchemas,
  Result extends RouteReturn<Schemas>,
  Peer = unknown,
>(
  schemas: Schemas,
  handler: (
    input: SchemaOutput<Schemas['input']>,
    ctx: RouteContext<Peer, SchemaOutput<Schemas['upload']>, RouteWrite<Schemas>>,
  ) => Result,
): Route<RouteSpecOf<Schemas & { handler(input: unknown, ctx: never): Result }>> {
  if (schemas === null || typeof schemas !== 'object') {
    throw new TypeError(
      `Cannot create a route as its schemas must be an object { input?, upload?, output?, message? }: current value is ${
        describe(schemas)
      }`,
    );
  }
  for (const part of PARTS) {
    const schema: unknown = schemas[part];
    if (schema === undefined) continue;
    const standard = schema !== null && (typeof schema === 'object' || typeof schema === 'function')
      ? (schema as { '~standard'?: { validate?: unknown } })['~standard']
      : undefined;
    if (typeof standard?.validate !== 'function') {
      throw new TypeError(
        `Cannot create a route as "${part}" must be a Standard Schema (with "~standard".validate): current value is ${
          describe(schema)
        }`,
      );
    }
  }
  if (typeof handler !== 'function') {
    throw new TypeError(
      `Cannot create a route as its handler must be a function: current value is ${
        describe(handler)
      }`,
    );
  }
  const { output, message } = schemas;
  const checked = output === undefined && message === undefined
    ? handler
    : (input: never, ctx: RouteContext) => {
      const result = handler(input, ctx as never);
      return isThenable(result)
        ? Promise.resolve(result).then((value) => answer(value, output, message, ctx))
        : answer(result, output, message, ctx);
    };
  return { ...schemas, handler: checked } as never;
}

/** What a handler's (awaited) result answers once checked: its messages, or its output. */
function answer(
  result: unknown,
  output: StandardSchemaV1 | undefined,
  message: StandardSchemaV1 | undefined,
  ctx: RouteContext,
): unknown {
  if (isAsyncIterable(result)) {
    return message === undefined ? result : checkedMessages(result, message, ctx);
  }
  return output === undefined ? result : check(output, result, 'output', ctx);
}

async function* checkedMessages(
  messages: AsyncIterable<unknown>,
  schema: StandardSchemaV1,
  ctx: RouteContext,
): AsyncGenerator<unknown, void, undefined> {
  for await (const value of messages) yield await check(schema, value, 'message', ctx);
}

/**
 * `value` through `schema`: its output, or a `TypeError` naming the route, the part, the first
 * issue (with its path) and the value.
 */
async function check(
  schema: StandardSchemaV1,
  value: unknown,
  part: 'output' | 'message',
  ctx: RouteContext,
): Promise<unknown> {
  const result = await schema['~standard'].validate(value);
  if (result.issues === undefined) return result.value;
  const [first] = result.issues;
  const path = first === undefined ? '' : renderPath(first.path);
  const issue = first === undefined
    ? 'refused'
    : `${path === '' ? '' : `${path}: `}${first.message}`;
  throw new TypeError(
    `Cannot answer route ${describe(routeOf(ctx.headers))} as its "${part}" schema refuses ${
      part === 'output' ? 'the value returned' : 'a value yielded'
    }: ${issue}: current value is ${describe(value)}`,
  );
}
