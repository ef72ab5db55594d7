/**
 * The pictures of the scale curves: {@linkcode scaleChart} builds an SVG (its text, no
 * dependency) of one `scale-*` scenario from the bench's rows: x is N on a log axis, y the cost
 * per unit, one line per subject and runtime, with labelled axes and a legend. `bench/run.ts`
 * writes one per scenario beside its results, `<scenario>.svg` (`scale-idle.svg`, …).
 *
 * @module
 */
import type { Row, ScaleRow } from './_common.ts';
import { hasN } from './_common.ts';

/** What one chart plots: the metric, how to turn its value into a cost, the axis labels. */
export interface ChartSpec {
  metric: string;
  /** The y value of a row's value (its cost per unit). */
  cost: (value: number) => number;
  /** The y axis. */
  yLabel: string;
  /** The x axis. */
  xLabel: string;
  title: string;
}

/** The chart of each scale scenario: its first cost metric. */
const SPECS: Record<string, Omit<ChartSpec, 'xLabel'>> = {
  'scale-idle': {
    metric: 'rss-per-peer',
    cost: (v) => v / 1024,
    yLabel: 'server RSS per idle peer (KiB)',
    title: 'Idle memory per peer',
  },
  'scale-broadcast': {
    metric: 'deliveries-per-second',
    cost: (v) => 1e6 / v,
    yLabel: 'µs per delivery (1 ÷ deliveries per second)',
    title: 'One broadcast to N peers of one tag',
  },
  'scale-accept': {
    metric: 'time-per-connection',
    cost: (v) => v,
    yLabel: 'wall µs per connection accepted',
    title: 'Accepting N connections (muxws with its hello)',
  },
};

/** The spec of `scenario`'s chart: a known one, else its first metric measured in µs. */
export function chartSpec(scenario: string, rows: readonly ScaleRow[]): ChartSpec | undefined {
  const xLabel = scenario === 'scale-streams'
    ? 'open streams on one connection (N, log scale)'
    : 'peers (N, log scale)';
  const known = SPECS[scenario];
  if (known) return { ...known, xLabel };
  const mine = rows.filter((r) => r.scenario === scenario && isCurve(r));
  const pick = mine.find((r) => r.metric === 'cpu') ?? mine.find((r) => r.unit === 'µs') ??
    mine[0];
  if (pick === undefined) return undefined;
  return {
    metric: pick.metric,
    cost: (v) => v,
    yLabel: `${pick.metric} (${pick.unit})`,
    xLabel,
    title: scenario,
  };
}

/** A measured point of a curve: not its flatness or ratio rows. */
function isCurve(row: Row): row is ScaleRow {
  return hasN(row) && row.subject !== 'flatness' && row.subject !== 'ratio';
}

const COLORS: Record<string, string> = { deno: '#1f77b4', bun: '#d62728', node: '#2ca02c' };
const DASHES: Record<string, string> = { muxws: '', raw: '6 4' };
const W = 720;
const H = 440;
const LEFT = 80;
const RIGHT = 200;
const TOP = 40;
const BOTTOM = 60;

function escape(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}

function num(n: number): string {
  return Number.isInteger(n) ? String(n) : n.toFixed(1);
}

/** A short tick label: 1k, 19.5k, 0.25, 12. */
function short(n: number): string {
  if (n >= 1000) return `${+(n / 1000).toFixed(1)}k`;
  if (n >= 10) return String(Math.round(n));
  return String(+n.toPrecision(2));
}

/** A round step near a fifth of `max`. */
function step(max: number): number {
  const raw = max / 5;
  const p = 10 ** Math.floor(Math.log10(raw));
  return [1, 2, 5, 10].map((m) => m * p).find((s) => s >= raw) ?? raw;
}

/**
 * The SVG of `scenario`'s curve from `rows` (other scenarios' rows are ignored), or undefined
 * when it has no point.
 */
