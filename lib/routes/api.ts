/**
 * The application's API as one type both sides share: route names mapped to what
 * the caller sends (`input` with the OPEN, then any `upload`s) and what comes back, either one
 * `output` or a series of `message`s; the key `':hello'` types the hello and the welcome, the key
 * `':events'` the events the acceptor emits. From it come the handler types of
 * {@linkcode Routes} and the typed route methods of both sides. Types only: nothing here exists
 * at run time.
 *
 * Input validation needs no dependency: a route may give any {@linkcode StandardSchemaV1} (zod,
 * valibot and arktype implement it), declared here structurally. The Api is written by hand, or
 * read from a routes object by {@linkcode ApiOf} (routes declared with `route()` and schemas).
 *
 * @module
 */
import type { OpenOptions, RequestOptions, Stream } from '../session/stream.ts';
import type { Tracked } from './tracked.ts';

/**
 * One route of an {@linkcode ApiSpec}: what the caller sends (the OPEN's `input`, then any
 * `upload`s it writes to the stream), and what comes back (a single `output`, or `message`s
 * written one by one until the stream ends). Each part is optional; a missing part is
 * `unknown`.
 *
 * The names say who sends what from the caller's side, whichever side serves the route:
 * `input` and `upload` go from the caller to the handler, `output` and `message` come back.
 * `upload` is not `write` or `send` because both sides write to a stream and send on it, nor
 * `inbound` because what is inbound depends on the side: an upload is the caller's, to the
 * handler, on the acceptor's routes and the dialer's alike.
 *
 * @example A request route, a feed and an upload
 * ```ts
 * import type { RouteSpec } from '@muxws/core';
 * import assert from 'node:assert/strict';
 *
 * const say = { input: { text: 'hi' }, output: { delivered: 2 } } satisfies RouteSpec;
 * const ticker = { input: { symbol: 'ACME' }, message: { price: 1 } } satisfies RouteSpec;
 * const sum = { upload: 1, output: 0 } satisfies RouteSpec;
 * assert.equal(say.output.delivered + ticker.message.price + sum.upload, 4);
 * ```
 */
export interface RouteSpec {
  /** The OPEN's payload the caller sends. */
  input?: unknown;
  /**
   * Each value the caller writes to the route's stream after the OPEN, which the handler reads
   * from `ctx.stream`.
   */
  upload?: unknown;
  /** The single value a request route answers with (the last message, with END). */
  output?: unknown;
  /** Each message a streaming route writes. */
  message?: unknown;
}

/**
 * An application's API: route names to their {@linkcode RouteSpec}s. The key `':hello'` types
 * the hello (`input`) and the welcome (`output`), the key `':events'` maps event names to their
 * payloads ({@linkcode EventsOf}); other keys starting with `:` are reserved.
 * `ApiSpec` itself is the untyped API, where every part is `unknown`.
 *
 * @example
 * ```ts
 * import type { ApiSpec, InputOf } from '@muxws/core';
 * import assert from 'node:assert/strict';
 *
 * type Api = {
 *   ':hello': { input: { room: string }; output: { motd: string } };
 *   'chat.say': { input: { text: string }; output: { delivered: number } };
 * };
 * const ok = (api: ApiSpec) => Object.keys(api).length;
 * const say: InputOf<Api, 'chat.say'> = { text: 'hi' };
 * assert.equal(ok({ 'chat.say': { input: say } }), 1);
 * ```
 */
export type ApiSpec = { readonly [name: string]: RouteSpec };

/**
 * The route names of `Api`: its string keys, less the reserved ones starting with `:`.
 *
 * @example
 * ```ts
 * import type { RouteName } from '@muxws/core';
 * import assert from 'node:assert/strict';
 *
 * type Api = { ':hello': { input: string }; 'chat.say': { input: string }; ticker: {} };
 * const names: RouteName<Api>[] = ['chat.say', 'ticker'];
 * assert.equal(names.length, 2);
 * ```
 */
export type RouteName<Api> = Exclude<keyof Api & string, `:${string}`>;

/**
 * The input of route `R` of `Api` (what the caller sends); `unknown` when it declares none.
 *
 * @example
 * ```ts
 * import type { InputOf } from '@muxws/core';
 * import assert from 'node:assert/strict';
 *
 * type Api = { 'chat.say': { input: { text: string }; output: number } };
 * const input: InputOf<Api, 'chat.say'> = { text: 'hi' };
 * assert.equal(input.text, 'hi');
 * ```
 */
