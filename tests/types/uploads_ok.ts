// What must type-check: a routed stream typed both ways from the Api, the caller's stream
// reading the route's replies (its messages, or its single output) and writing its uploads, the
// handler's `ctx.stream` reading the uploads and writing the replies. Checked by
// tests/types_test.ts with `deno check`; nothing here runs.
import {
  type ApiSpec,
  connect,
  type Connection,
  type ReplyOf,
  type RouteContext,
  type Routes,
  serve,
  type StandardSchemaV1,
  type Stream,
  type UploadOf,
} from 'muxws';
import { Acceptor, type Peer } from 'muxws/acceptor';

type Equal<A, B> = (<T>() => T extends A ? 1 : 2) extends (<T>() => T extends B ? 1 : 2) ? true
  : false;
function expectType<T extends true>(): T | undefined {
  return undefined;
}

type Line = { from: string; text: string };
type Api = {
  /** Reads the numbers the caller writes; answers with their sum once the caller ends. */
  sum: { upload: number; output: number };
  /** Reads the caller's lines and writes each back, signed. */
  chat: { input: { room: string }; upload: { text: string }; message: Line };
  /** A feed that reads nothing from the caller. */
  ticker: { input: { symbol: string }; message: { price: number } };
  /** A message route with an output too: its stream reads the messages. */
  both: { message: string; output: number };
  /** Nothing declared. */
  bare: Record<never, never>;
  /** Served by the dialer: reads words until the acceptor ends, then answers with them. */
  'client.collect': { upload: string; output: { got: string[] } };
};

// The parts of a route's stream, `unknown` where none is declared.
expectType<Equal<UploadOf<Api, 'sum'>, number>>();
expectType<Equal<UploadOf<Api, 'chat'>, { text: string }>>();
expectType<Equal<UploadOf<Api, 'ticker'>, unknown>>();
expectType<Equal<UploadOf<Api, 'nope'>, unknown>>();
expectType<Equal<ReplyOf<Api, 'sum'>, number>>();
expectType<Equal<ReplyOf<Api, 'chat'>, Line>>();
expectType<Equal<ReplyOf<Api, 'both'>, string>>();
expectType<Equal<ReplyOf<Api, 'bare'>, unknown>>();
expectType<Equal<ReplyOf<Api, 'nope'>, unknown>>();
expectType<Equal<UploadOf<ApiSpec, 'any'>, unknown>>();
expectType<Equal<ReplyOf<ApiSpec, 'any'>, unknown>>();

export async function dialer(): Promise<void> {
  const connection = await connect<Api>('wss://example.com/ws', {
    routes: serve({
      'client.collect': async (_input, { stream }) => {
        expectType<Equal<typeof stream, Stream<string, { got: string[] }>>>();
        const got: string[] = [];
        for await (const word of stream) got.push(word.toUpperCase());
        return { got };
      },
    }),
  });
  // An upload: write numbers, end with one more, read the single answer.
  const up = connection.stream('sum', undefined);
  expectType<Equal<typeof up, Stream<number, number>>>();
  for (const n of [1, 2, 3]) await up.write(n);
  await up.end(4);
  for await (const total of up) total.toFixed();
  // Both ways at once.
  const chat = connection.stream('chat', { room: 'lobby' });
  await chat.write({ text: 'hi' });
  for await (const { from, text } of chat) from.concat(text);
  // A route with no upload takes any write, as an untyped stream does.
  const feed = connection.stream('ticker', { symbol: 'ACME' });
  expectType<Equal<typeof feed, Stream<{ price: number }, unknown>>>();
  await feed.write('anything');
  // A typed stream goes where an untyped one is expected.
  const streams: Stream[] = [up, chat, feed];
  void streams;
  // Untyped code is unchanged: every part unknown.
  const plain: Connection = await connect('wss://example.com/ws');
  expectType<Equal<ReturnType<typeof plain.stream>, Stream<unknown, unknown>>>();
}

export const acceptor = new Acceptor<Api>({
  routes: {
    sum: async (_input, { stream }) => {
      expectType<Equal<typeof stream, Stream<number, number>>>();
      let total = 0;
      for await (const n of stream) total += n;
      return total;
    },
    chat: async function* (_input, { stream, peer }) {
      for await (const { text } of stream) yield { from: peer.id, text };
    },
    // A message route may write its replies through ctx.stream.
    ticker: async (_input, { stream }) => {
      expectType<Equal<typeof stream, Stream<unknown, { price: number }>>>();
      await stream.write({ price: 1 });
    },
  },
});

export async function acceptorOpens(peer: Peer<Api>): Promise<string[]> {
  const down = peer.stream('client.collect', undefined);
  expectType<Equal<typeof down, Stream<{ got: string[] }, string>>>();
  await down.write('x');
  await down.end('y');
  const got: string[] = [];
  for await (const reply of down) got.push(...reply.got);
  return got;
}

// An `upload` schema whose output is the route's upload type; the handler then reads its output.
declare const words: StandardSchemaV1<unknown, string>;
export const checked = new Acceptor<Api>({
  routes: {
    sum: { upload: {} as StandardSchemaV1<unknown, number>, handler: () => 0 },
    'client.collect': {
      upload: words,
      handler: async (_input, { stream }) => {
        const got: string[] = [];
        for await (const word of stream) got.push(word.toUpperCase());
        return { got };
      },
    },
  },
});

// `Routes` types each handler's context with its route's stream; the peer stays the side's.
type Member = { id: string };
export const routes: Routes<Api, RouteContext<Member>> = {
  sum: async (_input, ctx) => {
    expectType<Equal<typeof ctx, RouteContext<Member, number, number>>>();
    let total = ctx.peer.id.length;
    for await (const n of ctx.stream) total += n;
    return total;
  },
  // A handler written for the untyped context still fits.
  ticker: async (_input: unknown, ctx: RouteContext) => {
    await ctx.stream.write({ price: 1 });
  },
};
