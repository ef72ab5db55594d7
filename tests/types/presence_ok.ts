// What must type-check for a presence follower (WSM-PRS-002): connect<Api>() types the metas of
// presence() from `Api[':presence']` in every callback, its state and its follower; an Api
// without ':presence' gives unknown metas; a meta type can be given by hand.
import {
  connect,
  presence,
  type PresenceFollower,
  type PresenceMetaOf,
  type PresenceState,
  type StreamResetError,
} from 'muxws';

type Meta = { name: string; tab: number };
type Api = {
  ':presence': Meta;
  'chat.say': { input: { text: string }; output: { delivered: number } };
};

export async function follow(): Promise<void> {
  const connection = await connect<Api>('wss://example.com/ws');
  const room: PresenceFollower<Meta> = presence(connection, 'room:1', {
    onSync: (state) => {
      const metas: readonly Meta[] | undefined = state.ada;
      return metas?.map((meta) => meta.name.toUpperCase());
    },
    onJoin: (key, joined, current) => [key, joined[0].tab, current.length],
    onLeave: async (key: string, left: Meta[], current: Meta[]) => {
      await Promise.resolve([key, left[0].name, current]);
    },
    onRefused: (error: StreamResetError) => error.code,
    signal: AbortSignal.timeout(1000),
  });
  const tag: string = room.tag;
  const synced: boolean = room.synced;
  const state: PresenceState<Meta> = room.state;
  const tabs: number[] = Object.values(state).flat().map((meta) => meta.tab);
  const ready: Promise<void> = room.ready;
  const meta: PresenceMetaOf<Api> = { name: 'Ada', tab: 1 };
  room.stop();
  void [tag, synced, tabs, ready, meta];

  const untyped = await connect('wss://example.com/ws');
  const anyone: PresenceFollower<unknown> = presence(untyped, 'room:1', {
    onJoin: (_key, joined: unknown[]) => joined.length,
  });
  anyone.stop();

  const byHand = presence<Api, { name: string }>(connection, 'room:1', {
    onJoin: (_key, joined) => joined[0].name,
  });
  byHand.stop();
}
