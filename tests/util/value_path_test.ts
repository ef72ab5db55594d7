// The walk behind every encode error's path: what it names, where, and how a long path is cut.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { failsWith, unencodable } from '../../lib/util/value_path.ts';

const fails = failsWith((frame) =>
  JSON.stringify(frame, (_, v) => {
    if (typeof v === 'bigint' || typeof v === 'function' || v instanceof Map) {
      throw new TypeError('no');
    }
    return v;
  })
);

test('an encode error names the value the codec refuses by its kind and its path (WSM-APP-007)', () => {
  assert.equal(unencodable(1n, fails), 'BigInt at the root');
  assert.equal(unencodable({ a: [1, { b: 2n }] }, fails), 'BigInt at .a[1].b');
  assert.equal(unencodable({ 'a key': new Map() }, fails), 'Map at ["a key"]');
  assert.equal(unencodable({ f: async () => {} }, fails), 'AsyncFunction at .f');
  const bare = Object.create(null);
  bare.n = 1n;
  assert.equal(unencodable({ bare }, fails, (value) => value === bare), 'Object at .bare');
});

test('an encode error names a value that contains itself as a circular reference (WSM-APP-007)', () => {
  const self: Record<string, unknown> = {};
  self.self = self;
  assert.equal(unencodable(self, () => true), 'a circular reference at .self');
});

test('an encode error cuts a path longer than 120 characters with … (WSM-APP-007)', () => {
  const key = 'k'.repeat(50);
  const value = { [key]: { [key]: { [key]: 1n } } };
  const found = unencodable(value, fails);
  assert.equal(found, `BigInt at ${`.${key}.${key}.${key}`.slice(0, 120)}…`);
});
