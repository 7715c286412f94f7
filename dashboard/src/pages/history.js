// History (docs/history.md): series, one series with its points and change
// points, and alerts with triage. Routes:
//   #/series            series list (?metric=iops)
//   #/series/KEY        points (change points marked; warm-up points hollow),
//                       per-host spread, changes
//   #/alerts            alerts with triage (?state=untriaged, ?status=active|unknown|withdrawn|all)
import uPlot from 'uplot';
import { request } from '../api.js';
import { h, replace, fmtNum, fmtTime, errorBox, poller } from '../dom.js';
import { buildsChart, hostsChart, mergedPoints, WARMUP_LABEL } from '../series_views.js';

const STATES = ['untriaged', 'acknowledged', 'invalid', 'fixed'];

function pct(v) {
  return typeof v === 'number' && Number.isFinite(v) ? `${v >= 0 ? '+' : ''}${v.toFixed(1)}%` : '–';
}

function tagsText(tags) {
  return Object.entries(tags || {})
    .map(([k, v]) => `${k}=${v}`)
    .join(', ');
}

// The repro bundle through request() (it carries the API token), saved as a file.
async function downloadRepro(id) {
  try {
    const d = await request('GET', `/alerts/${encodeURIComponent(id)}/repro`);
    const url = URL.createObjectURL(new Blob([JSON.stringify(d, null, 2)], { type: 'application/json' }));
    const link = h('a', { href: url, download: `iofleet-repro-${id}.json` });
    document.body.appendChild(link);
    link.click();
    link.remove();
    URL.revokeObjectURL(url);
  } catch (e) {
    alert(e.message);
  }
}

export function seriesListPage(main, { params }) {
  document.title = 'Series · iofleet';
  const metric = params.get('metric') || '';
  const body = h('div');
  main.append(
    h('h1', null, 'Series'),
    h('p', { class: 'muted' }, 'One metric of one workload on one host class; every finished run adds a point. ', h('a', { href: '#/alerts' }, 'Alerts')),
    body,
  );
  const p = poller(async (signal) => {
    let d;
    try {
      d = await request('GET', '/series', { params: metric ? { metric } : undefined, signal });
    } catch (e) {
      if (e.name === 'AbortError') throw e;
      replace(body, errorBox(e));
      return true;
    }
    const rows = (d.series || []).map((s) =>
      h(
        'tr',
        { dataset: { series: s.key } },
        h('th', { scope: 'row' }, h('a', { href: `#/series/${encodeURIComponent(s.key)}` }, s.key)),
        h('td', null, s.metric),
        h('td', null, s.axes.job_name || '', s.axes.variant ? ` [${s.axes.variant}]` : '', s.axes.cell ? ` {${s.axes.cell}}` : ''),
        h('td', null, s.axes.branch || '–'),
        h('td', null, s.axes.cpu_model || '–', h('div', { class: 'muted small' }, s.axes.device || '')),
      ),
    );
    replace(
      body,
      rows.length
        ? h('table', null, h('thead', null, h('tr', null, ['Series', 'Metric', 'Workload', 'Branch', 'Host class'].map((c) => h('th', { scope: 'col' }, c)))), h('tbody', null, rows))
        : h('p', { class: 'muted' }, 'No series yet: they appear as runs finish.'),
    );
    return true;
  }, 10000);
  return () => p.stop();
}

