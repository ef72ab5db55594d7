/**
 * Where a peer stands with the PUBLISH frames sent to it: the {@linkcode Admission} of each peer,
 * its link. Every PUBLISH the acceptor sends a peer (a broadcast, recovery's markers, replays and
 * held broadcasts) goes through {@linkcode sendPublish}, so this is the one place that keeps them
 * from a peer not yet accepted: they wait, at most {@linkcode MAX_WAITING_FRAMES} and
 * {@linkcode MAX_WAITING_BYTES}, until the acknowledgement has been sent ({@linkcode admit}), or
 * are dropped once the hello was refused. What goes out goes through the peer's session, which
 * knows nothing of hellos.
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
export type AdmissionState = 'open' | 'shut' | 'hello' | 'refused';

/** The PUBLISH frames that wait for a peer's hello to be acknowledged. */
export interface Waiting {
  readonly frames: Array<string | Uint8Array>;
  /** For each of `frames`, whether it was counted in `stats.delivered` (a broadcast). */
  readonly counted: boolean[];
  bytes: number;
}

/**
 * One peer's admission, as the broadcaster, recovery and the peer use it: the peer's link
 * (`lib/acceptor/_peer.ts`) is it, over the functions below, so a peer holds no object of its own
 * for it (an idle peer's memory, docs/performance.md).
 */
export interface Admission {
  /** Where the peer stands ({@linkcode AdmissionState}). */
  readonly state: AdmissionState;
  /** True while broadcasts skip the peer: its required hello has not arrived, or was refused. */
  readonly barred: boolean;
  /** {@linkcode holdForHello}. */
  holdForHello(): void;
  /** {@linkcode admit}. */
  admit(): number;
  /** {@linkcode helloRefused}. */
  helloRefused(): number;
  /** {@linkcode sendPublish}. */
  sendPublish(data: string | Uint8Array, counted?: boolean): boolean;
}

/** What the functions below keep their state in: the peer's link. */
export interface AdmissionHost {
  /** Where the peer stands. */
  admissionState: AdmissionState;
  /** The PUBLISH frames that wait for the acknowledgement, once one waits. */
  waiting: Waiting | undefined;
  /** The peer's session, which sends what is let out. */
  readonly session: Session;
}

/** True while broadcasts skip the peer: its required hello has not arrived, or was refused. */
export function isBarred(host: AdmissionHost): boolean {
  return host.admissionState === 'shut' || host.admissionState === 'refused';
}

/** The hello arrived: from now until its acknowledgement, frames wait. */
export function holdForHello(host: AdmissionHost): void {
  if (host.admissionState !== 'refused') host.admissionState = 'hello';
}

/**
 * The acknowledgement was sent: the frames that waited go out, in order, and later ones too.
 *
 * @returns How many of those that waited, counted as delivered, were not sent (the socket
 * was congested).
 */
export function admit(host: AdmissionHost): number {
  host.admissionState = 'open';
  const waiting = host.waiting;
  host.waiting = undefined;
  if (waiting === undefined) return 0;
  let unsent = 0;
  const { frames, counted } = waiting;
  for (let i = 0; i < frames.length; i++) {
    if (!sendEncoded(host.session, frames[i]) && counted[i]) unsent++;
  }
  return unsent;
}

/**
 * The hello was refused: what waited is dropped, and nothing more goes out.
 *
 * @returns How many of the frames that waited were counted as delivered.
 */
export function helloRefused(host: AdmissionHost): number {
  host.admissionState = 'refused';
  const waited = host.waiting?.counted.filter(Boolean).length ?? 0;
  host.waiting = undefined;
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
export function sendPublish(
  host: AdmissionHost,
  data: string | Uint8Array,
  counted: boolean = false,
): boolean {
  const state = host.admissionState;
  const session = host.session;
  if (state === 'open') return sendEncoded(session, data);
  if (state === 'refused' || session.isClosed) return false;
  const waiting = host.waiting ??= { frames: [], counted: [], bytes: 0 };
  const size = typeof data === 'string' ? data.length : data.byteLength;
  if (
    waiting.frames.length >= MAX_WAITING_FRAMES || waiting.bytes + size > MAX_WAITING_BYTES
  ) return false;
  waiting.frames.push(data);
  waiting.counted.push(counted);
  waiting.bytes += size;
  return true;
}