export type InputOf<Api, R> = R extends keyof Api
  ? Api[R] extends { readonly input?: infer I } ? I : unknown
  : unknown;

/**
 * The output of route `R` of `Api` (the single value it answers with); `unknown` when it
 * declares none.
 *
 * @example
 * ```ts
 * import type { OutputOf } from '@muxws/core';
 * import assert from 'node:assert/strict';
 *
 * type Api = { 'chat.say': { input: { text: string }; output: { delivered: number } } };
 * const output: OutputOf<Api, 'chat.say'> = { delivered: 3 };
 * assert.equal(output.delivered, 3);
 * ```
 */
export type OutputOf<Api, R> = R extends keyof Api
  ? Api[R] extends { readonly output?: infer O } ? O : unknown
  : unknown;

/**
 * The message type of streaming route `R` of `Api` (each value it writes); `unknown` when it
 * declares none.
 *
 * @example
 * ```ts
 * import type { MessageOf } from '@muxws/core';
 * import assert from 'node:assert/strict';
 *
 * type Api = { ticker: { input: { symbol: string }; message: { price: number } } };
 * const tick: MessageOf<Api, 'ticker'> = { price: 101 };
 * assert.equal(tick.price, 101);
 * ```
 */
export type MessageOf<Api, R> = R extends keyof Api
  ? Api[R] extends { readonly message?: infer M } ? M : unknown
  : unknown;

/**
 * The upload type of route `R` of `Api` (each value the caller writes to the route's stream
 * after the OPEN, and the handler reads from `ctx.stream`); `unknown` when it declares none.
 *
 * @example
 * ```ts
 * import type { UploadOf } from '@muxws/core';
 * import assert from 'node:assert/strict';
 *
 * type Api = { sum: { upload: number; output: number } };
 * const chunk: UploadOf<Api, 'sum'> = 5;
 * assert.equal(chunk + 1, 6);
 * ```
 */
export type UploadOf<Api, R> = R extends keyof Api
  ? Api[R] extends { readonly upload?: infer U } ? U : unknown
  : unknown;

/**
 * What the stream of route `R` of `Api` carries back to the caller, what the caller reads and
 * the handler writes: its `message` type, or for a route with no `message`, its `output` (its
 * single answer, the last message); `unknown` when it declares neither.
 *
 * @example
 * ```ts
 * import type { ReplyOf } from '@muxws/core';
 * import assert from 'node:assert/strict';
 *
 * type Api = {
 *   ticker: { input: { symbol: string }; message: { price: number } };
 *   sum: { upload: number; output: number };
 * };
 * const tick: ReplyOf<Api, 'ticker'> = { price: 101 };
 * const total: ReplyOf<Api, 'sum'> = 15;
 * assert.equal(tick.price + total, 116);
 * ```
 */
export type ReplyOf<Api, R> = R extends keyof Api
  ? Api[R] extends { readonly message: infer M } ? M : OutputOf<Api, R>
  : unknown;

/**
 * The hello payload of `Api` (`Api[':hello']['input']`); `unknown` when it declares none.
 *
 * @example
 * ```ts
 * import type { HelloOf } from '@muxws/core';
 * import assert from 'node:assert/strict';
 *
 * type Api = { ':hello': { input: { room: string }; output: { motd: string } } };
 * const hello: HelloOf<Api> = { room: 'lobby' };
 * assert.equal(hello.room, 'lobby');
 * ```
 */
export type HelloOf<Api> = InputOf<Api, ':hello'>;

/**
 * The events of `Api` (`Api[':events']`): event names mapped to their payload types, which the
 * acceptor emits and the dialer's `on()` handles. An `Api` that declares no `':events'` takes
 * any name with an `unknown` payload.
 *
 * @example
 * ```ts
 * import type { EventsOf } from '@muxws/core';
 * import assert from 'node:assert/strict';
 *
 * type Api = { ':events': { message: { from: string; text: string }; notice: string } };
 * const events: EventsOf<Api> = { message: { from: 'ada', text: 'hi' }, notice: 'deploying' };
 * assert.equal(events.notice, 'deploying');
 * ```
 */
