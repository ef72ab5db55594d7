// deno-fmt-ignore-file: each wrong use must stay on the one line after its directive
// What must NOT type-check for a presence follower: each wrong use sits on the line after a
// `@ts-expect-error`, so this file checks only while every one of them is an error.
// tests/types_test.ts also checks that, with those comments removed, the file fails.
import { connect, presence, type PresenceState } from 'muxws';

type Meta = { name: string; tab: number };
type Api = { ':presence': Meta };

export async function follow(): Promise<void> {
  const connection = await connect<Api>('wss://example.com/ws');
  // @ts-expect-error a meta has no `device`
  presence(connection, 'room:1', { onJoin: (_key, joined) => joined[0].device });
  // @ts-expect-error a meta's tab is a number, not a string
  presence(connection, 'room:1', { onJoin: (_key, joined: { tab: string }[]) => joined });
  // @ts-expect-error the state holds metas of the Api's type, not of another
  presence(connection, 'room:1', { onSync: (state: PresenceState<{ room: number }>) => state });
  // @ts-expect-error the current metas are Meta[], not strings
  presence(connection, 'room:1', { onLeave: (_key, _left, current: string[]) => current });
  // @ts-expect-error onRefused receives a StreamResetError, which has no `status`
  presence(connection, 'room:1', { onRefused: (error) => error.status });
  // @ts-expect-error there is no onUpdate callback
  presence(connection, 'room:1', { onUpdate: () => {} });
  // @ts-expect-error the tag is a string
  presence(connection, 1, {});
  // @ts-expect-error options are required
  presence(connection, 'room:1');
  // @ts-expect-error presence() takes a connection first
  presence('room:1', {});
  const room = presence(connection, 'room:1', {});
  // @ts-expect-error the state is read-only
  room.state.ada = [];
  // @ts-expect-error a state's metas are Meta
  const names: number[] = Object.values(room.state).flat().map((meta) => meta.name);
  // @ts-expect-error tag is read-only
  room.tag = 'room:2';
  void names;
}
