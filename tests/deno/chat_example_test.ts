// examples/chat/ on Deno: the acceptor behind `Deno.serve` (examples/chat/serve_deno.ts), the
// dialers of examples/chat/client.ts in this process, on a loopback ephemeral port.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { DialerSocketConstructor } from 'muxws';
import { serve } from '../../examples/chat/serve_deno.ts';
import { chatScenario } from '../_chat_example.ts';

/** Deno's WebSocket, sending `cookie` (when given) with its upgrade. */
function cookieSocket(cookie: string | undefined): DialerSocketConstructor {
  return class extends WebSocket {
    constructor(url: string, protocols?: string | string[]) {
      super(url, { protocols, headers: cookie === undefined ? {} : { cookie } });
    }
  };
}

test('the chat example on Deno signs peers in by cookie, welcomes them to their room, and serves every route (WSM-APP-001 WSM-APP-002 WSM-APP-003 WSM-APP-004)', async () => {
  await chatScenario((options) => serve(0, options), cookieSocket);
});

test('the chat example needs no cast, no unknown and no stream id: the Api types every route (WSM-APP-003)', async () => {
  const dir = new URL('../../examples/chat/', import.meta.url);
  let files = 0;
  for await (const entry of Deno.readDir(dir)) {
    if (!entry.name.endsWith('.ts')) continue;
    files++;
    const code = await Deno.readTextFile(new URL(entry.name, dir));
    for (
      const [pattern, what] of [[/ as /, 'a cast'], [/\bunknown\b/, 'unknown'], [
        /stream\.id/,
        'stream.id',
      ]] as const
    ) {
      const line = code.split('\n').findIndex((text) => pattern.test(text));
      assert.equal(line, -1, `examples/chat/${entry.name}:${line + 1} uses ${what}`);
    }
  }
  assert.ok(files >= 6, `examples/chat/ holds ${files} modules`);
});
