// The acceptor's events on attached in-memory sinks (WSM-API-001): emit to a tag with except,
// emitAll and peer.emit send a PUBLISH whose reserved header :event names the event; with a
// history an event is logged and replayed with its name; peer.emit before the hello is
// acknowledged waits for the welcome; bad names, tags and headers are refused naming what was
// expected and found.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Acceptor, memoryHistory } from 'muxws/acceptor';

type Api = {
  ':hello': { input: string };
  ':events': { message: { from: string; text: string }; notice: string };
};

/** An attached peer whose frames are collected, decoded. */
function attach<A>(acceptor: Acceptor<A>, tags: string[]) {
  const sent: unknown[][] = [];
  const handle = acceptor.attach({
    send: (data) => void sent.push(JSON.parse(String(data))),
    close() {},
  }, { tags });
  return { sent, handle, peer: handle.peer };
}

test('emit(), emitAll() and peer.emit() send a PUBLISH naming the event in :event, to a tag with except, to every peer and to one peer (WSM-API-001)', async () => {
  const acceptor = new Acceptor<Api>({ idleTimeoutMs: 0 });
  const a = attach(acceptor, ['room:lobby']);
  const b = attach(acceptor, ['room:lobby', 'muted']);
  const c = attach(acceptor, []);
  const message = { from: 'ada', text: 'hi' };
  assert.equal(await acceptor.emit('room:lobby', 'message', message, { except: [a.peer] }), 1);
  assert.equal(await acceptor.emit('room:lobby', 'notice', 'n', { except: ['muted'] }), 1);
  assert.equal(
    await acceptor.emit('room:lobby', 'notice', 'traced', { headers: { trace: 't' } }),
    2,
  );
  assert.equal(await acceptor.emitAll('notice', 'deploying', { except: [c.peer] }), 2);
  assert.equal(await acceptor.emitAll('notice', 'ops', { tag: 'ops', except: ['muted'] }), 2);
  assert.equal(c.peer.emit('notice', 'just you'), true);
  assert.equal(c.peer.emit('notice', 'tagged', { tag: 'inbox', headers: { id: 1 } }), true);
  assert.deepEqual(a.sent, [
    [9, 'room:lobby', { ':event': 'notice' }, 'n'],
    [9, 'room:lobby', { trace: 't', ':event': 'notice' }, 'traced'],
    [9, '*', { ':event': 'notice' }, 'deploying'],
    [9, 'ops', { ':event': 'notice' }, 'ops'],
  ]);
  assert.deepEqual(b.sent, [
    [9, 'room:lobby', { ':event': 'message' }, message],
    [9, 'room:lobby', { trace: 't', ':event': 'notice' }, 'traced'],
    [9, '*', { ':event': 'notice' }, 'deploying'],
  ]);
  assert.deepEqual(c.sent, [
    [9, 'ops', { ':event': 'notice' }, 'ops'],
    [9, '*', { ':event': 'notice' }, 'just you'],
    [9, 'inbox', { id: 1, ':event': 'notice' }, 'tagged'],
  ]);
  assert.equal(acceptor.stats.delivered, 8, 'peer.emit is not counted as a broadcast');
  await acceptor.close();
  assert.equal(c.peer.emit('notice', 'after close'), false);
});

test('with a history an event is logged and replayed to a redialled dialer with its name (WSM-API-001)', async () => {
  const acceptor = new Acceptor<Api>({
    idleTimeoutMs: 0,
    history: memoryHistory({ now: () => 0 }),
    onHello: (_hello, peer) => void peer.tags.add('room'),
  });
  for (const notice of ['one', 'two', 'three']) await acceptor.emit('room', 'notice', notice);
  // A redial that had seen only the first: its hello resumes the tag after it.
  const a = attach(acceptor, []);
  a.handle.message(JSON.stringify([1, 1, 3, { ':resume': { room: 1 } }, 'hi']));
  for (let i = 0; i < 20 && a.sent.length < 4; i++) {
    await new Promise((resolve) => setTimeout(resolve, 0));
  }
  await acceptor.emit('room', 'notice', 'four');
  assert.deepEqual(a.sent.filter((frame) => frame[0] === 9), [
    [9, 'room', { ':seq': 2, ':event': 'notice' }, 'two'],
    [9, 'room', { ':seq': 3, ':event': 'notice' }, 'three'],
    [9, 'room', { ':seq': 3, ':recovered': { replayed: 2, gap: false } }, null],
    [9, 'room', { ':seq': 4, ':event': 'notice' }, 'four'],
  ]);
  await acceptor.close({ drainMs: 0 });
});

test('peer.emit() before the hello is acknowledged waits and follows the welcome (WSM-API-001)', async () => {
  let welcome!: (value: unknown) => void;
  const acceptor = new Acceptor<Api>({
    idleTimeoutMs: 0,
    onHello: () => new Promise((resolve) => welcome = resolve),
  });
  const a = attach(acceptor, []);
  a.handle.message(JSON.stringify([1, 1, 3, null, 'hi']));
  assert.equal(a.peer.emit('notice', 'early'), true);
  assert.deepEqual(a.sent, []);
  welcome('welcome');
  for (let i = 0; i < 20 && a.sent.length < 2; i++) {
    await new Promise((resolve) => setTimeout(resolve, 0));
  }
  assert.deepEqual(a.sent.map((frame) => frame[0]), [2, 9]);
  assert.deepEqual(a.sent[1], [9, '*', { ':event': 'notice' }, 'early']);
  await acceptor.close();
});

test('emit(), emitAll() and peer.emit() refuse a bad name, tag or headers, naming what was expected and found (WSM-API-001)', async () => {
  const acceptor = new Acceptor({ idleTimeoutMs: 0 });
  const { peer, sent } = attach(acceptor, ['room']);
  const name = (found: string) =>
    `Cannot emit as "name" must be a string of 1 to 256 characters not starting with ":": current value is ${found}`;
  await assert.rejects(acceptor.emit('room', '', 1), { name: 'TypeError', message: name('""') });
  await assert.rejects(acceptor.emitAll(':seq', 1), { name: 'TypeError', message: name('":seq"') });
  await assert.rejects(acceptor.emitAll(7 as unknown as string, 1), {
    name: 'TypeError',
    message: name('7'),
  });
  assert.throws(() => peer.emit('x'.repeat(257), 1), TypeError);
  await assert.rejects(acceptor.emit('', 'notice', 1), {
    name: 'TypeError',
    message: 'Cannot emit as the tag must be a string of 1 to 256 characters: current value is ""',
  });
  assert.throws(() => peer.emit('notice', 1, { tag: '' }), {
    name: 'TypeError',
    message: 'Cannot emit as the tag must be a string of 1 to 256 characters: current value is ""',
  });
  await assert.rejects(acceptor.emit('room', 'notice', 1, { headers: { ':event': 'other' } }), {
    name: 'TypeError',
    message:
      'Cannot emit as "headers" must not use the reserved key ":event": keys starting with ":" are muxws\'s',
  });
  assert.throws(() => peer.emit('notice', 1, { headers: { ':seq': 1 } }), {
    name: 'TypeError',
    message:
      'Cannot emit as "headers" must not use the reserved key ":seq": keys starting with ":" are muxws\'s',
  });
  assert.throws(() => peer.emit('notice', 1, { headers: [1] as never }), {
    name: 'TypeError',
    message: 'Cannot emit as "headers" must be a plain object or null: current value is [1]',
  });
  assert.throws(() => peer.emit('notice', 1n), {
    name: 'TypeError',
    message: /emit\(\) to "\*"/,
  });
  assert.deepEqual(sent, []);
  await acceptor.close();
});
