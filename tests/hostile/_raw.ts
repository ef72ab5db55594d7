/**
 * Raw clients for the hostile-input tests: they speak WebSocket but not muxws, so a test can send
 * any bytes an attacker could.
 *
 * - {@linkcode rawClient}: a plain `WebSocket` (the global one, or one passed in, such as the
 *   `ws` package's on Node 20) offering a muxws subprotocol; frames are
 *   sent as given (a string as it is, anything else through the codec) and every message
 *   received is decoded and kept.
 * - {@linkcode tcpClient}: a WebSocket client written over `node:net`, for what a `WebSocket`
 *   cannot do: stop reading (TCP back-pressure on the server) and count raw bytes.
 *
 * Every wait is bounded; callers close the clients in `finally`.
 */
import { connect as tcpConnect, type Socket } from 'node:net';
import { type Codec, jsonCodec } from 'muxws';
import { upgradeRequest } from '../_acceptor_suite.ts';

/** How a socket closed. */
export interface Closed {
  /** The close code (1006 when none was received). */
  code: number;
  /** The close reason. */
  reason: string;
}

/** A plain WebSocket speaking raw frames. */
export interface RawClient {
  /** Every message received, decoded by the codec (`undefined` when it could not be). */
  readonly frames: unknown[];
  /** Settles when the socket closed. */
  readonly closed: Promise<Closed>;
  /** True once closed. */
  readonly isClosed: boolean;
  /** Sends a string as it is, bytes as they are, anything else encoded by the codec. */
  send(message: unknown): void;
  /** Waits for a frame (received from now on or already held) that `match` accepts. */
  next(match: (frame: unknown[]) => boolean, ms?: number, what?: string): Promise<unknown[]>;
  /** Sends PING and waits for the next PONG: the connection is alive and processed all before. */
  alive(ms?: number): Promise<void>;
  /** Closes the socket. */
  close(): void;
}

/** A constructor with the `WebSocket` signature, e.g. `globalThis.WebSocket` or `ws`. */
export type RawSocketConstructor = new (url: string, protocols?: string | string[]) => unknown;

/** Options of {@linkcode rawClient}. */
export interface RawClientOptions {
  /** Encodes frames given as arrays and decodes what arrives. @default {jsonCodec} */
  codec?: Codec;
  /** The subprotocols offered. @default {[`muxws.v1.<codec>`]} */
  protocols?: string[];
  /** The WebSocket constructor. @default {globalThis.WebSocket} */
  WebSocket?: RawSocketConstructor;
}

/** Opens a plain WebSocket offering `muxws.v1.<codec>`; resolves once open. */
export function rawClient(url: string, options: RawClientOptions = {}): Promise<RawClient> {
  const codec = options.codec ?? jsonCodec;
  const Socket = (options.WebSocket ?? WebSocket) as typeof WebSocket;
  const ws = new Socket(url, options.protocols ?? [`muxws.v1.${codec.name}`]);
  ws.binaryType = 'arraybuffer';
  const frames: unknown[] = [];
  const waiters = new Set<() => void>();
  let isClosed = false;
  let resolveClosed!: (closed: Closed) => void;
  const closed = new Promise<Closed>((resolve) => resolveClosed = resolve);
  ws.addEventListener('message', (event) => {
    const data = event.data;
    let frame: unknown;
    try {
      frame = codec.decode(typeof data === 'string' ? data : new Uint8Array(data));
    } catch {
      frame = undefined;
    }
    frames.push(frame);
    for (const wake of [...waiters]) wake();
  });
  ws.addEventListener('close', (event) => {
    isClosed = true;
    resolveClosed({ code: event.code || 1006, reason: event.reason ?? '' });
    for (const wake of [...waiters]) wake();
  });
  let pongsSeen = 0;
  const client: RawClient = {
    frames,
    closed,
    get isClosed() {
      return isClosed;
    },
    send(message) {
      if (typeof message === 'string' || message instanceof Uint8Array) ws.send(message);
      else ws.send(codec.encode(message as readonly unknown[]));
    },
    next(match, ms = 5000, what = 'the expected frame') {
      return new Promise((resolve, reject) => {
        let from = 0;
        const check = () => {
          for (; from < frames.length; from++) {
            const f = frames[from];
            if (Array.isArray(f) && match(f)) {
              done();
              resolve(f);
              return;
            }
          }
          if (isClosed) {
            done();
            reject(new Error(`${what} did not arrive: the socket closed`));
          }
        };
        const timer = setTimeout(() => {
          done();
          reject(new Error(`${what} did not arrive within ${ms} ms`));
        }, ms);
        const done = () => {
          clearTimeout(timer);
          waiters.delete(check);
        };
        waiters.add(check);
        check();
      });
    },
    async alive(ms = 5000) {
      const seen = pongsSeen++;
      client.send([6]);
      let count = 0;
      await client.next((f) => f[0] === 7 && count++ === seen, ms, 'a PONG');
    },
    close() {
      try {
        ws.close();
      } catch {
        // already closed
      }
    },
  };
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      client.close();
      reject(new Error('The raw WebSocket did not open within 5000 ms'));
    }, 5000);
    ws.addEventListener('open', () => {
      clearTimeout(timer);
      resolve(client);
    });
    ws.addEventListener('error', () => {
      clearTimeout(timer);
      reject(new Error('The raw WebSocket failed to open'));
    });
  });
}

