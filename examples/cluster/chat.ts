// Two members of one chat room, each on a different node of the cluster: ada dials node A, bob
// dials node B. A message ada sends through node A reaches bob on node B, and bob's reply through
// node B reaches ada on node A (and each sender's own screen, from its own node).
//
// Run (after the two nodes of examples/cluster/README.md):
//   deno run -A examples/cluster/chat.ts ws://127.0.0.1:8001 ws://127.0.0.1:8002
// Exits 0 once both messages reached both screens, 1 if they did not within 10 s.
import process from 'node:process';
import { connect, type Connection } from '@muxws/core';
import type { Api } from './api.ts';

const [nodeA = 'ws://127.0.0.1:8001', nodeB = 'ws://127.0.0.1:8002'] = process.argv.slice(2);

const screens: Record<string, string[]> = { ada: [], bob: [] };
let seen: () => void = () => {};
const join = (url: string, user: string): Promise<Connection<Api>> =>
  connect<Api>(url, {
    hello: { payload: { room: 'lobby', user } },
    onPublish: ({ payload }) => {
      screens[user].push(String(payload));
      console.log(`[${user}'s screen] ${payload}`);
      seen();
    },
  });

/** Resolves once `user`'s screen shows `text` from `from` (on any node); rejects after 10 s. */
function shows(user: string, from: string, text: string): Promise<void> {
  const line = `${from}@<node>: ${text}`;
  return new Promise((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new Error(`${user} did not see "${line}" within 10 s`)),
      10_000,
    );
    const check = () => {
      if (!screens[user].some((l) => l.startsWith(`${from}@`) && l.endsWith(`: ${text}`))) return;
      clearTimeout(timer);
      resolve();
    };
    const previous = seen;
    seen = () => {
      previous();
      check();
    };
    check();
  });
}

const ada = await join(nodeA, 'ada');
const bob = await join(nodeB, 'bob');
try {
  console.log(ada.welcome, '/', bob.welcome);
  const toBob = shows('bob', 'ada', 'hi bob');
  console.log('node A reached', await ada.call('chat.say', { text: 'hi bob' }), 'local peer');
  await toBob;
  const toAda = shows('ada', 'bob', 'hi ada');
  console.log('node B reached', await bob.call('chat.say', { text: 'hi ada' }), 'local peer');
  await toAda;
  console.log('both nodes delivered across the cluster');
} catch (error) {
  console.error(String(error));
  process.exitCode = 1;
} finally {
  await Promise.all([ada.close(), bob.close()]);
}
