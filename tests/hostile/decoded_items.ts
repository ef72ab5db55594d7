/**
 * Hostile-input tests of object amplification: messages of 1 MiB whose bytes decode to as many
 * objects as bytes allow (one-byte MessagePack maps, `{},` in JSON), sent to a child acceptor that
 * accepts messages up to 2 MiB (`_child_items.ts`), so the item limit, not the size limit, is what
 * stops them. The child's RSS is measured in its own process.
 * @module
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { type Codec, jsonCodec } from 'muxws';
import { msgpackCodec } from 'muxws/msgpack';
import { CREDIT, FLAG_HELLO, INITIAL_WINDOW } from '../../lib/wire/frame.ts';
import { within } from '../_wait.ts';
import { childStats, dialOn, type HostileRuntime, named } from './_harness.ts';
import { type Closed, type RawClient, rawClient } from './_raw.ts';

/** The size of every attack message. */
const MESSAGE_BYTES = 1024 * 1024;
const MB = 1024 * 1024;

/**
 * A message of `MESSAGE_BYTES` whose frame starts with `head` (every field but the last) and
 * whose last field is an array of empty objects filling the rest.
 */
function amplifying(codecName: string, head: readonly unknown[]): string | Uint8Array {
  if (codecName === 'json') {
    const prefix = JSON.stringify(head).slice(0, -1) + ',[';
    const count = Math.floor((MESSAGE_BYTES - prefix.length - 2) / 3) + 1;
    return prefix + '{},'.repeat(count - 1) + '{}]]';
  }
  // fixarray of the head's fields and the array; each field a positive fixint or nil; then
  // array 32 of fixmaps with no entries, one byte each.
  const fields = head.map((field) => field === null ? 0xc0 : field as number);
  const out = new Uint8Array(MESSAGE_BYTES);
  out.set([0x90 + head.length + 1, ...fields, 0xdd]);
  const start = 1 + fields.length + 5;
  new DataView(out.buffer).setUint32(1 + fields.length + 1, MESSAGE_BYTES - start);
  out.fill(0x80, start);
  return out;
}

/** Credit the acceptor granted `client` on stream `id`, beyond the initial window. */
function credit(client: RawClient, id: number): number {
  let granted = 0;
  for (const frame of client.frames) {
    if (Array.isArray(frame) && frame[0] === CREDIT && frame[1] === id) granted += frame[2];
  }
  return granted;
}

/** Bytes as signed megabytes for the log line: `+4.2 MB`. */
function mb(bytes: number): string {
  return `${bytes < 0 ? '-' : '+'}${(Math.abs(bytes) / MB).toFixed(1)} MB`;
}

/** How `client` closed, or undefined when it was still open after 5 s. */
function closedWithin(client: RawClient): Promise<Closed | undefined> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  return Promise.race([
    client.closed,
    new Promise<undefined>((resolve) => timer = setTimeout(() => resolve(undefined), 5000)),
  ]).finally(() => clearTimeout(timer));
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)];
}

/** Registers the tests of this subject for `rt`. */
export function decodedItemsTests(rt: HostileRuntime): void {
  for (const codec of [jsonCodec, msgpackCodec] as Codec[]) {
    test(
      named(
        rt,
        `acceptor (${codec.name}) closes a socket that sends 1 MiB messages decoding to maximal numbers of objects, before its hello with RSS growth under 100 MB, and on an authenticated stream the route reads with RSS growth under 250 MB while another client's round trips stay under 100 ms at the median`,
        ['WSM-LIM-001'],
      ),
      async () => {
        const child = await rt.spawnAcceptor({
          env: { MUXWS_CHILD: 'items', MUXWS_CODEC: codec.name },
        });
        const url = `ws://127.0.0.1:${child.port}/ws`;
        const clients: RawClient[] = [];
        const raw = async () => {
          const client = await rawClient(url, { codec, WebSocket: rt.WebSocket });
          clients.push(client);
          return client;
        };
        let healthy: Awaited<ReturnType<typeof dialOn>> | undefined;
        try {
          // Before any hello: 20 OPENs, each 1 MiB of empty objects.
          const start = await childStats(child.port, true);
          const stranger = await raw();
          for (let i = 0; i < 20 && !stranger.isClosed; i++) {
            stranger.send(amplifying(codec.name, [1, 2 * i + 3, 0, null]));
          }
          const strangerClosed = await closedWithin(stranger);
          const afterStranger = await childStats(child.port, true);
          const strangerGrowth = afterStranger.rss - start.rss;

          // Authenticated: a hello, a stream whose route reads every message, and 40 messages
          // sent as a well-behaved sender does, each once the credit allows it.
          healthy = await dialOn(rt, url, {
            codec,
            reconnect: false,
            heartbeat: false,
            hello: { payload: { token: 'ok' } },
          });
          const attacker = await raw();
          attacker.send([1, 1, FLAG_HELLO, null, { token: 'ok' }]);
          await attacker.next((f) => f[1] === 1, 5000, 'the welcome');
          attacker.send([1, 3, 0, null, { op: 'read' }]);
          const message = amplifying(codec.name, [2, 3, 0]);
          const units = typeof message === 'string' ? message.length : message.byteLength;
          const rtts: number[] = [];
          let attacking = true;
          const connection = healthy;
          const measuring = (async () => {
            for (let i = 0; attacking || rtts.length < 20; i++) {
              const startedAt = performance.now();
              const answer = await within(
                connection.request({ op: 'echo', value: i }),
                10_000,
                'an echo of the other client',
              );
              rtts.push(performance.now() - startedAt);
              assert.deepEqual(answer, { echo: i });
            }
          })();
          let sent = 0;
          let messages = 0;
          try {
            for (; messages < 40 && !attacker.isClosed; messages++) {
              if (sent >= INITIAL_WINDOW + credit(attacker, 3)) {
                await attacker.next(
                  () => sent < INITIAL_WINDOW + credit(attacker, 3),
                  10_000,
                  'credit for the next message',
                ).catch(() => {});
                if (attacker.isClosed) break;
              }
              attacker.send(message);
              sent += units;
            }
          } finally {
            attacking = false;
          }
          const attackerClosed = await closedWithin(attacker);
          await measuring;
          const end = await childStats(child.port, true);
          const attackGrowth = end.rss - afterStranger.rss;
          console.log(
            `object amplification (${codec.name}): before the hello RSS ${
              mb(strangerGrowth)
            } (close ${
              strangerClosed?.code ?? 'none'
            }); authenticated ${messages} messages sent, RSS ${mb(attackGrowth)} (close ${
              attackerClosed?.code ?? 'none'
            }), the other client's median round trip ${
              median(rtts).toFixed(1)
            } ms over ${rtts.length}`,
          );
          assert.ok(
            strangerGrowth < 100 * MB,
            `RSS grew ${(strangerGrowth / MB).toFixed(1)} MB before the hello`,
          );
          assert.ok(
            attackGrowth < 250 * MB,
            `RSS grew ${(attackGrowth / MB).toFixed(1)} MB on the stream`,
          );
          assert.ok(median(rtts) < 100, `median round trip ${median(rtts).toFixed(1)} ms`);
          // The acceptor closed both with 1009; a client still sending may read its TCP reset.
          assert.deepEqual(end.closes, [1009, 1009]);
          assert.ok([1009, 1006].includes(strangerClosed?.code ?? 0), 'the stranger was closed');
          assert.ok([1009, 1006].includes(attackerClosed?.code ?? 0), 'the attacker was closed');
        } finally {
          for (const client of clients) client.close();
          await healthy?.close();
          await child.kill();
        }
      },
    );
  }
}
