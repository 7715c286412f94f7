// A/B comparison of a job (GET /jobs/{id}/compare): the verdict table per
// cell x metric and, for an iodepth sweep, IOPS vs iodepth with CI bands per arm.
import { getCompare, getCompareJobs, getJob, getText, API_BASE } from '../api.js';
import { jobActions, compareWithForm } from '../job_actions.js';
import { runPoints, pointsSection } from '../run_points.js';
import { h, replace, fmtMetric, fmtPct, fmtP, errorBox } from '../dom.js';
import { sweepChart, COLORS } from '../charts.js';
import { parseCell } from '../stats.js';

export const VERDICTS = ['regression', 'improvement', 'no_change', 'inconclusive', 'noisy'];
const VERDICT_LABEL = {
  regression: 'regression',
  improvement: 'improvement',
  no_change: 'no change',
  inconclusive: 'inconclusive',
  noisy: 'noisy',
};
const METRIC_LABEL = {
  iops: 'IOPS',
  bw_bytes: 'bandwidth',
  clat_mean_ns: 'clat mean',
  p50_ns: 'clat p50',
  p99_ns: 'clat p99',
  p999_ns: 'clat p99.9',
};

// "p99_ns iodepth=16: regression" -> "clat p99 iodepth=16: regression".
export function readableReason(s) {
  return String(s).replace(/^([a-z0-9_]+)\b/, (m) => METRIC_LABEL[m] || m);
}

function ci(metric, pair, fmt = fmtMetric.bind(null, metric)) {
  const [lo, hi] = Array.isArray(pair) ? pair : [null, null];
  return h('span', { class: 'ci' }, `[${fmt(lo)}, ${fmt(hi)}]`);
}

function designText(row) {
  if (!row || !row.design || row.design === 'none') return '';
  const parts = [row.design];
  if (row.design === 'paired') parts.push(`${row.pairs} pairs`);
  if (row.hosts_used > 1) parts.push(`${row.hosts_used} hosts`);
  if (row.runs_unused) parts.push(`${row.runs_unused} runs not in Δ`);
  return parts.join(', ');
}

function verdictCell(verdict, row) {
  const title = row ? [row.reason, designText(row) ? `design: ${designText(row)}` : ''].filter(Boolean).join('; ') : '';
  return h(
    'td',
    { class: `verdict verdict-${verdict}`, title: title || null, dataset: { verdict } },
    VERDICT_LABEL[verdict] || verdict,
    row && row.confounded ? h('span', { class: 'flag', title: (row.confounders || []).join('; ') }, ' confounded') : null,
    row && row.n_needed ? h('span', { class: 'flag' }, ` n≈${row.n_needed}`) : null,
  );
}

function metricTable(t, metric, rows, geo) {
  const a = t.arm_a;
  const b = t.arm_b;
  const fmt = (v) => fmtMetric(metric, v);
  const fmtPctShort = (v) => fmtPct(v);
  const higher = rows[0] ? rows[0].higher_is_better : metric === 'iops' || metric === 'bw_bytes';
  return h(
    'section',
    { class: 'metric' },
    h('h2', null, METRIC_LABEL[metric] || metric, ' ', h('span', { class: 'muted small' }, `(${higher ? 'higher' : 'lower'} is better)`)),
    h(
      'div',
      { class: 'table-wrap' },
      h(
        'table',
        { class: 'grid compare', 'aria-label': `${METRIC_LABEL[metric] || metric} comparison`, dataset: { metric } },
        h(
          'thead',
          null,
          h(
            'tr',
            null,
            ['Cell', `${a} median [95% CI]`, `${b} median [95% CI]`, 'Δ% [95% CI]', 'p', 'q', 'Verdict', `n ${a}/${b}`, 'Δ% per host'].map((c) =>
              h('th', { scope: 'col' }, c),
            ),
          ),
        ),
        h(
          'tbody',
          null,
          rows.map((r) =>
            h(
              'tr',
              { dataset: { cell: r.cell, metric } },
              h('th', { scope: 'row' }, r.cell || '(all)'),
              h('td', { class: 'num' }, fmt(r.a && r.a.median), ' ', ci(metric, r.a && r.a.ci)),
              h('td', { class: 'num' }, fmt(r.b && r.b.median), ' ', ci(metric, r.b && r.b.ci)),
              h('td', { class: 'num' }, fmtPct(r.delta_pct), ' ', ci(metric, r.delta_ci_pct, fmtPctShort)),
              h('td', { class: 'num' }, fmtP(r.p)),
              h('td', { class: 'num' }, fmtP(r.q)),
              verdictCell(r.verdict, r),
              h('td', { class: 'num' }, `${r.a ? r.a.n : 0}/${r.b ? r.b.n : 0}`),
              h(
                'td',
                { class: 'per-host small' },
                (r.per_host || []).length
                  ? (r.per_host || []).map((x, i) => [i ? '; ' : '', `${x.host}: ${fmtPct(x.delta_pct)} (n=${x.n})`])
                  : '–',
              ),
            ),
          ),
          geo
            ? h(
                'tr',
                { class: 'geomean' },
                h('th', { scope: 'row' }, 'geomean'),
                h('td'),
                h('td'),
                h('td', { class: 'num' }, fmtPct(geo.delta_pct), ' ', ci(metric, geo.delta_ci_pct, fmtPctShort)),
                h('td'),
                h('td'),
                verdictCell(geo.verdict, null),
                h('td', { class: 'num' }, `${geo.cells} cells`),
                h('td'),
              )
            : null,
        ),
      ),
    ),
  );
}

