// lib/_tags.ts: the one tag check of the library and a peer's tag set bound to an index.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { inspect } from 'node:util';
import { checkTag, isTag, MAX_TAG_LENGTH, TagSet } from '../lib/_tags.ts';

test('isTag() accepts strings of 1 to 256 characters only (WSM-ACC-004)', () => {
  const cases: Array<[unknown, boolean]> = [
    ['a', true],
    ['x'.repeat(MAX_TAG_LENGTH), true],
    ['', false],
    ['x'.repeat(MAX_TAG_LENGTH + 1), false],
    [1, false],
    [null, false],
    [undefined, false],
    [['a'], false],
  ];
  for (const [value, expected] of cases) assert.equal(isTag(value), expected, String(value));
});

test('checkTag() returns a tag and names the value found otherwise (WSM-ACC-004)', () => {
  assert.equal(checkTag('Cannot broadcast', 'room'), 'room');
  assert.throws(() => checkTag('Cannot broadcast', ''), {
    name: 'TypeError',
    message:
      'Cannot broadcast as the tag must be a string of 1 to 256 characters: current value is ""',
  });
  assert.throws(() => checkTag('Cannot broadcast', { a: 1 }), /current value is \{"a":1\}$/);
});

test('TagSet tells its bound index of each change, and nothing when unbound (WSM-ACC-004)', () => {
  const events: string[] = [];
  const index = {
    tagAdded: (tag: string) => events.push(`+${tag}`),
    tagDeleted: (tag: string) => events.push(`-${tag}`),
  };
  const tags = new TagSet();
  tags.add('before');
  tags.bind(index);
  tags.add('a').add('a').add('b');
  assert.equal(tags.delete('missing'), false);
  assert.equal(tags.delete('a'), true);
  tags.clear();
  tags.bind(undefined);
  tags.add('after');
  assert.deepEqual(events, ['+a', '+b', '-a', '-before', '-b']);
  assert.deepEqual([...tags], ['after']);
  assert.throws(() => tags.add('' as string), TypeError);
  assert.throws(() => tags.add(7 as unknown as string), /current value is 7$/);
});

/** Every read of `Set<string>` on `tags` answers as on `expected`, a plain Set. */
function assertSameSet(tags: Set<string>, expected: Set<string>, what: string): void {
  assert.equal(tags.size, expected.size, `${what}: size`);
  assert.deepEqual([...tags], [...expected], `${what}: iteration`);
  assert.deepEqual([...tags.values()], [...expected.values()], `${what}: values()`);
  assert.deepEqual([...tags.keys()], [...expected.keys()], `${what}: keys()`);
  assert.deepEqual([...tags.entries()], [...expected.entries()], `${what}: entries()`);
  const seen: unknown[] = [];
  const self = {};
  tags.forEach(function (this: unknown, value, key, set) {
    seen.push([value, key, set === tags, this === self]);
  }, self);
  assert.deepEqual(seen, [...expected].map((tag) => [tag, tag, true, true]), `${what}: forEach`);
  for (const tag of ['a', 'b', 'c', 'x']) {
    assert.equal(tags.has(tag), expected.has(tag), `${what}: has(${tag})`);
  }
  assert.deepEqual(new Set(tags), expected, `${what}: new Set()`);
  assert.equal(Object.prototype.toString.call(tags), '[object Set]', `${what}: toStringTag`);
}

test('TagSet reads as a Set of its tags, in insertion order, before and after its second tag', () => {
  const steps: Array<[string, (set: Set<string>) => unknown]> = [
    ['empty', () => {}],
    ['add a', (set) => set.add('a')],
    ['add a again', (set) => set.add('a')],
    ['delete missing', (set) => set.delete('x')],
    ['add b', (set) => set.add('b')],
    ['delete a', (set) => set.delete('a')],
    ['add a back', (set) => set.add('a')],
    ['add c', (set) => set.add('c')],
    ['clear', (set) => set.clear()],
    ['add c after clear', (set) => set.add('c')],
  ];
  const tags = new TagSet();
  const expected = new Set<string>();
  for (const [what, step] of steps) {
    assert.equal(step(tags) === tags, step(expected) === expected, what);
    assertSameSet(tags, expected, what);
  }
  const lone = new TagSet().add('a');
  lone.delete('a');
  lone.add('b').add('c');
  assertSameSet(lone, new Set(['b', 'c']), 'first tag deleted, then two added');
});

