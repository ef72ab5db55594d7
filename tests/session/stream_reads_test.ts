import { test } from 'node:test';
import assert from 'node:assert/strict';
import { iteratorOf, readableOf, ReadQueue } from '../../lib/session/stream_reads.ts';

/** A queue whose consumed units go to the returned list. */
function queueWithLog(): { queue: ReadQueue; consumed: number[] } {
  const consumed: number[] = [];
  return { queue: new ReadQueue((units) => consumed.push(units)), consumed };
}

const cases: {
  name: string;
  /** Steps: `put:<value>:<units>`, `take`, `wait`, `discard`, `ended`, `fail`. */
  steps: string[];
  results: unknown[];
  consumed: number[];
  queued: boolean;
}[] = [
  {
    name: 'a message with no reader waiting queues until taken',
    steps: ['put:a:5', 'put:b:6', 'take'],
    results: ['a'],
    consumed: [5],
    queued: true,
  },
  {
    name: 'a waiting read takes the next message at once',
    steps: ['wait', 'put:a:5'],
    results: [{ value: 'a', done: false }],
    consumed: [5],
    queued: false,
  },
  {
    name: 'waiting reads take messages oldest first',
    steps: ['wait', 'wait', 'put:a:1', 'put:b:2', 'put:c:3'],
    results: [{ value: 'a', done: false }, { value: 'b', done: false }],
    consumed: [1, 2],
    queued: true,
  },
  {
    name: 'discard consumes what is queued unread',
    steps: ['put:a:5', 'put:b:6', 'discard'],
    results: [],
    consumed: [5, 6],
    queued: false,
  },
  {
    name: 'the end finishes every waiting read',
    steps: ['wait', 'wait', 'ended'],
    results: [{ value: undefined, done: true }, { value: undefined, done: true }],
    consumed: [],
    queued: false,
  },
  {
    name: 'a failure drops queued messages without consuming them',
    steps: ['put:a:5', 'fail'],
    results: [],
    consumed: [],
    queued: false,
  },
  {
    name: 'a failure rejects every waiting read',
    steps: ['wait', 'wait', 'fail'],
    results: ['rejected: reset', 'rejected: reset'],
    consumed: [],
    queued: false,
  },
];

for (const { name, steps, results, consumed, queued } of cases) {
  test(`ReadQueue: ${name}`, async () => {
    const { queue, consumed: log } = queueWithLog();
    const taken: unknown[] = [];
    const waits: Promise<unknown>[] = [];
    for (const step of steps) {
      const [op, value, units] = step.split(':');
      if (op === 'put') queue.put(value, Number(units));
      else if (op === 'take') taken.push(queue.take());
      else if (op === 'wait') {
        waits.push(queue.wait().catch((error) => `rejected: ${String(error)}`));
      } else if (op === 'discard') queue.discard();
      else if (op === 'ended') queue.ended();
      else if (op === 'fail') queue.fail('reset');
    }
    const settled = await Promise.all(waits.slice(0, results.length - taken.length));
    assert.deepEqual([...taken, ...settled], results);
    assert.deepEqual(log, consumed);
    assert.equal(queue.queued, queued);
  });
}

/** A read function over `values`, then the end; counts stops. */
function source(
  values: unknown[],
): { read: () => Promise<IteratorResult<unknown>>; stops: number[] } {
  const stops: number[] = [];
  let i = 0;
  return {
    read: () =>
      Promise.resolve(
        i < values.length ? { value: values[i++], done: false } : { value: undefined, done: true },
      ),
    stops,
  };
}

test('readableOf() reads what read returns, then closes; cancel() stops', async () => {
  const { read } = source(['a', 'b']);
  const got: unknown[] = [];
  for await (const value of readableOf(read, () => assert.fail('no stop expected'))) {
    got.push(value);
  }
  assert.deepEqual(got, ['a', 'b']);
  let stopped = 0;
  await readableOf(source(['a']).read, () => void stopped++).cancel();
  assert.equal(stopped, 1);
});

test('iteratorOf() iterates what read returns; leaving early stops', async () => {
  let stopped = 0;
  const got: unknown[] = [];
  for await (const value of iteratorOf(source(['a', 'b', 'c']).read, () => void stopped++)) {
    got.push(value);
    if (value === 'b') break;
  }
  assert.deepEqual(got, ['a', 'b']);
  assert.equal(stopped, 1);
});
