import { test } from 'node:test';
import assert from 'node:assert/strict';
import { advance } from '../../lib/session/_queue_head.ts';

const cases: { name: string; length: number; head: number; after: number; left: number }[] = [
  { name: 'a drained queue empties', length: 4, head: 4, after: 0, left: 0 },
  { name: 'a queue with entries left keeps its head', length: 4, head: 2, after: 2, left: 4 },
  {
    name: 'fewer than 1024 taken entries stay in place',
    length: 2000,
    head: 1023,
    after: 1023,
    left: 2000,
  },
  {
    name: '1024 taken entries, half the array, are dropped',
    length: 2048,
    head: 1024,
    after: 0,
    left: 1024,
  },
  {
    name: '1024 taken entries, under half the array, stay in place',
    length: 2049,
    head: 1024,
    after: 1024,
    left: 2049,
  },
];

for (const { name, length, head, after, left } of cases) {
  test(`advance(): ${name}`, () => {
    const queue = Array.from({ length }, (_, i) => i);
    assert.equal(advance(queue, head), after);
    assert.equal(queue.length, left);
    if (left > 0) assert.equal(queue[after], head);
  });
}
