import { test } from 'node:test';
import assert from 'node:assert/strict';
import { type Write, WriteQueue } from '../../lib/session/_stream_writes.ts';

/** A write that records how it settled in `log`. */
function write(name: string, costs: boolean, log: string[]): Write {
  return {
    data: name,
    costs,
    end: false,
    resolve: () => log.push(`${name} sent`),
    reject: (error) => log.push(`${name} failed: ${String(error)}`),
  };
}

const cases: {
  name: string;
  writes: [string, boolean][];
  /** What `ready` answers, in turn. */
  ready: boolean[];
  /** The `costs` of each write `ready` was asked about. */
  asked: boolean[];
  taken: string[];
}[] = [
  { name: 'an empty queue gives nothing', writes: [], ready: [], asked: [], taken: [] },
  {
    name: 'writes leave oldest first while they may',
    writes: [['a', true], ['b', false], ['c', true]],
    ready: [true, true, true],
    asked: [true, false, true],
    taken: ['a', 'b', 'c'],
  },
  {
    name: 'a write that must wait holds the ones behind it',
    writes: [['a', true], ['b', true], ['c', false]],
    ready: [true, false],
    asked: [true, true],
    taken: ['a'],
  },
];

for (const { name, writes, ready, asked, taken } of cases) {
  test(`WriteQueue.take(): ${name}`, () => {
    const queue = new WriteQueue();
    for (const [data, costs] of writes) queue.push(write(data, costs, []));
    const answers = [...ready];
    const seen: boolean[] = [];
    const got: string[] = [];
    for (let next; (next = queue.take((costs) => (seen.push(costs), answers.shift()!)));) {
      got.push(String(next.data));
    }
    assert.deepEqual(got, taken);
    assert.deepEqual(seen, asked);
    assert.equal(queue.waiting, taken.length < writes.length);
  });
}

test('WriteQueue.fail() rejects every waiting write oldest first and empties the queue', () => {
  const log: string[] = [];
  const queue = new WriteQueue();
  queue.push(write('a', true, log));
  queue.push(write('b', true, log));
  queue.push(write('c', false, log));
  assert.equal(queue.take(() => true)?.data, 'a');
  queue.fail('reset');
  assert.deepEqual(log, ['b failed: reset', 'c failed: reset']);
  assert.equal(queue.waiting, false);
  assert.equal(queue.take(() => true), undefined);
});