export type EventsOf<Api> = string extends keyof Api ? Record<string, unknown>
  : Api extends { readonly ':events': infer E } ? E
  : Record<string, unknown>;

/**
 * The event names of `Api`: the keys of `Api[':events']`, or any string when it declares none.
 *
 * @example
 * ```ts
 * import type { EventName } from '@muxws/core';
 * import assert from 'node:assert/strict';
 *
 * type Api = { ':events': { message: { text: string }; notice: string } };
 * const names: EventName<Api>[] = ['message', 'notice'];
 * assert.equal(names.length, 2);
 * ```
 */
export type EventName<Api> = keyof EventsOf<Api> & string;

/**
 * The payload of event `E` of `Api`; `unknown` when `Api` declares no such event.
 *
 * @example
 * ```ts
 * import type { EventPayload } from '@muxws/core';
 * import assert from 'node:assert/strict';
 *
 * type Api = { ':events': { message: { from: string; text: string } } };
 * const payload: EventPayload<Api, 'message'> = { from: 'ada', text: 'hi' };
 * assert.equal(payload.from, 'ada');
 * ```
 */
export type EventPayload<Api, E> = E extends keyof EventsOf<Api> ? EventsOf<Api>[E] : unknown;

/**
 * The meta of a presence (`Api[':presence']`), as tracked and followed; `unknown` if undeclared.
 *
 * @example
 * ```ts
 * import type { PresenceMetaOf } from '@muxws/core';
 * import assert from 'node:assert/strict';
 *
 * const meta: PresenceMetaOf<{ ':presence': { tab: number } }> = { tab: 1 };
 * assert.equal(meta.tab, 1);
 * ```
 */
export type PresenceMetaOf<Api> = string extends keyof Api ? unknown
  : Api extends { readonly ':presence': infer M } ? M
  : unknown;

/**
 * The welcome of `Api` (`Api[':hello']['output']`, what the acceptor's `onHello` returns);
 * `unknown` when it declares none.
 *
 * @example
 * ```ts
 * import type { WelcomeOf } from '@muxws/core';
 * import assert from 'node:assert/strict';
 *
 * type Api = { ':hello': { input: { room: string }; output: { motd: string } } };
 * const welcome: WelcomeOf<Api> = { motd: 'welcome to lobby' };
 * assert.equal(welcome.motd, 'welcome to lobby');
 * ```
 */
export type WelcomeOf<Api> = OutputOf<Api, ':hello'>;

/**
 * One problem a {@linkcode StandardSchemaV1} found: a message and where (`path`, each segment a
 * key or `{ key }`), as in the Standard Schema v1 interface.
 *
 * @example
 * ```ts
 * import type { StandardSchemaV1Issue } from '@muxws/core';
 * import assert from 'node:assert/strict';
 *
 * const issue: StandardSchemaV1Issue = { message: 'Expected string', path: ['to', { key: 0 }] };
 * assert.equal(issue.path?.length, 2);
 * ```
 */
export interface StandardSchemaV1Issue {
  /** What is wrong. */
  readonly message: string;
  /** Where: the keys from the input's root down to the value at fault. */
  readonly path?: ReadonlyArray<PropertyKey | { readonly key: PropertyKey }> | undefined;
}

/**
 * What a {@linkcode StandardSchemaV1}'s `validate` gives: the validated `value` (with no
 * `issues`), or the `issues` found.
 *
 * @example
 * ```ts
 * import type { StandardSchemaV1Result } from '@muxws/core';
 * import assert from 'node:assert/strict';
 *
 * const results: StandardSchemaV1Result<number>[] = [
 *   { value: 1 },
 *   { issues: [{ message: 'Expected number' }] },
 * ];
 * assert.equal(results.filter((r) => r.issues === undefined).length, 1);
 * ```
 */
export type StandardSchemaV1Result<Output> =
  | { readonly value: Output; readonly issues?: undefined }
  | { readonly issues: ReadonlyArray<StandardSchemaV1Issue> };

