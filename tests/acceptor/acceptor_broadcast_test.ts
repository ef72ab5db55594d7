// broadcast()'s except with peers, and broadcastAll() locally and across a backplane
// (WSM-APP-005, WSM-ACC-005, WSM-BP-001); authorize() inside checkUpgrade() (WSM-APP-002).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Acceptor, type AttachedPeer } from 'muxws/acceptor';
import type { Backplane, BackplaneMessage } from 'muxws/backplane';
import { bunHandlers } from 'muxws/bun';

/** A peer whose received frames are decoded into `got`. */
function peerOf(acceptor: Acceptor, tags: string[] = []): { handle: AttachedPeer; got: unknown[] } {
  const got: unknown[] = [];
  const handle = acceptor.attach(
    { send: (data) => got.push(JSON.parse(String(data))), close() {} },
    {
      tags,
    },
  );
  return { handle, got };
}

/** Backplanes of one in-memory bus: each hands a message to every other member. */
function bus(): () => Backplane & { published: BackplaneMessage[] } {
  const handlers = new Set<(message: BackplaneMessage) => void>();
  return () => {
    let mine: ((message: BackplaneMessage) => void) | undefined;
    const published: BackplaneMessage[] = [];
    return {
      published,
      publish(message) {
        published.push(message);
        for (const handler of handlers) if (handler !== mine) handler(message);
      },
      subscribe(handler) {
        mine = handler;
        handlers.add(handler);
        return () => handlers.delete(handler);
      },
    };
  };
}

test('broadcast() leaves out the peers named in except, beside the tags (WSM-APP-005)', async () => {
  const acceptor = new Acceptor({ idleTimeoutMs: 0 });
  const sender = peerOf(acceptor, ['room']);
  const other = peerOf(acceptor, ['room']);
  const muted = peerOf(acceptor, ['room', 'muted']);
  const count = await acceptor.broadcast('room', 'hi', { except: [sender.handle.peer, 'muted'] });
  assert.equal(count, 1);
  assert.deepEqual(sender.got, []);
  assert.deepEqual(other.got, [[9, 'room', null, 'hi']]);
  assert.deepEqual(muted.got, []);
  await assert.rejects(acceptor.broadcast('room', 'x', { except: [42 as never] }), {
    name: 'TypeError',
  });
  await acceptor.close({ drainMs: 0 });
});

test('broadcastAll() reaches every live peer whatever its tags, minus except (WSM-APP-005)', async () => {
  const acceptor = new Acceptor({ idleTimeoutMs: 0 });
  const a = peerOf(acceptor);
  const b = peerOf(acceptor, ['x']);
  const c = peerOf(acceptor, ['quiet']);
  assert.equal(await acceptor.broadcastAll({ notice: 'deploy' }, { except: ['quiet'] }), 2);
  assert.deepEqual(a.got, [[9, '*', null, { notice: 'deploy' }]]);
  assert.deepEqual(b.got, [[9, '*', null, { notice: 'deploy' }]]);
  assert.deepEqual(c.got, []);
  assert.equal(await acceptor.broadcastAll('tagged', { tag: 'news', except: [a.handle.peer] }), 2);
  assert.deepEqual(c.got, [[9, 'news', null, 'tagged']]);
  assert.equal(acceptor.stats.delivered, 4);
  await acceptor.close({ drainMs: 0 });
});

test('broadcastAll() crosses the backplane to every peer of every node, and a node without it delivers to nobody (WSM-APP-005, WSM-BP-001)', async () => {
  const join = bus();
  const planeA = join();
  const one = new Acceptor({ idleTimeoutMs: 0, backplane: planeA });
  const two = new Acceptor({ idleTimeoutMs: 0, backplane: join() });
  const local = peerOf(one);
  const remote = peerOf(two, ['anything']);
  const skipped = peerOf(two, ['quiet']);
  assert.equal(await one.broadcastAll('all hands', { except: ['quiet', local.handle.peer] }), 0);
  assert.deepEqual(local.got, []);
  assert.deepEqual(remote.got, [[9, '*', null, 'all hands']]);
  assert.deepEqual(skipped.got, []);
  const [message] = planeA.published;
  assert.equal(message.tag, '*'.repeat(257), 'a tag no peer can hold marks "every peer"');
  assert.deepEqual(message.except, ['quiet'], 'only tags cross the backplane');
  // A node that routes by tag only (no broadcastAll) finds no peer holding that tag.
  assert.deepEqual([...two.peers(message.tag)], []);
  await one.close({ drainMs: 0 });
  await two.close({ drainMs: 0 });
});