test('TagSet iterations see additions and deletions made while they run, as a Set does', () => {
  type Change = (set: Set<string>) => void;
  const cases: Array<[string, string[], Change]> = [
    ['an addition to one tag', ['a'], (set) => set.add('b')],
    ['the deletion of the one tag', ['a'], (set) => set.delete('a')],
    ['the one tag deleted, another added', ['a'], (set) => {
      set.delete('a');
      set.add('b');
    }],
    ['the one tag deleted, then added back', ['a'], (set) => {
      set.delete('a');
      set.add('a');
    }],
    ['a second tag added, the first deleted', ['a'], (set) => {
      set.add('b');
      set.delete('a');
    }],
    ['a second tag added, the first deleted and added back', ['a'], (set) => {
      set.add('b');
      set.delete('a');
      set.add('a');
    }],
    ['a second tag added, both deleted, the first added back', ['a'], (set) => {
      set.add('b');
      set.delete('a');
      set.delete('b');
      set.add('a');
    }],
    ['a second tag added, the first deleted, a third added', ['a'], (set) => {
      set.add('b');
      set.delete('a');
      set.add('c');
    }],
    ['an addition to two tags', ['a', 'b'], (set) => set.add('c')],
    ['a clear, then an addition', ['a'], (set) => {
      set.clear();
      set.add('c');
    }],
  ];
  for (const [what, start, change] of cases) {
    const visit = (set: Set<string>, how: 'for-of' | 'forEach') => {
      for (const tag of start) set.add(tag);
      const seen: string[] = [];
      let changed = false;
      const step = (tag: string) => {
        seen.push(tag);
        if (!changed) {
          changed = true;
          change(set);
        }
      };
      if (how === 'for-of') { for (const tag of set) step(tag); }
      else set.forEach(step);
      return [seen, [...set]];
    };
    for (const how of ['for-of', 'forEach'] as const) {
      assert.deepEqual(visit(new TagSet(), how), visit(new Set(), how), `${what} (${how})`);
    }
  }
});

test('TagSet answers the Set methods that combine sets as a Set of its tags does', () => {
  const methods = [
    'union',
    'intersection',
    'difference',
    'symmetricDifference',
    'isSubsetOf',
    'isSupersetOf',
    'isDisjointFrom',
  ].filter((name) =>
    typeof (Set.prototype as unknown as Record<string, unknown>)[name] === 'function'
  );
  for (const start of [['a'], ['a', 'b']]) {
    for (const other of [new Set<string>(), new Set(['a']), new Set(['b', 'c'])]) {
      for (const name of methods) {
        type Combine = (this: Set<string>, other: Set<string>) => unknown;
        const call = (set: Set<string>, argument: Set<string>) =>
          (set as unknown as Record<string, Combine>)[name].call(set, argument);
        const tags = new TagSet();
        for (const tag of start) tags.add(tag);
        const what = `${JSON.stringify(start)}.${name}(${JSON.stringify([...other])})`;
        assert.deepEqual(call(tags, other), call(new Set(start), other), what);
        assert.deepEqual(call(other, tags), call(other, new Set(start)), `reversed ${what}`);
        assertSameSet(tags, new Set(start), what);
      }
    }
  }
});

test('TagSet prints as a Set of its tags', () => {
  const tags = new TagSet().add('a');
  assert.equal(inspect(tags), inspect(new Set(['a'])));
  tags.add('b');
  assert.equal(inspect(tags), inspect(new Set(['a', 'b'])));
});

test('TagSet keeps a lone tag outside the Set storage, which a first entry makes the engine allocate', () => {
  const storageSize = Object.getOwnPropertyDescriptor(Set.prototype, 'size')!.get!;
  const tags = new TagSet().add('a');
  assert.equal(storageSize.call(tags), 0);
  assert.equal(tags.size, 1);
  tags.add('b');
  assert.equal(storageSize.call(tags), 2);
});