/**
 * The Standard Schema v1 interface (standardschema.dev), declared here so muxws depends on no
 * schema library: zod, valibot, arktype and others implement it, and any of their schemas can
 * be given as a route's `input`. `Input` is what the schema accepts, `Output` what it gives
 * back (after defaults and transforms), which is what the handler receives.
 *
 * @example A hand-written schema
 * ```ts
 * import type { StandardSchemaV1 } from '@muxws/core';
 * import assert from 'node:assert/strict';
 *
 * const text: StandardSchemaV1<unknown, string> = {
 *   '~standard': {
 *     version: 1,
 *     vendor: 'example',
 *     validate: (value) =>
 *       typeof value === 'string' ? { value } : { issues: [{ message: 'Expected string' }] },
 *   },
 * };
 * assert.deepEqual(text['~standard'].validate('hi'), { value: 'hi' });
 * ```
 */
export interface StandardSchemaV1<Input = unknown, Output = Input> {
  /** The standard's properties. */
  readonly '~standard': {
    /** The version of the standard: 1. */
    readonly version: 1;
    /** The library that made the schema. */
    readonly vendor: string;
    /** Validates `value`, at once or by a promise. */
    readonly validate: (
      value: unknown,
    ) => StandardSchemaV1Result<Output> | Promise<StandardSchemaV1Result<Output>>;
    /** The schema's types, for inference only (never present at run time). */
    readonly types?: { readonly input: Input; readonly output: Output } | undefined;
  };
}

/**
 * What a route handler is given besides its input: the `peer` it serves (the acceptor's `Peer`,
 * or the dialer's `Connection`), its `stream`, the OPEN's `headers` (`:route` included), a
 * `signal` aborted when the stream is reset, times out or its connection is lost, and the
 * `lastEventId` a re-opened subscription continues after. The stream
 * reads the caller's `Upload`s and writes `Reply`s: {@linkcode Routes} gives each handler the
 * route's {@linkcode UploadOf} and {@linkcode ReplyOf}.
 *
 * @example
 * ```ts
 * import type { RouteContext } from '@muxws/core';
 * import assert from 'node:assert/strict';
 *
 * const stopped = (ctx: RouteContext<{ id: string }>) => ctx.signal.aborted;
 * const controller = new AbortController();
 * controller.abort();
 * assert.equal(stopped({ signal: controller.signal } as RouteContext<{ id: string }>), true);
 * ```
 */
export interface RouteContext<Peer = unknown, Upload = unknown, Reply = unknown> {
  /** The side the call came from: the acceptor's `Peer`, or the dialer's `Connection`. */
  readonly peer: Peer;
  /** The routed stream: write messages to it, or read what the caller writes after the OPEN. */
  readonly stream: Stream<Upload, Reply>;
  /** The OPEN's headers, `:route` included. */
  readonly headers: Readonly<Record<string, unknown>>;
  /** Aborted when the stream is reset, times out or its connection is lost. */
  readonly signal: AbortSignal;
  /**
   * The id of the last tracked message the caller received, when a standing subscription is
   * re-opened after a reconnect: continue after it. `undefined` on a subscription's first open,
   * after only untracked messages, and on calls and streams. See `tracked()`.
   */
  readonly lastEventId?: string | undefined;
}

/**
 * A route handler: called with the (validated) input and the context. What it returns is the
 * answer: a value (or a promise of one) is sent as the last message with END; an async
 * iterable (an async generator) has each yielded value written as a message, in order and
 * within the other side's credit, then the stream ends; a `StreamError` it throws resets the
 * stream with its code and message.
 *
 * @example
 * ```ts
 * import type { RouteContext, RouteHandler } from '@muxws/core';
 * import assert from 'node:assert/strict';
 *
 * const double: RouteHandler<number, number, RouteContext> = (n) => n * 2;
 * assert.equal(double(21, {} as RouteContext), 42);
 * ```
 */
export type RouteHandler<Input = unknown, Result = unknown, Ctx = RouteContext> = (
  input: Input,
  ctx: Ctx,
) => Result;

/**
 * What the handler of route `R` of `Api` returns: for a route with a `message`, an
 * `AsyncIterable` of them (an async generator), each bare or {@linkcode Tracked}, or nothing (it
 * writes through `ctx.stream`); else its `output`, or a promise of it.
 *
 * @example
 * ```ts
 * import type { RouteResultOf } from '@muxws/core';
 * import assert from 'node:assert/strict';
 *
 * type Api = {
 *   add: { input: [number, number]; output: number };
 *   count: { input: number; message: number };
 * };
 * const sum: RouteResultOf<Api, 'add'> = Promise.resolve(3);
 * async function* count(): AsyncGenerator<number> {
 *   yield 1;
 * }
 * const feed: RouteResultOf<Api, 'count'> = count();
 * assert.equal(await sum, 3);
 * assert.ok(Symbol.asyncIterator in Object(feed));
 * ```
 */
