// BackplaneReceiver: the receiving half both backplanes share, on a fake clock handed to it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  type BackplaneEnvelope,
  BackplaneError,
  BackplaneGapError,
  type BackplaneMessage,
  BackplaneReceiver,
} from 'muxws/backplane';

function message(n: number, origin = 'node-a'): BackplaneMessage {
  return {
    tag: 'room',
    headers: null,
    payload: `[9,"room",null,${n}]`,
    except: [],
    origin,
    codec: 'json',
  };
}

function envelope(sender: string, seq: number, origin = 'node-a'): BackplaneEnvelope {
  return { sender, seq, message: message(seq, origin) };
}

/** A receiver of ready envelopes, its clock set by hand, recording what it reports. */
function harness(start = 1_000) {
  const clock = { now: start };
  const errors: BackplaneError[] = [];
  const got: number[] = [];
  const receiver = new BackplaneReceiver<BackplaneEnvelope>('Test channel "t"', {
    decode: (data) => data,
    onError: (error) => errors.push(error),
    now: () => clock.now,
  });
  receiver.subscribe((m) => got.push(Number(/,(\d+)\]$/.exec(m.payload as string)![1])));
  return { clock, errors, got, receiver };
}

test('BackplaneReceiver hands messages in order to every handler, in subscription order', () => {
  const { errors, got, receiver } = harness();
  const order: string[] = [];
  receiver.subscribe(() => order.push('second'));
  receiver.subscribe(() => order.push('third'));
  for (const seq of [1, 2, 3]) receiver.receive(envelope('s', seq));
  assert.deepEqual(got, [1, 2, 3]);
  assert.deepEqual(order, ['second', 'third', 'second', 'third', 'second', 'third']);
  assert.deepEqual(errors, []);
});

test('BackplaneReceiver drops a repeated or older sequence number of the same sender', () => {
  const { errors, got, receiver } = harness();
  for (const [sender, seq] of [['s', 1], ['s', 2], ['s', 2], ['s', 1], ['t', 1]] as const) {
    receiver.receive(envelope(sender, seq));
  }
  assert.deepEqual(got, [1, 2, 1]);
  assert.deepEqual(errors, []);
});

test('BackplaneReceiver reports skipped sequence numbers as one gap counting the missed messages', () => {
  const { clock, errors, got, receiver } = harness(1_700_000_000_000);
  receiver.receive(envelope('s', 1, 'node-x'));
  clock.now += 250;
  receiver.receive(envelope('s', 5, 'node-x'));
  receiver.receive(envelope('s', 6, 'node-x'));
  assert.deepEqual(got, [1, 5, 6]);
  assert.equal(errors.length, 1);
  const gap = errors[0];
  assert.ok(gap instanceof BackplaneGapError);
  assert.equal(gap.message, 'Test channel "t" lost 3 message(s) from node "node-x"');
  assert.equal(gap.missed, 3);
  assert.equal(gap.origin, 'node-x');
  assert.equal(gap.startedAt, 1_700_000_000_000);
  assert.equal(gap.endedAt, 1_700_000_000_250);
});

test('BackplaneReceiver remembers 1024 senders and forgets the one heard from least recently', () => {
  const { errors, got, receiver } = harness();
  for (let i = 0; i < 1024; i++) receiver.receive(envelope(`s${i}`, 1));
  receiver.receive(envelope('s0', 2)); // heard from again: now the most recent
  receiver.receive(envelope('new', 1)); // the 1025th sender: s1 is forgotten
  got.length = 0;
  receiver.receive(envelope('s0', 2)); // still remembered: a repeat, dropped
  receiver.receive(envelope('s2', 1)); // still remembered: a repeat, dropped
  receiver.receive(envelope('s1', 1)); // forgotten: taken as a first message
  assert.deepEqual(got, [1]);
  assert.deepEqual(errors, []);
});

