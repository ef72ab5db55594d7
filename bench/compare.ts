/**
 * `deno run -R bench/compare.ts a.json b.json`: the scored ratios of two runs of `bench/run.ts`
 * (their `latest.json`, saved under two names) side by side, and whether each pair agrees within
 * ±0.1. A ratio `unstable` or missing in either run is listed but not compared. Exits with 0 when
 * at least one ratio was compared and every compared one agrees, 1 otherwise, 2 on bad arguments.
 * Runs on Bun and Node too (`bun bench/compare.ts …`).
 *
 * @module
 */
import { readFileSync } from 'node:fs';
import process from 'node:process';
import { args, type Row } from './_common.ts';
import { compareRuns, comparisonTable } from './_score.ts';

/** The rows of a `latest.json`, or an error naming the file and what was found. */
function load(path: string): Row[] {
  const rows = JSON.parse(readFileSync(path, 'utf8')) as unknown;
  if (!Array.isArray(rows)) {
    throw new TypeError(
      `Cannot compare ${path} as it must hold an array of rows: found ${typeof rows}`,
    );
  }
  return rows as Row[];
}

/** How a run was made, from its `method` rows: pinned or not, and its rounds. */
function method(rows: readonly Row[]): string {
  const get = (metric: string) =>
    rows.find((r) => r.scenario === 'method' && r.metric === metric)?.value;
  const pinned = get('pinned');
  const rounds = get('rounds');
  return `${pinned === undefined ? 'pinning unknown' : pinned ? 'pinned' : 'not pinned'}, ${
    rounds === undefined ? 'rounds unknown' : `${rounds} rounds asked`
  }`;
}

if (args.length !== 2) {
  console.error(`Usage: bench/compare.ts a.json b.json: found ${args.length} arguments`);
  process.exit(2);
}
const [a, b] = args.map(load);
console.log(`run a: ${args[0]} (${method(a)})\nrun b: ${args[1]} (${method(b)})\n`);
const result = compareRuns(a, b);
console.log(comparisonTable(result));
process.exit(result.ok ? 0 : 1);
