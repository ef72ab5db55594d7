// The close-code and reset-code tables: the ranges each side may send, the 1006 normalisation,
// and that docs/protocol.md lists every code the tables hold.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  acceptorMaySend,
  CloseCode,
  closeCodeOf,
  DEFAULT_SERVICE_RESTART,
  DEFAULT_TERMINAL,
  dialerMaySend,
  PROVOKED_RESET_CODES,
  ResetCode,
} from '../../lib/wire/codes.ts';
import { DEFAULT_CLOSE_CODES } from 'muxws';
import { repoRoot } from '../_repo.ts';

test('closeCodeOf() reads a missing, 0 or non-number code as 1006 and keeps the rest (WSM-WIRE-009)', () => {
  assert.equal(closeCodeOf(undefined), 1006);
  assert.equal(closeCodeOf(0), 1006);
  assert.equal(closeCodeOf('1000'), 1006);
  assert.equal(closeCodeOf(1000), 1000);
  assert.equal(closeCodeOf(4401), 4401);
});

test('dialerMaySend() allows 1000 and 3000–4999 only, as browsers do (WSM-WIRE-009)', () => {
  for (const code of [1000, 3000, 4000, 4999]) assert.ok(dialerMaySend(code), String(code));
  for (const code of [999, 1001, 1002, 1008, 2999, 5000, 4000.5, NaN, '1000']) {
    assert.ok(!dialerMaySend(code), String(code));
  }
});

test('acceptorMaySend() allows 1000–1003, 1007–1014 and 3000–4999 (WSM-WIRE-009)', () => {
  for (const code of [1000, 1003, 1007, 1012, 1014, 3000, 4999]) {
    assert.ok(acceptorMaySend(code), String(code));
  }
  for (const code of [999, 1004, 1005, 1006, 1015, 2999, 5000, 1000.5, '1000']) {
    assert.ok(!acceptorMaySend(code), String(code));
  }
});

test('the default close-code policy comes from the table (WSM-RCN-020)', () => {
  assert.deepEqual([...DEFAULT_CLOSE_CODES.serviceRestart], [...DEFAULT_SERVICE_RESTART]);
  assert.deepEqual([...DEFAULT_CLOSE_CODES.terminal], [...DEFAULT_TERMINAL]);
  assert.deepEqual([...DEFAULT_TERMINAL], [1002, 1003, 1007, 1008, 1009, 1010, 4401, 4403]);
});

test('docs/protocol.md lists every close code and reset code of the tables', () => {
  const doc = readFileSync(join(repoRoot(), 'docs', 'protocol.md'), 'utf8');
  for (const [name, code] of Object.entries(CloseCode).filter(([, v]) => typeof v === 'number')) {
    assert.match(doc, new RegExp(`\\b${code}\\b`), `close code ${name} (${code})`);
  }
  for (const [name, code] of Object.entries(ResetCode)) {
    assert.ok(doc.includes(`\`${code}\``), `reset code ${name} (${code})`);
  }
});

test('the provoked reset codes are reset codes, and docs/security.md names each in its reset budget', () => {
  const doc = readFileSync(join(repoRoot(), 'docs', 'security.md'), 'utf8');
  const budget = doc.slice(doc.indexOf('## The reset budget'));
  const counted = budget.slice(0, budget.indexOf('Not counted:'));
  assert.deepEqual([...PROVOKED_RESET_CODES].sort(), [
    'decode',
    'flow',
    'hello_required',
    'invalid',
    'not_found',
    'refused',
  ]);
  for (const code of PROVOKED_RESET_CODES) {
    assert.ok(Object.values(ResetCode).includes(code), code);
    assert.ok(counted.includes(`RESET \`${code}\``), `${code} in the counted table`);
  }
});
