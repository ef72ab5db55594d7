import { test } from 'node:test';
import assert from 'node:assert/strict';
import { DEFAULT_HELLO_TIMEOUT_MS, Hello, type HelloOptions, MuxwsError } from 'muxws';

/** Asserts that `fn` throws the DataCloneError `structuredClone` raises. */
function assertDataCloneError(fn: () => unknown): void {
  assert.throws(fn, (error: unknown) => {
    assert.ok(error instanceof Error || error instanceof DOMException);
    assert.equal((error as { name: string }).name, 'DataCloneError');
    assert.ok(!(error instanceof MuxwsError));
    return true;
  });
}

test('WSM-DIAL-004 DEFAULT_HELLO_TIMEOUT_MS is 10000 and is the default Hello timeout', () => {
  assert.equal(DEFAULT_HELLO_TIMEOUT_MS, 10_000);
  assert.equal(new Hello().timeoutMs, DEFAULT_HELLO_TIMEOUT_MS);
  assert.equal(new Hello({ payload: 1 }).timeoutMs, 10_000);
  assert.equal(new Hello({ timeoutMs: 2500 }).timeoutMs, 2500);
});

test('WSM-DIAL-004 Hello captures the payload by value at construction', () => {
  const identity = { client: 'docs', rooms: ['general'] };
  const hello = new Hello({ payload: identity, headers: { v: 1 }, timeoutMs: 10_000 });
  assert.equal(hello.configured, true);
  assert.equal(hello.timeoutMs, 10_000);
  identity.rooms.push('secret');
  identity.client = 'changed';
  assert.deepEqual(hello.payloadForWire(), { client: 'docs', rooms: ['general'] });
});

test('WSM-DIAL-004 Hello captures the headers by value at construction', () => {
  const headers = { v: 1, tags: ['a'] };
  const hello = new Hello({ headers });
  headers.v = 2;
  headers.tags.push('b');
  assert.deepEqual(hello.headersForWire(), { v: 1, tags: ['a'] });
});

test('WSM-DIAL-004 payloadForWire() hands out a fresh deep copy on every call', () => {
  const hello = new Hello({ payload: { rooms: ['general'], nested: { deep: [1, 2] } } });
  const first = hello.payloadForWire() as { rooms: string[]; nested: { deep: number[] } };
  const second = hello.payloadForWire() as { rooms: string[]; nested: { deep: number[] } };
  assert.notEqual(first, second);
  assert.notEqual(first.rooms, second.rooms);
  assert.notEqual(first.nested.deep, second.nested.deep);
  // What one connection's codec does to its copy never reaches the next connection.
  first.rooms.push('secret');
  first.nested.deep.length = 0;
  assert.deepEqual(hello.payloadForWire(), { rooms: ['general'], nested: { deep: [1, 2] } });
});

test('WSM-DIAL-004 headersForWire() hands out a fresh deep copy on every call', () => {
  const hello = new Hello({ payload: 'hi', headers: { v: 1, list: [1] } });
  const first = hello.headersForWire();
  const second = hello.headersForWire();
  assert.ok(first && second);
  assert.notEqual(first, second);
  assert.notEqual(first.list, second.list);
  first.v = 99;
  (first.list as number[]).push(2);
  assert.deepEqual(hello.headersForWire(), { v: 1, list: [1] });
});

test('WSM-DIAL-004 headersForWire() returns undefined when no headers were given', () => {
  assert.equal(new Hello().headersForWire(), undefined);
  assert.equal(new Hello({ payload: { client: 'docs' } }).headersForWire(), undefined);
  assert.equal(new Hello({ payload: 1, headers: null }).headersForWire(), undefined);
  assert.equal(new Hello({ payload: 1, headers: undefined }).headersForWire(), undefined);
  assert.deepEqual(new Hello({ headers: {} }).headersForWire(), {});
});

test('WSM-DIAL-004 configured is true only when a payload or headers were given', () => {
  const none: HelloOptions = {};
  assert.equal(new Hello().configured, false);
  assert.equal(new Hello(none).configured, false);
  assert.equal(new Hello({ timeoutMs: 5000 }).configured, false);
  assert.equal(new Hello({ payload: { client: 'docs' } }).configured, true);
  assert.equal(new Hello({ headers: { v: 1 } }).configured, true);
  assert.equal(new Hello({ headers: {} }).configured, true);
  assert.equal(new Hello({ payload: 'x', headers: { v: 1 } }).configured, true);
});

test('WSM-DIAL-004 a payload or headers of undefined or null count as not given', () => {
  for (
    const options of [
      { payload: undefined },
      { payload: null },
      { headers: undefined },
      { headers: null },
      { payload: null, headers: null },
    ] as HelloOptions[]
  ) {
    const hello = new Hello(options);
    assert.equal(hello.configured, false, JSON.stringify(options));
    assert.equal(hello.payloadForWire(), null);
    assert.equal(hello.headersForWire(), undefined);
  }
});

test('WSM-DIAL-004 falsy payloads other than null and undefined are given and sent as they are', () => {
  for (const payload of [0, '', false, Number.NaN]) {
    const hello = new Hello({ payload });
    assert.equal(hello.configured, true, String(payload));
    assert.ok(Object.is(hello.payloadForWire(), payload));
  }
});

