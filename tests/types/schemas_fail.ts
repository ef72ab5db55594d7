// deno-fmt-ignore-file: each wrong use must stay on the one line after its directive
// What must NOT type-check with routes declared by zod, valibot and arktype schemas: each wrong
// use sits on the line after a `@ts-expect-error`, so this file checks only while every one of
// them is an error. tests/types_test.ts also checks that, with those comments removed, the file
// fails.
import { type ApiOf, connect, route } from 'muxws';
import { Acceptor } from 'muxws/acceptor';
import { z } from 'zod';
import * as v from 'valibot';
import { type } from 'arktype';

const routes = {
  'todo.add': route({ input: z.object({ title: z.string() }) }, ({ title }) => ({ id: title.length })),
  'todo.feed': route({ message: z.object({ id: z.number() }) }, async function* () { yield { id: 1 }; }),
  'todo.import': route({ upload: z.string(), output: z.number() }, () => 0),
  'log.since': route({ input: v.pipe(v.string(), v.transform((text) => new Date(text))) }, (since) => since.getTime()),
  'shape.move': route({ input: type({ x: 'number', y: 'number' }) }, ({ x }) => x),
  'shape.trace': route({ upload: type({ x: 'number' }), message: type({ length: 'number' }) }, async function* () { yield { length: 1 }; }),
  'log.write': route({ upload: v.object({ line: v.string() }), output: v.number() }, () => 0),
};
type Api = ApiOf<typeof routes>;
type HelloApi = Api & { ':hello': { input: { token: string } } };

export async function caller(): Promise<void> {
  const connection = await connect<Api>('wss://example.com/ws');
  // @ts-expect-error zod: `title` is a string
  await connection.call('todo.add', { title: 1 });
  // @ts-expect-error valibot: the caller sends the transform's input, a string
  await connection.call('log.since', new Date());
  // @ts-expect-error arktype: `y` is missing
  await connection.call('shape.move', { x: 1 });
  // @ts-expect-error the output of todo.add has no `title`
  (await connection.call('todo.add', { title: 'milk' })).title;
  // @ts-expect-error the output of log.since is a number
  (await connection.call('log.since', '2026-01-01')).getTime();
  // @ts-expect-error a todo.feed message has no `title`
  for await (const todo of connection.stream('todo.feed', undefined)) todo.title;
  // @ts-expect-error todo.import uploads strings
  await connection.stream('todo.import', undefined).write(5);
  // @ts-expect-error valibot: log.write uploads { line: string }
  await connection.stream('log.write', undefined).write({ line: 1 });
  // @ts-expect-error valibot: the output of log.write is a number
  (await connection.call('log.write', undefined)).length;
  // @ts-expect-error arktype: shape.trace uploads { x: number }
  await connection.stream('shape.trace', undefined).write({ y: 1 });
  // @ts-expect-error arktype: a shape.trace message has no `width`
  for await (const trace of connection.stream('shape.trace', undefined)) trace.width;
  // @ts-expect-error arktype: the output of shape.move is a number
  (await connection.call('shape.move', { x: 1, y: 2 })).x;
  // @ts-expect-error no route is called todo.remove
  await connection.call('todo.remove', { id: 1 });
}

export async function hello(): Promise<void> {
  // @ts-expect-error the Api declares ':hello' beside ApiOf: connect() needs its hello
  await connect<HelloApi>('wss://example.com/ws');
  // @ts-expect-error the hello's payload has a `token`
  await connect<HelloApi>('wss://example.com/ws', { hello: { payload: { tokens: 't' } } });
}

// The handler is typed by the schemas.
// @ts-expect-error the input schema gives `title` as a string
export const a = route({ input: z.object({ title: z.string() }) }, ({ title }) => title.toFixed());
// @ts-expect-error the output schema takes a number
export const b = route({ output: z.number() }, () => 'many');
// @ts-expect-error the message schema takes { id: number }
export const c = route({ message: z.object({ id: z.number() }) }, async function* () { yield { id: '1' }; });
// @ts-expect-error the upload schema gives strings
export const d = route({ upload: v.string() }, async (_input, { stream }) => { for await (const n of stream) n.toFixed(); });
// @ts-expect-error a schema needs the standard's properties
export const e = route({ input: { parse: (x: unknown) => x } }, () => 1);

// The acceptor takes the routes of its Api only.
// @ts-expect-error no route is called todo.remove in Api
export const f = new Acceptor<Api>({ routes: { 'todo.remove': route({}, () => 1) } });

// A route() in a hand-written Api's routes must fit it.
type HandApi = { 'chat.say': { input: { text: string }; output: { delivered: number } } };
// @ts-expect-error the schema takes `text` as a number where the Api sends a string
export const g = new Acceptor<HandApi>({ routes: { 'chat.say': route({ input: z.object({ text: z.number() }) }, () => ({ delivered: 1 })) } });
// @ts-expect-error the output schema gives a string where the Api answers { delivered: number }
export const h = new Acceptor<HandApi>({ routes: { 'chat.say': route({ output: z.string() }, () => 'sent') } });
