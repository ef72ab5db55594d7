import { test } from 'node:test';
import assert from 'node:assert/strict';
import { StreamResetError } from 'muxws';
import type { Stream } from 'muxws';
import { SOCKET_POLL_MS } from '../../lib/session/socket_wait.ts';
import { fakeTime } from '../_fake_time.ts';
import { codecs } from '../_codecs.ts';
import { probe, sessionPair, settle } from '../_session_pair.ts';

const WINDOW = 65536;

for (const codec of codecs) {
  const c = `[${codec.name}]`;
  const units = (m: string | Uint8Array) => typeof m === 'string' ? m.length : m.byteLength;
  const frames = (sent: (string | Uint8Array)[], kind: number) =>
    sent.filter((m) => (codec.decode(m) as unknown[])[0] === kind);

  test(`WSM-WIRE-006 ${c} a receiver that never reads holds the sender at the window and never resets`, async () => {
    let remote: Stream | undefined;
    using pair = sessionPair({
      codec,
      acceptor: { onStream: (s) => (remote = s, new Promise(() => {})) },
    });
    const stream = pair.dialer.open('go');
    const chunk = 'x'.repeat(1000);
    const writes = Array.from({ length: 200 }, () => stream.write(chunk));
    let resolved = 0;
    for (const w of writes) w.then(() => resolved++, () => {});
    await settle(300);
    const data = frames(pair.client.sent, 2);
    const sentUnits = data.reduce((n, m) => n + units(m), 0);
    assert.ok(sentUnits >= WINDOW, `sent ${sentUnits}`);
    assert.ok(sentUnits < WINDOW + units(data[0]), `sent ${sentUnits}: more than one overshoot`);
    assert.equal(resolved, data.length);
    assert.equal(frames(pair.server.sent, 4).length, 0);
    // Reading everything releases every write, in order, exactly once.
    const got: unknown[] = [];
    const reading = (async () => {
      for await (const m of remote!) got.push(m);
    })();
    await Promise.all(writes);
    await stream.end();
    await reading;
    assert.equal(got.length, 200);
    assert.ok(got.every((m) => m === chunk));
  });

  test(`WSM-WIRE-006 ${c} one message may overshoot the remaining credit, the next waits`, async () => {
    let remote: Stream | undefined;
    using pair = sessionPair({
      codec,
      acceptor: { onStream: (s) => (remote = s, new Promise(() => {})) },
    });
    const stream = pair.dialer.open(null);
    await stream.write('y'.repeat(100_000)); // credit 65536 > 0: goes, credit now negative
    let second = false;
    const write = stream.write('z').then(() => (second = true));
    await settle();
    assert.equal(second, false);
    const reader = remote!.readable.getReader();
    assert.equal((await reader.read()).value, 'y'.repeat(100_000)); // consumed: CREDIT returns it
    await write;
    assert.equal(second, true);
  });

  test(`WSM-WIRE-006 ${c} credit is returned as messages are read, at the latest at half the window`, async () => {
    let remote: Stream | undefined;
    using pair = sessionPair({
      codec,
      acceptor: { onStream: (s) => (remote = s, new Promise(() => {})) },
    });
    const stream = pair.dialer.open(null);
    const chunk = 'c'.repeat(4000);
    for (let i = 0; i < 16; i++) await stream.write(chunk);
    await settle();
    const size = units(frames(pair.client.sent, 2)[0]);
    const iterator = remote![Symbol.asyncIterator]();
    let consumed = 0;
    while (consumed + size < WINDOW / 2) {
      await iterator.next();
      consumed += size;
    }
    await settle();
    assert.equal(frames(pair.server.sent, 5).length, 0, 'no CREDIT before half the window');
    await iterator.next();
    consumed += size;
    await settle();
    const credits = frames(pair.server.sent, 5).map((m) => codec.decode(m) as number[]);
    assert.deepEqual(credits, [[5, 1, consumed]]);
  });

  test(`WSM-WIRE-006 ${c} a reader that keeps up grows its window to 256 KiB, within a 1 MiB budget per session returned when streams finish`, async () => {
    using pair = sessionPair({
      codec,
      acceptor: {
        onStream: async (s) => {
          for await (const _ of s) { /* keeps up */ }
        },
      },
    });
    const chunk = 'g'.repeat(1000);
    /** Writes `n` messages one at a time (each read at once); returns the stream. */
    const feed = async (n: number) => {
      const stream = pair.dialer.open(null);
      for (let i = 0; i < n; i++) await stream.write(chunk);
      await settle();
      return stream;
    };
    const credits = (id: number) =>
      frames(pair.server.sent, 5).map((m) => codec.decode(m) as number[]).filter((f) =>
        f[1] === id
      );
    /** What a reader has read when it returns credit: whole messages, half the window. */
    const half = (id: number) => {
      const size = units(codec.encode([2, id, 0, chunk]) as string | Uint8Array);
      return Math.ceil(WINDOW / 2 / size) * size;
    };
    const extra = 256 * 1024 - WINDOW;
    // Six bulk streams at once: five grow by the whole 192 KiB, the sixth by what the 1 MiB
    // budget has left (64 KiB).
    const streams = [];
    for (let k = 0; k < 6; k++) streams.push(await feed(40));
    const grants = streams.map((s) => credits(s.id)[0]?.[2]);
    assert.deepEqual(grants, [
      ...streams.slice(0, 5).map((s) => half(s.id) + extra),
      half(streams[5].id) + (1024 * 1024 - 5 * extra),
    ]);
    // Later credits return what was read and nothing more: a window grows once.
    const stream = streams[0];
    for (let i = 0; i < 40; i++) await stream.write(chunk);
    await settle();
    assert.deepEqual(credits(stream.id).slice(1).map((f) => f[2]), [half(stream.id)]);
    // Finished streams give their growth back: a new stream grows by the whole 192 KiB again.
    for (const s of streams) await s.end();
    await settle();
    assert.equal(pair.acceptor.activeStreams, 0);
    const next = await feed(40);
    assert.deepEqual(credits(next.id).map((f) => f[2]), [half(next.id) + extra]);
  });

  test(`WSM-WIRE-006 ${c} a window does not grow when half of it took a second or more to read`, async () => {
    using clock = fakeTime();
    using pair = sessionPair({
      codec,
      acceptor: {
        onStream: async (s) => {
          for await (const _ of s) { /* keeps up, but the sender is slow */ }
        },
      },
    });
    const chunk = 's'.repeat(1000);
    const stream = pair.dialer.open(null);
    for (let i = 0; i < 40; i++) {
      await stream.write(chunk);
      await clock.tickAsync(50);
    }
    const credits = frames(pair.server.sent, 5).map((m) => codec.decode(m) as number[]);
    const size = units(codec.encode([2, 1, 0, chunk]) as string | Uint8Array);
    assert.deepEqual(credits, [[5, stream.id, Math.ceil(WINDOW / 2 / size) * size]]);
  });

  test(`WSM-WIRE-006 ${c} only DATA costs credit: a large OPEN and END are free`, async () => {
    using pair = sessionPair({
      codec,
      acceptor: { onStream: () => new Promise(() => {}) },
    });
    const stream = pair.dialer.open('o'.repeat(200_000));
    const chunk = 'd'.repeat(1000);
    let sentUnits = 0;
    while (sentUnits < WINDOW) {
      await stream.write(chunk); // would hang if the OPEN had cost credit
      sentUnits += units(pair.client.sent.at(-1)!);
    }
    await stream.end();
    await settle();
    assert.equal(frames(pair.client.sent, 3).length, 1);
  });

  test(`WSM-WIRE-006 ${c} DATA beyond the window and one overshooting message resets the stream with flow`, async () => {
    const streams: Stream[] = [];
    using p = probe('acceptor', {
      codec,
      onStream: (s) => (streams.push(s), new Promise(() => {})),
    });
    p.session.receive(codec.encode([1, 1, 0, null, 'x']) as string);
    const message = codec.encode([2, 1, 0, 'f'.repeat(10_000)]);
    let received = 0;
    while (received < WINDOW) {
      p.session.receive(message as string);
      received += units(message);
    }
    assert.equal(p.sent.length, 0, 'the overshooting message is allowed');
    p.session.receive(message as string);
    assert.deepEqual((p.sent[0] as unknown[]).slice(0, 3), [4, 1, 'flow']);
    await assert.rejects(
      streams[0].closed,
      (e: unknown) => e instanceof StreamResetError && e.code === 'flow' && !e.remote,
    );
    assert.equal(p.session.protocolErrors, 0);
  });

  test(`WSM-WIRE-006 ${c} a CREDIT lets a sender that exhausted its window continue`, async () => {
    using p = probe('dialer', { codec });
    const stream = p.session.open(null);
    const chunk = 'k'.repeat(30_000);
    await stream.write(chunk);
    await stream.write(chunk);
    await stream.write(chunk); // 90,000 > 65,536: credit now negative
    let done = false;
    const fourth = stream.write(chunk).then(() => (done = true));
    await settle();
    assert.equal(done, false);
    p.session.receive(codec.encode([5, 1, 20_000]) as string); // still not positive
    await settle();
    assert.equal(done, false);
    p.session.receive(codec.encode([5, 1, 10_000]) as string);
    await fourth;
    assert.equal(p.sent.filter((m) => (m as unknown[])[0] === 2).length, 4);
  });

  test(`WSM-STR-002 ${c} write() waits while bufferedAmount is above highWaterMark, polling only while it waits`, async () => {
    using clock = fakeTime();
    using p = probe('dialer', { codec, limits: { highWaterMark: 1000 } });
    const stream = p.session.open(null);
    assert.equal(clock.countTimers(), 0);
    p.buffered.amount = 5000;
    let done = false;
    const write = stream.write('w').then(() => (done = true));
    await clock.tickAsync(SOCKET_POLL_MS * 3);
    assert.equal(done, false);
    assert.equal(p.sent.length, 1); // the OPEN only
    assert.equal(clock.countTimers(), 1);
    p.buffered.amount = 1000; // at the mark is fine
    await clock.tickAsync(SOCKET_POLL_MS);
    await write;
    assert.equal(p.sent.length, 2);
    assert.equal(clock.countTimers(), 0);
  });

  test(`WSM-STR-002 ${c} drain() wakes a waiting write at once`, async () => {
    using clock = fakeTime();
    using p = probe('dialer', { codec, limits: { highWaterMark: 10 } });
    const stream = p.session.open(null);
    p.buffered.amount = 11;
    const first = stream.write(1);
    const second = stream.write(2);
    await clock.tickAsync(0);
    assert.equal(p.sent.length, 1);
    p.buffered.amount = 0;
    p.session.drain();
    await Promise.all([first, second]);
    assert.deepEqual(p.sent.slice(1), [[2, 1, 0, 1], [2, 1, 0, 2]]);
    p.session.close(1000, '');
    assert.equal(clock.countTimers(), 0);
  });

  test(`WSM-STR-006 ${c} writes waiting for credit or for the socket reject with connection_lost on close`, async () => {
    using clock = fakeTime();
    using p = probe('dialer', { codec, limits: { highWaterMark: 10 } });
    const a = p.session.open(null);
    await a.write('a'.repeat(70_000));
    const onCredit = a.write('more').catch((e) => e);
    const b = p.session.open(null);
    p.buffered.amount = 100;
    const onSocket = b.write('b').catch((e) => e);
    const ending = b.end().catch((e) => e);
    p.session.closed(1006, '');
    for (const outcome of [await onCredit, await onSocket, await ending]) {
      assert.ok(outcome instanceof StreamResetError);
      assert.equal(outcome.code, 'connection_lost');
    }
    assert.equal(clock.countTimers(), 0);
  });

  test(`WSM-STR-002 ${c} readable pulls nothing ahead: credit returns only for messages read`, async () => {
    let remote: Stream | undefined;
    using pair = sessionPair({
      codec,
      acceptor: { onStream: (s) => (remote = s, new Promise(() => {})) },
    });
    const stream = pair.dialer.open(null);
    for (let i = 0; i < 6; i++) await stream.write('r'.repeat(10_000)); // within the window
    await settle();
    remote!.readable; // made, never read
    await settle();
    assert.equal(frames(pair.server.sent, 5).length, 0);
  });

  test(`WSM-STR-002 ${c} leaving for-await early discards later messages and keeps the sender moving`, async () => {
    const got: unknown[] = [];
    using pair = sessionPair({
      codec,
      acceptor: {
        onStream: async (s) => {
          for await (const m of s) {
            got.push(m);
            if (got.length === 2) break;
          }
          return 'stopped';
        },
      },
    });
    const stream = pair.dialer.open(null);
    const answer = stream[Symbol.asyncIterator]().next();
    for (let i = 0; i < 100; i++) await stream.write('s'.repeat(5000)); // 500 kB: needs credit
    await stream.end();
    assert.deepEqual((await answer).value, 'stopped');
    await stream.closed;
    assert.equal(got.length, 2);
    await settle();
    assert.equal(pair.acceptor.activeStreams, 0);
  });

  test(`WSM-STR-002 ${c} readable errors with StreamResetError on reset and cancel() discards without resetting`, async () => {
    const remotes: Stream[] = [];
    using pair = sessionPair({
      codec,
      acceptor: { onStream: (s) => (remotes.push(s), new Promise(() => {})) },
    });
    const a = pair.dialer.open('a');
    const b = pair.dialer.open('b');
    await settle();
    const reader = remotes[0].readable.getReader();
    const pending = reader.read().catch((e) => e);
    a.reset('gone', 'bye');
    const error = await pending;
    assert.ok(error instanceof StreamResetError);
    assert.equal(error.code, 'gone');
    await remotes[1].readable.cancel();
    for (let i = 0; i < 20; i++) await b.write('c'.repeat(10_000)); // 200 kB: credit keeps coming
    await b.end();
    await settle();
    assert.equal(frames(pair.server.sent, 4).length, 0, 'cancel() sent no RESET');
    assert.equal(remotes[1].readable.locked, false);
  });

  test(`WSM-WIRE-006 ${c} thousands of queued writes leave in order; a reset rejects exactly those not yet sent`, async () => {
    let remote: Stream | undefined;
    using pair = sessionPair({
      codec,
      acceptor: { onStream: (s) => (remote = s, new Promise(() => {})) },
    });
    const stream = pair.dialer.open(null);
    const outcomes: ('sent' | 'reset')[] = [];
    const writes = Array.from(
      { length: 5000 },
      (_, i) =>
        stream.write(`${i}:` + 'q'.repeat(100)).then(
          () => void (outcomes[i] = 'sent'),
          (e) => {
            assert.ok(e instanceof StreamResetError);
            outcomes[i] = 'reset';
          },
        ),
    );
    await settle();
    const reader = remote![Symbol.asyncIterator]();
    for (let i = 0; i < 3000; i++) {
      const r = await reader.next();
      assert.equal(String(r.value).split(':')[0], String(i)); // in order across compactions
    }
    await settle();
    stream.reset('cancel');
    await Promise.all(writes);
    const sent = outcomes.filter((o) => o === 'sent').length;
    assert.ok(sent >= 3000 && sent < 5000, `sent ${sent}`);
    assert.deepEqual(outcomes.slice(0, sent), Array(sent).fill('sent'));
    assert.deepEqual(outcomes.slice(sent), Array(5000 - sent).fill('reset'));
  });
}