// Rows of `metric` whose cells are an iodepth sweep, grouped by the other cell
// options: Map "rw=randread" -> [{x: iodepth, row}]. Empty when not a sweep.
export function iodepthGroups(rows, metric = 'iops') {
  const groups = new Map();
  for (const r of rows) {
    if (r.metric !== metric) continue;
    const opts = parseCell(r.cell);
    const x = Number(opts.iodepth);
    if (!Number.isFinite(x) || x <= 0) return new Map();
    delete opts.iodepth;
    const key = Object.entries(opts)
      .map(([k, v]) => `${k}=${v}`)
      .join(',');
    if (!groups.has(key)) groups.set(key, []);
    groups.get(key).push({ x, row: r });
  }
  for (const [k, pts] of groups) if (new Set(pts.map((p) => p.x)).size < 2) groups.delete(k);
  return groups;
}

function legend() {
  return h(
    'ul',
    { class: 'legend', 'aria-label': 'verdict colours' },
    VERDICTS.map((v) => h('li', null, h('span', { class: `swatch verdict-${v}` }, VERDICT_LABEL[v]))),
  );
}

// "N of M runs usable" and the reasons grouped, with advice: the page opens with it.
export function usableSummary(t) {
  const u = t.usable || {};
  if (!t.headline && u.runs_total == null) return null;
  const all = u.runs_total != null && u.runs_usable === u.runs_total;
  const count = u.runs_total != null ? `${u.runs_usable} of ${u.runs_total} runs usable` : t.headline;
  return h(
    'section',
    { class: `usable${all ? '' : ' usable-missing'}`, 'data-testid': 'usable', role: all ? null : 'status' },
    h('p', null, h('strong', null, count)),
    (u.groups || []).length || (u.advice || []).length
      ? h(
          'ul',
          null,
          (u.groups || []).map((g) =>
            h(
              'li',
              { dataset: { kind: g.kind } },
              g.admitted
                ? `${g.runs} ${g.runs === 1 ? 'run' : 'runs'} ${g.label}, admitted by request`
                : `${g.runs} ${g.runs === 1 ? 'run' : 'runs'}: ${g.label}: ${g.advice}`,
              (g.details || []).length ? h('span', { class: 'muted small' }, ` (${g.details.join('; ')})`) : null,
            ),
          ),
          (u.advice || []).map((a) => h('li', { class: 'advice' }, a)),
        )
      : null,
  );
}

// A link to an API document that downloads it with the API token (a plain link
// could not send the Authorization header).
export function exportLink(href, label, filename) {
  return h(
    'a',
    {
      href,
      download: filename,
      onclick: async (e) => {
        e.preventDefault();
        const qi = href.indexOf('?');
        const path = (qi < 0 ? href : href.slice(0, qi)).slice(API_BASE.length);
        const params = Object.fromEntries(new URLSearchParams(qi < 0 ? '' : href.slice(qi + 1)));
        try {
          const text = await getText(path, params);
          const url = URL.createObjectURL(new Blob([text], { type: 'text/plain' }));
          const a = h('a', { href: url, download: filename });
          document.body.appendChild(a);
          a.click();
          a.remove();
          setTimeout(() => URL.revokeObjectURL(url), 10000);
        } catch (err) {
          e.target.after(h('span', { class: 'error-text' }, ` ${err.message}`));
        }
      },
    },
    label,
  );
}

