// Two views of a history series (GET /series/{key}, docs/history.md) beside its
// points chart: per build, each build's mean with a whisker from its min to its
// max (`builds`: the points grouped by the job's tag "build", else "commit");
// per host, each host's points in series order, so the spread between hosts
// shows, with its warm-up points (not detected on) as hollow markers. Each chart box carries the columns it drew (data-values).
import uPlot from 'uplot';
import { h, fmtNum } from './dom.js';
import { widthOf, fit, tickLabels } from './charts.js';

const PALETTE = ['#1f77b4', '#d62728', '#2ca02c', '#ff7f0e', '#9467bd', '#8c564b', '#e377c2', '#17becf'];
const fin = (v) => (typeof v === 'number' && Number.isFinite(v) ? v : null);

// The columns of the per-build chart: [x (0..n-1), mean, min, max] and labels.
export function buildColumns(builds) {
  const groups = (builds && builds.groups) || [];
  return {
    tag: (builds && builds.tag) || '',
    labels: groups.map((g) => String(g.value)),
    points: groups.map((g) => g.points),
    data: [groups.map((_, i) => i), groups.map((g) => fin(g.mean)), groups.map((g) => fin(g.min)), groups.map((g) => fin(g.max))],
  };
}

// A series' points and warm-up points (GET /series/{key}: `points`, detected
// on, and `warmup_points`, each host's first run(s), not detected on) merged in
// series order (`order`, the run's creation order): [{...point, warmup, index}],
// `index` being the point's place in `points` (null for a warm-up point).
export function mergedPoints(points, warmup) {
  const all = [
    ...(points || []).map((p, i) => ({ ...p, warmup: false, index: i })),
    ...(warmup || []).map((p) => ({ ...p, warmup: true, index: null })),
  ];
  // Stable: equal orders keep points before warm-up points.
  return all.map((p, k) => [p, k]).sort((a, b) => (Number(a[0].order) - Number(b[0].order)) || a[1] - b[1]).map(([p]) => p);
}

export const WARMUP_LABEL = 'warm-up (not detected on)';

// The columns of the per-host chart: [x (place in series order), host A's
// points (null elsewhere), host B's ..., then host A's warm-up points, ...],
// the host names (sorted) and the hosts with warm-up points (sorted).
export function hostColumns(points, warmup = []) {
  const all = mergedPoints(points, warmup);
  const hostOf = (p) => (p.axes && p.axes.host) || '';
  const hosts = [...new Set(all.map(hostOf))].sort();
  const warmHosts = [...new Set(all.filter((p) => p.warmup).map(hostOf))].sort();
  const col = (hname, warm) => all.map((p) => (hostOf(p) === hname && p.warmup === warm ? fin(p.value) : null));
  return {
    hosts,
    warmHosts,
    data: [all.map((_, i) => i), ...hosts.map((hname) => col(hname, false)), ...warmHosts.map((hname) => col(hname, true))],
  };
}

function mount(container, title, dataset, opts, data) {
  const box = h('div', { class: 'chart', role: 'img', 'aria-label': title, dataset: { chart: title, values: JSON.stringify(data), ...dataset } });
  container.appendChild(box);
  const height = 260;
  const plot = new uPlot({ title, width: widthOf(box), height, ...opts }, data, box);
  const ro = fit(box, plot, height);
  return () => {
    ro.disconnect();
    plot.destroy();
  };
}

// Whiskers: a vertical line from min to max with caps, at each x.
function whiskers(u) {
  const [xs, , mins, maxs] = u.data;
  const { ctx } = u;
  ctx.save();
  ctx.strokeStyle = '#1f77b4';
  ctx.lineWidth = 1.5 * devicePixelRatio;
  const cap = 6 * devicePixelRatio;
  let n = 0;
  for (let i = 0; i < xs.length; i++) {
    if (mins[i] === null || maxs[i] === null) continue;
    n++;
    const x = u.valToPos(xs[i], 'x', true);
    const y0 = u.valToPos(mins[i], 'y', true);
    const y1 = u.valToPos(maxs[i], 'y', true);
    ctx.beginPath();
    ctx.moveTo(x, y0);
    ctx.lineTo(x, y1);
    ctx.moveTo(x - cap, y0);
    ctx.lineTo(x + cap, y0);
    ctx.moveTo(x - cap, y1);
    ctx.lineTo(x + cap, y1);
    ctx.stroke();
  }
  ctx.restore();
  u.root.parentElement.dataset.whiskers = String(n); // how many were drawn
}

