// Jobs list (paged through the API) and one job with its runs.
import { listJobs, listRuns, getJob, cancelJob, getSamples, TERMINAL_STATES } from '../api.js';
import { h, replace, fmtTime, fmtDuration, kvList, stateBadge, errorBox, pager, poller } from '../dom.js';
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
  if (!token) stack = [];
  const status = h('p', { class: 'muted', 'aria-live': 'polite' }, 'Loading…');
  const body = h('div');
  main.append(
    h('div', { class: 'title-row' }, h('h1', null, 'Jobs'), h('a', { class: 'btn primary', href: '#/submit' }, 'Submit a job')),
    status,
    body,
  );

  const p = poller(async (signal) => {
    let page;
    try {
      page = await listJobs({ pageSize: PAGE_SIZE, pageToken: token, signal });
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
              h('thead', null, h('tr', null, ['Job', 'ID', 'State', 'Created'].map((c) => h('th', { scope: 'col' }, c)))),
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
          location.hash = prev ? `#/jobs?t=${encodeURIComponent(prev)}` : '#/jobs';
        },
        onNext: () => {
          stack.push(token);
          location.hash = `#/jobs?t=${encodeURIComponent(page.next)}`;
        },
      }),
    );
    return true;
  }, 5000);
  return () => p.stop();
}

// ------------------------------------------------------------------ one job

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

  function renderRuns() {
    const { runs, hasPrev, hasNext } = visibleRuns();
    const rows = runs.map((r) => {
      const expected = job ? runExpectedSeconds(job.spec, r) : null;
      const prog = progressOf(r, elapsedByRun.get(r.id) ?? 0, expected);
      const dur = r.started_ms ? ((r.finished_ms || Date.now()) - r.started_ms) / 1000 : null;
      return h(
        'tr',
        { dataset: { run: r.id, state: r.state } },
        h('th', { scope: 'row' }, h('a', { href: `#/runs/${encodeURIComponent(r.id)}` }, h('code', null, r.id))),
        h('td', null, r.variant || '–'),
        h('td', null, r.cell || '–'),
        h('td', null, String(r.repetition)),
        h('td', null, r.host || '–'),
        h('td', null, stateBadge(r.state), r.attempt ? h('span', { class: 'small muted' }, ` retry ${r.attempt}`) : null),
        progressCell(r, prog),
        h('td', null, prog.eta === null ? '–' : fmtDuration(prog.eta)),
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
                h('tr', null, ['Run', 'Variant', 'Cell', 'Rep', 'Host', 'State', 'Progress', 'ETA', 'Started', 'Duration', 'Error / waiting for'].map((c) => h('th', { scope: 'col' }, c))),
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
        } catch (e) {
          if (e.name === 'AbortError') throw e;
        }
      }),
    );
    if (running.length) renderRuns();
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
