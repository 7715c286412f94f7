// Jobs list (paged through the API) and one job with its runs.
import { listJobs, listRuns, getJob, getRun, cancelJob, getSamples, TERMINAL_STATES } from '../api.js';
import { SeriesBuilder } from '../stats.js';
import { binsOf, mergeBins, binsPercentile, LAT_DIRS } from '../latency.js';
import { h, replace, fmtTime, fmtDuration, fmtNum, fmtIops, fmtBytesRate, fmtNs, kvList, stateBadge, errorBox, pager, poller } from '../dom.js';
import { jobActions, compareWithForm } from '../job_actions.js';
import { expectedRuntime, parseCell } from '../stats.js';

const PAGE_SIZE = 50;
const RUNS_PER_PAGE = 100;
// At most this many running runs of the visible page have their samples fetched
// per refresh (for progress/ETA).
const MAX_PROGRESS_FETCHES = 20;

let stack = [];

export function jobsPage(main, { params }) {
  document.title = 'Jobs · iofleet';
  const token = params.get('t') || '';
  // Filters live in the URL (#/jobs?q=NAME&state=S&tag=k=v) so they survive a
  // reload and can be shared.
  const filters = { q: params.get('q') || '', state: params.get('state') || '', tag: params.get('tag') || '' };
  const hashFor = (extra) => {
    const q = new URLSearchParams();
    for (const [k, v] of Object.entries({ ...filters, ...extra })) if (v) q.set(k, v);
    const s = q.toString();
    return s ? `#/jobs?${s}` : '#/jobs';
  };
  if (!token) stack = [];
  const status = h('p', { class: 'muted', 'aria-live': 'polite' }, 'Loading…');
  const body = h('div');
  const qInput = h('input', { type: 'search', id: 'job-search', value: filters.q, placeholder: 'name contains…', autocomplete: 'off' });
  const tagInput = h('input', { type: 'text', id: 'job-tag', value: filters.tag, placeholder: 'key=value', autocomplete: 'off', size: '14' });
  const stateSel = h(
    'select',
    { id: 'job-state' },
    ['', 'queued', 'running', 'succeeded', 'failed', 'cancelled'].map((st) => h('option', { value: st, selected: st === filters.state }, st || 'all states')),
  );
  const filterForm = h(
    'form',
    {
      class: 'filters',
      role: 'search',
      'aria-label': 'job filters',
      onsubmit: (e) => {
        e.preventDefault();
        filters.q = qInput.value.trim();
        filters.state = stateSel.value;
        filters.tag = tagInput.value.trim();
        stack = [];
        location.hash = hashFor({});
      },
    },
    h('label', { for: 'job-search' }, 'Search '),
    qInput,
    ' ',
    h('label', { for: 'job-state' }, 'State '),
    stateSel,
    ' ',
    h('label', { for: 'job-tag' }, 'Tag '),
    tagInput,
    ' ',
    h('button', { type: 'submit', class: 'btn' }, 'Filter'),
    filters.q || filters.state || filters.tag ? [' ', h('a', { href: '#/jobs' }, 'Clear')] : null,
  );
  stateSel.addEventListener('change', () => filterForm.requestSubmit());
  main.append(
    h('div', { class: 'title-row' }, h('h1', null, 'Jobs'), h('a', { class: 'btn primary', href: '#/submit' }, 'Submit a job')),
    filterForm,
    status,
    body,
  );

  const p = poller(async (signal) => {
    let page;
    try {
      page = await listJobs({ pageSize: PAGE_SIZE, pageToken: token, state: filters.state, name: filters.q, tag: filters.tag, signal });
      // A controller without the name filter answers every job: match here too.
      if (filters.q) page.jobs = page.jobs.filter((j) => j.name.toLowerCase().includes(filters.q.toLowerCase()));
    } catch (e) {
      if (e.name === 'AbortError') throw e;
      replace(body, errorBox(e));
      status.textContent = '';
      return true;
    }
    status.textContent = `${page.jobs.length} job${page.jobs.length === 1 ? '' : 's'} on this page. Refreshes every 5 s.`;
    replace(
      body,
      page.jobs.length
        ? h(
            'div',
            { class: 'table-wrap' },
            h(
              'table',
              { class: 'grid', 'aria-label': 'jobs' },
              h('thead', null, h('tr', null, ['Job', 'ID', 'State', 'Runs', 'Created'].map((c) => h('th', { scope: 'col' }, c)))),
              h(
                'tbody',
                null,
                page.jobs.map((j) =>
                  h(
                    'tr',
                    { dataset: { job: j.id } },
                    h('th', { scope: 'row' }, h('a', { href: `#/jobs/${encodeURIComponent(j.id)}` }, j.name || j.id)),
                    h('td', null, h('code', null, j.id)),
                    h('td', null, stateBadge(j.state)),
                    h(
                      'td',
                      { class: 'small' },
                      j.run_counts
                        ? Object.entries(j.run_counts).map(([st, n], i) => [i ? ', ' : '', `${n} ${st}`])
                        : j.runs.length
                          ? `${j.runs.length}`
                          : '–',
                    ),
                    h('td', null, fmtTime(j.created_ms)),
                  ),
                ),
              ),
            ),
          )
        : h('p', null, token ? 'No more jobs.' : 'No jobs yet. ', h('a', { href: '#/submit' }, 'Submit one'), '.'),
      pager({
        label: 'job pages',
        hasPrev: !!token,
        hasNext: !!page.next,
        onPrev: () => {
          const prev = stack.pop() || '';
          location.hash = hashFor({ t: prev });
        },
        onNext: () => {
          stack.push(token);
          location.hash = hashFor({ t: page.next });
        },
      }),
    );
    return true;
  }, 5000);
  return () => p.stop();
}