test('WSM-DIAL-004 headers without a payload send a null payload', () => {
  const hello = new Hello({ headers: { v: 1 } });
  assert.equal(hello.configured, true);
  assert.equal(hello.payloadForWire(), null);
  assert.deepEqual(hello.headersForWire(), { v: 1 });
});

test('WSM-DIAL-004 Hello throws DataCloneError at construction for a function or a Symbol', () => {
  assertDataCloneError(() => new Hello({ payload: () => undefined }));
  assertDataCloneError(() => new Hello({ payload: Symbol('token') }));
  assertDataCloneError(() => new Hello({ payload: { nested: { callback: () => 1 } } }));
  assertDataCloneError(() => new Hello({ payload: [1, Symbol.iterator] }));
  assertDataCloneError(() => new Hello({ payload: 1, headers: { trace: () => 'id' } }));
  assertDataCloneError(() => new Hello({ headers: { s: Symbol('s') } }));
});

test('WSM-DIAL-004 Hello copies a class instance as a plain object without its prototype', () => {
  class Identity {
    #secret = 'kept out';
    constructor(readonly client: string, readonly rooms: string[]) {}
    get summary(): string {
      return `${this.client}:${this.rooms.length}:${this.#secret.length}`;
    }
  }
  const hello = new Hello({ payload: new Identity('docs', ['general']) });
  const copy = hello.payloadForWire();
  assert.ok(!(copy instanceof Identity));
  assert.equal(Object.getPrototypeOf(copy), Object.prototype);
  assert.deepEqual(copy, { client: 'docs', rooms: ['general'] });
  assert.equal((copy as { summary?: string }).summary, undefined);
});

test('WSM-DIAL-004 Hello keeps structured-clone types such as Date, Map and Uint8Array', () => {
  const when = new Date(1_700_000_000_000);
  const hello = new Hello({
    payload: { when, map: new Map([['a', 1]]), bytes: new Uint8Array([1, 2, 3]) },
  });
  const copy = hello.payloadForWire() as {
    when: Date;
    map: Map<string, number>;
    bytes: Uint8Array;
  };
  assert.ok(copy.when instanceof Date);
  assert.notEqual(copy.when, when);
  assert.equal(copy.when.getTime(), 1_700_000_000_000);
  assert.deepEqual([...copy.map], [['a', 1]]);
  assert.deepEqual([...copy.bytes], [1, 2, 3]);
});

test('WSM-DIAL-004 Hello rejects a timeoutMs that is not a positive timer delay with a RangeError', () => {
  for (const timeoutMs of [0, -1, -Infinity, NaN, Infinity, 2 ** 31]) {
    assert.throws(
      () => new Hello({ payload: 1, timeoutMs }),
      (error: unknown) =>
        error instanceof RangeError &&
        !(error instanceof MuxwsError) &&
        error.message ===
          `Cannot create Hello as "timeoutMs" must be greater than 0 and at most 2147483647: current value is ${timeoutMs}`,
      String(timeoutMs),
    );
  }
  assert.equal(new Hello({ timeoutMs: 1 }).timeoutMs, 1);
  assert.equal(new Hello({ timeoutMs: 2 ** 31 - 1 }).timeoutMs, 2_147_483_647);
  assert.equal(new Hello({ timeoutMs: 0.5 }).timeoutMs, 0.5);
});

test('WSM-DIAL-004 Hello rejects a timeoutMs that is not a number with a TypeError', () => {
  assert.throws(
    () => new Hello({ timeoutMs: '1000' as unknown as number }),
    (error: unknown) =>
      error instanceof TypeError &&
      /^Cannot create Hello as "timeoutMs" must be a number: current value is "1000"$/.test(
        error.message,
      ),
  );
});

test('WSM-DIAL-004 Hello rejects headers that are not an object or null with a TypeError', () => {
  for (const [headers, shown] of [['v=1', '"v=1"'], [[1, 2], '[1,2]'], [7, '7']] as const) {
    assert.throws(
      () => new Hello({ headers: headers as unknown as Record<string, unknown> }),
      (error: unknown) =>
        error instanceof TypeError &&
        error.message ===
          `Cannot create Hello as "headers" must be an object or null: current value is ${shown}`,
    );
  }
});

test('WSM-DIAL-004 a Hello is frozen, so its timeout cannot change after construction', () => {
  const hello = new Hello({ payload: 1, timeoutMs: 3000 });
  assert.ok(Object.isFrozen(hello));
  assert.throws(() => {
    (hello as { timeoutMs: number }).timeoutMs = 1;
  }, TypeError);
  assert.equal(hello.timeoutMs, 3000);
});

test('WSM-DIAL-004 HelloOptions with every field builds a configured Hello', () => {
  const options: HelloOptions = {
    payload: { client: 'docs' },
    headers: { v: 1 },
    timeoutMs: 10_000,
  };
  const hello = new Hello(options);
  assert.equal(hello.configured, true);
  assert.equal(hello.timeoutMs, options.timeoutMs);
  assert.deepEqual(hello.payloadForWire(), { client: 'docs' });
  assert.deepEqual(hello.headersForWire(), { v: 1 });
});
