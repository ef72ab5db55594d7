/**
 * A TCP proxy on 127.0.0.1 that injects network faults between a dialer and an acceptor (issue
 * 7). It uses only `node:net`, so it runs under Deno, Bun and Node.
 *
 * ```ts ignore
 * await using proxy = await startFaultProxy(acceptorPort);
 * const connection = await connect(`ws://127.0.0.1:${proxy.port}/ws`);
 * proxy.reset(); // every live connection is destroyed mid-stream
 * proxy.mode = { kind: 'blackhole' }; // bytes are swallowed, sockets stay open
 * ```
 *
 * Modes apply to bytes in both directions, to live and to new connections:
 * - `pass`: forward everything;
 * - `blackhole`: stop forwarding and keep both sockets (a silent network, a sleeping NAT);
 * - `slow`: forward at most `bytesPerSecond` per direction and connection;
 * - `cut`: forward `afterBytes` bytes of the chosen direction(s) of each connection, then destroy
 *   both sockets (a cut at an exact byte offset);
 * - `delay`: forward each chunk `ms` milliseconds after it arrived, in order.
 *
 * `reset()` destroys every live connection at once; `target` may be changed to point new
 * connections at a restarted acceptor. `close()` destroys everything and stops listening; every
 * timer the proxy starts belongs to a connection and ends with it.
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
  /** The current mode; changing it affects live connections from their next chunk. */
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

interface Pipe {
  client: Socket;
  upstream: Socket;
  timers: Set<ReturnType<typeof setTimeout>>;
  sent: { up: number; down: number };
  destroyed: boolean;
  /** A `cut` happened: nothing more is forwarded. */
  cut: boolean;
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
    for (const timer of pipe.timers) clearTimeout(timer);
    pipe.timers.clear();
    // resetAndDestroy sends an RST where the runtime supports it; destroy() otherwise.
    for (const socket of [pipe.client, pipe.upstream]) {
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

  /** Forwards one chunk in direction `dir` according to the mode at this moment. */
  const carry = (pipe: Pipe, dir: 'up' | 'down', chunk: Uint8Array, to: Socket) => {
    if (pipe.destroyed || pipe.cut) return;
    const m = state.mode;
    const write = (bytes: Uint8Array) => {
      if (pipe.destroyed || bytes.byteLength === 0) return;
      pipe.sent[dir] += bytes.byteLength;
      forwarded[dir] += bytes.byteLength;
      to.write(bytes);
    };
    switch (m.kind) {
      case 'pass':
        write(chunk);
        return;
      case 'blackhole':
        return;
      case 'cut': {
        const applies = (m.direction ?? 'both') === 'both' || m.direction === dir;
        if (!applies) {
          write(chunk);
          return;
        }
        const budget = m.afterBytes - pipe.sent[dir];
        if (budget > chunk.byteLength) {
          write(chunk);
          return;
        }
        // The cut: the bytes up to the offset leave with a FIN, and both sockets go 20 ms later.
        // (Not at once: Deno 2.9 loses an upgraded socket whose RST follows the request at
        // once, see docs/security.md.)
        write(chunk.subarray(0, Math.max(0, budget)));
        pipe.cut = true;
        to.end();
        setTimeoutFor(pipe, () => destroy(pipe), 20);
        return;
      }
      case 'delay':
        setTimeoutFor(pipe, () => write(chunk), m.ms);
        return;
      case 'slow': {
        const rate = Math.max(1, m.bytesPerSecond);
        // Pause the reading side and forward in 1/20 s slices.
        const from = dir === 'up' ? pipe.client : pipe.upstream;
        from.pause();
        let offset = 0;
        const slice = Math.max(1, Math.floor(rate / 20));
        const step = () => {
          if (pipe.destroyed) return;
          write(chunk.subarray(offset, offset + slice));
          offset += slice;
          if (offset < chunk.byteLength) setTimeoutFor(pipe, step, 50);
          else from.resume();
        };
        step();
        return;
      }
    }
  };

  const setTimeoutFor = (pipe: Pipe, fn: () => void, ms: number) => {
    const timer = setTimeout(() => {
      pipe.timers.delete(timer);
      fn();
    }, ms);
    pipe.timers.add(timer);
  };

  const server: Server = createServer((client) => {
    accepted++;
    const upstream = tcpConnect({ host: '127.0.0.1', port: state.target });
    const pipe: Pipe = {
      client,
      upstream,
      timers: new Set(),
      sent: { up: 0, down: 0 },
      destroyed: false,
      cut: false,
    };
    pipes.add(pipe);
    client.setNoDelay(true);
    upstream.setNoDelay(true);
    client.on('data', (chunk: Uint8Array) => carry(pipe, 'up', chunk, upstream));
    upstream.on('data', (chunk: Uint8Array) => carry(pipe, 'down', chunk, client));
    for (const socket of [client, upstream]) {
      socket.on('error', () => destroy(pipe));
      socket.on('close', () => destroy(pipe));
      // A half-close is forwarded only when passing bytes; a blackhole keeps the socket.
      socket.on('end', () => {
        if (state.mode.kind !== 'blackhole') destroy(pipe);
      });
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
