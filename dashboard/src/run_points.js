// Per-run points of a compare page: each finished run's IOPS and clat p99 (from
// its stored result) per cell and arm, as strips (A above, B below) so outliers
// and bimodal arms show. Fetches at most MAX_RUNS results.
import { listRuns, getRun } from './api.js';
import { h, fmtIops, fmtNs } from './dom.js';
import { resultMetrics } from './pages/jobs.js';
import { COLORS } from './charts.js';

const MAX_RUNS = 200;
const SVG = 'http://www.w3.org/2000/svg';

function svg(tag, attrs) {
  const el = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs)) el.setAttribute(k, String(v));
  return el;
}

// Run points of job `jobId`: [{run, arm ('a'|'b'), cell, iops, p99}].
export async function runPoints(jobId, armA, armB, { signal } = {}) {
  const runs = [];
  let token = '';
  do {
    const page = await listRuns({ jobId, pageSize: 500, pageToken: token, state: 'succeeded', signal });
    runs.push(...page.runs);
    token = page.next;
  } while (token && runs.length < MAX_RUNS);
  const mine = runs.filter((r) => r.variant === armA || r.variant === armB).slice(0, MAX_RUNS);
  const out = [];
  for (let i = 0; i < mine.length; i += 8) {
    await Promise.all(
      mine.slice(i, i + 8).map(async (r) => {
        const full = await getRun(r.id, { signal });
        if (!full.result) return;
        const m = resultMetrics(full.result);
        out.push({ run: r.id, arm: r.variant === armA ? 'a' : 'b', cell: r.cell, host: r.host, iops: m.iops, p99: m.p99 });
      }),
    );
  }
  return { points: out, truncated: runs.length > mine.length && mine.length >= MAX_RUNS };
}

// One strip per cell for `metric` ('iops' | 'p99'); every dot links to its run.
export function pointsSection(points, metric, armA, armB) {
  const fmt = metric === 'iops' ? (v) => fmtIops(v) : (v) => fmtNs(v);
  const cells = [...new Set(points.map((p) => p.cell))].sort();
  const W = 520;
  const rows = cells.map((cell) => {
    const ps = points.filter((p) => p.cell === cell && Number.isFinite(p[metric]));
    const vals = ps.map((p) => p[metric]);
    const lo = Math.min(...vals);
    const hi = Math.max(...vals);
    const x = (v) => (hi > lo ? 10 + ((v - lo) / (hi - lo)) * (W - 20) : W / 2);
    const s = svg('svg', { width: W, height: 36, viewBox: `0 0 ${W} 36`, role: 'img', 'aria-label': `${cell || 'all'} ${metric} per run` });
    for (const p of ps) {
      const a = svg('a', { href: `#/runs/${encodeURIComponent(p.run)}` });
      const c = svg('circle', { cx: x(p[metric]).toFixed(1), cy: p.arm === 'a' ? 10 : 26, r: 4, fill: p.arm === 'a' ? COLORS.a : COLORS.b, 'fill-opacity': 0.7 });
      const t = svg('title', {});
      t.textContent = `${p.run} (${p.arm === 'a' ? armA : armB}, ${p.host}): ${fmt(p[metric])}`;
      c.appendChild(t);
      a.appendChild(c);
      s.appendChild(a);
    }
    const values = {
      a: ps.filter((p) => p.arm === 'a').map((p) => [p.run, p[metric]]),
      b: ps.filter((p) => p.arm === 'b').map((p) => [p.run, p[metric]]),
    };
    return h(
      'tr',
      { dataset: { cell, metric, values: JSON.stringify(values) } },
      h('th', { scope: 'row' }, cell || '(all)'),
      h('td', { class: 'num small' }, vals.length ? fmt(lo) : '–'),
      h('td', null, s),
      h('td', { class: 'num small' }, vals.length ? fmt(hi) : '–'),
    );
  });
  return h(
    'table',
    { class: 'grid points', dataset: { metric } },
    h('caption', null, `${metric === 'iops' ? 'IOPS' : 'clat p99'} per run: `, h('span', { style: { color: COLORS.a } }, `● ${armA}`), ' ', h('span', { style: { color: COLORS.b } }, `● ${armB}`)),
    h('thead', null, h('tr', null, ['Cell', 'min', 'runs', 'max'].map((c) => h('th', { scope: 'col' }, c)))),
    h('tbody', null, rows),
  );
}