// ------------------------------------------------------------------ one job

// IOPS, bandwidth and clat p99 of a finished run's fio JSON: all jobs and
// directions summed; p99 from the merged bins (json+), else the largest p99.
export function resultMetrics(result) {
  const jobs = (result && result.jobs) || [];
  let iops = 0;
  let bw = 0;
  const bins = [];
  let p99max = null;
  for (const j of jobs) {
    for (const d of LAT_DIRS) {
      const x = j[d];
      if (!x || !(x.total_ios > 0)) continue;
      iops += Number(x.iops) || 0;
      bw += Number(x.bw_bytes ?? (x.bw || 0) * 1024) || 0;
      bins.push(binsOf(x.clat_ns));
      const t = x.clat_ns && x.clat_ns.percentile;
      const v = t ? t['99.000000'] : undefined;
      if (v !== undefined) p99max = Math.max(p99max ?? 0, Number(v));
    }
  }
  const merged = mergeBins(bins);
  return { iops, bw, p99: merged.length ? binsPercentile(merged, 99) : p99max };
}

// The latest window of a running run's records: IOPS, bandwidth, clat p99.
function liveMetrics(recs) {
  const sb = new SeriesBuilder();
  sb.add(recs);
  const c = sb.columns();
  const i = c.x.length - 1;
  if (i < 0) return null;
  return {
    iops: c.readIops[i] + c.writeIops[i] + c.trimIops[i],
    bw: c.readBw[i] + c.writeBw[i] + c.trimBw[i],
    p99: c.p99[i],
    live: true,
  };
}

// Job-level progress and ETA from its runs: finished runs count whole, running
// runs by their measured fraction; the remaining run time (running ETAs plus
// queued runs' expected time) spread over the runs running now.
export function jobProgress(runs, progOf) {
  if (!runs.length) return { frac: null, eta: null };
  let done = 0;
  let remaining = 0;
  let running = 0;
  let known = true;
  for (const r of runs) {
    if (TERMINAL_STATES.has(r.state)) {
      done += 1;
      continue;
    }
    const p = progOf(r);
    if (r.state === 'running') {
      running++;
      if (p.frac !== null) done += p.frac;
      if (p.eta !== null) remaining += p.eta;
      else known = false;
    } else if (p.expected) remaining += p.expected;
    else known = false;
  }
  const eta = known && remaining > 0 ? remaining / Math.max(1, running) : done >= runs.length ? 0 : null;
  return { frac: done / runs.length, eta };
}

// Expected seconds of one run: the job file with the variant's and cell's options.
export function runExpectedSeconds(spec, run) {
  const variant = spec.variants.find((v) => v.name === run.variant);
  return expectedRuntime(spec.fio, { ...(variant ? variant.options : {}), ...parseCell(run.cell) });
}

