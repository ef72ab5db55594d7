/**
 * Scenario `idle-memory`, the client process: `<runtime> bench/idle_memory.ts --subject
 * raw|raw-hello|muxws|socketio --port P --count 5000 [--max-ms 120000]` opens `count` clients (50 in
 * progress at once) to a fresh `bench/_server.ts`, or as many as it can open in `max-ms`, prints
 * `OPEN <n>` once they are established, and keeps them open and idle until its stdin closes. The orchestrator reads the server's memory after garbage
 * collection (`mem`) before and after, and reports (after − before) ÷ n: RSS and JS heap per
 * idle connection on the server.
 *
 * @module
 */
import process from 'node:process';
import { type BenchClient, openClient, type Subject } from './_clients.ts';
import { numberOption, option, within } from './_common.ts';

const subject = option('subject', 'raw') as Subject;
const port = numberOption('port', 0);
const count = numberOption('count', 5_000);
const maxMs = numberOption('max-ms', 120_000);

const clients: BenchClient[] = [];
try {
  let next = 0;
  const stopAt = Date.now() + maxMs;
  const worker = async () => {
    while (next < count && Date.now() < stopAt) {
      clients.push(await openClient(subject, port, next++));
    }
  };
  await within(
    Promise.all(Array.from({ length: 50 }, worker)),
    maxMs + 30_000,
    `opening ${count} idle connections`,
  );
  console.log(`OPEN ${clients.length}`);
} catch (error) {
  console.error('idle client failed:', error);
  process.exit(1);
}
process.stdin.resume();
process.stdin.on('end', () => process.exit(0));
process.stdin.on('data', () => process.exit(0));