export type RouteResultOf<Api, R> = R extends keyof Api
  ? Api[R] extends { readonly message: infer M }
    ? AsyncIterable<M | Tracked<M>> | void | Promise<void>
  : OutputOf<Api, R> | Promise<OutputOf<Api, R>>
  : unknown;

/**
 * One entry of {@linkcode Routes}: the handler alone, or `{ input?, upload?, handler }` with a
 * {@linkcode StandardSchemaV1} for each part to validate. `input` checks the input first: its
 * output, not the raw input, reaches the handler; an input it refuses resets the stream with
 * `invalid`. `upload` checks every message the caller writes after the OPEN, as the handler reads
 * it from `ctx.stream`: the handler reads the schema's output; a message it refuses resets the
 * stream with `invalid`, and the read rejects with that `StreamError`.
 *
 * @example A route with a schema
 * ```ts
 * import type { RouteDefinition, StandardSchemaV1 } from '@muxws/core';
 * import assert from 'node:assert/strict';
 *
 * const name: StandardSchemaV1<unknown, string> = {
 *   '~standard': {
 *     version: 1,
 *     vendor: 'example',
 *     validate: (v) => typeof v === 'string' ? { value: v.trim() } : { issues: [{ message: 'Expected string' }] },
 *   },
 * };
 * const greet: RouteDefinition<string, string> = { input: name, handler: (who) => `hi ${who}` };
 * const lines: RouteDefinition<unknown, number, never, string> = { upload: name, handler: () => 0 };
 * assert.equal(typeof greet, 'object');
 * assert.equal(typeof lines, 'object');
 * ```
 */
export type RouteDefinition<
  Input = unknown,
  Result = unknown,
  Ctx = RouteContext,
  Upload = unknown,
> =
  | RouteHandler<Input, Result, Ctx>
  | {
    /** Validates the input before the handler sees it. */
    readonly input?: StandardSchemaV1<unknown, Input>;
    /** Validates each message the caller writes after the OPEN, as the handler reads it. */
    readonly upload?: StandardSchemaV1<unknown, Upload>;
    /**
     * Called with the input (the `input` schema's output when there is one). A method, so a
     * route made by `route()` for one input fits wherever routes of any input are taken.
     */
    handler(input: Input, ctx: Ctx): Result;
  };

/**
 * The routes a side serves, typed from `Api`: each route name maps (optionally) to a
 * {@linkcode RouteDefinition} whose input and result are the route's. `Ctx` is the context the
 * side passes: `RouteContext<Peer>` on the acceptor, `RouteContext<Connection>` on the dialer;
 * each handler gets it with its route's stream types, `ctx.stream` reading the route's
 * {@linkcode UploadOf} and writing its {@linkcode ReplyOf}.
 *
 * @example An acceptor's routes
 * ```ts
 * import type { RouteContext, Routes } from '@muxws/core';
 * import assert from 'node:assert/strict';
 *
 * type Api = {
 *   'chat.say': { input: { text: string }; output: { delivered: number } };
 *   ticker: { input: { symbol: string }; message: { price: number } };
 * };
 * const routes: Routes<Api, RouteContext<{ id: string }>> = {
 *   'chat.say': ({ text }) => ({ delivered: text.length }),
 *   ticker: async function* ({ symbol }, { signal }) {
 *     for (let price = 1; price <= 3 && !signal.aborted; price++) yield { price: price + symbol.length };
 *   },
 * };
 * const say = routes['chat.say'];
 * const ctx = {} as RouteContext<{ id: string }>;
 * const answer = typeof say === 'function' ? await say({ text: 'hi' }, ctx) : undefined;
 * assert.equal(answer?.delivered, 2);
 * ```
 */
export type Routes<Api, Ctx = RouteContext> = {
  [R in RouteName<Api>]?: RouteDefinition<
    InputOf<Api, R>,
    RouteResultOf<Api, R>,
    Ctx extends RouteContext<infer Peer> ? RouteContext<Peer, UploadOf<Api, R>, ReplyOf<Api, R>>
      : Ctx,
    UploadOf<Api, R>
  >;
};

