import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  ClosedError,
  ConnectError,
  HelloRejectedError,
  MuxwsError,
  NotConnectedError,
  ProtocolError,
  StreamError,
  StreamResetError,
  TimeoutError,
} from 'muxws';

test('SPEC §8: every error class extends MuxwsError and Error and sets its own name', () => {
  const made: Error[] = [
    new ConnectError('a'),
    new ProtocolError('b'),
    new NotConnectedError('c'),
    new HelloRejectedError('d', { code: 'unauthorized' }),
    new StreamResetError('e', { code: 'refused', remote: true }),
    new StreamError('nope', 'f'),
    new TimeoutError('g'),
    new ClosedError('h'),
  ];
  const names = [
    'ConnectError',
    'ProtocolError',
    'NotConnectedError',
    'HelloRejectedError',
    'StreamResetError',
    'StreamError',
    'TimeoutError',
    'ClosedError',
  ];
  made.forEach((error, i) => {
    assert.ok(error instanceof MuxwsError);
    assert.ok(error instanceof Error);
    assert.equal(error.name, names[i]);
  });
});

test('SPEC §8: a subclass of an error class inherits its name unless it sets its own', () => {
  class RoomFullError extends StreamError {}
  class NamedError extends ConnectError {
    override name = 'NamedError';
  }
  assert.equal(new RoomFullError('room_full', 'a').name, 'StreamError');
  assert.equal(new NamedError('b').name, 'NamedError');
  assert.ok(new NamedError('b') instanceof MuxwsError);
});

test('SPEC §8: errors carry their cause and data', () => {
  const cause = new TypeError('socket failed');
  const connect = new ConnectError('Cannot connect', { cause });
  assert.equal(connect.cause, cause);
  const reset = new StreamResetError('lost', { code: 'connection_lost', remote: false, cause });
  assert.equal(reset.code, 'connection_lost');
  assert.equal(reset.remote, false);
  assert.equal(reset.cause, cause);
  assert.equal(new HelloRejectedError('no', { code: 'forbidden' }).code, 'forbidden');
});

test('WSM-WIRE-005 StreamError rejects a code outside the reset code pattern', () => {
  for (const bad of ['', 'Upper', '1abc', 'a'.repeat(65), 'has space']) {
    assert.throws(() => new StreamError(bad, 'x'), TypeError);
  }
  assert.throws(
    () => new StreamError('Bad', 'x'),
    /Cannot create StreamError as "code" must match .*: current value is "Bad"/,
  );
  assert.equal(new StreamError('a'.repeat(64)).code.length, 64);
});
