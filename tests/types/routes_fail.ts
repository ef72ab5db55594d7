// deno-fmt-ignore-file: each wrong use must stay on the one line after its directive
// What must NOT type-check: each wrong use sits on the line after a `@ts-expect-error`, so this
// file checks only while every one of them is an error. tests/types_test.ts also checks that,
// with those comments removed, the file fails.
import type { InputOf, RouteContext, RouteName, Routes, StandardSchemaV1 } from 'muxws';

type Price = { symbol: string; price: number };
type Api = {
  ':hello': { input: { room: string }; output: { motd: string } };
  'chat.say': { input: { text: string }; output: { delivered: number } };
  ticker: { input: { symbol: string }; message: Price };
};
type Peer = { id: string };

const numberText: StandardSchemaV1<unknown, { text: number }> = {
  '~standard': { version: 1, vendor: 'example', validate: () => ({ value: { text: 1 } }) },
};

// The input is typed from the Api.
// @ts-expect-error `text` is a string
export const a: Routes<Api> = { 'chat.say': ({ text }) => ({ delivered: text.toFixed() }) };
// An output route returns its output (or a promise of it).
// @ts-expect-error `delivered` is a number
export const b: Routes<Api> = { 'chat.say': () => ({ delivered: 'all' }) };
// @ts-expect-error a promise of the wrong output
export const c: Routes<Api> = { 'chat.say': async () => ({ delivered: await Promise.resolve('x') }) };
// @ts-expect-error an output route does not stream
export const d: Routes<Api> = { 'chat.say': async function* () { yield { delivered: 1 }; } };
// A message route yields its messages or returns nothing.
// @ts-expect-error a message route returns no single value
export const e: Routes<Api> = { ticker: () => ({ symbol: 'A', price: 1 }) };
// @ts-expect-error a message route yields its message type
export const f: Routes<Api> = { ticker: async function* () { yield { symbol: 'A', price: '1' }; } };
// Only the Api's routes, never a reserved name.
// @ts-expect-error no such route
export const g: Routes<Api> = { nope: () => 1 };
// @ts-expect-error `:hello` is not a route
export const h: Routes<Api> = { ':hello': () => ({ motd: 'hi' }) };
// A schema's output must fit the route's input.
// @ts-expect-error the schema gives `text` as a number
export const i: Routes<Api> = { 'chat.say': { input: numberText, handler: () => ({ delivered: 1 }) } };
// @ts-expect-error a schema needs the standard's properties
export const j: Routes<Api> = { 'chat.say': { input: {}, handler: () => ({ delivered: 1 }) } };
// The context's peer is the side's own type.
// @ts-expect-error Peer has no `user`
export const k: Routes<Api, RouteContext<Peer>> = { 'chat.say': (_, { peer }) => ({ delivered: peer.user }) };
// The helper types.
// @ts-expect-error `text` is a string
export const l: InputOf<Api, 'chat.say'> = { text: 5 };
// @ts-expect-error `:hello` is reserved
export const m: RouteName<Api> = ':hello';
// @ts-expect-error Standard Schema version 1 only
export const n: StandardSchemaV1 = { '~standard': { version: 2, vendor: 'x', validate: (value) => ({ value }) } };
