/**
 * The verdict of the soak run (`bench/soak.ts`) on one runtime, and what it is made of: the
 * minute rows, the restarts with the heap after each, and the final counts.
 *
 * @module
 */
import { median } from './_common.ts';
import type { Stats } from './_soak_dialers.ts';

/** The heap after the last restart may exceed the heap after the first by this share. */
export const HEAP_TOLERANCE = 0.1;

/** The acceptor process's `MEM` line. */
export interface ServerMem {
  rss: number;
  heap: number;
  peers: number;
  errors: number;
  samples: string[];
  kept: number;
}

/** One minute row. */
export interface MinuteRow {
  runtime: string;
  minute: number;
  acceptor: { rss: number; heap: number; peers: number };
  dialers: { rss: number; heap: number };
  calls: number;
  answered: number;
  refused: number;
  crossed: number;
  inFlight: number;
  unsettled: number;
  unexpected: number;
  reopened: number;
  reconnected: number;
  failedRedials: number;
  /** The connections' closes, by `<code> <reason>`. */
  closes: Record<string, number>;
  /** The dialers' connections by state (`open`, `reconnecting`, …). */
  states: Record<string, number>;
  ticks: number;
  broadcasts: number;
}

/**
 * One restart: when (ms into the soak), how long the old acceptor's close took, when every dialer
 * was back, and the heap after it: the median of the readings (`heaps`, after a garbage
 * collection each) from then until the next restart or the end, and the RSS likewise.
 */
export interface Restart {
  atMs: number;
  closeMs: number;
  allBackMs: number;
  heap: number;
  rss: number;
  heaps: number[];
  rsses: number[];
}

export interface RuntimeResult {
  runtime: string;
  dialers: number;
  rows: MinuteRow[];
  restarts: Restart[];
  final?: { dialers: Stats; acceptor: ServerMem };
  verdict: {
    pass: boolean;
    reasons: string[];
    heapAfterFirstRestart?: number;
    heapAfterLastRestart?: number;
    heapGrowth?: number;
    unsettled: number;
    unexpected: number;
  };
}

/** Megabytes, for people. */
export function mb(bytes: number): string {
  return `${(bytes / 1e6).toFixed(1)} MB`;
}

/** Adds a reading to the heap after the latest restart (none before the first). */
export function heapReading(result: RuntimeResult, mem: ServerMem): void {
  const latest = result.restarts.at(-1);
  if (latest === undefined) return;
  latest.heaps.push(mem.heap);
  latest.rsses.push(mem.rss);
  latest.heap = median(latest.heaps);
  latest.rss = median(latest.rsses);
}

/** Decides whether `result` passed; `failure` is what stopped its run, if anything did. */
export function judge(result: RuntimeResult, failure: unknown): void {
  const reasons: string[] = [];
  const verdict = result.verdict;
  if (failure !== undefined) {
    reasons.push(`the run failed: ${(failure as Error).message ?? failure}`);
  }
  const { restarts } = result;
  if (restarts.length < 2) {
    reasons.push(
      `the heap is compared between the first and the last restart, and there were ${restarts.length}`,
    );
  } else {
    verdict.heapAfterFirstRestart = restarts[0].heap;
    verdict.heapAfterLastRestart = restarts[restarts.length - 1].heap;
    verdict.heapGrowth = verdict.heapAfterLastRestart / verdict.heapAfterFirstRestart - 1;
    if (verdict.heapGrowth > HEAP_TOLERANCE) {
      reasons.push(
        `the heap after the last restart is ${
          (verdict.heapGrowth * 100).toFixed(1)
        } % above the heap after the first (medians of ${restarts[0].heaps.length} and ${
          restarts.at(-1)!.heaps.length
        } readings: ${mb(verdict.heapAfterFirstRestart)} → ${
          mb(verdict.heapAfterLastRestart)
        }), more than ${HEAP_TOLERANCE * 100} %`,
      );
    }
  }
  if (result.final) {
    verdict.unsettled = result.final.dialers.unsettled;
    verdict.unexpected = result.final.dialers.errors + result.final.acceptor.errors;
    if (verdict.unsettled > 0) reasons.push(`${verdict.unsettled} calls never settled`);
    if (verdict.unexpected > 0) {
      reasons.push(
        `${verdict.unexpected} unexpected errors: ${JSON.stringify(result.final.dialers.kinds)} ${
          [...result.final.dialers.samples, ...result.final.acceptor.samples].join(' | ')
        }`,
      );
    }
  } else if (failure === undefined) reasons.push('the run did not finish');
  verdict.reasons = reasons;
  verdict.pass = reasons.length === 0;
}
