/**
 * The library's own share of the peer curves, in one process and without sockets: `<runtime>
 * bench/_scale_probe.ts [--ns 1000,10000,19500] [--broadcasts 5]` (Deno: `deno run -A
 * --v8-flags=--expose-gc`; Bun as is). At each N a fresh acceptor takes N peers through
 * `acceptor.attach()` with a sink that only counts what it is sent, each sent its hello (tagged
 * `all` as it is answered), then broadcasts one ~100-byte payload to `all` in batches of at
 * least 100,000 deliveries. It prints,
 * per N (after one warm-up at the smallest), the CPU per accepted peer (attach and hello), the JS heap per peer after garbage
 * collection, and the median CPU per delivery of a broadcast; then the flatness of each (largest
 * N ÷ smallest). What it leaves out is the runtime's socket and loopback: where the `scale`
 * scenario's curves bend and these stay flat, the cost is not the library's. Used to find the
 * cause of a curve that is not flat (run it under `--cpu-prof`, or with `--inspect` for a heap
 * snapshot, at the largest N).
 *
 * @module
 */
import process from 'node:process';
import { Acceptor } from 'muxws/acceptor';
import {
  broadcastPayload,
  collectGarbage,
  cpuMicros,
  median,
  numberOption,
  option,
  runtime,
  sleep,
} from './_common.ts';

const ns = option('ns', '1000,10000,19500').split(',').map(Number);
const broadcasts = numberOption('broadcasts', 5);
const payload = broadcastPayload(100);

interface Point {
  n: number;
  acceptCpu: number;
  heap: number;
  deliveryCpu: number;
}

async function probe(n: number): Promise<Point> {
  let sent = 0;
  const sink = {
    send() {
      sent++;
    },
    close() {},
  };
  const acceptor = new Acceptor({
    idleTimeoutMs: 0,
    onStream: (stream, peer) => {
      if (stream.id === 1) {
        peer.tags.add('all');
        return { welcome: true };
      }
      return stream.payload;
    },
  });
  await collectGarbage();
  const heap0 = process.memoryUsage().heapUsed;
  const attached = [];
  const cpu0 = cpuMicros();
  for (let i = 0; i < n; i++) {
    const link = acceptor.attach(sink);
    link.message(JSON.stringify([1, 1, 3, null, { client: 'probe', id: i }]));
    attached.push(link);
  }
  // The hellos are answered in microtasks.
  await sleep(0);
  const acceptCpu = (cpuMicros() - cpu0) / n;
  await collectGarbage();
  const heap = (process.memoryUsage().heapUsed - heap0) / n;
  const cpus: number[] = [];
  // Each measure covers at least 100,000 deliveries, so a small N is not below the clock's grain.
  const batch = Math.ceil(100_000 / n);
  for (let k = 0; k <= broadcasts; k++) {
    const before = sent;
    const c0 = cpuMicros();
    let count = 0;
    for (let b = 0; b < batch; b++) count += await acceptor.broadcast('all', payload);
    const c1 = cpuMicros();
    if (count !== n * batch || sent - before !== n * batch) {
      throw new Error(`${batch} broadcasts reached ${count} peers (${sent - before} sends)`);
    }
    if (k > 0) cpus.push((c1 - c0) / (n * batch));
  }
  for (const link of attached) link.closed(1000, '');
  await acceptor.close();
  return { n, acceptCpu, heap, deliveryCpu: median(cpus) };
}

// A warm-up, not printed: the first peers pay for compiling the accept path.
await probe(Math.min(1_000, ...ns));
const points: Point[] = [];
for (const n of ns) {
  const point = await probe(n);
  points.push(point);
  console.log(
    `${runtime} n=${n}: accept ${point.acceptCpu.toFixed(1)} µs CPU/peer, heap ${
      Math.round(point.heap)
    } B/peer, broadcast ${point.deliveryCpu.toFixed(2)} µs CPU/delivery`,
  );
}
const first = points[0];
const last = points[points.length - 1];
console.log(
  `${runtime} flatness ${first.n} → ${last.n}: accept ${
    (last.acceptCpu / first.acceptCpu).toFixed(2)
  }, heap ${(last.heap / first.heap).toFixed(2)}, broadcast ${
    (last.deliveryCpu / first.deliveryCpu).toFixed(2)
  }`,
);
