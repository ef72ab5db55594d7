/**
 * The scale curves as Markdown tables: `deno run --allow-read bench/scale_table.ts
 * [bench/results/latest.json]` prints, for every `scale-*` scenario in the results, one table per
 * metric: a line per runtime and subject, a column per N, the flatness (cost at the largest N ÷
 * at the smallest, goal ≤ 1.2), and under each curve's first metric the `ratio` line, muxws
 * against raw with higher better for muxws (raw ÷ muxws for a cost), where the bench made one.
 * `bench/run.ts` appends the same tables to `latest.md`; `docs/performance.md` takes them from a
 * quiet run.
 *
 * @module
 */
import type { Row } from './_common.ts';

interface CurveRow extends Row {
  n: number;
}

function hasN(row: Row): row is CurveRow {
  return typeof (row as Partial<CurveRow>).n === 'number';
}

function fmt(v: number | undefined): string {
  if (v === undefined || !Number.isFinite(v)) return '–';
  const digits = Math.abs(v) >= 100 ? 0 : Math.abs(v) >= 10 ? 1 : 2;
  return v.toLocaleString('en-US', { maximumFractionDigits: digits });
}

/** The Markdown tables of every `scale-*` scenario of `rows`; empty when there is none. */
export function scaleTable(rows: readonly Row[]): string {
  const curves = rows.filter(hasN).filter((r) => r.scenario.startsWith('scale-'));
  const out: string[] = [];
  const scenarios = [...new Set(curves.map((r) => r.scenario))];
  for (const scenario of scenarios) {
    const mine = curves.filter((r) => r.scenario === scenario);
    const measured = mine.filter((r) => r.subject !== 'flatness' && r.subject !== 'ratio');
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
        const mark = flat === undefined || !Number.isFinite(flat) ? '' : flat <= 1.2 ? ' ✓' : ' ✗';
        out.push(
          `| ${subject} on ${runtime} | ${ns.map((n) => fmt(at(n))).join(' | ')} | ${
            fmt(flat)
          }${mark} |`,
        );
      }
      const ratioRows = mine.filter((r) => r.subject === 'ratio');
      const firstMetric = measured[0]?.metric;
      if (metric !== firstMetric || ratioRows.length === 0) continue;
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
