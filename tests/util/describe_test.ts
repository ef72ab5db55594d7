// The one value-describer behind every "current value is …" in an error message.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { describe } from '../../lib/util/describe.ts';

test('describe() renders each kind of value one way', () => {
  assert.equal(describe('abc'), '"abc"');
  assert.equal(describe(5), '5');
  assert.equal(describe(NaN), 'NaN');
  assert.equal(describe(-Infinity), '-Infinity');
  assert.equal(describe(true), 'true');
  assert.equal(describe(undefined), 'undefined');
  assert.equal(describe(null), 'null');
  assert.equal(describe(5n), '5n');
  assert.equal(describe(() => 1), 'a function');
  assert.equal(describe(Symbol('s')), 'Symbol(s)');
  assert.equal(describe({ a: 1 }), '{"a":1}');
  assert.equal(describe([1, 'x']), '[1,"x"]');
  assert.equal(describe(new URL('wss://example.com/ws')), '"wss://example.com/ws"');
});

test('describe() cuts a long rendering at 60 characters', () => {
  assert.equal(describe('x'.repeat(100)), JSON.stringify('x'.repeat(60) + '…'));
  const shown = describe({ text: 'y'.repeat(100) });
  assert.equal(shown.length, 61);
  assert.ok(shown.endsWith('…'));
});

test('describe() falls back to the shape for what JSON cannot show, and never throws', () => {
  const cycle: Record<string, unknown> = {};
  cycle.self = cycle;
  assert.equal(describe(cycle), 'an object');
  assert.equal(describe([1n, 2n]), 'an array of 2');
  assert.equal(describe({ toJSON: () => undefined }), 'an object');
  assert.equal(
    describe({
      toJSON() {
        throw new Error('no');
      },
    }),
    'an object',
  );
});