export function progressOf(run, elapsed, expected) {
  if (run.state === 'succeeded') return { frac: 1, eta: 0 };
  if (TERMINAL_STATES.has(run.state)) return { frac: null, eta: null };
  if (run.state !== 'running' || !expected) return { frac: run.state === 'running' ? null : 0, eta: null };
  const frac = Math.min(1, elapsed / expected);
  return { frac, eta: Math.max(0, expected - elapsed) };
}

function progressCell(run, prog) {
  if (prog.frac === null) return h('td', null, run.state === 'running' ? 'running…' : '–');
  const pct = Math.round(prog.frac * 100);
  return h(
    'td',
    null,
    h('progress', { max: '100', value: String(pct), 'aria-label': `run ${run.id} progress` }),
    h('span', { class: 'small' }, ` ${pct}%`),
  );
}

function dl(pairs) {
  return h(
    'dl',
    { class: 'meta' },
    pairs.filter(([, v]) => v !== null && v !== undefined && v !== '').flatMap(([k, v]) => [h('dt', null, k), h('dd', null, v)]),
  );
}

function placement(spec) {
  const parts = [];
  if (spec.hosts.length) parts.push(spec.hosts.join(', '));
  if (Object.keys(spec.selector).length) parts.push(h('span', null, 'selector ', kvList(spec.selector)));
  return parts.length ? h('span', null, parts) : '–';
}