/**
 * What a {@linkcode StandardSchemaV1} accepts (its `~standard.types.input`): what a caller sends
 * to a route whose `input` it is. `unknown` for anything else.
 *
 * @example
 * ```ts
 * import type { SchemaInput, StandardSchemaV1 } from '@muxws/core';
 * import assert from 'node:assert/strict';
 *
 * type Trimmed = StandardSchemaV1<string | number, string>;
 * const sent: SchemaInput<Trimmed> = 42;
 * assert.equal(sent, 42);
 * ```
 */
export type SchemaInput<Schema> = Schema extends StandardSchemaV1
  ? NonNullable<Schema['~standard']['types']>['input']
  : unknown;

/**
 * What a {@linkcode StandardSchemaV1} gives back once it accepted a value (its
 * `~standard.types.output`, after defaults and transforms): what a handler receives, or what a
 * caller receives from a route whose `output` or `message` it is. `unknown` for anything else.
 *
 * @example
 * ```ts
 * import type { SchemaOutput, StandardSchemaV1 } from '@muxws/core';
 * import assert from 'node:assert/strict';
 *
 * type Trimmed = StandardSchemaV1<string | number, string>;
 * const received: SchemaOutput<Trimmed> = '42';
 * assert.equal(received.length, 2);
 * ```
 */
export type SchemaOutput<Schema> = Schema extends StandardSchemaV1
  ? NonNullable<Schema['~standard']['types']>['output']
  : unknown;

/**
 * The {@linkcode RouteSpec} of one entry of a routes object, as {@linkcode ApiOf} reads it:
 *
 * - a handler `(input: I, ctx) => result`: `input` is `I`; an async iterable of `M` (an async
 *   generator) gives `message: M`, anything else `output` (awaited);
 * - a route made by `route()`: the types it declares (its `~types`);
 * - an object `{ input?, upload?, handler }`: `input` and `upload` are
 *   what their schemas accept ({@linkcode SchemaInput}), `output` and `message` what their
 *   schemas give ({@linkcode SchemaOutput}); a part without a schema is read from the handler as
 *   above.
 *
 * @example
 * ```ts
 * import type { RouteSpecOf } from '@muxws/core';
 * import assert from 'node:assert/strict';
 *
 * const add = (input: { a: number; b: number }) => input.a + input.b;
 * const spec: RouteSpecOf<typeof add> = { input: { a: 1, b: 2 }, output: 3 };
 * assert.equal(add(spec.input), spec.output);
 * ```
 */
export type RouteSpecOf<Definition> = (
  Definition extends (input: infer I, ctx: never) => infer Result
    ? { input: I } & ResultSpecOf<Result>
    : Definition extends { readonly '~types'?: infer Spec extends RouteSpec } ? Spec
    : Definition extends { handler(input: infer I, ctx: never): infer Result } ?
        & { input: Definition extends { readonly input: infer S } ? SchemaInput<S> : I }
        & (Definition extends { readonly upload: infer S } ? { upload: SchemaInput<S> } : unknown)
        & (Definition extends { readonly message: infer S } ? { message: SchemaOutput<S> }
          : Definition extends { readonly output: infer S } ? { output: SchemaOutput<S> }
          : ResultSpecOf<Result>)
    : RouteSpec
) extends infer Spec ? { [K in keyof Spec]: Spec[K] } : never;

/**
 * The reply part of a {@linkcode RouteSpec} a handler's result gives: `{ message: M }` for an
 * async iterable of `M` (an async generator, or a promise of one), else `{ output }` with the
 * result awaited.
 *
 * @example
 * ```ts
 * import type { ResultSpecOf } from '@muxws/core';
 * import assert from 'node:assert/strict';
 *
 * const feed: ResultSpecOf<AsyncGenerator<number>> = { message: 1 };
 * const answer: ResultSpecOf<Promise<string>> = { output: 'done' };
 * assert.equal(feed.message + answer.output.length, 5);
 * ```
 */
export type ResultSpecOf<Result> = [Awaited<Result>] extends [AsyncIterable<infer M>]
  ? { message: M }
  : { output: Awaited<Result> };

