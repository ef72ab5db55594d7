// The presence payloads' checks and the one rule that applies a diff to a state, which the
// acceptor's replica and the dialer's follower both run (WSM-PRS-002).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  applyPresenceDiff,
  isPresenceDiff,
  isPresenceSync,
  presenceDiff,
  type PresenceEntries,
  presenceSnapshot,
  setOwn,
  splitPresenceDiff,
} from '../../lib/wire/presence.ts';

const stateOf = (sync: Record<string, Record<string, unknown>>): PresenceEntries =>
  new Map(Object.entries(sync).map(([key, refs]) => [key, new Map(Object.entries(refs))]));

test('a snapshot and a diff are recognised by shape; a wrong key, ref or list is not (WSM-PRS-002)', () => {
  assert.equal(isPresenceSync({ ada: { r1: { tab: 1 } }, bob: {} }), true);
  assert.equal(isPresenceSync({}), true);
  for (const bad of [null, [], 'x', { ada: [] }, { ada: null }, { '': { r1: 1 } }]) {
    assert.equal(isPresenceSync(bad), false, JSON.stringify(bad));
  }
  assert.equal(isPresenceSync({ ['k'.repeat(257)]: {} }), false);
  assert.equal(isPresenceSync({ ada: { ['r'.repeat(257)]: 1 } }), false);
  assert.equal(isPresenceDiff({ leaves: { bob: ['r7'] }, joins: { ada: { r2: 2 } } }), true);
  for (
    const bad of [
      { leaves: {} },
      { joins: {} },
      { leaves: { bob: 'r7' }, joins: {} },
      {
        leaves: { bob: [''] },
        joins: {},
      },
      { leaves: { bob: [7] }, joins: {} },
      { leaves: {}, joins: { ada: [1] } },
    ]
  ) {
    assert.equal(isPresenceDiff(bad), false, JSON.stringify(bad));
  }
});

test('a diff applies its leaves first, then its joins, and says per key what left and joined (WSM-PRS-002)', () => {
  const state = stateOf({ ada: { r1: { tab: 1 } }, bob: { r7: { tab: 1 } } });
  const changes = applyPresenceDiff(state, {
    leaves: { bob: ['r7'], cy: ['r9'] },
    joins: { ada: { r2: { tab: 2 } }, cy: { r3: { tab: 1 } } },
  });
  assert.deepEqual([...changes.left], [['bob', [{ tab: 1 }]]]);
  assert.deepEqual([...changes.joined], [['ada', [{ tab: 2 }]], ['cy', [{ tab: 1 }]]]);
  assert.deepEqual(presenceSnapshot(state), {
    ada: { r1: { tab: 1 }, r2: { tab: 2 } },
    cy: { r3: { tab: 1 } },
  });
});

test('a join of a ref already held is never duplicated; with another meta it is an update (WSM-PRS-002)', () => {
  const state = stateOf({ ada: { r1: { tab: 1 } } });
  const again = applyPresenceDiff(state, { leaves: {}, joins: { ada: { r1: { tab: 1 } } } });
  assert.equal(again.joined.size + again.left.size, 0);
  const update = applyPresenceDiff(state, {
    leaves: { ada: ['r1'] },
    joins: { ada: { r1: { tab: 9 } } },
  });
  assert.deepEqual([...update.left], [['ada', [{ tab: 1 }]]]);
  assert.deepEqual([...update.joined], [['ada', [{ tab: 9 }]]]);
  assert.deepEqual(presenceSnapshot(state), { ada: { r1: { tab: 9 } } });
});

test('the diff from a held state to a new snapshot leaves what is gone and joins only what is new (WSM-PRS-002)', () => {
  const held = stateOf({ ada: { r1: { tab: 1 }, r2: { tab: 2 } }, bob: { r7: {} } });
  const snapshot = { ada: { r1: { tab: 1 }, r2: { tab: 3 } }, cy: { r9: {} } };
  const diff = presenceDiff(held, snapshot);
  assert.deepEqual(diff, {
    leaves: { ada: ['r2'], bob: ['r7'] },
    joins: { ada: { r2: { tab: 3 } }, cy: { r9: {} } },
  });
  applyPresenceDiff(held, diff);
  assert.deepEqual(presenceSnapshot(held), snapshot);
});

