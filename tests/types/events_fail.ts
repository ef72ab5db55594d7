// deno-fmt-ignore-file: each wrong use must stay on the one line after its directive
// What must NOT type-check for typed events: each wrong use sits on the line after a
// `@ts-expect-error`, so this file checks only while every one of them is an error.
// tests/types_test.ts also checks that, with those comments removed, the file fails.
import { connect, on } from 'muxws';
import { Acceptor, type Peer } from 'muxws/acceptor';
import type { EventName, EventPayload } from 'muxws';

type Api = {
  ':events': { message: { from: string; text: string }; notice: string };
  'chat.say': { input: { text: string }; output: { delivered: number } };
};

export async function dialer(): Promise<void> {
  const connection = await connect<Api>('wss://example.com/ws');
  // @ts-expect-error no event is called shout
  on(connection, 'shout', () => {});
  // @ts-expect-error a route is not an event
  on(connection, 'chat.say', () => {});
  // @ts-expect-error a message has no `body`
  on(connection, 'message', (payload) => payload.body);
  // @ts-expect-error a notice is a string, not a number
  on(connection, 'notice', (notice: number) => notice);
  // @ts-expect-error the handler's info has no `name`
  on(connection, 'notice', (_notice, info) => info.name);
  // @ts-expect-error on() takes a connection first
  on('message', () => {});
}

export async function acceptor(peer: Peer<Api>): Promise<void> {
  const acceptor = new Acceptor<Api>();
  // @ts-expect-error no event is called shout
  await acceptor.emit('room', 'shout', 'hi');
  // @ts-expect-error a message has a string `text`
  await acceptor.emit('room', 'message', { from: 'a', text: 1 });
  // @ts-expect-error a notice is a string
  await acceptor.emitAll('notice', { text: 'n' });
  // @ts-expect-error no event is called shout
  await acceptor.emitAll('shout', 'hi');
  // @ts-expect-error a message needs `from`
  peer.emit('message', { text: 'hi' });
  // @ts-expect-error no event is called shout
  peer.emit('shout', 'hi');
}

// @ts-expect-error not an event name of Api
export const name: EventName<Api> = 'shout';
// @ts-expect-error a notice's payload is a string
export const payload: EventPayload<Api, 'notice'> = 1;