/**
 * The Api of a routes object, so a project need not write it by hand: each route name (less
 * the reserved ones starting with `:`) maps to its {@linkcode RouteSpecOf}. The side that serves
 * the routes exports `type Api = ApiOf<typeof routes>`, and the other side imports it as a type
 * only (`import type`), so none of the server's code reaches the client's bundle. What the
 * routes object cannot say (the hello, and the routes the other side serves) joins by an
 * intersection: `ApiOf<typeof routes> & { ':hello': { input: { token: string } } }`.
 *
 * @example The Api of routes made with `route()` and a schema
 * ```ts
 * import { type ApiOf, type InputOf, type OutputOf, route, type StandardSchemaV1 } from '@muxws/core';
 * import assert from 'node:assert/strict';
 *
 * const Text: StandardSchemaV1<{ text: string }> = {
 *   '~standard': {
 *     version: 1,
 *     vendor: 'example',
 *     validate: (value) =>
 *       typeof (value as { text?: unknown })?.text === 'string'
 *         ? { value: value as { text: string } }
 *         : { issues: [{ message: 'Expected a string', path: ['text'] }] },
 *   },
 * };
 * const routes = {
 *   'chat.say': route({ input: Text }, ({ text }) => ({ delivered: text.length })),
 *   ping: () => 'pong' as const,
 * };
 * type Api = ApiOf<typeof routes>;
 * const input: InputOf<Api, 'chat.say'> = { text: 'hi' };
 * const output: OutputOf<Api, 'ping'> = 'pong';
 * assert.equal(input.text + output, 'hipong');
 * ```
 */
export type ApiOf<Routes> = {
  -readonly [R in keyof Routes & string as R extends `:${string}` ? never : R]: RouteSpecOf<
    Routes[R]
  >;
};

/**
 * Options of a routed call (`connection.call()`, `peer.call()`): those of `request()`, whose
 * `headers` are sent beside `:route` and must not use a reserved key (one starting with `:`).
 *
 * @example A call that gives up after five seconds
 * ```ts
 * import type { CallOptions } from '@muxws/core';
 * import assert from 'node:assert/strict';
 *
 * const options: CallOptions = { headers: { trace: 'abc' }, timeoutMs: 5000 };
 * // await connection.call('chat.say', { text: 'hi' }, options)
 * assert.equal(options.timeoutMs, 5000);
 * ```
 */
export type CallOptions = RequestOptions;

/**
 * What both sides can ask of the other: the acceptor's `Peer` (calling the dialer) and the
 * dialer's `Connection` (calling the acceptor) each extend it, so a function that only calls
 * can take either. `Api` types the routes the other side serves.
 *
 * `open()` and `request()` are the unrouted forms: the payload is the OPEN's, and the other
 * side's `onStream` option answers. `call()` and `stream()` name a route the
 * other side serves: the OPEN carries it in the reserved header `:route`, and the other side's
 * `routes` answer. What each side does when it is not connected is its own: a `Peer` that has
 * closed, or has received a GOAWAY, throws `NotConnectedError`; a `Connection`'s `request()` and
 * `call()` wait for it or refuse as its `whileReconnecting` option says.
 *
 * `call()` and `stream()` are the same on both sides: each checks the route name and the headers,
 * puts the route in `:route`, and is then that side's own `request()` or `open()`, with its
 * errors, timeouts and waiting.
 *
 * @example One function for both sides
 * ```ts
 * import type { Caller } from '@muxws/core';
 * import { Acceptor } from '@muxws/core/acceptor';
 * import assert from 'node:assert/strict';
 *
 * type Api = { 'client.locale': { output: string } };
 * // Takes a Peer as well as a Connection<Api>.
 * function localeOf(caller: Caller<Api>): Promise<string> {
 *   return caller.call('client.locale', undefined, { timeoutMs: 5000 });
 * }
 *
 * const acceptor = new Acceptor<Api>({ idleTimeoutMs: 0 });
 * const sent: unknown[] = [];
 * const handle = acceptor.attach({ send: (data) => sent.push(JSON.parse(String(data))), close() {} });
 * const locale = localeOf(handle.peer);
 * assert.deepEqual(sent[0], [1, 2, 1, { ':route': 'client.locale' }, null]);
 * handle.message(JSON.stringify([2, 2, 1, 'en-GB'])); // the dialer's answer, with END
 * assert.equal(await locale, 'en-GB');
 * await acceptor.close();
 * ```
 */
