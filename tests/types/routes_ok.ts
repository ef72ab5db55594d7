// What must type-check: the API types of lib/routes/api.ts as both sides use them. Checked by
// tests/types_test.ts with `deno check`; nothing here runs.
import type {
  ApiSpec,
  Connection,
  HelloOf,
  InputOf,
  MessageOf,
  OutputOf,
  RouteContext,
  RouteName,
  RouteResultOf,
  Routes,
  StandardSchemaV1,
  WelcomeOf,
} from 'muxws';

type Equal<A, B> = (<T>() => T extends A ? 1 : 2) extends (<T>() => T extends B ? 1 : 2) ? true
  : false;
function expectType<T extends true>(): T | undefined {
  return undefined;
}

type Price = { symbol: string; price: number };
type Api = {
  ':hello': { input: { room: string }; output: { motd: string } };
  'chat.say': { input: { text: string }; output: { delivered: number } };
  ticker: { input: { symbol: string }; message: Price };
  ping: { output: 'pong' };
};
type Peer = { id: string; data: { user: string } };

// The parts of a route, `unknown` where none is declared.
expectType<Equal<RouteName<Api>, 'chat.say' | 'ticker' | 'ping'>>();
expectType<Equal<InputOf<Api, 'chat.say'>, { text: string }>>();
expectType<Equal<InputOf<Api, 'ping'>, unknown>>();
expectType<Equal<OutputOf<Api, 'chat.say'>, { delivered: number }>>();
expectType<Equal<OutputOf<Api, 'ticker'>, unknown>>();
expectType<Equal<MessageOf<Api, 'ticker'>, Price>>();
expectType<Equal<HelloOf<Api>, { room: string }>>();
expectType<Equal<WelcomeOf<Api>, { motd: string }>>();
expectType<Equal<RouteResultOf<Api, 'ping'>, 'pong' | Promise<'pong'>>>();

// The untyped API: every route name, every part unknown.
expectType<Equal<RouteName<ApiSpec>, string>>();
expectType<Equal<InputOf<ApiSpec, 'any'>, unknown>>();
expectType<Equal<HelloOf<ApiSpec>, unknown>>();
expectType<Equal<WelcomeOf<ApiSpec>, unknown>>();
export const untyped: Routes<ApiSpec> = {
  anything: (input) => input,
  feed: async function* () {
    yield 1;
  },
};

const sayInput: StandardSchemaV1<unknown, { text: string; length: number }> = {
  '~standard': {
    version: 1,
    vendor: 'example',
    validate: (value) =>
      typeof (value as { text?: unknown })?.text === 'string'
        ? { value: { text: (value as { text: string }).text, length: 1 } }
        : { issues: [{ message: 'Expected string', path: ['text'] }] },
  },
};

// An acceptor's routes: each handler's input and result typed from the Api.
export const acceptorRoutes: Routes<Api, RouteContext<Peer>> = {
  'chat.say': {
    input: sayInput, // its output has more than the input needs: fine
    handler: ({ text }, { peer }) => ({ delivered: text.length + peer.data.user.length }),
  },
  ticker: async function* ({ symbol }, { signal }) {
    while (!signal.aborted) yield { symbol, price: 1 };
  },
  // A promise of the output (a bare literal inside a promise needs `as const`: TypeScript
  // widens it there).
  ping: () => Promise.resolve('pong' as const),
};

// A message route may write through ctx.stream and return nothing.
export const writing: Routes<Api, RouteContext<Peer>> = {
  ticker: async ({ symbol }, ctx) => {
    await ctx.stream.write({ symbol, price: 2 });
  },
  'chat.say': () => ({ delivered: 0 }),
};

// The dialer's routes have the Connection as their peer; every route is optional.
export const dialerRoutes: Routes<Api, RouteContext<Connection>> = {
  ping: (_input, ctx) => {
    void ctx.peer.close;
    return 'pong';
  },
};

// The published Standard Schema v1 interface, as zod, valibot and arktype declare it: its
// schemas are assignable to muxws's declaration.
declare namespace Published {
  export interface StandardSchemaV1<Input = unknown, Output = Input> {
    readonly '~standard': StandardSchemaV1.Props<Input, Output>;
  }
  export namespace StandardSchemaV1 {
    export interface Props<Input = unknown, Output = Input> {
      readonly version: 1;
      readonly vendor: string;
      readonly validate: (value: unknown) => Result<Output> | Promise<Result<Output>>;
      readonly types?: Types<Input, Output> | undefined;
    }
    export type Result<Output> = SuccessResult<Output> | FailureResult;
    export interface SuccessResult<Output> {
      readonly value: Output;
      readonly issues?: undefined;
    }
    export interface FailureResult {
      readonly issues: ReadonlyArray<Issue>;
    }
    export interface Issue {
      readonly message: string;
      readonly path?: ReadonlyArray<PropertyKey | PathSegment> | undefined;
    }
    export interface PathSegment {
      readonly key: PropertyKey;
    }
    export interface Types<Input = unknown, Output = Input> {
      readonly input: Input;
      readonly output: Output;
    }
  }
}
declare const published: Published.StandardSchemaV1<{ text: string }, { text: string }>;
export const fromLibrary: Routes<Api> = {
  'chat.say': { input: published, handler: ({ text }) => ({ delivered: text.length }) },
};
export const ours: StandardSchemaV1<{ text: string }> = published;
