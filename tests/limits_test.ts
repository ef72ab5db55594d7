import { test } from 'node:test';
import assert from 'node:assert/strict';
import { DEFAULT_LIMITS, resolveLimits } from 'muxws';

test('WSM-ACC-006 DEFAULT_LIMITS are the documented defaults and frozen', () => {
  assert.deepEqual({ ...DEFAULT_LIMITS }, {
    maxStreams: 100,
    maxMessageBytes: 1048576,
    maxProtocolErrors: 16,
    maxDepth: 64,
    maxResetRate: 200,
    highWaterMark: 1048576,
    maxBufferedBytes: 8388608,
  });
  assert.ok(Object.isFrozen(DEFAULT_LIMITS));
});

test('WSM-ACC-006 resolveLimits() fills the defaults and keeps the given values', () => {
  assert.deepEqual(resolveLimits(), { ...DEFAULT_LIMITS });
  assert.deepEqual(resolveLimits({}), { ...DEFAULT_LIMITS });
  const limits = resolveLimits({ maxStreams: 5, highWaterMark: 10, maxDepth: undefined });
  assert.equal(limits.maxStreams, 5);
  assert.equal(limits.highWaterMark, 10);
  assert.equal(limits.maxDepth, 64);
  assert.notEqual(resolveLimits(), resolveLimits());
});

test('WSM-ACC-006 resolveLimits() throws RangeError naming the field and the value', () => {
  const cases: [string, unknown, string][] = [
    ['maxStreams', 0, '0'],
    ['maxMessageBytes', -1, '-1'],
    ['maxDepth', 1.5, '1.5'],
    ['maxResetRate', NaN, 'NaN'],
    ['highWaterMark', Infinity, 'Infinity'],
    ['maxProtocolErrors', '16', '"16"'],
    ['maxStreams', 2 ** 53, String(2 ** 53)],
  ];
  for (const [field, value, shown] of cases) {
    assert.throws(() => resolveLimits({ [field]: value }), {
      name: 'RangeError',
      message:
        `Cannot create Limits as "${field}" must be a positive integer: current value is ${shown}`,
    });
  }
});

test('WSM-ACC-006 resolveLimits() throws TypeError for a non-object or an unknown field', () => {
  assert.throws(() => resolveLimits(5 as never), TypeError);
  assert.throws(() => resolveLimits(null as never), TypeError);
  assert.throws(() => resolveLimits({ maxStream: 5 } as never), /"maxStream" is not a limit/);
});

test('resolveLimits() requires maxBufferedBytes above highWaterMark, naming both (WSM-LIM-002)', () => {
  assert.throws(() => resolveLimits({ highWaterMark: 8 * 1024 * 1024 }), {
    name: 'RangeError',
    message:
      'Cannot create Limits as "maxBufferedBytes" must be above highWaterMark: current value is 8388608',
  });
  assert.equal(
    resolveLimits({ highWaterMark: 16_000_000, maxBufferedBytes: 64_000_000 }).maxBufferedBytes,
    64_000_000,
  );
});
