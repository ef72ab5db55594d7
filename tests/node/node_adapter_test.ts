// The Node adapter's `attach()` on a real `node:http` server on 127.0.0.1 (WSM-APP-008,
// WSM-ACC-003): which paths it takes and which it leaves to another `upgrade` listener, the
// refusals it writes (status, headers and body), `authorize`'s data and tags reaching the peer,
// the handle's `close()`, the scheme of the `Request` on a TLS socket, and that plain requests
// never build a `Request`. Runs on Node against dist/.
//
// A real https server is not started: it needs a certificate, and generating a self-signed one
// at test time takes more than the standard library offers. The TLS case marks the socket of a
// plain connection as encrypted, which is all the adapter reads of it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Agent, createServer, type IncomingMessage, request as httpRequest } from 'node:http';
import type { AddressInfo } from 'node:net';
import { connect as tcpConnect } from 'node:net';
import type { Duplex } from 'node:stream';
import WebSocket from 'ws';
import { Acceptor, type AcceptorOptions, type Peer } from 'muxws/acceptor';
import { attach, type Attachment, type AttachOptions } from 'muxws/node';
import { connect } from 'muxws';
import { eventually, upgradeRequest, within } from '../_acceptor_suite.ts';

const TOKEN = 'muxws.v1.json';

/** A whole raw HTTP response: status, headers (lower-case names) and body. */
interface RawResponse {
  status: number;
  headers: Record<string, string>;
  body: string;
}

/**
 * Sends a WebSocket upgrade request over TCP and reads the answer: a refusal to its end (the
 * adapter closes the connection after it), a 101 up to its head.
 */
function rawUpgrade(
  port: number,
  path: string,
  headers: Record<string, string> = {},
): Promise<RawResponse> {
  return new Promise((resolve, reject) => {
    const socket = tcpConnect({ host: '127.0.0.1', port });
    let text = '';
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new Error(`The upgrade of ${path} got no whole answer within 5000 ms: ${text}`));
    }, 5000);
    const parse = (): RawResponse => {
      const end = text.indexOf('\r\n\r\n');
      const [statusLine, ...lines] = text.slice(0, end).split('\r\n');
      const answer: RawResponse = {
        status: Number(statusLine.split(' ')[1]),
        headers: {},
        body: text.slice(end + 4),
      };
      for (const line of lines) {
        const colon = line.indexOf(':');
        answer.headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
      }
      return answer;
    };
    socket.on('connect', () => {
      socket.write(upgradeRequest(port, path, { 'Sec-WebSocket-Protocol': TOKEN, ...headers }));
    });
    socket.on('data', (chunk: Uint8Array) => {
      text += new TextDecoder('latin1').decode(chunk);
      if (text.startsWith('HTTP/1.1 101') && text.includes('\r\n\r\n')) {
        clearTimeout(timer);
        socket.destroy();
        resolve(parse());
      }
    });
    socket.on('end', () => {
      clearTimeout(timer);
      socket.destroy();
      resolve(parse());
    });
    socket.on('error', (error: Error) => {
      clearTimeout(timer);
      reject(error);
    });
  });
}

/** A server with the acceptor attached, and a second `upgrade` listener answering 404. */
interface Served {
  port: number;
  acceptor: Acceptor;
  attachment: Attachment;
  /** The pathnames the second listener answered. */
  elsewhere: string[];
  /** Closes the attachment: the second listener then answers every path. */
  detach(): void;
  close(): Promise<void>;
}

async function serve(options: AttachOptions, acceptorOptions: AcceptorOptions = {}): Promise<
  Served
