// examples/chat/ on Bun: the acceptor behind `Bun.serve` (examples/chat/serve_bun.ts), the
// dialers of examples/chat/client.ts in this process, on a loopback ephemeral port.
import { test } from 'node:test';
import type { DialerSocketConstructor } from 'muxws';
import { serve } from '../../examples/chat/serve_bun.ts';
import { chatScenario } from '../_chat_example.ts';

/** Bun's WebSocket, sending `cookie` (when given) with its upgrade. */
function cookieSocket(cookie: string | undefined): DialerSocketConstructor {
  return class extends WebSocket {
    constructor(url: string, protocols?: string | string[]) {
      super(url, { protocols, headers: cookie === undefined ? {} : { cookie } });
    }
  };
}

test('the chat example on Bun signs peers in by cookie, welcomes them to their room, and serves every route (WSM-APP-001 WSM-APP-002 WSM-APP-003 WSM-APP-004)', async () => {
  await chatScenario((options) => Promise.resolve(serve(0, options)), cookieSocket);
});
