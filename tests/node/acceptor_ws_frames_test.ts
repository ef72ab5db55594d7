// The acceptor over the `ws` package's server-side socket (an EventEmitter): accept() listens on
// its EventEmitter side, so a malformed WebSocket frame from a dialer must end only that peer
// (ws emits `error`, then sends close 1002), never escape as an uncaught exception; and text,
// binary and close reach the peer as they do through the socket's events. Runs on Node against
// dist/.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { connect as tcpConnect } from 'node:net';
import WebSocket from 'ws';
import { Acceptor, type Peer, type PeerCloseInfo } from 'muxws/acceptor';
import { jsonCodec } from 'muxws';
import { upgradeRequest } from '../_acceptor_suite.ts';
import { serveWs } from './_serve.ts';

/** Serves `acceptor` with ws on 127.0.0.1; returns the port and a close function. */
async function serve(acceptor: Acceptor): Promise<{ port: number; close(): Promise<void> }> {
  const { server, wss, port } = await serveWs(acceptor);
  return {
    port,
    close: () =>
      new Promise<void>((resolve) => {
        for (const client of wss.clients) client.terminate();
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** Resolves when `promise` settles, rejects after `ms`. */
function within<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} did not happen within ${ms} ms`)), ms);
  });
  return Promise.race([promise, deadline]).finally(() => clearTimeout(timer));
}

test('WSM-ACC-002 a malformed WebSocket frame on a ws socket ends only its peer, nothing uncaught', async () => {
  const uncaught: unknown[] = [];
  const onUncaught = (error: unknown) => uncaught.push(error);
  process.on('uncaughtException', onUncaught);
  let announced!: (peer: Peer) => void;
  const peerSeen = new Promise<Peer>((resolve) => announced = resolve);
  const closes: PeerCloseInfo[] = [];
  const acceptor = new Acceptor({
    idleTimeoutMs: 0,
    onPeer: (peer) => announced(peer),
    onPeerClose: (_peer, info) => closes.push(info),
  });
  const server = await serve(acceptor);
  const raw = tcpConnect(server.port, '127.0.0.1');
  try {
    raw.write(upgradeRequest(server.port, '/ws', { 'Sec-WebSocket-Protocol': 'muxws.v1.json' }));
    const peer = await within(peerSeen, 5_000, 'the peer');
    const received: number[] = [];
    raw.on('data', (chunk: Uint8Array) => received.push(...chunk));
    // An unmasked text frame: a dialer must mask, so ws fails the connection with 1002.
    raw.write(Uint8Array.of(0x81, 0x02, 0x68, 0x69));
    // ws sends its close frame (0x88, length 2, code 1002), then waits for the dialer's.
    const closeFrame = [0x88, 0x02, 1002 >> 8, 1002 & 0xff];
    const hasCloseFrame = () =>
      received.some((_, i) => closeFrame.every((byte, j) => received[i + j] === byte));
    for (let i = 0; i < 200 && !hasCloseFrame(); i++) {
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    assert.ok(hasCloseFrame(), 'ws answered the malformed frame with close 1002');
    raw.destroy();
    const info = await within(peer.closed, 5_000, 'the peer closing');
    assert.equal(info.code, 1006); // the dialer never answered the close
    assert.deepEqual(closes, [info]);
    await new Promise((resolve) => setTimeout(resolve, 50)); // ws emits on later ticks
    assert.deepEqual(uncaught, []);
    assert.equal(acceptor.stats.peers, 0);
  } finally {
    process.off('uncaughtException', onUncaught);
    raw.destroy();
    await acceptor.close({ drainMs: 0 });
    await server.close();
  }
});

test('WSM-ACC-002 a ws socket delivers text as a string, binary as bytes, and its close code and reason', async () => {
  const kinds: string[] = [];
  let announced!: (peer: Peer) => void;
  const peerSeen = new Promise<Peer>((resolve) => announced = resolve);
  const acceptor = new Acceptor({
    idleTimeoutMs: 0,
    // The JSON codec reads bytes too: this one records what each message arrived as.
    codec: {
      ...jsonCodec,
      decode(data) {
        kinds.push(typeof data === 'string' ? 'text' : `bytes of ${data.constructor.name}`);
        return jsonCodec.decode(data);
      },
    },
    onPeer: (peer) => announced(peer),
  });
  const server = await serve(acceptor);
  const client = new WebSocket(`ws://127.0.0.1:${server.port}/ws`, 'muxws.v1.json');
  const answers: Array<[string, boolean]> = [];
  client.on('message', (data, isBinary) => answers.push([String(data), isBinary]));
  try {
    const opened = new Promise<void>((resolve, reject) => {
      client.once('open', () => resolve());
      client.once('error', reject);
    });
    await within(opened, 5_000, 'the socket opening');
    const peer = await within(peerSeen, 5_000, 'the peer');
    client.send('[6]'); // PING, answered with PONG
    client.send(new TextEncoder().encode('[6]'), { binary: true });
    for (let i = 0; i < 200 && answers.length < 2; i++) {
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    assert.deepEqual(answers, [['[7]', false], ['[7]', false]]);
    assert.deepEqual(kinds, ['text', 'bytes of Uint8Array']);
    client.close(4000, 'bye é');
    assert.deepEqual(await within(peer.closed, 5_000, 'the peer closing'), {
      code: 4000,
      reason: 'bye é',
    });
  } finally {
    if (client.readyState !== WebSocket.CONNECTING) client.terminate();
    await acceptor.close({ drainMs: 0 });
    await server.close();
  }
});