> {
  const acceptor = new Acceptor({ idleTimeoutMs: 0, ...acceptorOptions });
  const server = createServer((_request, response) => response.writeHead(404).end());
  const attachment = attach(server, acceptor, options);
  const elsewhere: string[] = [];
  const accepted = options.path;
  let detached = false;
  server.on('upgrade', (message: IncomingMessage, socket: Duplex) => {
    const pathname = new URL(message.url ?? '/', 'http://x').pathname;
    const ours = !detached && (accepted === undefined ||
      (typeof accepted === 'function' ? accepted(pathname) : pathname === accepted));
    if (ours) return;
    elsewhere.push(pathname);
    socket.end('HTTP/1.1 404 Not Found\r\nConnection: close\r\nContent-Length: 0\r\n\r\n');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as AddressInfo).port,
    acceptor,
    attachment,
    elsewhere,
    detach: () => {
      detached = true;
      attachment.close();
    },
    close: async () => {
      await acceptor.close({ drainMs: 0 });
      attachment.close();
      for (const client of attachment.wss.clients) client.terminate();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** Counts the `Request`s built while `body` runs. */
async function countRequests(body: () => Promise<void>): Promise<number> {
  const Original = globalThis.Request;
  let built = 0;
  globalThis.Request = class extends Original {
    constructor(input: RequestInfo | URL, init?: RequestInit) {
      super(input, init);
      built++;
    }
  };
  try {
    await body();
  } finally {
    globalThis.Request = Original;
  }
  return built;
}

test('attach() takes upgrades on its path, with a query, and leaves other paths to another listener (WSM-APP-008)', async () => {
  const served = await serve({ path: '/ws' });
  try {
    const connection = await connect(`ws://127.0.0.1:${served.port}/ws?room=1`, {
      WebSocket,
      heartbeat: false,
    });
    await connection.close();
    const other = await rawUpgrade(served.port, '/other');
    assert.equal(other.status, 404);
    const slash = await rawUpgrade(served.port, '/ws/');
    assert.equal(slash.status, 404);
    assert.deepEqual(served.elsewhere, ['/other', '/ws/']);
    assert.equal(served.acceptor.stats.accepted, 1);
  } finally {
    await served.close();
  }
});

test('attach() takes the upgrades its path predicate returns true for and selects exactly the muxws subprotocol (WSM-APP-008, WSM-ACC-001)', async () => {
  const served = await serve({ path: (pathname) => pathname.startsWith('/rooms/') });
  try {
    const answer = await rawUpgrade(served.port, '/rooms/a', {
      'Sec-WebSocket-Protocol': `${TOKEN}, token.abc`,
    });
    assert.equal(answer.status, 101);
    assert.equal(answer.headers['sec-websocket-protocol'], TOKEN);
    assert.equal((await rawUpgrade(served.port, '/ws')).status, 404);
    assert.deepEqual(served.elsewhere, ['/ws']);
  } finally {
    await served.close();
  }
});

test('attach() writes a refused origin as a 403 response with its headers and body (WSM-ACC-003)', async () => {
  const served = await serve({});
  try {
    const answer = await rawUpgrade(served.port, '/', { Origin: 'https://elsewhere.example' });
    assert.equal(answer.status, 403);
    assert.equal(answer.headers['content-type'], 'text/plain; charset=utf-8');
    assert.equal(answer.headers['content-length'], String(answer.body.length));
    assert.equal(answer.headers.connection, 'close');
    assert.equal(answer.body, 'Origin not allowed');
    assert.equal(served.acceptor.stats.peers, 0);
  } finally {
    await served.close();
  }
});

test('attach() answers an upgrade while the acceptor closes with 503 and its Retry-After (WSM-ACC-003)', async () => {
  const served = await serve({});
  try {
    const closing = served.acceptor.close({ drainMs: 0 });
    const answer = await rawUpgrade(served.port, '/');
    assert.equal(answer.status, 503);
    assert.equal(answer.headers['retry-after'], '1');
    assert.equal(answer.body, 'The acceptor is closing');
    await closing;
  } finally {
    await served.close();
  }
});

test("attach() writes authorize's Response as it is, status, headers and body (WSM-APP-002, WSM-ACC-003)", async () => {
  const served = await serve({}, {
    authorize: () =>
      new Response('Sign in first', {
        status: 401,
        headers: { 'www-authenticate': 'Bearer', 'x-reason': 'no session' },
      }),
  });
  try {
    const answer = await rawUpgrade(served.port, '/');
    assert.equal(answer.status, 401);
    assert.equal(answer.headers['www-authenticate'], 'Bearer');
    assert.equal(answer.headers['x-reason'], 'no session');
    assert.equal(answer.body, 'Sign in first');
    assert.equal(served.acceptor.stats.peers, 0);
  } finally {
    await served.close();
  }
});

test("attach() starts the peer with authorize's data and tags (WSM-APP-002)", async () => {
  const peers: Peer[] = [];
  const served = await serve({ path: '/ws' }, {
    authorize: (request) => ({
      data: { user: new URL(request.url).searchParams.get('user') },
      tags: ['vip', 'room:1'],
    }),
    onPeer: (peer) => void peers.push(peer),
  });
  try {
    const connection = await connect(`ws://127.0.0.1:${served.port}/ws?user=ada`, {
      WebSocket,
      heartbeat: false,
    });
    try {
      await eventually(() => peers.length === 1, 5000, 'the peer');
      assert.deepEqual(peers[0].data, { user: 'ada' });
      assert.deepEqual([...peers[0].tags], ['vip', 'room:1']);
    } finally {
      await connection.close();
    }
  } finally {
    await served.close();
  }
});

test('attach() builds an https Request for an upgrade on a TLS socket (WSM-APP-008)', async () => {
  const urls: string[] = [];
  const acceptor = new Acceptor({
    idleTimeoutMs: 0,
    authorize: (request) => {
      urls.push(request.url);
      return false;
    },
  });
  const server = createServer();
  // Runs before attach()'s listener: the socket now reads as a TLSSocket does.
  server.on('upgrade', (message: IncomingMessage) => {
    (message.socket as { encrypted?: boolean }).encrypted = true;
  });
  const attachment = attach(server, acceptor);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  try {
    assert.equal((await rawUpgrade(port, '/ws?x=1')).status, 403);
    assert.deepEqual(urls, [`https://127.0.0.1:${port}/ws?x=1`]);
  } finally {
    attachment.close();
    await acceptor.close({ drainMs: 0 });
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }
});

test("attach()'s close() stops taking upgrades and closes its ws server, leaving the HTTP server and open peers (WSM-APP-008)", async () => {
  const served = await serve({ path: '/ws' }, { onStream: (stream) => stream.payload });
  const connection = await connect(`ws://127.0.0.1:${served.port}/ws`, {
    WebSocket,
    heartbeat: false,
    reconnect: false,
  });
  try {
    served.detach();
    served.attachment.close(); // twice is harmless
    assert.equal(await within(connection.request('still here'), 5000, 'the answer'), 'still here');
    // The other listener is the only one left: it answers /ws now.
    const answer = await rawUpgrade(served.port, '/ws');
    assert.equal(answer.status, 404);
    assert.deepEqual(served.elsewhere, ['/ws']);
    assert.equal(served.acceptor.stats.accepted, 1);
  } finally {
    await connection.close();
    await served.close();
  }
});

test('attach() builds no Request for 1,000 plain HTTP requests, an upgrade on another path, nor an upgrade on its path whose checks pass (WSM-APP-008)', async () => {
  const served = await serve({ path: '/ws' });
  const agent = new Agent({ keepAlive: true, maxSockets: 8 });
  try {
    const get = (path: string) =>
      new Promise<number>((resolve, reject) => {
        httpRequest({ host: '127.0.0.1', port: served.port, path, agent }, (response) => {
          response.resume();
          response.on('end', () => resolve(response.statusCode ?? 0));
        }).on('error', reject).end();
      });
    const plain = await countRequests(async () => {
      for (let round = 0; round < 100; round++) {
        const statuses = await Promise.all(Array.from({ length: 10 }, (_, i) => get(`/ws?${i}`)));
        assert.ok(statuses.every((status) => status === 404), `statuses ${statuses}`);
      }
      assert.equal((await rawUpgrade(served.port, '/other')).status, 404);
    });
    assert.equal(plain, 0);
    const upgrades = await countRequests(async () => {
      assert.equal((await rawUpgrade(served.port, '/ws')).status, 101);
      assert.equal(
        (await rawUpgrade(served.port, '/ws', { Origin: `http://127.0.0.1:${served.port}` }))
          .status,
        101,
      );
    });
    assert.equal(upgrades, 0);
  } finally {
    agent.destroy();
    await served.close();
  }
});

test('attach() hands an origin predicate and authorize one real Request per upgrade, with every header as received (WSM-APP-008, WSM-APP-002)', async () => {
  const seen: Request[] = [];
  const served = await serve({ path: '/ws' }, {
    origins: (_origin, request) => {
      seen.push(request);
      return true;
    },
    authorize: (request) => {
      seen.push(request);
      return true;
    },
  });
  try {
    const built = await countRequests(async () => {
      const answer = await rawUpgrade(served.port, '/ws?x=1', { 'X-Trace': 'a', 'x-trace': 'b' });
      assert.equal(answer.status, 101);
    });
    assert.equal(built, 1);
    assert.equal(seen.length, 2);
    assert.equal(seen[0], seen[1]);
    assert.ok(seen[0] instanceof Request);
    assert.equal(seen[0].url, `http://127.0.0.1:${served.port}/ws?x=1`);
    assert.equal(seen[0].headers.get('x-trace'), 'a, b');
    assert.equal(seen[0].headers.get('sec-websocket-protocol'), TOKEN);
  } finally {
    await served.close();
  }
});

test('attach() reads a header sent in several fields as one list, as a Request would (WSM-ACC-001, WSM-ACC-003)', async () => {
  const served = await serve({});
  try {
    const offered = await rawUpgrade(served.port, '/', { 'sec-websocket-protocol': 'chat' });
    assert.equal(offered.status, 101);
    assert.equal(offered.headers['sec-websocket-protocol'], TOKEN);
    const twoOrigins = await rawUpgrade(served.port, '/', {
      Origin: `http://127.0.0.1:${served.port}`,
      origin: 'https://elsewhere.example',
    });
    assert.equal(twoOrigins.status, 403);
    assert.equal(twoOrigins.body, 'Origin not allowed');
  } finally {
    await served.close();
  }
});

test('attach() answers 400 to an upgrade whose URL a Request cannot hold (WSM-APP-008)', async () => {
  const acceptor = new Acceptor({ idleTimeoutMs: 0 });
  const server = createServer();
  const attachment = attach(server, acceptor);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  try {
    const answer = await rawUpgrade(port, 'http://[bad/ws');
    assert.equal(answer.status, 400);
    assert.equal(answer.body, 'Bad upgrade request');
    assert.equal(acceptor.stats.peers, 0);
  } finally {
    attachment.close();
    await acceptor.close({ drainMs: 0 });
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }
});

/** Serves `acceptors` on one `node:http` server, one `attach()` per path, and no other listener. */
async function serveOnPaths(acceptors: Record<string, Acceptor>): Promise<{
  port: number;
  close(): Promise<void>;
}> {
  const server = createServer((_request, response) => response.writeHead(404).end());
  const attachments = Object.entries(acceptors).map(([path, acceptor]) =>
    attach(server, acceptor, { path })
  );
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as AddressInfo).port,
    close: async () => {
      for (const acceptor of Object.values(acceptors)) await acceptor.close({ drainMs: 0 });
      for (const attachment of attachments) attachment.close();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

test('attach() answers 404 to an upgrade on a path it does not take when the server has no other upgrade listener, so a dialer on a wrong path fails at once naming the 404', async () => {
  const acceptor = new Acceptor({ idleTimeoutMs: 0, onStream: (stream) => stream.payload });
  const served = await serveOnPaths({ '/ws': acceptor });
  try {
    const answer = await rawUpgrade(served.port, '/');
    assert.equal(answer.status, 404);
    assert.equal(answer.headers.connection, 'close');
    assert.equal(answer.body, 'No WebSocket endpoint at this path');
    const startedAt = Date.now();
    const failed = await within(
      connect(`ws://127.0.0.1:${served.port}/`, { WebSocket, heartbeat: false, reconnect: false })
        .then(() => undefined, (error: unknown) => error),
      5000,
      'the connect() failure',
    );
    assert.ok(failed instanceof Error, 'connect() to a wrong path rejects');
    assert.match(failed.message, /\b404\b/);
    assert.ok(Date.now() - startedAt < 5000, 'well before the 15 s handshake timeout');
    assert.equal(acceptor.stats.accepted, 0);
  } finally {
    await served.close();
  }
});

test('attach() on two paths of one server hands each path to its own acceptor and answers 404 to the rest', async () => {
  const a = new Acceptor({ idleTimeoutMs: 0, onStream: () => 'a' });
  const b = new Acceptor({ idleTimeoutMs: 0, onStream: () => 'b' });
  const served = await serveOnPaths({ '/a': a, '/b': b });
  try {
    for (const [path, expected] of [['/a', 'a'], ['/b', 'b']]) {
      const connection = await connect(`ws://127.0.0.1:${served.port}${path}`, {
        WebSocket,
        heartbeat: false,
        reconnect: false,
      });
      try {
        assert.equal(await within(connection.request('which'), 5000, 'the answer'), expected);
      } finally {
        await connection.close();
      }
    }
    assert.equal((await rawUpgrade(served.port, '/c')).status, 404);
    assert.equal((await rawUpgrade(served.port, '/a/')).status, 404);
    assert.equal(a.stats.accepted, 1);
    assert.equal(b.stats.accepted, 1);
  } finally {
    await served.close();
  }
});

test("attach() gives ws a maxPayload of the acceptor's maxMessageBytes unless ws.maxPayload is given (WSM-LIM-004)", async () => {
  const acceptor = new Acceptor({ idleTimeoutMs: 0, limits: { maxMessageBytes: 4096 } });
  const server = createServer();
  const maxPayloadOf = (attachment: Attachment) =>
    (attachment.wss as unknown as { options: { maxPayload: number } }).options.maxPayload;
  const attachments = [
    attach(server, acceptor),
    attach(server, acceptor, { ws: { maxPayload: undefined } }),
    attach(server, acceptor, { ws: { maxPayload: 8192 } }),
  ];
  try {
    assert.deepEqual(attachments.map(maxPayloadOf), [4096, 4096, 8192]);
  } finally {
    for (const attachment of attachments) attachment.close();
    await acceptor.close();
  }
});
