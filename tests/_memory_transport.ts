/**
 * An in-memory transport for the dialer's tests: it implements the dialer's internal
 * {@linkcode Transport} interface directly (no fake WebSocket in between) and attaches every
 * accepted dial to a {@linkcode TestAcceptor} through its push form, so a suite can run the
 * dialer over a second carrier (`connectOver(server.transport, target, options)`).
 *
 * Delivery is in order, one microtask per message, as the in-memory socket pair's. A dial is
 * decided by {@linkcode MemoryServer.decide}: accepted (with the first offered subprotocol unless
 * told otherwise) on a microtask, refused (the dial fails with close 1006), or left hanging until
 * the attempt is abandoned.
 */
import type {
  CloseFields,
  OpenReport,
  Transport,
  Wire,
  WireEvents,
} from '../lib/dialer/_transport.ts';
import type { DialDecision, TestAcceptor } from './_test_acceptor.ts';

/** One dial seen by a {@linkcode MemoryServer}. */
export interface MemoryDial {
  /** The URL the dialer asked for. */
  readonly url: string;
  /** The subprotocols it offered, in order. */
  readonly protocols: readonly string[];
  /** Every message the dialer sent on it, in order. */
  readonly sent: Array<string | Uint8Array>;
  /** The dialer's end, once accepted. */
  wire?: MemoryWire;
}

/** The dialer's end of an accepted in-memory dial. */
export class MemoryWire implements Wire {
  /** The subprotocol the acceptor selected. */
  readonly protocol: string;
  /** Always 0: nothing is ever queued. */
  readonly bufferedAmount = 0;
  /** How this end closed, once it did. */
  closeInfo: CloseFields | undefined;
  readonly #dial: MemoryDial;
  readonly #toAcceptor: (data: string | Uint8Array) => void;
  readonly #acceptorClosed: (code: number, reason: string) => void;
  #events: WireEvents | undefined;
  /** Messages that arrived before `listen()`. */
  readonly #early: Array<string | Uint8Array> = [];
  #paused = false;
  readonly #held: Array<string | Uint8Array> = [];

  /** Use {@linkcode MemoryServer}. */
  constructor(
    dial: MemoryDial,
    protocol: string,
    acceptor: TestAcceptor,
  ) {
    this.#dial = dial;
    this.protocol = protocol;
    const handle = acceptor.attachSink({
      send: (data) => this.#fromAcceptor(data),
      close: (code, reason) => this.#end({ code, reason, wasClean: true }),
    });
    this.#toAcceptor = handle.message;
    this.#acceptorClosed = handle.closed;
  }

  /** Sends one message to the acceptor. */
  send(data: string | Uint8Array): void {
    if (this.closeInfo !== undefined) return;
    const copy = typeof data === 'string' ? data : data.slice();
    this.#dial.sent.push(copy);
    queueMicrotask(() => {
      if (this.closeInfo === undefined) this.#toAcceptor(copy);
    });
  }

  /** Closes both ends cleanly with `code` (1005 without one). */
  close(code?: number, reason: string = ''): void {
    this.#end({ code: code ?? 1005, reason, wasClean: true });
  }

  /** Starts delivering to `events`. */
  listen(events: WireEvents): () => void {
    this.#events = events;
    for (const data of this.#early.splice(0)) events.message(data);
    return () => this.#events = undefined;
  }

  /** Test control: the connection drops abruptly; both ends see 1006, not clean. */
  drop(): void {
    this.#end({ code: 1006, reason: '', wasClean: false });
  }

  /** Test control: the acceptor's messages stop arriving until {@linkcode resume}. */
  pause(): void {
    this.#paused = true;
  }

  /** Test control: releases the held messages. */
  resume(): void {
    this.#paused = false;
    for (const data of this.#held.splice(0)) this.#fromAcceptor(data);
  }

  #fromAcceptor(data: string | Uint8Array): void {
    if (this.closeInfo !== undefined) return;
    if (this.#paused) {
      this.#held.push(data);
      return;
    }
    const copy = typeof data === 'string' ? data : data.slice();
    queueMicrotask(() => {
      if (this.closeInfo !== undefined) return;
      if (this.#events === undefined) this.#early.push(copy);
      else this.#events.message(copy);
    });
  }

  #end(info: CloseFields): void {
    if (this.closeInfo !== undefined) return;
    this.closeInfo = info;
    queueMicrotask(() => {
      this.#acceptorClosed(info.code, info.reason);
      this.#events?.close(info);
    });
  }
}

/** A server of in-memory dials, attached to `acceptor`. */
export class MemoryServer {
  /** Every dial so far, in order. */
  readonly dials: MemoryDial[] = [];
  /** Pass as `connectOver(server.transport, …)`. */
  readonly transport: Transport;
  /** Decides each dial; replaceable between dials. Default: accept. */
  decide: (dial: MemoryDial, index: number) => DialDecision = () => ({ kind: 'accept' });

  /** Creates the server. */
  constructor(acceptor: TestAcceptor) {
    this.transport = {
      open: (url, protocols, signal, report) =>
        this.#open(acceptor, url, protocols, signal, report),
    };
  }

  #open(
    acceptor: TestAcceptor,
    url: string,
    protocols: readonly string[],
    signal: AbortSignal,
    report: OpenReport,
  ): Promise<Wire> {
    const dial: MemoryDial = { url, protocols: [...protocols], sent: [] };
    this.dials.push(dial);
    const decision = this.decide(dial, this.dials.length - 1);
    return new Promise<Wire>((resolve, reject) => {
      let settled = false;
      const onAbort = () => {
        if (settled) return;
        settled = true;
        reject(signal.reason);
      };
      signal.addEventListener('abort', onAbort, { once: true });
      if (decision.kind === 'hang') return;
      queueMicrotask(() => {
        if (settled) return;
        settled = true;
        signal.removeEventListener('abort', onAbort);
        if (decision.kind === 'refuse') {
          report.close = { code: 1006, reason: '', wasClean: false };
          reject(new Error(`The in-memory dial to ${url} was refused`));
          return;
        }
        dial.wire = new MemoryWire(dial, decision.protocol ?? protocols[0] ?? '', acceptor);
        resolve(dial.wire);
      });
    });
  }
}
