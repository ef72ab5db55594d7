// What must type-check: routes declared with zod, valibot and arktype schemas through route(),
// their Api read by ApiOf, and both sides typed from it. Checked by tests/types_test.ts with
// `deno check`; nothing here runs.
import {
  type ApiOf,
  type ApiSpec,
  connect,
  type Connection,
  type InputOf,
  type MessageOf,
  type OutputOf,
  route,
  type RouteContext,
  serve,
  type Stream,
  type UploadOf,
} from 'muxws';
import { Acceptor, type Peer } from 'muxws/acceptor';
import { z } from 'zod';
import * as v from 'valibot';
import { type } from 'arktype';

type Equal<A, B> = (<T>() => T extends A ? 1 : 2) extends (<T>() => T extends B ? 1 : 2) ? true
  : false;
function expectType<T extends true>(): T | undefined {
  return undefined;
}

// zod: the input schema types the handler (its output, the default applied) and the caller
// (its input, the default optional).
const Todo = z.object({ title: z.string(), done: z.boolean().default(false) });
const zodRoutes = {
  'todo.add': route({ input: Todo }, (todo) => {
    expectType<Equal<typeof todo, { title: string; done: boolean }>>();
    return { id: 1, title: todo.title };
  }),
  'todo.count': route(
    { output: z.number().int() },
    (_input, { signal }) => Promise.resolve(signal.aborted ? 0 : 2),
  ),
  'todo.feed': route(
    { input: z.object({ since: z.number() }), message: z.object({ id: z.number() }) },
    async function* ({ since }) {
      yield { id: since + 1 };
    },
  ),
  'todo.import': route(
    { upload: z.string().transform((line) => line.length), output: z.number() },
    async (_input, { stream }) => {
      let total = 0;
      for await (const length of stream) {
        expectType<Equal<typeof length, number>>();
        total += length;
      }
      return total;
    },
  ),
  ping: () => 'pong' as const,
};
type ZodApi = ApiOf<typeof zodRoutes>;
expectType<Equal<InputOf<ZodApi, 'todo.add'>, { title: string; done?: boolean | undefined }>>();
expectType<Equal<OutputOf<ZodApi, 'todo.add'>, { id: number; title: string }>>();
expectType<Equal<OutputOf<ZodApi, 'todo.count'>, number>>();
expectType<Equal<InputOf<ZodApi, 'todo.count'>, unknown>>();
expectType<Equal<MessageOf<ZodApi, 'todo.feed'>, { id: number }>>();
expectType<Equal<UploadOf<ZodApi, 'todo.import'>, string>>();
expectType<Equal<OutputOf<ZodApi, 'todo.import'>, number>>();
expectType<Equal<OutputOf<ZodApi, 'ping'>, 'pong'>>();

// valibot: a transform's input is what the caller sends, its output what the handler gets.
const Since = v.pipe(v.string(), v.transform((text) => new Date(text)));
const valibotRoutes = {
  'log.since': route({ input: Since, output: v.array(v.string()) }, (since) => {
    expectType<Equal<typeof since, Date>>();
    return [since.toISOString()];
  }),
};
type ValibotApi = ApiOf<typeof valibotRoutes>;
expectType<Equal<InputOf<ValibotApi, 'log.since'>, string>>();
expectType<Equal<OutputOf<ValibotApi, 'log.since'>, string[]>>();

// arktype
const Point = type({ x: 'number', y: 'number' });
const arktypeRoutes = {
  'shape.move': route({ input: Point, output: Point }, ({ x, y }) => ({ x: x + 1, y })),
};
type ArktypeApi = ApiOf<typeof arktypeRoutes>;
expectType<Equal<InputOf<ArktypeApi, 'shape.move'>, { x: number; y: number }>>();
expectType<Equal<OutputOf<ArktypeApi, 'shape.move'>, { x: number; y: number }>>();

// The plain object form is read too, its handler annotated.
const objectRoutes = {
  'chat.say': {
    input: z.object({ text: z.string() }),
    handler: ({ text }: { text: string }) => ({ delivered: text.length }),
  },
};
expectType<
  Equal<ApiOf<typeof objectRoutes>, {
    'chat.say': { input: { text: string }; output: { delivered: number } };
  }>
>();

// The Api joins what the routes cannot say: the hello and the routes the dialer serves.
type Api =
  & ApiOf<typeof zodRoutes & typeof valibotRoutes & typeof arktypeRoutes>
  & {
    ':hello': { input: { token: string }; output: { user: string } };
    'client.locale': { output: string };
  };
type PeerData = { user: string };

export const acceptor = new Acceptor<Api, PeerData>({
  onHello: ({ payload }) => ({ user: payload.token }),
  routes: { ...zodRoutes, ...valibotRoutes, ...arktypeRoutes },
});
// An untyped acceptor takes them as well.
export const untyped = new Acceptor({ routes: zodRoutes });

export async function dialer(): Promise<void> {
  const connection = await connect<Api>('wss://example.com/ws', {
    hello: { payload: { token: 't' } },
    routes: serve({ 'client.locale': () => 'en-GB' }),
  });
  const added = await connection.call('todo.add', { title: 'milk' });
  expectType<Equal<typeof added, { id: number; title: string }>>();
  const count: number = await connection.call('todo.count', undefined);
  const feed = connection.stream('todo.feed', { since: count });
  expectType<Equal<typeof feed, Stream<{ id: number }>>>();
  for await (const { id } of feed) id.toFixed();
  const upload = connection.stream('todo.import', undefined);
  await upload.write('a line');
  const lines: string[] = await connection.call('log.since', '2026-01-01');
  const moved = await connection.call('shape.move', { x: 1, y: 2 });
  expectType<Equal<typeof moved, { x: number; y: number }>>();
  lines.concat(String(added.id));
}

// route() on the dialer's side, for serve(); ctx.peer typed by annotating ctx.
export function dialerRoutes(): unknown {
  return serve({
    'client.locale': route(
      { input: z.object({ fallback: z.string() }) },
      ({ fallback }, { peer }: RouteContext<Connection<ApiSpec>>) =>
        peer.state === 'open' ? 'en-GB' : fallback,
    ),
  });
}

// An acceptor route reading peer.data: annotate ctx with the Peer type.
export const withPeer = {
  whoami: route(
    { output: z.string() },
    (_input, { peer }: RouteContext<Peer<ApiSpec, PeerData>>) => peer.data.user,
  ),
};
export const whoami = new Acceptor<ApiOf<typeof withPeer>, PeerData>({ routes: withPeer });

// Without ':hello' an Api from the routes needs no options.
export async function noHello(): Promise<Connection<ZodApi>> {
  return await connect<ZodApi>('wss://example.com/ws');
}

// route() serves a hand-written Api too, on either side.
type HandApi = {
  'chat.say': { input: { text: string }; output: { delivered: number } };
  'client.locale': { input: { fallback: string }; output: string };
};
export const handWritten = new Acceptor<HandApi>({
  routes: {
    'chat.say': route({ input: z.object({ text: z.string() }) }, ({ text }) => ({
      delivered: text.length,
    })),
  },
});
export async function handWrittenDialer(): Promise<void> {
  await connect<HandApi>('wss://example.com/ws', {
    routes: serve({
      'client.locale': route({ output: v.string() }, () => 'en-GB'),
    }),
  });
}