/** A WebSocket client over `node:net` that can stop reading. */
export interface TcpClient {
  /** Text messages received, in order. */
  readonly texts: string[];
  /** Bytes of WebSocket payload received. */
  readonly payloadBytes: number;
  /** Settles when the TCP connection ended; `code` is the close frame's, or 1006. */
  readonly closed: Promise<Closed>;
  /** Sends one text message (masked, as a client must). */
  send(text: string): void;
  /** Stops reading from the socket: the server's writes back up. */
  pause(): void;
  /** Reads again. */
  resume(): void;
  /** Destroys the connection. */
  destroy(): void;
}

/**
 * Opens a WebSocket over a plain TCP socket to 127.0.0.1:`port``path`, offering `protocol`;
 * resolves once the 101 arrived.
 */
export function tcpClient(
  port: number,
  path: string,
  protocol: string = 'muxws.v1.json',
): Promise<TcpClient> {
  const { socket, upgraded } = tcpUpgrade(port, path, protocol, (bytes) => {
    buffer = concat(buffer, bytes);
    parse();
  });
  socket.setNoDelay(true);
  const texts: string[] = [];
  let payloadBytes = 0;
  let buffer = new Uint8Array(0);
  let fragments: Uint8Array[] = [];
  let closeInfo: Closed = { code: 1006, reason: '' };
  let resolveClosed!: (closed: Closed) => void;
  const closed = new Promise<Closed>((resolve) => resolveClosed = resolve);
  const decoder = new TextDecoder();

  const frame = (opcode: number, payload: Uint8Array): Uint8Array => {
    const length = payload.byteLength;
    const extra = length < 126 ? 0 : length < 65536 ? 2 : 8;
    const out = new Uint8Array(2 + extra + 4 + length);
    out[0] = 0x80 | opcode;
    if (extra === 0) out[1] = 0x80 | length;
    else if (extra === 2) {
      out[1] = 0x80 | 126;
      out[2] = length >> 8;
      out[3] = length & 0xff;
    } else {
      out[1] = 0x80 | 127;
      new DataView(out.buffer).setBigUint64(2, BigInt(length));
    }
    const mask = crypto.getRandomValues(new Uint8Array(4));
    out.set(mask, 2 + extra);
    for (let i = 0; i < length; i++) out[2 + extra + 4 + i] = payload[i] ^ mask[i & 3];
    return out;
  };

  const parse = () => {
    for (;;) {
      if (buffer.byteLength < 2) return;
      const opcode = buffer[0] & 0x0f;
      const fin = (buffer[0] & 0x80) !== 0;
      let length = buffer[1] & 0x7f;
      let offset = 2;
      if (length === 126) {
        if (buffer.byteLength < 4) return;
        length = (buffer[2] << 8) | buffer[3];
        offset = 4;
      } else if (length === 127) {
        if (buffer.byteLength < 10) return;
        length = Number(new DataView(buffer.buffer, buffer.byteOffset).getBigUint64(2));
        offset = 10;
      }
      if (buffer.byteLength < offset + length) return;
      const payload = buffer.slice(offset, offset + length);
      buffer = buffer.slice(offset + length);
      payloadBytes += length;
      if (opcode === 0x8) {
        const code = length >= 2 ? (payload[0] << 8) | payload[1] : 1005;
        closeInfo = { code, reason: decoder.decode(payload.subarray(2)) };
        socket.end();
      } else if (opcode === 0x9) {
        if (!socket.destroyed) socket.write(frame(0xa, payload));
      } else if (opcode === 0x1 || opcode === 0x2 || opcode === 0x0) {
        fragments.push(payload);
        if (fin) {
          const total = fragments.reduce((n, f) => n + f.byteLength, 0);
          const whole = new Uint8Array(total);
          let at = 0;
          for (const f of fragments) {
            whole.set(f, at);
            at += f.byteLength;
          }
          fragments = [];
          texts.push(decoder.decode(whole));
        }
      }
    }
  };

  const client: TcpClient = {
    texts,
    get payloadBytes() {
      return payloadBytes;
    },
    closed,
    send(text) {
      if (!socket.destroyed) socket.write(frame(0x1, new TextEncoder().encode(text)));
    },
    pause() {
      socket.pause();
    },
    resume() {
      socket.resume();
    },
    destroy() {
      socket.destroy();
    },
  };

  socket.on('close', () => resolveClosed(closeInfo));
  return upgraded.then(() => client);
}