test('keys and refs named like Object.prototype members are plain entries, never the prototype (WSM-PRS-002)', () => {
  const state: PresenceEntries = new Map();
  const keys = ['__proto__', 'toString', 'constructor', 'hasOwnProperty'];
  const joins = JSON.parse(
    `{${keys.map((k) => `"${k}":{"__proto__":{"n":1},"valueOf":2}`).join(',')}}`,
  );
  const changes = applyPresenceDiff(state, { leaves: {}, joins });
  assert.deepEqual([...changes.joined.keys()], keys);
  const snapshot = presenceSnapshot(state);
  assert.deepEqual(Object.keys(snapshot), keys);
  assert.deepEqual(Object.keys(snapshot.__proto__), ['__proto__', 'valueOf']);
  const diff = presenceDiff(new Map(), snapshot);
  assert.deepEqual(Object.keys(diff.joins), keys);
  const gone = presenceDiff(state, {});
  assert.deepEqual(Object.keys(gone.leaves), keys);
  assert.deepEqual(gone.leaves.toString, ['__proto__', 'valueOf']);
  assert.equal(({} as Record<string, unknown>).n, undefined, 'Object.prototype untouched');
});

test('a diff over the limit is cut into pieces that fit and apply to the same state, each key whole (WSM-PRS-002)', () => {
  const held: Record<string, Record<string, unknown>> = {};
  const next: Record<string, Record<string, unknown>> = {};
  for (let i = 0; i < 40; i++) {
    held[`user${i}`] = { [`a${i}`]: { v: 1 }, [`b${i}`]: { v: 1 } };
    // half the keys are gone, the other half update one ref and add one
    if (i % 2 === 1) next[`user${i}`] = { [`a${i}`]: { v: 2 }, [`b${i}`]: { v: 1 }, [`c${i}`]: {} };
  }
  const diff = presenceDiff(stateOf(held), next);
  const limit = 200;
  const fits = (piece: unknown) => JSON.stringify(piece).length <= limit;
  assert.ok(!fits(diff));
  const pieces = splitPresenceDiff(diff, fits);
  assert.ok(pieces.length > 1);
  for (const piece of pieces) assert.ok(fits(piece), JSON.stringify(piece));
  // no key is in two pieces, so an update (leave and join of one ref) is never seen as a leave
  const seen = pieces.flatMap((
    p,
  ) => [...new Set([...Object.keys(p.leaves), ...Object.keys(p.joins)])]);
  assert.equal(new Set(seen).size, seen.length);
  const state = stateOf(held);
  for (const piece of pieces) {
    const { left, joined } = applyPresenceDiff(state, piece);
    for (const [key] of left) if (Object.hasOwn(next, key)) assert.ok(joined.has(key), key);
  }
  assert.deepEqual(presenceSnapshot(state), next);
  assert.deepEqual(splitPresenceDiff(diff, () => true), [diff]);
});

test('a key too large for one piece is cut between its refs, and a ref too large is a piece alone (WSM-PRS-002)', () => {
  const joins: Record<string, Record<string, unknown>> = { crowd: {} };
  for (let i = 0; i < 30; i++) joins.crowd[`r${i}`] = { n: i };
  joins.crowd.huge = { text: 'x'.repeat(500) };
  const diff = { leaves: { crowd: ['r0', 'gone'] }, joins };
  const fits = (piece: unknown) => JSON.stringify(piece).length <= 150;
  const pieces = splitPresenceDiff(diff, fits);
  assert.equal(pieces.filter((piece) => !fits(piece)).length, 1, 'only the huge ref is over');
  // r0 leaves and joins again in the same piece: an update, never a leave alone
  const withR0 = pieces.filter((p) => p.leaves.crowd?.includes('r0') || p.joins.crowd?.r0);
  assert.equal(withR0.length, 1);
  assert.deepEqual(withR0[0].joins.crowd.r0, { n: 0 });
  const state = stateOf({ crowd: { r0: { n: -1 }, gone: {} } });
  for (const piece of pieces) applyPresenceDiff(state, piece);
  assert.deepEqual(presenceSnapshot(state), joins);
});

test('a key named like an Object.prototype member and too large for one piece is cut between its refs (WSM-PRS-002)', () => {
  for (const key of ['toString', 'constructor', '__proto__', 'hasOwnProperty']) {
    const refs: Record<string, unknown> = {};
    for (let i = 0; i < 20; i++) refs[`r${i}`] = { n: i };
    const joins: Record<string, Record<string, unknown>> = {};
    setOwn(joins, key, refs);
    const diff = { leaves: {}, joins };
    const fits = (piece: unknown) => JSON.stringify(piece).length <= 120;
    const pieces = splitPresenceDiff(diff, fits);
    assert.ok(pieces.length > 1, key);
    for (const piece of pieces) assert.ok(fits(piece), `${key}: ${JSON.stringify(piece)}`);
    const state: PresenceEntries = new Map();
    for (const piece of pieces) applyPresenceDiff(state, piece);
    assert.deepEqual(Object.fromEntries(state.get(key) ?? []), refs, key);
  }
});