export interface Caller<Api = ApiSpec> {
  /**
   * Opens a stream to the other side, unrouted: `payload` is the OPEN's, and the other side's
   * `onStream` gets the stream.
   *
   * @param payload The OPEN's payload.
   * @param options `headers`, `end` (send END with the OPEN), `signal`.
   * @returns The stream, at once: it is synchronous, so it cannot wait for a connection.
   * @throws {NotConnectedError} When not connected: a `Peer` after it closed or after a GOAWAY
   * from the dialer; a `Connection` while not open and after a GOAWAY, whatever
   * `whileReconnecting` says.
   * @throws {ClosedError} From a `Connection` closed for good.
   */
  open(payload: unknown, options?: OpenOptions): Stream;
  /**
   * Sends a request, unrouted, and resolves with the first message of the answer. A
   * `Connection` uses its `requestTimeoutMs` when `options` sets no `timeoutMs`; while not open
   * (or after a GOAWAY) it rejects at once with `NotConnectedError`, or with
   * `whileReconnecting: waitWhileReconnecting()` waits for the next establishment; once closed it
   * rejects with `ClosedError`.
   *
   * @param payload The OPEN's payload.
   * @param options `headers`, `timeoutMs`, `signal`.
   * @returns The answer's first message.
   */
  request(payload: unknown, options?: RequestOptions): Promise<unknown>;
  /**
   * Calls a route the other side serves: a request whose OPEN carries the route name in the
   * reserved header `:route`, resolving with the handler's output. `request()` stays the
   * unrouted form.
   *
   * @example A typed call
   * ```ts ignore
   * import { connect } from '@muxws/core';
   *
   * type Api = { 'chat.say': { input: { text: string }; output: { delivered: number } } };
   * await using connection = await connect<Api>('wss://example.com/ws');
   * const { delivered } = await connection.call('chat.say', { text: 'hi' }, { timeoutMs: 5000 });
   * console.log(delivered);
   * ```
   *
   * @param route A route name: 1 to 256 characters, not starting with `:`.
   * @param input The route's input, the OPEN's payload.
   * @param options `headers` (no reserved key), `timeoutMs`, `signal`.
   * @returns The handler's output.
   * @throws {TypeError} (as a rejection) For a bad route name or a reserved header, before
   * anything is sent; otherwise as {@linkcode Caller.request}: `StreamResetError` with
   * `not_found` (no such route) or `invalid` (the input failed the route's schema).
   */
  call<R extends RouteName<Api>>(
    route: R,
    input: InputOf<Api, R>,
    options?: CallOptions,
  ): Promise<OutputOf<Api, R>>;
  /**
   * Opens a stream on a route the other side serves: its OPEN carries `:route`; read the
   * route's replies from it (its messages, an async generator's yields, or for a route with
   * only an `output`, its single answer), write the route's uploads to it, end it. `open()`
   * stays the unrouted form.
   *
   * @example Open a routed stream to the dialer
   * ```ts
   * import { Acceptor } from '@muxws/core/acceptor';
   * import assert from 'node:assert/strict';
   *
   * type Api = { 'client.log': { input: { level: string }; message: string } };
   * const acceptor = new Acceptor<Api>({ idleTimeoutMs: 0 });
   * const sent: unknown[] = [];
   * const { peer } = acceptor.attach({ send: (data) => sent.push(JSON.parse(String(data))), close() {} });
   * const stream = peer.stream('client.log', { level: 'debug' });
   * assert.deepEqual(sent[0], [1, 2, 0, { ':route': 'client.log' }, { level: 'debug' }]);
   * stream.reset('cancel');
   * await acceptor.close();
   * ```
   *
   * @param route A route name: 1 to 256 characters, not starting with `:`.
   * @param input The route's input, the OPEN's payload.
   * @param options `headers` (no reserved key), `end`, `signal`.
   * @returns The routed stream, at once.
   * @throws {TypeError} For a bad route name or a reserved header, before anything is sent;
   * otherwise as {@linkcode Caller.open}.
   */
  stream<R extends RouteName<Api>>(
    route: R,
    input: InputOf<Api, R>,
    options?: OpenOptions,
  ): Stream<ReplyOf<Api, R>, UploadOf<Api, R>>;
}
