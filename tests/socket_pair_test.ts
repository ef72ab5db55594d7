import { test } from 'node:test';
import assert from 'node:assert/strict';
import { CLOSED, FakeServer, OPEN, socketPair } from './_socket_pair.ts';
import { fakeTime } from './_fake_time.ts';

test('socketPair() delivers in order, counts held bytes, and closes both ends cleanly', async () => {
  const [client, server] = socketPair();
  const got: unknown[] = [];
  server.addEventListener('message', (e) => got.push((e as Event & { data: unknown }).data));
  client._open('muxws.v1.json');
  assert.equal(client.readyState, OPEN);
  assert.equal(server.protocol, 'muxws.v1.json');
  client.pause();
  client.send('a');
  client.send('bc');
  assert.equal(client.bufferedAmount, 3);
  client.resume();
  await Promise.resolve();
  assert.deepEqual(got, ['a', 'bc']);
  assert.equal(client.bufferedAmount, 0);
  client.close(1000, 'bye');
  await Promise.resolve();
  assert.equal(server.readyState, CLOSED);
  assert.deepEqual(server.closeInfo, { code: 1000, reason: 'bye', wasClean: true });
});

test('socketPair() client end rejects close codes a browser rejects', () => {
  const [client] = socketPair();
  client._open('');
  assert.throws(() => client.close(1001), { name: 'InvalidAccessError' });
  assert.throws(() => client.close(1000, 'x'.repeat(124)), { name: 'SyntaxError' });
});

test('socketPair() with delayMs delivers on fake time and binary as ArrayBuffer', async () => {
  using clock = fakeTime();
  const [client, server] = socketPair({ delayMs: 10 });
  server.binaryType = 'arraybuffer';
  const got: unknown[] = [];
  server.onmessage = (e) => got.push(e.data);
  client._open('');
  client.send(new Uint8Array([1, 2, 3]));
  await clock.tickAsync(9);
  assert.equal(got.length, 0);
  await clock.tickAsync(1);
  assert.deepEqual(new Uint8Array(got[0] as ArrayBuffer), new Uint8Array([1, 2, 3]));
});

test('FakeServer dials: accept selects the first offer, refuse fails with 1006', async () => {
  const server = new FakeServer();
  const ws = new server.WebSocket('ws://x/', ['muxws.v1.json', 'token']);
  const opened = new Promise((resolve) => ws.addEventListener('open', resolve, { once: true }));
  await opened;
  assert.equal(ws.protocol, 'muxws.v1.json');
  assert.deepEqual(server.connections[0].protocols, ['muxws.v1.json', 'token']);

  server.onConnection = (c) => c.refuse();
  const bad = new server.WebSocket('ws://x/', 'muxws.v1.json');
  assert.equal(bad.readyState, CLOSED);
  assert.equal(bad.closeInfo?.code, 1006);
  assert.equal(bad.listenerCount(), 0);
});

test('FakeSocket.drop() closes both ends with 1006, not clean', () => {
  const [client, server] = socketPair();
  client._open('');
  client.drop();
  assert.deepEqual(client.closeInfo, { code: 1006, reason: '', wasClean: false });
  assert.deepEqual(server.closeInfo, { code: 1006, reason: '', wasClean: false });
});
