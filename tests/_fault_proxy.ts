/**
 * A TCP proxy on 127.0.0.1 that injects network faults between a dialer and an acceptor. It uses
 * only `node:net`, so it runs under Deno, Bun and Node.
 *
 * ```ts ignore
 * await using proxy = await startFaultProxy(acceptorPort);
 * const connection = await connect(`ws://127.0.0.1:${proxy.port}/ws`);
 * proxy.reset(); // every live connection is destroyed mid-stream
 * proxy.mode = { kind: 'blackhole' }; // nothing moves, the sockets stay open
 * ```
 *
 * Modes apply to bytes in both directions, to live and to new connections:
 * - `pass`: forward everything;
 * - `blackhole`: stop forwarding and stop reading, keeping both sockets (a silent network, a
 *   sleeping NAT); what was held moves on once the mode changes, as TCP would deliver it;
 * - `slow`: forward at most `bytesPerSecond` per direction and connection;
 * - `cut`: forward `afterBytes` bytes of the chosen direction(s) of each connection, then end
 *   both sockets (a cut at an exact byte offset);
 * - `delay`: forward each chunk `ms` milliseconds after it arrived.
 *
 * Like TCP, the proxy never loses, duplicates or reorders bytes within a connection: every
 * direction is one ordered queue, so a fault only delays, stalls or ends a stream. `reset()`
 * destroys every live connection at once (an RST where the runtime can send one); `target` may
 * be changed to point new connections at a restarted acceptor. `close()` destroys everything and
 * stops listening; every timer the proxy starts belongs to a connection and ends with it.
 */
import { createServer, type Server, type Socket } from 'node:net';
import { connect as tcpConnect } from 'node:net';

/** What the proxy does with the bytes it carries. */
export type FaultMode =
  | { kind: 'pass' }
  | { kind: 'blackhole' }
  | { kind: 'slow'; bytesPerSecond: number }
  | { kind: 'cut'; afterBytes: number; direction?: 'up' | 'down' | 'both' }
  | { kind: 'delay'; ms: number };

/** A running proxy. */
export interface FaultProxy extends AsyncDisposable {
  /** The port it listens on, on 127.0.0.1. */
  readonly port: number;
  /** The acceptor port new connections are forwarded to. */
  target: number;
  /** The current mode; changing it affects live connections at once. */
  mode: FaultMode;
  /** Connections accepted so far. */
  readonly accepted: number;
  /** Live connections. */
  readonly live: number;
  /** Bytes forwarded dialer → acceptor and acceptor → dialer, over all connections. */
  readonly forwarded: { up: number; down: number };
  /** Destroys every live connection at once (both sockets), as a TCP reset would. */
  reset(): void;
  /** Destroys every connection and stops listening. */
  close(): Promise<void>;
}

type Direction = 'up' | 'down';

/** One direction of a connection: an ordered queue of bytes and when each may leave. */
interface Lane {
  from: Socket;
  to: Socket;
  queue: Array<{ bytes: Uint8Array; at: number }>;
  /** The time the last queued bytes may leave, so later bytes never overtake them. */
  lastAt: number;
  timer: ReturnType<typeof setTimeout> | undefined;
  sent: number;
}

interface Pipe {
  lanes: Record<Direction, Lane>;
  destroyed: boolean;
  /** A `cut` happened: nothing more is forwarded. */
  cut: boolean;
  cutTimer: ReturnType<typeof setTimeout> | undefined;
}

/**
 * Starts a proxy on 127.0.0.1 and an ephemeral port, forwarding to `target` on 127.0.0.1.
 *
 * @param target The acceptor's port.
 * @param mode The initial mode. @default {{ kind: 'pass' }}
 */