/** A WebSocket upgrade over `node:net`: the socket, and when its 101 arrived. */
export interface TcpUpgrade {
  /** The TCP socket; after the 101, it carries WebSocket frames. */
  readonly socket: Socket;
  /** Resolves once the 101 arrived; rejects on another status, an error or 5 s without one. */
  readonly upgraded: Promise<void>;
}

/**
 * Connects to 127.0.0.1:`port` and sends the upgrade request for `path` offering `protocol`.
 * Every byte after the 101's head goes to `onBytes` (the first, if any, before `upgraded`
 * resolves). An error after the 101 (a write after the server closed resets the connection) is
 * left to the socket's `close` event.
 */
export function tcpUpgrade(
  port: number,
  path: string,
  protocol: string,
  onBytes: (bytes: Uint8Array) => void,
): TcpUpgrade {
  const socket: Socket = tcpConnect({ host: '127.0.0.1', port });
  let head = '';
  let done = false;
  const upgraded = new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new Error('The raw TCP upgrade got no 101 within 5000 ms'));
    }, 5000);
    socket.on('connect', () => {
      socket.write(upgradeRequest(port, path, { 'Sec-WebSocket-Protocol': protocol }));
    });
    socket.on('data', (chunk: Uint8Array) => {
      if (done) {
        onBytes(chunk);
        return;
      }
      head += new TextDecoder('latin1').decode(chunk);
      const end = head.indexOf('\r\n\r\n');
      if (end === -1) return;
      clearTimeout(timer);
      const status = Number(head.slice(0, end).split(' ')[1]);
      if (status !== 101) {
        socket.destroy();
        reject(new Error(`The raw TCP upgrade was answered with ${status}`));
        return;
      }
      done = true;
      // The head was decoded as latin1, so its remaining characters map 1:1 to bytes.
      const rest = Uint8Array.from(head.slice(end + 4), (c) => c.charCodeAt(0));
      if (rest.byteLength > 0) onBytes(rest);
      resolve();
    });
    socket.on('error', (error: Error) => {
      clearTimeout(timer);
      if (!done) reject(error);
    });
    socket.on('close', () => {
      clearTimeout(timer);
      if (!done) reject(new Error('The raw TCP upgrade ended before its 101'));
    });
  });
  return { socket, upgraded };
}

/** `a` followed by `b`, in a new array. */
export function concat(a: Uint8Array, b: Uint8Array): Uint8Array<ArrayBuffer> {
  const out = new Uint8Array(a.byteLength + b.byteLength);
  out.set(a);
  out.set(b, a.byteLength);
  return out;
}

/** Builds a JSON text nested `depth` arrays deep around `0`. */
export function nestedJson(depth: number): string {
  return '['.repeat(depth) + '0' + ']'.repeat(depth);
}
