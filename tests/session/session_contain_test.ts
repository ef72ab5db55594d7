import { test } from 'node:test';
import assert from 'node:assert/strict';
import { jsonCodec } from 'muxws';
import { Session, type SessionOptions } from '../../lib/session/session.ts';
import { encodePublish } from '../../lib/wire/publish.ts';
import { GOAWAY } from '../../lib/wire/frame.ts';
import { watchUnhandled } from '../_unhandled.ts';

/** Replaces console.error for the scope, recording its first argument. */
function captureConsoleError(): { logged: unknown[] } & Disposable {
  const logged: unknown[] = [];
  const original = console.error;
  console.error = (...args: unknown[]) => logged.push(args[0]);
  return { logged, [Symbol.dispose]: () => console.error = original };
}

function dialer(options: Partial<SessionOptions>): Session {
  return new Session({ send() {}, close() {} }, { side: 'dialer', codec: jsonCodec, ...options });
}

/** A callback as an async function that rejects would be, typed as the session's. */
const rejecting = (message: string) => (() => Promise.reject(new Error(message))) as () => void;

const messages = (errors: unknown[]) => errors.map((e) => (e as Error).message);

test('Session reports to onError what an async onPublish, onGoAway or onClose rejects with, leaving no unhandled rejection (WSM-DIAL-008)', async () => {
  using unhandled = watchUnhandled();
  const errors: unknown[] = [];
  const session = dialer({
    onPublish: rejecting('onPublish rejected'),
    onGoAway: rejecting('onGoAway rejected'),
    onClose: rejecting('onClose rejected'),
    onError: (error) => void errors.push(error),
  });
  session.receive(encodePublish(jsonCodec, 'room', 'hi'));
  session.receive(jsonCodec.encode([GOAWAY, 0, 'restart', 'bye', 0]));
  session.closed(1000, 'done');
  await unhandled.settle();
  assert.deepEqual(messages(errors), [
    'onPublish rejected',
    'onGoAway rejected',
    'onClose rejected',
  ]);
  assert.deepEqual(unhandled.reasons, []);
});

test('Session sends what an async onError rejects with to console.error, leaving no unhandled rejection', async () => {
  using unhandled = watchUnhandled();
  using console = captureConsoleError();
  const session = dialer({
    onError: rejecting('onError rejected'),
  });
  session.receive('not a frame');
  await unhandled.settle();
  assert.deepEqual(messages(console.logged), ['onError rejected']);
  assert.deepEqual(unhandled.reasons, []);
});

test('Session without onError sends a contained error to console.error', () => {
  using console = captureConsoleError();
  const session = dialer({
    onPublish: () => {
      throw new Error('onPublish threw');
    },
  });
  session.receive(encodePublish(jsonCodec, 'room', 'hi'));
  assert.deepEqual(messages(console.logged), ['onPublish threw']);
});