export function jobPage(main, { args, params }) {
  const id = args[0];
  document.title = `Job ${id} · iofleet`;
  let stateFilter = params.get('state') || '';
  const head = h('div');
  const summary = h('div', { 'aria-live': 'polite' });
  const runsBox = h('section', { 'aria-labelledby': 'runs-h' });
  main.append(head, summary, runsBox);
  const elapsedByRun = new Map(); // run id -> seconds measured (from samples)
  const metricsByRun = new Map(); // run id -> {iops, bw, p99, live}
  let job = null;
  let jobLoadedAt = 0;
  // Runs are paged by the API (GET /runs?job_id=); `tokens` holds the tokens of
  // the pages before the current one. serverPaging=false: a controller without
  // /runs, so the job's own run list is paged here.
  let serverPaging = true;
  let tokens = [];
  let token = '';
  let page = { runs: [], next: '' };
  let localPage = 0;

  function renderHead() {
    const spec = job.spec;
    const terminal = TERMINAL_STATES.has(job.state);
    const cancel = h(
      'button',
      {
        type: 'button',
        class: 'btn danger',
        disabled: terminal,
        onclick: async (e) => {
          e.target.disabled = true;
          try {
            await cancelJob(id);
            jobLoadedAt = 0;
            restart();
          } catch (err) {
            head.appendChild(errorBox(err));
          }
        },
      },
      'Cancel job',
    );
    const variants = spec.variants.length
      ? h('ul', { class: 'plain' }, spec.variants.map((v) => h('li', null, h('strong', null, v.name), ' ', kvList(v.options), v.hosts.length ? ` on ${v.hosts.join(', ')}` : '')))
      : null;
    const sweep = Object.keys(spec.sweep).length
      ? h('ul', { class: 'plain' }, Object.entries(spec.sweep).map(([k, vs]) => h('li', null, h('code', null, k), ' = ', vs.join(', '))))
      : null;
    replace(
      head,
      h('p', { class: 'crumbs' }, h('a', { href: '#/jobs' }, 'Jobs'), ' / ', id),
      h(
        'div',
        { class: 'title-row' },
        h('h1', null, job.name || id, ' ', stateBadge(job.state)),
        h('div', { class: 'actions' }, spec.variants.length >= 2 ? h('a', { class: 'btn', href: `#/jobs/${encodeURIComponent(id)}/compare` }, 'Compare A/B') : null, jobActions(job), cancel),
      ),
      dl([
        ['ID', h('code', null, id)],
        ['Created', fmtTime(job.created_ms)],
        ['Placement', placement(spec)],
        ['Repeat', String(spec.repeat)],
        ['Tags', kvList(spec.tags)],
        ['Variants', variants],
        ['Sweep', sweep],
      ]),
      terminal ? compareWithForm(id) : null,
      h('details', null, h('summary', null, 'Job file'), h('pre', { class: 'code' }, spec.fio || (spec.options ? JSON.stringify(spec.options, null, 2) : '–'))),
    );
    let counts = job.run_counts;
    if (!counts) {
      counts = {};
      for (const r of job.runs) counts[r.state] = (counts[r.state] || 0) + 1;
    }
    const total = Object.values(counts).reduce((a, n) => a + Number(n), 0);
    replace(
      summary,
      h('p', { class: 'counts' }, `${total} runs: `, Object.entries(counts).map(([st, n]) => h('span', { class: 'count' }, stateBadge(st), ` ${n} `))),
    );
  }

  const filter = h(
    'select',
    {
      'aria-label': 'run state',
      onchange: (e) => {
        stateFilter = e.target.value;
        tokens = [];
        token = '';
        localPage = 0;
        restart();
      },
    },
    ['', 'queued', 'assigned', 'running', 'succeeded', 'failed', 'cancelled', 'lost'].map((st) =>
      h('option', { value: st, selected: st === stateFilter }, st || 'all states'),
    ),
  );
  const runsTable = h('div');
  runsBox.append(h('div', { class: 'title-row' }, h('h2', { id: 'runs-h' }, 'Runs'), h('label', null, 'Show ', filter)), runsTable);

  // The runs on screen, and whether there are pages before/after.
  function visibleRuns() {
    if (serverPaging) return { runs: page.runs, hasPrev: tokens.length > 0, hasNext: !!page.next };
    const all = stateFilter ? job.runs.filter((r) => r.state === stateFilter) : job.runs;
    const pages = Math.max(1, Math.ceil(all.length / RUNS_PER_PAGE));
    if (localPage >= pages) localPage = pages - 1;
    return {
      runs: all.slice(localPage * RUNS_PER_PAGE, (localPage + 1) * RUNS_PER_PAGE),
      hasPrev: localPage > 0,
      hasNext: localPage < pages - 1,
    };
  }

  function renderJobProgress() {
    if (!job || !job.runs.length) return;
    const jp = jobProgress(job.runs, (r) => {
      const expected = runExpectedSeconds(job.spec, r);
      return { ...progressOf(r, elapsedByRun.get(r.id) ?? 0, expected), expected };
    });
    let box = summary.querySelector('[data-testid=job-progress]');
    if (!box) {
      box = h('p', { 'data-testid': 'job-progress' });
      summary.appendChild(box);
    }
    replace(
      box,
      jp.frac === null ? null : h('progress', { max: '100', value: String(Math.round(jp.frac * 100)), 'aria-label': 'job progress' }),
      ` ${jp.frac === null ? '–' : Math.round(jp.frac * 100)}% of the job`,
      TERMINAL_STATES.has(job.state) ? '' : `, ETA ${jp.eta === null ? 'unknown (a run has no time bound or is waiting)' : `≈ ${fmtDuration(jp.eta)}`}`,
    );
  }

  function metricCells(r) {
    const m = metricsByRun.get(r.id);
    if (!m) return [h('td', { class: 'num' }, '–'), h('td', { class: 'num' }, '–'), h('td', { class: 'num' }, '–')];
    const cls = m.live ? 'num live' : 'num';
    return [
      h('td', { class: cls, dataset: { metric: 'iops' } }, fmtIops(m.iops)),
      h('td', { class: cls, dataset: { metric: 'bw' } }, fmtBytesRate(m.bw)),
      h('td', { class: cls, dataset: { metric: 'p99' } }, fmtNs(m.p99)),
    ];
  }

  function renderRuns() {
    renderJobProgress();
    const { runs, hasPrev, hasNext } = visibleRuns();
    const rows = runs.map((r) => {
      const expected = job ? runExpectedSeconds(job.spec, r) : null;
      const prog = progressOf(r, elapsedByRun.get(r.id) ?? 0, expected);
      const dur = r.started_ms ? ((r.finished_ms || Date.now()) - r.started_ms) / 1000 : null;
      return h(
        'tr',
        { dataset: { run: r.id, state: r.state } },
        h('th', { scope: 'row' }, h('a', { href: `#/runs/${encodeURIComponent(r.id)}` }, h('code', null, r.id))),
        h('td', null, r.variant || '–', r.warmup ? h('span', { class: 'small muted', title: "the host's first run of the job: run, stored, not compared" }, ' warm-up') : null),
        h('td', null, r.cell || '–'),
        h('td', null, String(r.repetition)),
        h('td', null, r.host || '–'),
        h('td', null, stateBadge(r.state), r.attempt ? h('span', { class: 'small muted' }, ` retry ${r.attempt}`) : null),
        progressCell(r, prog),
        h('td', null, prog.eta === null ? '–' : fmtDuration(prog.eta)),
        metricCells(r),
        h('td', null, fmtTime(r.started_ms)),
        h('td', null, dur === null ? '–' : fmtDuration(dur)),
        r.state === 'queued' && r.waiting_for
          ? h('td', { class: 'muted small', dataset: { testid: 'waiting' } }, `waiting: ${r.waiting_for}`)
          : h('td', { class: 'error-text' }, r.error || ''),
      );
    });
    replace(
      runsTable,
      runs.length
        ? h(
            'div',
            { class: 'table-wrap' },
            h(
              'table',
              { class: 'grid', 'aria-label': 'runs' },
              h(
                'thead',
                null,
                h('tr', null, ['Run', 'Variant', 'Cell', 'Rep', 'Host', 'State', 'Progress', 'ETA', 'IOPS', 'Bandwidth', 'clat p99', 'Started', 'Duration', 'Error / waiting for'].map((c) => h('th', { scope: 'col' }, c))),
              ),
              h('tbody', null, rows),
            ),
          )
        : h('p', { class: 'muted' }, 'No runs.'),
      hasPrev || hasNext
        ? pager({
            label: 'run pages',
            hasPrev,
            hasNext,
            onPrev: () => {
              if (serverPaging) token = tokens.pop() || '';
              else localPage--;
              restart();
            },
            onNext: () => {
              if (serverPaging) {
                tokens.push(token);
                token = page.next;
              } else localPage++;
              restart();
            },
          })
        : null,
    );
    return runs;
  }

  let lastSig = '';
  async function load(signal) {
    if (serverPaging) {
      try {
        page = await listRuns({ jobId: id, pageSize: RUNS_PER_PAGE, pageToken: token, state: stateFilter, signal });
      } catch (e) {
        if (e.name === 'AbortError') throw e;
        if (e.status !== 404 && e.status !== 405) throw e;
        serverPaging = false;
      }
    }
    // The job (with its full run list) is re-read when a run on screen changed
    // state, every 5 s, and on every tick when the API cannot page runs.
    const sig = page.runs.map((r) => `${r.id}:${r.state}`).join(',');
    if (!job || !serverPaging || sig !== lastSig || Date.now() - jobLoadedAt > 5000) {
      try {
        job = await getJob(id, { signal });
        jobLoadedAt = Date.now();
      } catch (e) {
        if (e.name === 'AbortError') throw e;
        replace(head, h('p', { class: 'crumbs' }, h('a', { href: '#/jobs' }, 'Jobs'), ' / ', id), errorBox(e));
        return e.status !== 404;
      }
      renderHead();
    }
    lastSig = sig;
    const visible = renderRuns();
    const running = visible.filter((r) => r.state === 'running').slice(0, MAX_PROGRESS_FETCHES);
    await Promise.all(
      running.map(async (r) => {
        try {
          const recs = await getSamples(r.id, { signal });
          let lo = Infinity;
          let hi = 0;
          for (const x of recs) {
            lo = Math.min(lo, x.t_start_ms);
            hi = Math.max(hi, x.t_end_ms);
          }
          elapsedByRun.set(r.id, hi > lo ? (hi - lo) / 1000 : 0);
          const m = liveMetrics(recs);
          if (m) metricsByRun.set(r.id, m);
        } catch (e) {
          if (e.name === 'AbortError') throw e;
        }
      }),
    );
    // Finished runs on screen: their result's numbers, fetched once each.
    const finished = visible
      .filter((r) => r.state === 'succeeded' && !(metricsByRun.get(r.id) && !metricsByRun.get(r.id).live))
      .slice(0, MAX_PROGRESS_FETCHES);
    await Promise.all(
      finished.map(async (r) => {
        try {
          const full = await getRun(r.id, { signal });
          if (full.result) metricsByRun.set(r.id, resultMetrics(full.result));
        } catch (e) {
          if (e.name === 'AbortError') throw e;
        }
      }),
    );
    if (running.length || finished.length) renderRuns();
    // Stops once the job is final (the header is re-read every 5 s, so it catches up).
    const active = !TERMINAL_STATES.has(job.state) || visible.some((r) => !TERMINAL_STATES.has(r.state));
    return active;
  }

  let refresh = poller(load, 2000);
  function restart() {
    refresh.stop();
    refresh = poller(load, 2000);
  }
  return () => refresh.stop();
}