export function seriesPage(main, { args }) {
  const key = args[0];
  document.title = `Series ${key} · iofleet`;
  const body = h('div');
  main.append(h('h1', null, 'Series ', h('code', null, key)), body);
  let plot = null;
  let views = []; // destroyers of the per-build and per-host charts
  const p = poller(async (signal) => {
    let s;
    try {
      s = await request('GET', `/series/${encodeURIComponent(key)}`, { signal });
    } catch (e) {
      if (e.name === 'AbortError') throw e;
      replace(body, errorBox(e));
      return true;
    }
    if (plot) {
      plot.destroy();
      plot = null;
    }
    for (const d of views) d();
    views = [];
    const perBuild = h('section', { class: 'charts', 'aria-label': 'per build' });
    const perHost = h('section', { class: 'charts', 'aria-label': 'per host' });
    // Points and warm-up points (each host's first run(s): drawn hollow, not
    // detected on) in series order; change points index `points`.
    const warmup = s.warmup_points || [];
    const all = mergedPoints(s.points, warmup);
    const xs = all.map((_, i) => i);
    const ys = all.map((pt) => (pt.warmup ? null : pt.value));
    const ws = all.map((pt) => (pt.warmup ? pt.value : null));
    const changeAt = new Map(s.change_points.map((c) => [c.index, c]));
    const marks = all.map((pt) => (!pt.warmup && changeAt.has(pt.index) ? pt.value : null));
    const chart = h('div', {
      class: 'chart',
      role: 'img',
      'aria-label': `${s.metric} over runs`,
      dataset: { points: String(s.points.length), warmup: String(warmup.length), changes: String(s.change_points.length), values: JSON.stringify([xs, ys, marks, ws]) },
    });
    const axes = Object.entries(s.axes).map(([k, v]) => h('li', null, h('b', null, k), ' ', v || '–'));
    const changes = s.change_points.map((c) =>
      h(
        'tr',
        null,
        h('td', null, c.first_after_run),
        h('td', null, pct(c.change_pct)),
        h('td', null, c.verdict),
        h('td', null, c.decision),
        h('td', null, c.reason),
      ),
    );
    const hosts = s.hosts.map((x) => h('tr', null, h('td', null, x.host || '–'), h('td', null, String(x.points)), h('td', null, fmtNum(x.mean)), h('td', null, pct(x.stddev_pct).replace('+', '±'))));
    replace(
      body,
      h('p', null, h('b', null, s.metric), ` · ${s.points.length} points`, warmup.length ? ` · ${warmup.length} warm-up (not detected on: each host’s first run)` : '', s.note ? h('span', { class: 'muted' }, ` · ${s.note}`) : null),
      h('ul', { class: 'plain' }, axes),
      chart,
      h('h2', null, 'Change points'),
      changes.length
        ? h('table', null, h('thead', null, h('tr', null, ['First run after', 'Change', 'Verdict', 'Decision', 'Why'].map((c) => h('th', { scope: 'col' }, c)))), h('tbody', null, changes))
        : h('p', { class: 'muted' }, 'None.'),
      h('h2', null, 'Per build'),
      perBuild,
      h('h2', null, 'Per host'),
      perHost,
      h('table', null, h('thead', null, h('tr', null, ['Host', 'Points', 'Mean', '%stddev'].map((c) => h('th', { scope: 'col' }, c)))), h('tbody', null, hosts)),
      h('p', { class: 'muted small' }, s.parameters),
    );
    plot = new uPlot(
      {
        title: `${s.metric} (● = change point, ○ = warm-up)`,
        width: Math.max(320, chart.clientWidth || 720),
        height: 280,
        scales: { x: { time: false } },
        // The default 50 px y axis cuts large values ("102,500" drew as "2,500").
        axes: [{ incrs: [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000] }, { size: 80 }],
        series: [
          { label: 'point', value: (u, v) => (v == null ? '–' : `${v} ${all[v] ? all[v].run_id : ''}`) },
          // spanGaps: the line runs past the warm-up points between points.
          { label: s.metric, stroke: '#1f77b4', width: 1, spanGaps: true, points: { show: true, size: 4 } },
          { label: 'change', stroke: '#d62728', width: 0, points: { show: true, size: 10, fill: '#d62728' } },
          // Hollow orange rings, only when the series has warm-up points.
          ...(warmup.length ? [{ label: WARMUP_LABEL, stroke: '#ff7f0e', width: 0, points: { show: true, size: 9, width: 2, stroke: '#ff7f0e', fill: '#ffffff' } }] : []),
        ],
      },
      warmup.length ? [xs, ys, marks, ws] : [xs, ys, marks],
      chart,
    );
    views = [buildsChart(perBuild, s), hostsChart(perHost, s)].filter(Boolean);
    return true;
  }, 15000);
  return () => {
    p.stop();
    if (plot) plot.destroy();
    for (const d of views) d();
  };
}

