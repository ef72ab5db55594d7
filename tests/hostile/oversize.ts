/**
 * Hostile-input tests of oversized messages where the bytes arrive: the runtime's own message
 * limit, which the Node (`ws`'s `maxPayload`) and Bun (`maxPayloadLength`) adapters set to the
 * acceptor's `maxMessageBytes`, refuses a larger message as its frame header arrives, before the
 * runtime buffers it; `Deno.upgradeWebSocket` takes no such limit, so on Deno the acceptor's own
 * check closes the socket once the runtime delivered the whole message (docs/security.md, "Where
 * the bytes arrive, and origins").
 * @module
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { within } from '../_acceptor_suite.ts';
import { childStats, type HostileRuntime, named, withServer } from './_harness.ts';
import { concat, tcpUpgrade } from './_raw.ts';

/** Whether the runtime refuses a message over the acceptor's limit before buffering it. */
function limitsWhereBytesArrive(rt: HostileRuntime): boolean {
  return rt.name !== 'Deno';
}

/** A WebSocket client over `node:net` that announces a message and sends its body in chunks. */
interface OversizeClient {
  /** Settles when the connection ended: the server's close frame's code, or 1006. */
  readonly closed: Promise<number>;
  /** True once the server's close frame arrived or the connection ended. */
  readonly ended: boolean;
  /**
   * Sends the header of one unfragmented text frame of `length` bytes, masked with a zero key
   * (so the body is sent as it is: zero bytes, valid UTF-8).
   */
  announce(length: number): void;
  /**
   * Sends `bytes` zero bytes of the body in 1 MiB writes, waiting for each to drain; stops early,
   * without error, once the connection ended. Resolves with the bytes written.
   */
  sendBody(bytes: number): Promise<number>;
  destroy(): void;
}

const CHUNK = new Uint8Array(1024 * 1024);

/** Opens a WebSocket over TCP to 127.0.0.1:`port``path`; resolves once the 101 arrived. */
async function oversizeClient(port: number, path: string): Promise<OversizeClient> {
  let buffer: Uint8Array = new Uint8Array(0);
  let code = 1006;
  let ended = false;
  const { socket, upgraded } = tcpUpgrade(port, path, 'muxws.v1.json', (bytes) => {
    buffer = concat(buffer, bytes);
    // The server's close frame, once it arrived whole (the server's frames are unmasked).
    if (buffer.byteLength < 4 || (buffer[0] & 0x0f) !== 0x8 || ended) return;
    code = (buffer[2] << 8) | buffer[3];
    // The close handshake's answer, as a client gives it: the connection ends.
    ended = true;
    socket.end();
  });
  // A write after the server closed resets the connection: that ends it, as a close would.
  const closed = new Promise<number>((resolve) => {
    socket.on('close', () => {
      ended = true;
      resolve(code);
    });
  });
  const client: OversizeClient = {
    closed,
    get ended() {
      return ended;
    },
    announce(length) {
      const frame = new Uint8Array(14);
      frame[0] = 0x81;
      frame[1] = 0x80 | 127;
      new DataView(frame.buffer).setBigUint64(2, BigInt(length));
      // bytes 10..13: the zero masking key
      socket.write(frame);
    },
    async sendBody(bytes) {
      let written = 0;
      while (written < bytes && !ended) {
        const chunk = CHUNK.subarray(0, Math.min(CHUNK.byteLength, bytes - written));
        const flushed = socket.write(chunk);
        written += chunk.byteLength;
        if (!flushed) {
          await new Promise<void>((resolve) => {
            const done = () => {
              socket.off('drain', done);
              socket.off('close', done);
              resolve();
            };
            socket.on('drain', done);
            socket.on('close', done);
          });
        }
      }
      return written;
    },
    destroy() {
      socket.destroy();
    },
  };
  await upgraded;
  return client;
}

/**
 * Announces one message a byte over a 64 KiB `maxMessageBytes`, sends `bodyBytes` of its body,
 * (given the limit), and expects the 1009 close, no handler run and the acceptor still healthy.
 */
