// deno-fmt-ignore-file: each wrong use must stay on the one line after its directive
// What must NOT type-check on a routed stream: each wrong use sits on the line after a
// `@ts-expect-error`, so this file checks only while every one of them is an error.
// tests/types_test.ts also checks that, with those comments removed, the file fails.
import { type ReplyOf, type RouteContext, type Routes, type StandardSchemaV1, type UploadOf, connect, serve } from 'muxws';
import { Acceptor, type Peer } from 'muxws/acceptor';

type Api = {
  sum: { upload: number; output: number };
  chat: { input: { room: string }; upload: { text: string }; message: { from: string; text: string } };
  ticker: { input: { symbol: string }; message: { price: number } };
  'client.collect': { upload: string; output: { got: string[] } };
};

export async function dialer(): Promise<void> {
  const connection = await connect<Api>('wss://example.com/ws', {
    routes: serve({
      // @ts-expect-error a client.collect upload is a string
      'client.collect': async (_input, { stream }) => { for await (const word of stream) word.toFixed(); return { got: [] }; },
    }),
  });
  const up = connection.stream('sum', undefined);
  // @ts-expect-error a sum upload is a number
  await up.write('1');
  // @ts-expect-error the last upload too
  await up.end('5');
  // @ts-expect-error sum's stream reads its output, a number
  for await (const total of up) total.length;
  const chat = connection.stream('chat', { room: 'lobby' });
  // @ts-expect-error a chat upload has a `text`
  await chat.write({ txt: 'hi' });
  // @ts-expect-error a chat message has no `room`
  for await (const line of chat) line.room;
}

export const wrongUse = new Acceptor<Api>({
  routes: {
    // @ts-expect-error ctx.stream of sum reads numbers
    sum: async (_input, { stream }) => { for await (const n of stream) n.length; return 0; },
    // @ts-expect-error ctx.stream of chat writes lines, not strings
    chat: async (_input, { stream }) => { for await (const { text } of stream) await stream.write(text); },
    // @ts-expect-error ctx.stream of ticker writes prices
    ticker: async (_input, { stream }) => { await stream.write({ price: 'high' }); },
  },
});

export async function acceptorOpens(peer: Peer<Api>): Promise<void> {
  const down = peer.stream('client.collect', undefined);
  // @ts-expect-error a client.collect upload is a string
  await down.write(1);
  // @ts-expect-error its reply's `got` is a string[]
  for await (const reply of down) reply.got.toFixed();
}

// The helper types.
// @ts-expect-error a sum upload is a number
export const u: UploadOf<Api, 'sum'> = 'x';
// @ts-expect-error sum replies with its output, a number
export const r: ReplyOf<Api, 'sum'> = 'x';
// @ts-expect-error a chat reply has a `from`
export const c: ReplyOf<Api, 'chat'> = { text: 'hi' };
// @ts-expect-error Routes types ctx.stream with the route's upload
export const routes: Routes<Api, RouteContext<string>> = { sum: async (_input, { stream }) => { for await (const n of stream) n.trim(); return 0; } };
// @ts-expect-error an upload schema must give the route's upload type (a number for sum)
export const schema: Routes<Api> = { sum: { upload: {} as StandardSchemaV1<unknown, string>, handler: () => 0 } };