export function scaleChart(rows: readonly Row[], scenario: string): string | undefined {
  const curveRows = rows.filter(isCurve);
  const spec = chartSpec(scenario, curveRows);
  if (spec === undefined) return undefined;
  const points = curveRows.filter((r) => r.scenario === scenario && r.metric === spec.metric)
    .map((r) => ({ ...r, y: spec.cost(r.value) }))
    .filter((r) => Number.isFinite(r.y) && r.n > 0);
  if (points.length === 0) return undefined;
  const series = new Map<string, typeof points>();
  for (const p of points) {
    const key = `${p.subject} on ${p.runtime}`;
    series.set(key, [...series.get(key) ?? [], p]);
  }
  const ns = [...new Set(points.map((p) => p.n))].sort((a, b) => a - b);
  let lo = Math.log10(ns[0]);
  let hi = Math.log10(ns[ns.length - 1]);
  if (hi - lo < 0.1) [lo, hi] = [lo - 0.5, hi + 0.5];
  const yStep = step(Math.max(...points.map((p) => p.y)) * 1.05 || 1);
  const yMax = yStep * Math.ceil((Math.max(...points.map((p) => p.y)) * 1.05 || 1) / yStep);
  const plotW = W - LEFT - RIGHT;
  const plotH = H - TOP - BOTTOM;
  const x = (n: number) => LEFT + ((Math.log10(n) - lo) / (hi - lo)) * plotW;
  const y = (v: number) => TOP + plotH - (v / yMax) * plotH;
  const out: string[] = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" viewBox="0 0 ${W} ${H}" font-family="sans-serif" font-size="12">`,
    `<title>${escape(spec.title)}</title>`,
    `<rect width="${W}" height="${H}" fill="white"/>`,
    `<text x="${LEFT}" y="${TOP - 16}" font-size="14" font-weight="bold">${
      escape(spec.title)
    }</text>`,
    `<g class="axes" stroke="#333">`,
    `<line x1="${LEFT}" y1="${TOP + plotH}" x2="${LEFT + plotW}" y2="${TOP + plotH}"/>`,
    `<line x1="${LEFT}" y1="${TOP}" x2="${LEFT}" y2="${TOP + plotH}"/>`,
    `</g>`,
  ];
  // A tick too near a labelled one keeps its mark but not its label (16k beside 19.5k); from the
  // largest N down, so the largest always has its label.
  let labelled = Infinity;
  for (const n of [...ns].reverse()) {
    const near = labelled - x(n) < 36;
    if (!near) labelled = x(n);
    out.push(
      `<line x1="${num(x(n))}" y1="${TOP + plotH}" x2="${num(x(n))}" y2="${
        TOP + plotH + 5
      }" stroke="#333"/>`,
    );
    if (!near) {
      out.push(
        `<text x="${num(x(n))}" y="${TOP + plotH + 18}" text-anchor="middle">${short(n)}</text>`,
      );
    }
  }
  for (let v = 0; v <= yMax + yStep / 2; v += yStep) {
    out.push(
      `<line x1="${LEFT - 5}" y1="${num(y(v))}" x2="${LEFT + plotW}" y2="${
        num(y(v))
      }" stroke="#ddd"/>`,
      `<text x="${LEFT - 8}" y="${num(y(v) + 4)}" text-anchor="end">${short(v)}</text>`,
    );
  }
  out.push(
    `<text class="x-label" x="${LEFT + plotW / 2}" y="${H - 16}" text-anchor="middle">${
      escape(spec.xLabel)
    }</text>`,
    `<text class="y-label" transform="translate(20 ${
      TOP + plotH / 2
    }) rotate(-90)" text-anchor="middle">${escape(spec.yLabel)}</text>`,
  );
  let legendY = TOP + 10;
  for (const [name, list] of [...series].sort(([a], [b]) => a.localeCompare(b))) {
    const sorted = [...list].sort((a, b) => a.n - b.n);
    const color = COLORS[sorted[0].runtime] ?? '#7f7f7f';
    const dash = DASHES[sorted[0].subject] ?? '2 3';
    const d = sorted.map((p, i) => `${i ? 'L' : 'M'}${num(x(p.n))} ${num(y(p.y))}`).join(' ');
    const dashed = dash ? ` stroke-dasharray="${dash}"` : '';
    out.push(
      `<path class="series" data-series="${
        escape(name)
      }" d="${d}" fill="none" stroke="${color}" stroke-width="2"${dashed}/>`,
    );
    for (const p of sorted) {
      out.push(`<circle cx="${num(x(p.n))}" cy="${num(y(p.y))}" r="3" fill="${color}"/>`);
    }
    const lx = LEFT + plotW + 16;
    out.push(
      `<line x1="${lx}" y1="${legendY}" x2="${
        lx + 28
      }" y2="${legendY}" stroke="${color}" stroke-width="2"${dashed}/>`,
      `<text class="legend" x="${lx + 34}" y="${legendY + 4}">${escape(name)}</text>`,
    );
    legendY += 20;
  }
  out.push('</svg>');
  return out.join('\n') + '\n';
}