export function alertsPage(main, { params }) {
  document.title = 'Alerts · iofleet';
  const state = params.get('state') || '';
  const status = params.get('status') || '';
  const body = h('div');
  const statusLink = (value, text) => (value === status ? h('strong', null, text) : h('a', { href: value ? `#/alerts?status=${value}` : '#/alerts' }, text));
  main.append(
    h('h1', null, 'Alerts'),
    h('p', { class: 'muted' }, 'Confirmed changes larger than the metric’s threshold that did not go away. An alert follows the newest analysis of its series: withdrawn when the data no longer support it (kept with its triage state). ', h('a', { href: '#/series' }, 'Series')),
    h('p', { class: 'muted', 'aria-label': 'status filter' }, 'Show: ', statusLink('', 'active and unknown'), ' · ', statusLink('active', 'active'), ' · ', statusLink('withdrawn', 'withdrawn'), ' · ', statusLink('all', 'all')),
    body,
  );
  const p = poller(async (signal) => {
    let d;
    const q = {};
    if (state) q.state = state;
    if (status) q.status = status;
    try {
      d = await request('GET', '/alerts', { params: Object.keys(q).length ? q : undefined, signal });
    } catch (e) {
      if (e.name === 'AbortError') throw e;
      replace(body, errorBox(e));
      return true;
    }
    const rows = (d.alerts || []).map((a) => {
      const sel = h('select', { 'aria-label': `state of alert ${a.id}` }, STATES.map((s) => h('option', { value: s }, s)));
      sel.value = a.state;
      sel.addEventListener('change', async () => {
        try {
          await request('POST', `/alerts/${encodeURIComponent(a.id)}/state`, { body: { state: sel.value } });
        } catch (e) {
          sel.value = a.state;
          alert(e.message);
        }
      });
      return h(
        'tr',
        { dataset: { alert: a.id } },
        h('th', { scope: 'row' }, h('a', { href: `#/series/${encodeURIComponent(a.series)}` }, a.id)),
        h('td', null, a.metric),
        h('td', { class: a.regression ? 'bad' : 'good' }, pct(a.change_pct)),
        h('td', null, sel),
        h(
          'td',
          { class: a.status === 'withdrawn' ? 'muted' : null, dataset: { status: a.status || '' } },
          a.status || '',
          a.status === 'withdrawn' && a.status_change ? h('div', { class: 'muted small' }, `${a.status_change.decision} at ${a.status_change.points} points: ${a.status_change.reason}`) : null,
          // The change lies before the analysed part of its series: the status is its last decision, not re-checked.
          a.decision_frozen ? h('div', { class: 'muted small', dataset: { frozen: String(a.decision_frozen.window_first_point) }, title: a.decision_frozen.reason }, `not re-checked: older than the analysed part (from point ${a.decision_frozen.window_first_point}, run ${a.decision_frozen.window_first_run})`) : null,
        ),
        h('td', null, h('a', { href: `#/jobs/${encodeURIComponent(a.first_run.job_id)}` }, a.first_run.job_id), h('div', { class: 'muted small' }, a.first_run.kernel_release || '')),
        h('td', null, tagsText(a.first_run.tags)),
        h('td', null, fmtTime(a.created_ms)),
        h('td', null, h('button', { type: 'button', class: 'btn', onclick: () => downloadRepro(a.id) }, 'repro')),
      );
    });
    replace(
      body,
      rows.length
        ? h('table', null, h('thead', null, h('tr', null, ['Alert', 'Metric', 'Change', 'State', 'Status', 'First run after', 'Tags', 'Raised', ''].map((c) => h('th', { scope: 'col' }, c)))), h('tbody', null, rows))
        : h('p', { class: 'muted' }, 'No alerts.'),
    );
    return true;
  }, 10000);
  return () => p.stop();
}