export function comparePage(main, { args, params }) {
  // #/jobs/ID/compare (arms of one job) or #/compare?a=JOB&b=JOB (two jobs).
  const cross = !args.length;
  const id = cross ? params.get('a') || '' : args[0];
  const other = cross ? params.get('b') || '' : '';
  const partial = params.get('partial') === '1';
  const unaudited = params.get('unaudited') === 'allow';
  document.title = `Compare ${id} · iofleet`;
  const head = h('div');
  const body = h('div');
  main.append(head, body);
  const ctl = new AbortController();
  let plots = [];

  async function load() {
    for (const p of plots) p.destroy();
    plots = [];
    replace(body, h('p', { class: 'muted', 'aria-live': 'polite' }, 'Computing the comparison…'));
    let job = null;
    try {
      job = await getJob(id, { signal: ctl.signal });
    } catch (e) {
      if (e.name === 'AbortError') return;
    }
    replace(
      head,
      h(
        'p',
        { class: 'crumbs' },
        h('a', { href: '#/jobs' }, 'Jobs'),
        ' / ',
        h('a', { href: `#/jobs/${encodeURIComponent(id)}` }, job ? job.name || id : id),
        cross ? [' vs ', h('a', { href: `#/jobs/${encodeURIComponent(other)}` }, other)] : null,
        ' / compare',
      ),
    );
    let t;
    try {
      t = cross
        ? await getCompareJobs(id, other, { partial, unaudited, signal: ctl.signal })
        : await getCompare(id, { partial, unaudited, signal: ctl.signal });
    } catch (e) {
      if (e.name === 'AbortError') return;
      const pending = e.status === 409;
      replace(
        body,
        h('h1', null, 'Compare'),
        pending ? h('p', { role: 'status' }, 'Some runs of this job are still queued or running: ', e.message) : errorBox(e),
        pending
          ? h(
              'p',
              null,
              h('a', { class: 'btn', href: `#/jobs/${encodeURIComponent(id)}/compare?partial=1` }, 'Compare the finished runs now'),
              ' ',
              h('button', { type: 'button', class: 'btn', onclick: load }, 'Retry'),
            )
          : null,
      );
      return;
    }
    const metrics = [...new Set(t.rows.map((r) => r.metric))];
    const tables = metrics.map((m) =>
      metricTable(
        t,
        m,
        t.rows.filter((r) => r.metric === m),
        t.geomean.find((g) => g.metric === m),
      ),
    );
    const sweepBox = h('section', { class: 'sweep charts', 'aria-label': 'IOPS and p99 vs iodepth' });
    const pointsBox = h('section', { class: 'run-points', 'aria-labelledby': 'points-h' });
    const apiPath = cross ? `${API_BASE}/compare` : `${API_BASE}/jobs/${encodeURIComponent(id)}/compare`;
    const query = (extra) => {
      const q = new URLSearchParams();
      if (cross) {
        q.set('a', id);
        q.set('b', other);
      }
      if (partial) q.set('partial', '1');
      if (unaudited) q.set('unaudited', 'allow');
      for (const [k, v] of Object.entries(extra || {})) q.set(k, v);
      const s = q.toString();
      return s ? `?${s}` : '';
    };
    const unauditedExcluded = !unaudited && (t.usable.groups || []).some((g) => g.kind === 'unaudited' && !g.admitted);
    replace(
      body,
      usableSummary(t),
      unauditedExcluded
        ? h(
            'p',
            null,
            h('a', { class: 'btn', href: `#/jobs/${encodeURIComponent(id)}/compare${query({ unaudited: 'allow' })}` }, 'Compare including unaudited runs'),
          )
        : null,
      h(
        'div',
        { class: 'title-row' },
        h('h1', null, `${t.arm_a} vs ${t.arm_b} `, h('span', { class: `badge outcome-${t.outcome}`, 'data-testid': 'outcome' }, t.outcome || 'no outcome')),
        h('div', { class: 'actions' }, job ? jobActions(job) : null, ' ', h('button', { type: 'button', class: 'btn', onclick: load }, 'Refresh')),
      ),
      compareWithForm(id),
      t.outcome_reasons.length
        ? h('ul', { class: 'reasons', 'data-testid': 'reasons' }, t.outcome_reasons.map((s) => h('li', null, readableReason(s))))
        : null,
      t.partial || t.runs_pending
        ? h('p', { role: 'status', class: 'notice' }, `Partial comparison: ${t.runs_pending} of ${t.runs_total ?? '?'} runs are still pending.`)
        : null,
      t.notes.length ? h('ul', { class: 'notes muted' }, t.notes.map((s) => h('li', null, s))) : null,
      legend(),
      t.rows.length ? null : h('p', { class: 'muted' }, 'No rows: no cell has runs of both arms.'),
      sweepBox,
      tables,
      pointsBox,
      t.excluded.length
        ? h(
            'section',
            null,
            h('h2', null, 'Excluded runs'),
            h(
              'ul',
              null,
              t.excluded.map((e) =>
                h('li', null, h('a', { href: `#/runs/${encodeURIComponent(e.run)}` }, h('code', null, e.run)), ` (${e.arm}, ${e.host}, ${e.cell || 'no cell'}): ${(e.reasons || []).join(', ')}`),
              ),
            ),
          )
        : null,
      h(
        'p',
        { class: 'small' },
        'Export: ',
        exportLink(`${apiPath}${query({ format: 'markdown' })}`, 'Markdown', `${id}-compare.md`),
        ' · ',
        exportLink(`${apiPath}${query({ format: 'junit' })}`, 'JUnit XML', `${id}-compare.xml`),
        ' · ',
        exportLink(`${apiPath}${query()}`, 'JSON', `${id}-compare.json`),
      ),
      h(
        'p',
        { class: 'muted small' },
        `Δ and p: t on log ratios of A and B run back to back on one host (paired), stratified by host otherwise; α = ${t.alpha}; q: Benjamini–Hochberg over ${t.rows.length} rows. Arm median CIs: bootstrap, ${t.bootstrap_resamples ?? '–'} resamples, seed ${t.seed ?? '–'}.`,
        t.ignored_runs ? ` ${t.ignored_runs} runs of other arms ignored.` : '',
        t.compared_attributes.length ? ` Compared attributes: ${t.compared_attributes.join(', ')}.` : '',
      ),
    );
    if (!cross) {
      replace(pointsBox, h('h2', { id: 'points-h' }, 'Per-run points'), h('p', { class: 'muted' }, 'Loading the runs’ results…'));
      runPoints(id, t.arm_a, t.arm_b, { signal: ctl.signal })
        .then(({ points, truncated }) =>
          replace(
            pointsBox,
            h('h2', { id: 'points-h' }, 'Per-run points'),
            points.length ? null : h('p', { class: 'muted' }, 'No finished run of either arm has a result.'),
            truncated ? h('p', { class: 'notice' }, 'Only the first 200 runs are shown.') : null,
            points.length ? [pointsSection(points, 'iops', t.arm_a, t.arm_b), pointsSection(points, 'p99', t.arm_a, t.arm_b)] : null,
          ),
        )
        .catch((e) => {
          if (e.name !== 'AbortError') replace(pointsBox, h('h2', { id: 'points-h' }, 'Per-run points'), errorBox(e));
        });
    }
    for (const [metric, label] of [
      ['iops', 'IOPS'],
      ['p99_ns', 'clat p99'],
    ]) {
    const groups = iodepthGroups(t.rows, metric);
    for (const [key, pts] of groups) {
      pts.sort((x, y) => x.x - y.x);
      const arm = (name, side, color) => ({
        name,
        color,
        points: pts.map(({ x, row }) => ({
          x,
          median: row[side] && row[side].median,
          lo: row[side] && row[side].ci ? row[side].ci[0] : null,
          hi: row[side] && row[side].ci ? row[side].ci[1] : null,
        })),
      });
      plots.push(
        sweepChart(sweepBox, {
          title: `${label} vs iodepth${key ? ` (${key})` : ''}`,
          xLabel: 'iodepth',
          yLabel: label,
          fmt: (v) => fmtMetric(metric, v),
          arms: [arm(t.arm_a, 'a', COLORS.a), arm(t.arm_b, 'b', COLORS.b)],
        }),
      );
    }
    }
  }

  load();
  return () => {
    ctl.abort();
    for (const p of plots) p.destroy();
  };
}