// Appends the per-build chart to `container`; returns its destroyer, or null
// (and a sentence) when no point carries a build or commit tag.
export function buildsChart(container, s) {
  const c = buildColumns(s.builds);
  if (!c.labels.length) {
    container.appendChild(h('p', { class: 'muted', 'data-testid': 'no-builds' }, 'No per-build view: no point of this series carries a "build" or "commit" tag.'));
    return null;
  }
  const untagged = (s.builds && s.builds.untagged) || 0;
  if (untagged) container.appendChild(h('p', { class: 'muted small' }, `${untagged} point(s) without the "${c.tag}" tag are not in this view.`));
  const label = (i) => (Number.isInteger(i) && c.labels[i] !== undefined ? c.labels[i] : '');
  return mount(
    container,
    `${s.metric} per ${c.tag} (mean, whisker = min..max)`,
    { points: String(c.labels.length), builds: JSON.stringify(c.labels) },
    {
      scales: { x: { time: false, range: () => [-0.5, c.labels.length - 0.5] } },
      axes: [
        { label: c.tag, stroke: '#555', splits: () => c.labels.map((_, i) => i), values: (u, vals) => vals.map(label) },
        { label: s.metric, stroke: '#555', size: 70, values: tickLabels((v) => fmtNum(v, 3)) },
      ],
      series: [
        { label: c.tag, value: (u, v) => `${label(v)}${c.points[v] !== undefined ? ` (${c.points[v]} points)` : ''}` },
        { label: 'mean', stroke: '#1f77b4', width: 0, points: { show: true, size: 9, fill: '#1f77b4' }, value: (u, v) => fmtNum(v, 4) },
        { label: 'min', stroke: '#1f77b4', width: 0, points: { show: false }, value: (u, v) => fmtNum(v, 4) },
        { label: 'max', stroke: '#1f77b4', width: 0, points: { show: false }, value: (u, v) => fmtNum(v, 4) },
      ],
      hooks: { draw: [whiskers] },
    },
    c.data,
  );
}

// Appends the per-host chart to `container`; returns its destroyer. Warm-up
// points are hollow markers in their host's colour.
export function hostsChart(container, s) {
  const c = hostColumns(s.points || [], s.warmup_points || []);
  const colour = (hname) => PALETTE[c.hosts.indexOf(hname) % PALETTE.length];
  return mount(
    container,
    `${s.metric} per host`,
    { points: String((s.points || []).length), warmup: String((s.warmup_points || []).length), hosts: JSON.stringify(c.hosts), warmupHosts: JSON.stringify(c.warmHosts) },
    {
      scales: { x: { time: false } },
      axes: [
        { label: 'point (series order)', stroke: '#555', incrs: [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000] },
        { label: s.metric, stroke: '#555', size: 70, values: tickLabels((v) => fmtNum(v, 3)) },
      ],
      series: [
        { label: 'point' },
        ...c.hosts.map((hname) => ({ label: hname || '(no host)', stroke: colour(hname), width: 0, points: { show: true, size: 6, fill: colour(hname) }, value: (u, v) => fmtNum(v, 4) })),
        ...c.warmHosts.map((hname) => ({
          label: `${hname || '(no host)'} ${WARMUP_LABEL}`,
          stroke: colour(hname),
          width: 0,
          points: { show: true, size: 9, width: 2, stroke: colour(hname), fill: '#ffffff' },
          value: (u, v) => fmtNum(v, 4),
        })),
      ],
    },
    c.data,
  );
}