async function closesOneByteOver(
  rt: HostileRuntime,
  bodyBytes: (maxMessageBytes: number) => number,
): Promise<void> {
  const maxMessageBytes = 64 * 1024;
  await withServer(rt, { limits: { maxMessageBytes } }, async (h) => {
    const client = await oversizeClient(h.server.port, h.server.path);
    try {
      client.announce(maxMessageBytes + 1);
      await client.sendBody(bodyBytes(maxMessageBytes));
      assert.equal(await within(client.closed, 3000, 'the 1009 close'), 1009);
      assert.equal(h.state.handled, 0);
      await h.healthy();
    } finally {
      client.destroy();
    }
  });
}

/** Registers the tests of this subject for `rt`. */
export function oversizeTests(rt: HostileRuntime): void {
  if (limitsWhereBytesArrive(rt)) {
    test(
      named(
        rt,
        'acceptor refuses a message over maxMessageBytes as its frame header arrives, closing with 1009 before the body is sent',
        ['WSM-LIM-004'],
      ),
      // A quarter of the body: a runtime that buffers waits for the rest, and never closes.
      () => closesOneByteOver(rt, (max) => max / 4),
    );
  }

  test(
    named(
      rt,
      'acceptor closes with 1009 a whole message one byte over a configured maxMessageBytes',
      ['WSM-LIM-004'],
    ),
    () => closesOneByteOver(rt, (max) => max + 1),
  );

  if (!limitsWhereBytesArrive(rt)) {
    // Deno takes no message limit: what bounds it is its own 64 MiB cap, which docs/security.md
    // gives operators as the most one socket can make a Deno acceptor hold.
    test(
      named(
        rt,
        'Deno ends at once a connection whose frame announces 64 MiB, before reading its body',
        ['WSM-LIM-004'],
      ),
      async () => {
        await withServer(rt, {}, async (h) => {
          const client = await oversizeClient(h.server.port, h.server.path);
          try {
            client.announce(64 * 1024 * 1024);
            await within(client.sendBody(1024 * 1024), 3000, 'the first MiB sent or refused');
            assert.equal(await within(client.closed, 3000, 'the end of the connection'), 1006);
            assert.equal(h.state.handled, 0);
            await h.healthy();
          } finally {
            client.destroy();
          }
        });
      },
    );
    return;
  }

  test(
    named(
      rt,
      'ten sockets with no hello each sending a 60 MiB message leave the acceptor process RSS growth under 100 MB',
      ['WSM-LIM-004'],
    ),
    async () => {
      const child = await rt.spawnAcceptor();
      const clients: OversizeClient[] = [];
      try {
        const before = await childStats(child.port, true);
        for (let i = 0; i < 10; i++) clients.push(await oversizeClient(child.port, '/ws'));
        const size = 60 * 1024 * 1024;
        const sent = await within(
          Promise.all(clients.map((client) => {
            client.announce(size);
            return client.sendBody(size);
          })),
          20_000,
          'the ten bodies sent or refused',
        );
        // Waited for, bounded, but asserted after the memory: a runtime that buffers the ten
        // messages may still be busy with them.
        const codes = await within(
          Promise.all(clients.map((client) => client.closed)),
          5000,
          'the ten sockets closed',
        ).catch((error: Error) => error);
        const after = await childStats(child.port, true);
        const growthMb = (after.rss - before.rss) / 1048576;
        const sentMb = sent.reduce((sum, bytes) => sum + bytes, 0) / 1048576;
        console.log(
          `ten 60 MiB messages [${rt.name}]: ${
            sentMb.toFixed(0)
          } MiB written before the close, RSS ${(before.rss / 1048576).toFixed(1)} → ${
            (after.rss / 1048576).toFixed(1)
          } MB, closes ${codes instanceof Error ? 'pending' : codes.join(',')}`,
        );
        assert.ok(growthMb < 100, `the acceptor's RSS grew ${growthMb.toFixed(1)} MB`);
        if (codes instanceof Error) throw codes;
        // The server's 1009 reaches the client unless the client's next write met a reset first.
        assert.ok(codes.every((code) => code === 1009 || code === 1006), `closes ${codes}`);
      } finally {
        for (const client of clients) client.destroy();
        await child.kill();
      }
    },
  );
}
