// How the benchmarks make runs comparable (bench/_method.ts): the rounds asked for and the CPU
// each process is pinned to. No SPEC rule covers benchmarks, so the names cite no rule id.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { pinCommand, pinnedCpu, pinningNote, roundsOption } from '../bench/_method.ts';

test('pinnedCpu() puts servers and acceptors on CPU 1, clients and dialers on CPU 0, others nowhere', () => {
  for (const script of ['_server', '_recovery_server', '_broadcast_server', '_serve_acceptor']) {
    assert.equal(pinnedCpu(script), '1', script);
  }
  for (const script of ['_client', 'idle_memory', 'herd', '_recovery_dialers']) {
    assert.equal(pinnedCpu(script), '0', script);
  }
  assert.equal(pinnedCpu('bundle'), undefined);
});

test('pinCommand() runs the command under taskset only when pinning and the side is known', () => {
  const node: [string, string[]] = ['node', ['--expose-gc', 'x/_server.mjs', '--port', '0']];
  assert.deepEqual(pinCommand(true, '_server', node), [
    'taskset',
    ['-c', '1', 'node', '--expose-gc', 'x/_server.mjs', '--port', '0'],
  ]);
  assert.deepEqual(pinCommand(true, '_client', ['bun', ['bench/_client.ts']]), [
    'taskset',
    ['-c', '0', 'bun', 'bench/_client.ts'],
  ]);
  assert.deepEqual(pinCommand(false, '_server', node), node);
  assert.deepEqual(pinCommand(true, 'bundle', node), node);
  assert.match(pinningNote(true, false), /^pinned: clients on CPU 0, servers on CPU 1/);
  assert.equal(pinningNote(false, true), 'not pinned (--no-pin)');
});

test('roundsOption() asks 9 rounds, 2 when quick, or --rounds, refusing a bad count', () => {
  assert.equal(roundsOption([], false), 9);
  assert.equal(roundsOption(['--quick'], true), 2);
  assert.equal(roundsOption(['--rounds', '15', '--quick'], true), 15);
  assert.throws(() => roundsOption(['--rounds', '0'], false), {
    name: 'RangeError',
    message: '--rounds must be a whole number of at least 1: current value is 0',
  });
  assert.throws(() => roundsOption(['--rounds', '2.5'], false), RangeError);
  assert.throws(() => roundsOption(['--rounds'], false), RangeError);
});
