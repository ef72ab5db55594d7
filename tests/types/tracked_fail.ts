// deno-fmt-ignore-file: each wrong use must stay on the one line after its directive
// What must NOT type-check for tracked messages: each wrong use sits on the line after a
// `@ts-expect-error`, so this file checks only while every one of them is an error.
// tests/types_test.ts also checks that, with those comments removed, the file fails.
import { connect, type RouteContext, serve, subscribe, type Tracked, tracked } from 'muxws';
import { Acceptor } from 'muxws/acceptor';

type Api = {
  feed: { input: { topic: string }; message: { price: number } };
  add: { input: [number, number]; output: number };
  'client.log': { message: string };
};

export const acceptor: Acceptor<Api> = new Acceptor<Api>({
  routes: {
    // @ts-expect-error a tracked message is the route's message type
    feed: async function* () { yield tracked('1', { cost: 1 }); },
    // @ts-expect-error a route with an output does not yield
    add: async function* () { yield tracked('1', 3); },
  },
});

export function handler(ctx: RouteContext): void {
  // @ts-expect-error narrow it first
  ctx.lastEventId.length;
  // @ts-expect-error lastEventId may be undefined
  const last: string = ctx.lastEventId;
  // @ts-expect-error lastEventId is read-only
  ctx.lastEventId = last;
}

export function values(): void {
  // @ts-expect-error an id is a string
  tracked(1, { price: 1 });
  // @ts-expect-error a tracked message has a value
  tracked('1');
  const tick = tracked('1', { price: 1 });
  // @ts-expect-error its id is read-only
  tick.id = '2';
  // @ts-expect-error its value keeps its type
  const text: string = tick.value;
  text.length;
}

export async function dialer(): Promise<void> {
  const connection = await connect<Api>('wss://example.com/ws', {
    routes: serve({
      // @ts-expect-error a client.log message is a string
      'client.log': async function* () { yield tracked('1', 5); },
    }),
  });
  subscribe(connection, 'feed', { topic: 'a' }, {
    // @ts-expect-error onMessage receives the bare message, not its id
    onMessage: (message) => message.id,
  });
  subscribe(connection, 'feed', { topic: 'a' }, {
    // @ts-expect-error nor a Tracked
    onMessage: (message: Tracked<{ price: number }>) => message.value,
  });
}
