// lib/acceptor/_tags.ts: the acceptor's tag check and a peer's tag set bound to an index, over the
// one tag check of the library (isTag() in lib/wire/frame.ts).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { checkTag, TagSet } from '../../lib/acceptor/_tags.ts';
import { isTag, MAX_TAG_LENGTH } from '../../lib/wire/frame.ts';

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