function upgradeRequest(headers: Record<string, string> = {}): Request {
  return new Request('http://api.example/ws', {
    headers: { upgrade: 'websocket', 'sec-websocket-protocol': 'muxws.v1.json', ...headers },
  });
}

test('checkUpgrade() runs authorize after the origin and subprotocol checks and carries its data and tags (WSM-APP-002)', async () => {
  const calls: string[] = [];
  const errors: unknown[] = [];
  const acceptor = new Acceptor({
    idleTimeoutMs: 0,
    onError: (error) => errors.push(error),
    authorize: async (request, { protocols }) => {
      calls.push(protocols.join('|'));
      await Promise.resolve();
      switch (request.headers.get('x-auth')) {
        case 'no':
          return false;
        case 'odd':
          return 42 as never;
        case 'bad-tag':
          return { tags: [''] };
        case 'throw':
          throw new Error('store down');
      }
      return { data: { user: 'ada' }, tags: new Set(['vip']) };
    },
  });
  assert.equal(
    (await acceptor.checkUpgrade(upgradeRequest({ origin: 'https://evil.example' })) as Response)
      .status,
    403,
  );
  assert.equal(
    (await acceptor.checkUpgrade(upgradeRequest({ 'sec-websocket-protocol': 'chat' })) as Response)
      .status,
    400,
  );
  assert.deepEqual(calls, [], 'authorize runs only after the origin and subprotocol checks');
  const refused = await acceptor.checkUpgrade(upgradeRequest({ 'x-auth': 'no' }));
  assert.equal((refused as Response).status, 403);
  for (const auth of ['odd', 'bad-tag', 'throw']) {
    const failed = await acceptor.checkUpgrade(upgradeRequest({ 'x-auth': auth }));
    assert.equal((failed as Response).status, 500, auth);
  }
  assert.equal(errors.length, 3);
  assert.match((errors[0] as Error).message, /must return true, false, a Response or/);
  assert.match((errors[1] as Error).message, /every tag authorize returned/);
  assert.match((errors[2] as Error).message, /store down/);
  const accepted = await acceptor.checkUpgrade(
    upgradeRequest({ 'sec-websocket-protocol': 'muxws.v1.json, token.abc' }),
  );
  assert.deepEqual(accepted, {
    protocol: 'muxws.v1.json',
    data: { user: 'ada' },
    tags: ['vip'],
  });
  assert.equal(calls.at(-1), 'muxws.v1.json|token.abc');
  assert.equal(acceptor.stats.refused, 6);
  const peer = acceptor.attach({ send() {}, close() {} }, accepted as never).peer;
  assert.deepEqual(peer.data, { user: 'ada' });
  assert.deepEqual([...acceptor.peers('vip')], [peer]);
  await acceptor.close({ drainMs: 0 });
});

test("peer.data is typed by the acceptor's PeerData (WSM-APP-003)", async () => {
  interface Data {
    user: string;
  }
  const acceptor = new Acceptor<unknown, Data>({
    idleTimeoutMs: 0,
    authorize: () => ({ data: { user: 'ada' } }),
    onPeer: (peer) => {
      const user: string = peer.data.user;
      assert.equal(typeof user, 'string');
    },
  });
  const check = await acceptor.checkUpgrade(upgradeRequest());
  assert.ok(!(check instanceof Response));
  const { peer } = acceptor.attach({ send() {}, close() {} }, { data: check.data });
  assert.equal(peer.data.user, 'ada');
  // Every adapter takes an acceptor of any PeerData (this line must compile).
  assert.equal(typeof bunHandlers(acceptor).fetch, 'function');
  await acceptor.close({ drainMs: 0 });
});
