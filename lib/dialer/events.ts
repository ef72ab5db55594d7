/**
 * Typed events from the acceptor: {@linkcode on} registers a handler for one event name on a
 * {@linkcode Connection}, typed by the `':events'` of its `Api`. The acceptor sends events with
 * `acceptor.emit(tag, name, payload)`, `acceptor.emitAll(name, payload)` and
 * `peer.emit(name, payload)`; each is a PUBLISH whose reserved header `:event` carries the name.
 * A bundle that does not import `on` carries none of this.
 *
 * @module
 */
import type { Connection } from './dialer_types.ts';
import type { PublishMessage } from '../session/stream.ts';
import type { ApiSpec, EventName, EventPayload } from '../routes/api.ts';
import { type ExtensionHost, hostOf } from './_extensions.ts';
import { EVENT_NAME, isName } from '../wire/reserved.ts';
import { mustBe } from '../util/describe.ts';
import { callContained } from '../util/contain.ts';

/**
 * A handler of one event: its payload, and the PUBLISH that carried it (`tag`, the application's
 * `headers`, `seq` with recovery, and `event`, the name).
 */
export type EventHandler<Payload = unknown> = (payload: Payload, info: PublishMessage) => unknown;

/** Per connection (its extension host), the handlers of each event name, in registration order. */
const registries = new WeakMap<ExtensionHost, Map<string, EventHandler[]>>();

/** The handlers of `host`'s connection; the first call extends it with the step that runs them. */
function handlersOf(host: ExtensionHost): Map<string, EventHandler[]> {
  let handlers = registries.get(host);
  if (handlers === undefined) {
    const byName = handlers = new Map();
    registries.set(host, byName);
    host.extend({
      publish(message) {
        const list = message.event === undefined ? undefined : byName.get(message.event);
        if (list === undefined) return false;
        for (const handler of [...list]) {
          callContained(host.report, handler, message.payload, message);
        }
        return true;
      },
    });
  }
  return handlers;
}

/**
 * Runs `handler` for every event `name` the acceptor sends this connection, after the
 * connection's recovery (a replayed event is handled once, in order) and instead of
 * `onPublish`: an event with no handler, and every plain broadcast, still reaches `onPublish`
 * (with the name as `message.event`). Several handlers of one name run in the order they were
 * registered; what one throws or rejects with goes to `onError` and the others still run. The
 * handlers stay across redials until removed, or until the connection closes for good.
 *
 * @example A typed chat event
 * ```ts
 * import { connect, on } from '@muxws/core';
 * import { Acceptor } from '@muxws/core/acceptor';
 * import { upgrade } from '@muxws/core/deno';
 * import assert from 'node:assert/strict';
 *
 * type Api = { ':events': { message: { from: string; text: string }; notice: string } };
 * const acceptor = new Acceptor<Api>({ authorize: () => ({ tags: ['room:lobby'] }) });
 * const options = { port: 0, hostname: '127.0.0.1', onListen() {} };
 * await using server = Deno.serve(options, (request) => upgrade(request, acceptor));
 * await using connection = await connect<Api>(`ws://127.0.0.1:${server.addr.port}/`);
 * const said = Promise.withResolvers<string>();
 * const off = on(connection, 'message', ({ from, text }, { tag }) => {
 *   said.resolve(`${from} in ${tag}: ${text}`);
 * });
 * await acceptor.emit('room:lobby', 'message', { from: 'ada', text: 'hi' });
 * assert.equal(await said.promise, 'ada in room:lobby: hi');
 * off();
 * await acceptor.close({ drainMs: 0 });
 * ```
 *
 * @param connection A connection `connect()` made.
 * @param name The event's name, one of `Api[':events']`: 1 to 256 characters, not starting
 * with `:`.
 * @param handler Called with the payload, as `Api[':events'][name]` types it, and the PUBLISH.
 * @returns A function that removes `handler` (idempotent).
 * @throws {TypeError} When `connection` is not a connection `connect()` made, `name` is not an
 * event name or `handler` is not a function.
 */
export function on<Api = ApiSpec, E extends EventName<Api> = EventName<Api>>(
  connection: Connection<Api>,
  name: E,
  handler: EventHandler<EventPayload<Api, E>>,
): () => void {
  const what = 'listen for events';
  const host = hostOf(connection, what);
  if (!isName(name)) throw new TypeError(mustBe(what, 'name', EVENT_NAME, name));
  if (typeof handler !== 'function') {
    throw new TypeError(mustBe(what, 'handler', 'a function', handler));
  }
  const handlers = handlersOf(host);
  const added = handler as EventHandler;
  let list = handlers.get(name);
  if (list === undefined) handlers.set(name, list = []);
  list.push(added);
  return () => {
    const current = handlers.get(name);
    const at = current?.indexOf(added) ?? -1;
    if (at === -1) return;
    current!.splice(at, 1);
    if (current!.length === 0) handlers.delete(name);
  };
}
