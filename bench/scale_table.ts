/**
 * The scale curves as Markdown tables: `deno run --allow-read bench/scale_table.ts
 * [bench/results/latest.json]` prints, for every `scale-*` scenario in the results, one table per
 * metric: a line per runtime and subject, a column per N, the flatness (cost at the largest N ÷
 * at the smallest, goal ≤ `FLATNESS_GOAL`), and under the metric it compares (a `vs-raw` ratio:
 * the curve's first metric) the `ratio` line, muxws against raw with higher better for muxws
 * (raw ÷ muxws for a cost), where the bench made one.
 * `bench/run.ts` appends the same tables to `latest.md`; `docs/performance.md` takes them from a
 * quiet run.
 *
 * @module
 */
import type { Row } from './_common.ts';
import { FLATNESS_GOAL, fmt, hasN } from './_common.ts';

/** Metrics that only describe a point (its rounds, its per-round bounds): no table of their own. */
function described(metric: string): boolean {
  return metric === 'rounds' || metric.endsWith('-min') || metric.endsWith('-max');
}

/** The Markdown tables of every `scale-*` scenario of `rows`; empty when there is none. */
export function scaleTable(rows: readonly Row[]): string {
  const curves = rows.filter(hasN).filter((r) => r.scenario.startsWith('scale-'));
  const out: string[] = [];
  const scenarios = [...new Set(curves.map((r) => r.scenario))];
  for (const scenario of scenarios) {
    const mine = curves.filter((r) => r.scenario === scenario);
    const measured = mine.filter((r) =>
      r.subject !== 'flatness' && r.subject !== 'ratio' && !described(r.metric)
    );
    const ns = [...new Set(measured.map((r) => r.n))].sort((a, b) => a - b);
    const metrics = [...new Set(measured.map((r) => r.metric))];
    for (const metric of metrics) {
      const unit = measured.find((r) => r.metric === metric)?.unit ?? '';
      out.push(
        '',
        `| ${scenario}: ${metric} (${unit}) | ${
          ns.map((n) => `N = ${fmt(n)}`).join(' | ')
        } | flatness |`,
        `| --- | ${ns.map(() => '---').join(' | ')} | --- |`,
      );
      const lines = [
        ...new Set(
          measured.filter((r) => r.metric === metric).map((r) => `${r.runtime}|${r.subject}`),
        ),
      ];
      for (const line of lines) {
        const [runtime, subject] = line.split('|');
        const at = (n: number) =>
          measured.find((r) =>
            r.metric === metric && r.runtime === runtime && r.subject === subject && r.n === n
          )?.value;
        const flat = mine.find((r) =>
          r.subject === 'flatness' && r.runtime === runtime && r.metric === `${metric} (${subject})`
        )?.value;
        const mark = flat === undefined || !Number.isFinite(flat)
          ? ''
          : flat <= FLATNESS_GOAL
          ? ' ✓'
          : ' ✗';
        out.push(
          `| ${subject} on ${runtime} | ${ns.map((n) => fmt(at(n))).join(' | ')} | ${
            fmt(flat)
          }${mark} |`,
        );
      }
      // A ratio `<metric>-vs-raw` goes under its metric; a plain `vs-raw` under the first.
      const ratioRows = mine.filter((r) =>
        r.subject === 'ratio' &&
        (r.metric === `${metric}-vs-raw` ||
          (r.metric === 'vs-raw' && metric === metrics[0]))
      );
      if (ratioRows.length === 0) continue;
      for (const runtime of [...new Set(ratioRows.map((r) => r.runtime))]) {
        const at = (n: number) => ratioRows.find((r) => r.runtime === runtime && r.n === n)?.value;
        out.push(
          `| muxws vs raw on ${runtime} | ${
            ns.map((n) => at(n) === undefined ? '–' : `${fmt(at(n))}×`).join(' | ')
          } | |`,
        );
      }
    }
  }
  return out.join('\n').trim();
}

if (import.meta.main) {
  const file = Deno.args[0] ?? new URL('results/latest.json', import.meta.url).pathname;
  const rows = JSON.parse(await Deno.readTextFile(file)) as Row[];
  const text = scaleTable(rows);
  console.log(text || `No scale rows in ${file}: run \`npm run bench:scale\` first.`);
}
