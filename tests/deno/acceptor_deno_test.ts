// The behavioural suite on raw Deno: Deno.serve + the ./deno adapter (Deno.upgradeWebSocket).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { acceptorSuite } from '../_acceptor_suite.ts';
import { upgrade } from 'muxws/deno';
import { Acceptor } from 'muxws/acceptor';
import { servedDeno } from './_serve.ts';

acceptorSuite('Deno', servedDeno);

test('Deno: upgrade() answers an upgrade Deno cannot perform with 400 in its own words, naming the header at fault, and no Peer (WSM-ACC-003)', async () => {
  const acceptor = new Acceptor({ idleTimeoutMs: 0 });
  const expected =
    'Bad WebSocket upgrade request: expected Connection: Upgrade, a Sec-WebSocket-Key and Sec-WebSocket-Version 13; found ';
  const cases: Array<[Record<string, string>, string]> = [
    [{}, 'no Sec-WebSocket-Key'],
    [
      { connection: 'keep-alive', 'sec-websocket-key': 'dGhlIHNhbXBsZSBub25jZQ==' },
      'no "Upgrade" in Connection',
    ],
  ];
  try {
    for (const [headers, found] of cases) {
      const request = new Request('http://127.0.0.1/ws', {
        headers: {
          upgrade: 'websocket',
          connection: 'Upgrade',
          'sec-websocket-protocol': 'muxws.v1.json',
          ...headers,
        },
      });
      const response = await upgrade(request, acceptor);
      assert.equal(response.status, 400);
      assert.equal(response.headers.get('content-type'), 'text/plain; charset=utf-8');
      assert.equal(await response.text(), expected + found);
    }
    assert.equal(acceptor.stats.accepted, 0);
  } finally {
    await acceptor.close();
  }
});
