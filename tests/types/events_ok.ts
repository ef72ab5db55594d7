// What must type-check for typed events (WSM-API-001): the acceptor emits each event of
// `Api[':events']` with its payload, to a tag, to every peer and to one peer, and the dialer's
// on() infers each handler's payload from the name; an Api without ':events' takes any name.
import { connect, on, type PublishMessage } from 'muxws';
import { Acceptor, type Peer } from 'muxws/acceptor';
import type { EventName, EventPayload, EventsOf } from 'muxws';

type Api = {
  ':hello': { input: { room: string } };
  ':events': { message: { from: string; text: string }; notice: string };
  'chat.say': { input: { text: string }; output: { delivered: number } };
};

export async function dialer(): Promise<void> {
  const connection = await connect<Api>('wss://example.com/ws', {
    hello: { payload: { room: 'lobby' } },
  });
  const off: () => void = on(connection, 'message', (payload, info) => {
    const from: string = payload.from;
    const text: string = payload.text;
    const message: PublishMessage = info;
    const name: string | undefined = info.event;
    return [from, text, message.tag, info.seq, name];
  });
  off();
  on(connection, 'notice', (notice) => notice.toUpperCase());
  on(connection, 'notice', async (notice) => {
    await Promise.resolve(notice.length);
  });
  const untyped = await connect('wss://example.com/ws');
  on(untyped, 'anything', (payload: unknown) => payload);
}

export async function acceptor(peer: Peer<Api>): Promise<void> {
  const acceptor = new Acceptor<Api>();
  const reached: number = await acceptor.emit('room:lobby', 'message', { from: 'a', text: 'b' }, {
    except: [peer, 'muted'],
    headers: { trace: 't' },
  });
  await acceptor.emitAll('notice', 'deploying', { tag: 'ops', except: [peer] });
  const sent: boolean = peer.emit('notice', 'just you', { tag: 'inbox' });
  const untyped = new Acceptor();
  await untyped.emit('room', 'anything', { any: 'payload' });
  untyped.peers().next().value?.emit('whatever', 1);
  void [reached, sent];
}

const names: EventName<Api>[] = ['message', 'notice'];
const payload: EventPayload<Api, 'message'> = { from: 'a', text: 'b' };
const events: EventsOf<Api> = { message: payload, notice: 'n' };
const anyName: EventName<{ 'chat.say': { input: string } }> = 'whatever';
void [names, events, anyName];