test('BackplaneReceiver contains and reports a handler that throws or rejects, and the others still run', async () => {
  const { errors, got, receiver } = harness();
  const bug = new Error('subscriber bug');
  const late = new Error('async subscriber bug');
  receiver.subscribe(() => {
    throw bug;
  });
  receiver.subscribe(() => Promise.reject(late));
  const after: number[] = [];
  receiver.subscribe(() => after.push(1));
  receiver.receive(envelope('s', 1));
  await Promise.resolve(); // the rejection is reported in the next microtask
  assert.deepEqual(got, [1]);
  assert.deepEqual(after, [1]);
  assert.equal(errors.length, 2);
  assert.equal(errors[0].message, 'A backplane subscriber threw on a message for tag "room"');
  assert.equal(errors[0].cause, bug);
  assert.equal(
    errors[1].message,
    'A backplane subscriber rejected a promise on a message for tag "room"',
  );
  assert.equal(errors[1].cause, late);
});

test('BackplaneReceiver reports what decode cannot read and hands nothing on', () => {
  const errors: BackplaneError[] = [];
  const got: BackplaneMessage[] = [];
  const receiver = new BackplaneReceiver<unknown>('Test channel "t"', {
    decode(data) {
      if (typeof data !== 'object' || data === null) {
        throw new BackplaneError('Test channel "t" received something that is not an envelope');
      }
      if ((data as { seq?: unknown }).seq === 0) throw new TypeError('expected a positive "seq"');
      return data as BackplaneEnvelope;
    },
    onError: (error) => errors.push(error),
  });
  receiver.subscribe((m) => got.push(m));
  receiver.receive('garbage');
  receiver.receive({ sender: 's', seq: 0, message: message(0) });
  receiver.receive(envelope('s', 1));
  assert.equal(got.length, 1);
  assert.equal(errors.length, 2);
  assert.equal(errors[0].message, 'Test channel "t" received something that is not an envelope');
  assert.ok(errors[1] instanceof BackplaneError);
  assert.equal(
    errors[1].message,
    'Test channel "t" received a message it cannot read: expected a positive "seq"',
  );
  assert.ok(errors[1].cause instanceof TypeError);
});

test('BackplaneReceiver ignores what decode skips, and everything after close()', () => {
  const got: BackplaneMessage[] = [];
  const receiver = new BackplaneReceiver<BackplaneEnvelope>('Test channel "t"', {
    decode: (data) => (data.sender === 'me' ? undefined : data),
    onError: (error) => assert.fail(error),
  });
  const stop = receiver.subscribe((m) => got.push(m));
  receiver.receive(envelope('me', 1));
  receiver.receive(envelope('other', 1));
  stop();
  stop();
  receiver.receive(envelope('other', 2));
  receiver.subscribe((m) => got.push(m));
  receiver.close();
  receiver.subscribe((m) => got.push(m));
  receiver.receive(envelope('other', 3));
  assert.equal(got.length, 1);
  assert.equal(got[0].payload, '[9,"room",null,1]');
});

test('BackplaneReceiver contains an onError that throws, and subscribe() rejects a non-function', () => {
  const logged: unknown[] = [];
  const original = console.error;
  console.error = (value: unknown) => logged.push(value);
  try {
    const receiver = new BackplaneReceiver<BackplaneEnvelope>('Test channel "t"', {
      decode: (data) => data,
      onError: () => {
        throw new Error('onError bug');
      },
    });
    receiver.report(new BackplaneError('Something failed'));
    assert.equal((logged[0] as Error).message, 'onError bug');
  } finally {
    console.error = original;
  }
  const receiver = new BackplaneReceiver<BackplaneEnvelope>('x', { decode: (data) => data });
  assert.throws(
    // @ts-expect-error: not a function
    () => receiver.subscribe({ a: 1 }),
    {
      name: 'TypeError',
      message: 'Cannot subscribe as "handler" must be a function: current value is {"a":1}',
    },
  );
});
