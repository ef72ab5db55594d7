/**
 * Where a peer stands with the PUBLISH frames sent to it (WSM-LIM-003, WSM-API-004): the
 * {@linkcode Admission} part each peer owns. Every PUBLISH the acceptor sends a peer (a broadcast,
 * recovery's markers, replays and held broadcasts) goes through {@linkcode Admission.sendPublish}, so
 * this is the one place that keeps them from a peer not yet accepted: they wait, at most
 * {@linkcode MAX_WAITING_FRAMES} and {@linkcode MAX_WAITING_BYTES}, until the acknowledgement has
 * been sent ({@linkcode Admission.admit}), or are dropped once the hello was refused. What goes
 * out goes through the peer's session, which knows nothing of hellos.
 *
 * Private to `lib/acceptor/`.
 *
 * @module
 */
import { sendEncoded } from '../session/acceptor_api.ts';
import type { Session } from '../session/session.ts';

/**
 * At most this many PUBLISH frames wait for a peer's hello to be acknowledged; later ones are
 * dropped, and counted in `stats.dropped`.
 */
export const MAX_WAITING_FRAMES: number = 4096;
/** At most this many bytes (a text frame counts its length) wait as {@linkcode MAX_WAITING_FRAMES} do. */
const MAX_WAITING_BYTES: number = 1024 * 1024;

/**
 * Where a peer stands:
 * - `open`: accepted, or no hello is required and none is being handled: frames go out;
 * - `shut`: the hello the acceptor requires has not arrived: broadcasts skip the peer, and what
 *   recovery sends it (a tag's position) waits;
 * - `hello`: its hello is being handled: every frame waits, and goes out, in order, right after
 *   the acknowledgement;
 * - `refused`: its hello was refused: nothing goes out, and the peer is closing.
 */
type AdmissionState = 'open' | 'shut' | 'hello' | 'refused';

/** The PUBLISH frames that wait for a peer's hello to be acknowledged. */
interface Waiting {
  readonly frames: Array<string | Uint8Array>;
  /** For each of `frames`, whether it was counted in `stats.delivered` (a broadcast). */
  readonly counted: boolean[];
  bytes: number;
}

/**
 * One peer's admission: its {@linkcode AdmissionState} and the frames that wait for it. The
 * peer's link extends it (`lib/acceptor/_peer.ts`), so a peer holds no object of its own for it
 * (an idle peer's memory, docs/performance.md); what goes out goes through {@linkcode session}.
 */
export abstract class Admission {
  #state: AdmissionState;
  #waiting: Waiting | undefined;

  constructor(state: 'open' | 'shut') {
    this.#state = state;
  }

  /** The peer's session, which sends what is let out. */
  abstract get session(): Session;

  /** Where the peer stands ({@linkcode AdmissionState}). */
  get state(): AdmissionState {
    return this.#state;
  }

  /** True while broadcasts skip the peer: its required hello has not arrived, or was refused. */
  get barred(): boolean {
    return this.#state === 'shut' || this.#state === 'refused';
  }

  /** The hello arrived: from now until its acknowledgement, frames wait. */
  holdForHello(): void {
    if (this.#state !== 'refused') this.#state = 'hello';
  }

  /**
   * The acknowledgement was sent: the frames that waited go out, in order, and later ones too.
   *
   * @returns How many of those that waited, counted as delivered, were not sent (the socket
   * was congested).
   */
  admit(): number {
    this.#state = 'open';
    const waiting = this.#waiting;
    this.#waiting = undefined;
    if (waiting === undefined) return 0;
    let unsent = 0;
    const { frames, counted } = waiting;
    for (let i = 0; i < frames.length; i++) {
      if (!sendEncoded(this.session, frames[i]) && counted[i]) unsent++;
    }
    return unsent;
  }

  /**
   * The hello was refused: what waited is dropped, and nothing more goes out.
   *
   * @returns How many of the frames that waited were counted as delivered.
   */
  helloRefused(): number {
    this.#state = 'refused';
    const waited = this.#waiting?.counted.filter(Boolean).length ?? 0;
    this.#waiting = undefined;
    return waited;
  }

  /**
   * Sends one already-encoded PUBLISH through the session, or keeps it until the peer is
   * accepted.
   *
   * @param counted True for a frame the caller counts in `stats.delivered` (a broadcast, or one
   * recovery held): if it waits and is then dropped, it is counted as dropped instead.
   * @returns False, sending nothing, when the session ended, the socket is congested, the hello
   * was refused, or the frames waiting for the acknowledgement are at their cap.
   */
  sendPublish(data: string | Uint8Array, counted: boolean = false): boolean {
    const state = this.#state;
    const session = this.session;
    if (state === 'open') return sendEncoded(session, data);
    if (state === 'refused' || session.isClosed) return false;
    const waiting = this.#waiting ??= { frames: [], counted: [], bytes: 0 };
    const size = typeof data === 'string' ? data.length : data.byteLength;
    if (
      waiting.frames.length >= MAX_WAITING_FRAMES || waiting.bytes + size > MAX_WAITING_BYTES
    ) return false;
    waiting.frames.push(data);
    waiting.counted.push(counted);
    waiting.bytes += size;
    return true;
  }
}
