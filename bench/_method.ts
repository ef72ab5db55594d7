/**
 * How `bench/run.ts` makes its runs comparable: the rounds it asks for, and the CPUs it pins its
 * child processes to. Where `taskset` exists and the machine has two CPUs or more, a client or
 * dialer process runs on {@linkcode CLIENT_CPU} and a server or acceptor process on
 * {@linkcode SERVER_CPU}, so neither side preempts the other on one core and the scheduler does
 * not move them between rounds.
 *
 * @module
 */
import { spawnSync } from 'node:child_process';

/** The CPU client and dialer processes are pinned to. */
export const CLIENT_CPU = '0';
/** The CPU server and acceptor processes are pinned to. */
export const SERVER_CPU = '1';

/**
 * Interleaved rounds of each side-by-side scenario: `--rounds N`, else 9 (2 with `--quick`).
 * Nine: their median stands while up to four rounds go astray, and per-round ratios with a 10 %
 * standard deviation give nine rounds a max ÷ min near 1.34 (over 1.5 about one run in nine), so
 * the 1.5× `unstable` mark catches rounds that disagree, not the tails of ordinary noise; fifteen
 * would put it near 1.41 (over 1.5 one run in four).
 *
 * @throws {RangeError} When `--rounds` is not a whole number of at least 1.
 */
export function roundsOption(argv: readonly string[], quick: boolean): number {
  const i = argv.indexOf('--rounds');
  const n = i === -1 ? (quick ? 2 : 9) : Number(argv[i + 1]);
  if (!Number.isInteger(n) || n < 1) {
    throw new RangeError(
      `--rounds must be a whole number of at least 1: current value is ${argv[i + 1]}`,
    );
  }
  return n;
}

/** Whether this machine can pin: two CPUs or more, and a `taskset` that runs. */
export function canPin(cpuCount: number): boolean {
  if (cpuCount < 2) return false;
  try {
    return spawnSync('taskset', ['-c', CLIENT_CPU, 'true'], { stdio: 'ignore' }).status === 0;
  } catch {
    return false;
  }
}

/**
 * The CPU `script` (a file of bench/ without extension) is pinned to: a server or acceptor
 * process (its name holds `server` or `acceptor`) to {@linkcode SERVER_CPU}, a client or dialer
 * process (`client`, `dialer`, `idle_memory`, `herd`) to {@linkcode CLIENT_CPU}, any other to
 * none, so a process of unknown side never shares a CPU with the side it measures.
 */
export function pinnedCpu(script: string): string | undefined {
  if (/server|acceptor/.test(script)) return SERVER_CPU;
  if (/client|dialer|idle_memory|herd/.test(script)) return CLIENT_CPU;
  return undefined;
}

/**
 * `command` run on the CPU of {@linkcode pinnedCpu} when `pin` (`taskset` execs the command, so
 * the child's pid is the runtime's own), else `command` as it is.
 */
export function pinCommand(
  pin: boolean,
  script: string,
  command: [string, string[]],
): [string, string[]] {
  const cpu = pinnedCpu(script);
  if (!pin || cpu === undefined) return command;
  return ['taskset', ['-c', cpu, command[0], ...command[1]]];
}

/** What a run says about its pinning, in its output and in `latest.md`. */
export function pinningNote(pin: boolean, noPinAsked: boolean): string {
  return pin
    ? `pinned: clients on CPU ${CLIENT_CPU}, servers on CPU ${SERVER_CPU} (taskset)`
    : `not pinned (${noPinAsked ? '--no-pin' : 'no taskset, or one CPU'})`;
}