export function startFaultProxy(
  target: number,
  mode: FaultMode = { kind: 'pass' },
): Promise<FaultProxy> {
  const pipes = new Set<Pipe>();
  const forwarded = { up: 0, down: 0 };
  let accepted = 0;
  const state = { target, mode };

  const destroy = (pipe: Pipe) => {
    if (pipe.destroyed) return;
    pipe.destroyed = true;
    clearTimeout(pipe.cutTimer);
    for (const lane of Object.values(pipe.lanes)) {
      clearTimeout(lane.timer);
      lane.queue.length = 0;
    }
    // resetAndDestroy sends an RST where the runtime supports it; destroy() otherwise.
    for (const socket of [pipe.lanes.up.from, pipe.lanes.up.to]) {
      const s = socket as Socket & { resetAndDestroy?: () => void };
      try {
        if (typeof s.resetAndDestroy === 'function') s.resetAndDestroy();
        else s.destroy();
      } catch {
        s.destroy();
      }
    }
    pipes.delete(pipe);
  };

  /** Sends what may leave now, in order; arms one timer for the next; holds in a blackhole. */
  const pump = (pipe: Pipe, dir: Direction) => {
    const lane = pipe.lanes[dir];
    clearTimeout(lane.timer);
    lane.timer = undefined;
    if (pipe.destroyed) return;
    if (state.mode.kind === 'blackhole') {
      lane.from.pause();
      return;
    }
    const now = Date.now();
    while (lane.queue.length > 0 && lane.queue[0].at <= now) {
      const { bytes } = lane.queue.shift()!;
      lane.sent += bytes.byteLength;
      forwarded[dir] += bytes.byteLength;
      lane.to.write(bytes);
    }
    if (lane.queue.length > 0) {
      lane.timer = setTimeout(() => pump(pipe, dir), lane.queue[0].at - now);
      lane.from.pause();
    } else {
      lane.from.resume();
    }
  };

  const enqueue = (pipe: Pipe, dir: Direction, bytes: Uint8Array, at: number) => {
    if (bytes.byteLength === 0) return;
    const lane = pipe.lanes[dir];
    const when = Math.max(at, lane.lastAt);
    lane.lastAt = when;
    lane.queue.push({ bytes, at: when });
  };

  /** One chunk read from `dir`'s source, handled by the mode at this moment. */
  const carry = (pipe: Pipe, dir: Direction, chunk: Uint8Array) => {
    if (pipe.destroyed || pipe.cut) return;
    const m = state.mode;
    const now = Date.now();
    switch (m.kind) {
      case 'pass':
      case 'blackhole':
        enqueue(pipe, dir, chunk, now);
        break;
      case 'delay':
        enqueue(pipe, dir, chunk, now + m.ms);
        break;
      case 'slow': {
        const slice = Math.max(1, Math.floor(m.bytesPerSecond / 20));
        let at = Math.max(now, pipe.lanes[dir].lastAt);
        for (let offset = 0; offset < chunk.byteLength; offset += slice) {
          enqueue(pipe, dir, chunk.subarray(offset, offset + slice), at);
          at += 50;
        }
        break;
      }
      case 'cut': {
        const applies = (m.direction ?? 'both') === 'both' || m.direction === dir;
        const lane = pipe.lanes[dir];
        const queued = lane.queue.reduce((n, q) => n + q.bytes.byteLength, 0);
        const budget = m.afterBytes - lane.sent - queued;
        if (!applies || budget > chunk.byteLength) {
          enqueue(pipe, dir, chunk, now);
          break;
        }
        // The cut: the bytes up to the offset leave with a FIN, and both sockets go 20 ms
        // later. (Not at once: Deno 2.9 loses an upgraded socket whose RST follows the request
        // at once, see docs/security.md.)
        enqueue(pipe, dir, chunk.subarray(0, Math.max(0, budget)), now);
        pump(pipe, dir);
        pipe.cut = true;
        lane.to.end();
        pipe.cutTimer = setTimeout(() => destroy(pipe), 20);
        return;
      }
    }
    pump(pipe, dir);
  };

  const server: Server = createServer((client) => {
    accepted++;
    const upstream = tcpConnect({ host: '127.0.0.1', port: state.target });
    const lane = (from: Socket, to: Socket): Lane => ({
      from,
      to,
      queue: [],
      lastAt: 0,
      timer: undefined,
      sent: 0,
    });
    const pipe: Pipe = {
      lanes: { up: lane(client, upstream), down: lane(upstream, client) },
      destroyed: false,
      cut: false,
      cutTimer: undefined,
    };
    pipes.add(pipe);
    client.setNoDelay(true);
    upstream.setNoDelay(true);
    client.on('data', (chunk: Uint8Array) => carry(pipe, 'up', chunk));
    upstream.on('data', (chunk: Uint8Array) => carry(pipe, 'down', chunk));
    for (const socket of [client, upstream]) {
      socket.on('error', () => destroy(pipe));
      socket.on('close', () => destroy(pipe));
      socket.on('end', () => {
        if (!pipe.cut) destroy(pipe);
      });
    }
    if (state.mode.kind === 'blackhole') {
      client.pause();
      upstream.pause();
    }
  });

  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      const close = () =>
        new Promise<void>((done) => {
          for (const pipe of [...pipes]) destroy(pipe);
          server.close(() => done());
        });
      resolve({
        port,
        get target() {
          return state.target;
        },
        set target(value: number) {
          state.target = value;
        },
        get mode() {
          return state.mode;
        },
        set mode(value: FaultMode) {
          state.mode = value;
          for (const pipe of [...pipes]) {
            pump(pipe, 'up');
            pump(pipe, 'down');
          }
        },
        get accepted() {
          return accepted;
        },
        get live() {
          return pipes.size;
        },
        forwarded,
        reset() {
          for (const pipe of [...pipes]) destroy(pipe);
        },
        close,
        [Symbol.asyncDispose]: close,
      });
    });
  });
}
