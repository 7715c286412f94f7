// One run: state and timings, live IOPS / bandwidth / clat and total (lat) percentile charts from
// the interval records, and the fio-compatible result once it is done. Records
// come from the job's watch stream (GET /jobs/{id}/watch?run=: the stored ones,
// then live ones, so a reload mid-run draws the whole run); the run's state is
// polled every second. Without the stream (an older controller, or too many
// streams open) the page polls /runs/{id}/samples instead.
import { getRun, getJob, getSamples, watchJob, listRunLogs, API_BASE, TERMINAL_STATES } from '../api.js';
import { h, replace, fmtTime, fmtDuration, fmtNum, fmtIops, fmtBytes, fmtBytesRate, fmtNs, stateBadge, errorBox, poller } from '../dom.js';
import { exportLink } from './compare.js';
import { fioBw } from '../fio_units.js';
import { SeriesBuilder } from '../stats.js';
import { LiveChart, COLORS } from '../charts.js';
import { runExpectedSeconds, progressOf } from './jobs.js';
import { exceedanceChart, Heatmap } from '../latency_views.js';
import { recordLatBins } from '../latency.js';

const POLL_MS = 1000;
const DIRS = ['read', 'write', 'trim'];

// Percentile keys of fio's JSON are "%f" strings: "99.000000".
function pct(lat, p) {
  const table = lat && lat.percentile;
  if (!table) return null;
  const want = Number(p);
  for (const [k, v] of Object.entries(table)) if (Math.abs(Number(k) - want) < 1e-9) return v;
  return null;
}

// Summary table of a fio JSON result: one row per job x direction that did I/O.
export function resultSummary(result) {
  const jobs = (result && result.jobs) || [];
  const rows = [];
  const ext = (result && result.iofleet && result.iofleet.jobs) || [];
  for (const [k, j] of jobs.entries()) {
    // fio's units: kb_base's first, the other in parentheses ("47.4MiB/s (49.8MB/s)").
    const kbBase = Number((ext[k] && ext[k].kb_base) || 1024);
    for (const d of DIRS) {
      const s = j[d];
      if (!s || !(s.total_ios > 0 || s.io_bytes > 0)) continue;
      const clat = s.clat_ns || {};
      rows.push(
        h(
          'tr',
          null,
          h('th', { scope: 'row' }, j.jobname || '–'),
          h('td', null, d),
          h('td', null, fmtIops(s.iops)),
          h('td', null, fioBw(s.bw_bytes ?? (s.bw || 0) * 1024, kbBase)),
          h('td', null, fmtNs(clat.mean)),
          h('td', null, fmtNs(pct(clat, 50))),
          h('td', null, fmtNs(pct(clat, 99))),
          h('td', null, fmtNs(pct(clat, 99.9))),
          h('td', null, String(j.error ?? 0)),
        ),
      );
    }
  }
  if (!rows.length) return h('p', { class: 'muted' }, 'The result has no I/O.');
  return h(
    'div',
    { class: 'table-wrap' },
    h(
      'table',
      { class: 'grid', 'aria-label': 'result summary' },
      h('thead', null, h('tr', null, ['Job', 'Dir', 'IOPS', 'Bandwidth', 'clat mean', 'clat p50', 'clat p99', 'clat p99.9', 'Error'].map((c) => h('th', { scope: 'col' }, c)))),
      h('tbody', null, rows),
    ),
  );
}

// A live chart of p50 and p99 per direction, on a log scale.
function latencyChart(parent, title) {
  return new LiveChart(parent, {
    title,
    yLabel: 'latency',
    yLog: true,
    fmt: (v) => fmtNs(v),
    series: DIRS.flatMap((d) => [
      { label: `${d} p50`, color: COLORS[d] },
      { label: `${d} p99`, color: COLORS[d] },
    ]),
  });
}

export function runPage(main, { args }) {
  const id = args[0];
  document.title = `Run ${id} · iofleet`;
  const head = h('div');
  const live = h('p', { class: 'muted small', 'aria-live': 'polite', 'data-testid': 'live-status' });
  const charts = h('section', { class: 'charts', 'aria-label': 'live charts' });
  const resultBox = h('section', { id: 'result', 'aria-labelledby': 'result-h' });
  const logsBox = h('section', { class: 'logs', 'aria-label': 'log files' });
  main.append(head, live, charts, resultBox);

  const series = new SeriesBuilder();
  const chartIops = new LiveChart(charts, {
    title: 'IOPS',
    yLabel: 'IOPS',
    fmt: (v) => fmtNum(v, 3),
    series: DIRS.map((d) => ({ label: d, color: COLORS[d] })),
  });
  const chartBw = new LiveChart(charts, {
    title: 'Bandwidth',
    yLabel: 'bytes/s',
    fmt: (v) => fmtBytesRate(v),
    series: DIRS.map((d) => ({ label: d, color: COLORS[d] })),
  });
  // Per direction, log scale: p50 solid-thin, p99 thick.
  const chartLat = latencyChart(charts, 'Completion latency (clat) percentiles');
  // Total latency (lat = slat + clat, fio's lat_ns), the same view next to
  // clat: made once a record carries it; a note instead when none does.
  let chartTot = null;
  const totNote = h('p', { class: 'muted small', 'data-testid': 'total-latency-absent', hidden: true },
    'Total latency (lat): not in this run’s records (the job sets gtod_reduce or disable_lat, or its agent does not send it).');
  charts.appendChild(totNote);
  const tails = h('section', { class: 'charts tails', 'aria-label': 'latency tails' });
  main.insertBefore(tails, resultBox);
  const heatmaps = new Map(); // dir or "dir/lat" -> Heatmap, made when the direction does I/O
  let exChart = null;
  let job = null;
  let resultShown = false;
  let blobUrl = null;

  // Links to the job's previous and next run and to the same cell and
  // repetition in the other variants (the runs it is compared with).
  function relatedRuns(run) {
    if (!job || !job.runs.length) return null;
    const i = job.runs.findIndex((r) => r.id === run.id);
    const link = (r, label) => h('a', { href: `#/runs/${encodeURIComponent(r.id)}`, dataset: { related: label } }, label, ' ', h('code', null, r.id));
    const out = [];
    if (i > 0) out.push(link(job.runs[i - 1], '← previous'));
    if (i >= 0 && i < job.runs.length - 1) out.push(link(job.runs[i + 1], 'next →'));
    for (const r of job.runs) {
      if (r.id !== run.id && run.variant && !run.warmup && !r.warmup && r.variant !== run.variant && r.cell === run.cell && r.repetition === run.repetition) {
        out.push(link(r, `variant ${r.variant}`));
      }
    }
    return out.length ? h('span', { class: 'related' }, out.map((a, k) => [k ? ' · ' : '', a])) : null;
  }

  function renderHead(run, cols) {
    const expected = job ? runExpectedSeconds(job.spec, run) : null;
    const elapsed = series.elapsedSeconds();
    const prog = progressOf(run, elapsed, expected);
    const pairs = [
      ['Job', h('a', { href: `#/jobs/${encodeURIComponent(run.job_id)}` }, job ? job.name || run.job_id : run.job_id)],
      ['Host', run.host || '–'],
      ['Target', run.target ? h('code', null, run.target) : '–'],
      ['Variant', run.variant || '–'],
      ['Warm-up', run.warmup ? "yes: the host's first run of the job, not compared (docs/ab-method.md)" : null],
      ['Cell', run.cell || '–'],
      ['Repetition', String(run.repetition)],
      ['Attempt', run.attempt ? `${run.attempt} (retry of ${run.retry_of})` : null],
      ['Created', fmtTime(run.created_ms)],
      ['Started', fmtTime(run.started_ms)],
      ['Finished', fmtTime(run.finished_ms)],
      ['Measured', `${fmtDuration(elapsed)}${expected ? ` of ${fmtDuration(expected)}` : ''}`],
      ['ETA', prog.eta === null || TERMINAL_STATES.has(run.state) ? null : fmtDuration(prog.eta)],
      ['I/O errors', cols.errors ? String(cols.errors) : null],
      ['Error', run.error ? h('span', { class: 'error-text' }, run.error) : null],
      ['Waiting', run.waiting_for || null],
      ['Leased keys', (run.target_keys || []).length
        ? h('code', null, run.target_keys.map((t) => `${t.path}: ${t.keys.join(', ')}`).join('; '))
        : null],
      ['Related runs', relatedRuns(run)],
      // Host telemetry per second (pages/telemetry.js), stored with the result.
      ['Host telemetry', TERMINAL_STATES.has(run.state) && run.result
        ? h('a', { href: `#/runs/${encodeURIComponent(id)}/telemetry`, 'data-testid': 'telemetry-link' }, 'disk, CPU and IRQs per second beside the IOPS')
        : null],
      ['Samples', run.samples_incomplete
        ? h('span', { class: 'error-text' }, `incomplete: ${run.samples_note}`)
        : null],
    ];
    replace(
      head,
      h(
        'p',
        { class: 'crumbs' },
        h('a', { href: '#/jobs' }, 'Jobs'),
        ' / ',
        h('a', { href: `#/jobs/${encodeURIComponent(run.job_id)}` }, run.job_id),
        ' / ',
        id,
      ),
      h('h1', null, 'Run ', h('code', null, id), ' ', stateBadge(run.state)),
      prog.frac !== null && run.state === 'running'
        ? h('progress', { max: '100', value: String(Math.round(prog.frac * 100)), 'aria-label': 'run progress', class: 'wide' })
        : null,
      h(
        'dl',
        { class: 'meta' },
        pairs.filter(([, v]) => v !== null && v !== undefined && v !== '').flatMap(([k, v]) => [h('dt', null, k), h('dd', null, v)]),
      ),
    );
  }

  function renderResult(run) {
    if (resultShown) return;
    if (!TERMINAL_STATES.has(run.state)) {
      replace(resultBox);
      return;
    }
    resultShown = true;
    if (!run.result) {
      replace(resultBox, h('h2', { id: 'result-h' }, 'Result'), h('p', { class: 'muted' }, run.error ? `No result: ${run.error}` : 'No result was stored for this run.'));
      return;
    }
    const records = [...series.windows.values()].flatMap((w) => w.records);
    exChart = exceedanceChart(tails, run.result, recordLatBins(records), !!run.samples_incomplete);
    const text = JSON.stringify(run.result, null, 2);
    blobUrl = URL.createObjectURL(new Blob([text], { type: 'application/json' }));
    replace(
      resultBox,
      h('h2', { id: 'result-h' }, 'Result'),
      resultSummary(run.result),
      h(
        'details',
        { class: 'raw' },
        h('summary', null, 'fio JSON'),
        h('p', null, h('a', { href: blobUrl, download: `${id}.json` }, 'Download fio JSON')),
        h('pre', { class: 'code', 'data-testid': 'result-json' }, text),
      ),
      logsBox,
    );
    showLogs();
  }

  // The run's fio log files (write_lat_log, ...) the agent uploaded: links that
  // download each with the API token (GET /runs/{id}/logs/{name}).
  async function showLogs() {
    let logs;
    try {
      logs = await listRunLogs(id);
    } catch (err) {
      replace(logsBox, h('p', { class: 'muted' }, `Log files: ${err.message}`));
      return;
    }
    if (!logs.length) return;
    replace(
      logsBox,
      h('h3', null, 'Log files'),
      h(
        'table',
        { class: 'data', 'aria-label': 'run log files' },
        h('thead', null, h('tr', null, ['File', 'Type', 'Size', 'Note'].map((c) => h('th', null, c)))),
        h(
          'tbody',
          null,
          logs.map((l) =>
            h(
              'tr',
              { 'data-log': l.name },
              h('td', null, exportLink(`${API_BASE}/runs/${encodeURIComponent(id)}/logs/${encodeURIComponent(l.name)}`, l.name, l.name)),
              h('td', null, l.type || '–'),
              h('td', null, fmtBytes(l.size)),
              h('td', null, l.truncated ? `truncated: the controller holds ${fmtBytes(l.stored)}; the whole file is at ${l.path} on the run's host` : ''),
            ),
          ),
        ),
      ),
    );
  }

  // How records arrive: 'stream' (the watch stream), 'poll' (GET samples).
  let source = 'stream';
  let streaming = false; // a watch stream is open
  let lastRun = null;
  let streamed = 0; // records that came through the stream
  const streamCtl = new AbortController();

  function draw(changed) {
    const cols = series.columns();
    if (changed || !chartIops.box.dataset.points || cols.x.length !== Number(chartIops.box.dataset.points)) {
      chartIops.setData([cols.x, cols.readIops, cols.writeIops, cols.trimIops]);
      chartBw.setData([cols.x, cols.readBw, cols.writeBw, cols.trimBw]);
      const pos = (a) => a.map((v) => (v > 0 ? v : null)); // log axis: no zeros
      chartLat.setData([cols.x, ...DIRS.flatMap((d) => [pos(cols.lat[d].p50), pos(cols.lat[d].p99)])]);
      if (cols.hasTotal && !chartTot) {
        chartTot = latencyChart(charts, 'Total latency (lat) percentiles');
        chartLat.box.after(chartTot.box); // side by side with clat
      }
      totNote.hidden = cols.hasTotal || cols.x.length === 0;
      if (chartTot) {
        const tot = DIRS.flatMap((d) => [pos(cols.tlat[d].p50), pos(cols.tlat[d].p99)]);
        chartTot.setData([cols.x, ...tot]);
        // What it drew, for tests and people: x and per direction p50/p99.
        chartTot.box.dataset.values = JSON.stringify({
          x: cols.x,
          ...Object.fromEntries(DIRS.map((d) => [d, { p50: cols.tlat[d].p50, p99: cols.tlat[d].p99 }])),
        });
      }
      for (const [i, d] of DIRS.entries()) {
        const show = cols.activeDirs.has(d) || (d === 'read' && cols.activeDirs.size === 0);
        chartIops.plot.setSeries(i + 1, { show });
        chartBw.plot.setSeries(i + 1, { show });
        chartLat.plot.setSeries(2 * i + 1, { show });
        chartLat.plot.setSeries(2 * i + 2, { show });
        if (chartTot) {
          chartTot.plot.setSeries(2 * i + 1, { show });
          chartTot.plot.setSeries(2 * i + 2, { show });
        }
        if (cols.activeDirs.has(d) && !heatmaps.has(d)) heatmaps.set(d, new Heatmap(tails, d));
        if (cols.activeDirs.has(d) && cols.hasTotal && !heatmaps.has(`${d}/lat`)) heatmaps.set(`${d}/lat`, new Heatmap(tails, d, 'lat'));
      }
      const all = [...series.windows.values()].flatMap((w) => w.records);
      for (const hm of heatmaps.values()) hm.update(all, series.t0);
    }
    return cols;
  }

  function showStatus(run, cols) {
    const active = !TERMINAL_STATES.has(run.state);
    charts.dataset.source = streaming ? 'stream' : source === 'poll' ? 'poll' : 'snapshot';
    charts.dataset.streamed = String(streamed);
    live.textContent = active
      ? `Live: ${cols.x.length} intervals, ${streaming ? 'streamed as they are stored' : 'refreshing every second'}.`
      : `${cols.x.length} intervals. The run is ${run.state}.`;
  }

  // Opens the job's watch stream for this run; on a drop or a cut it is opened
  // again by the next tick (the replay brings what was missed; SeriesBuilder
  // keeps each record once). Resolves once the stream is open or refused.
  function openStream(jobId) {
    streaming = true;
    let opened;
    const ready = new Promise((r) => {
      opened = r;
    });
    watchJob(jobId, {
      run: id,
      signal: streamCtl.signal,
      onOpen: () => opened(),
      onRecords: (recs) => {
        streamed += recs.length;
        if (series.add(recs) && lastRun) {
          const cols = draw(true);
          renderHead(lastRun, cols);
          showStatus(lastRun, cols);
        }
      },
    })
      .then(() => {
        streaming = false; // "end", "dropped" or cut: the next tick decides
      })
      .catch((e) => {
        streaming = false;
        // No route (an older controller) or too many streams: poll instead.
        if (e.name !== 'AbortError' && (e.status === 404 || e.status === 503 || e.status === 501)) source = 'poll';
      })
      .finally(() => opened());
    return ready;
  }

  const p = poller(async (signal) => {
    let run;
    let recs = [];
    try {
      if (source === 'poll') [run, recs] = await Promise.all([getRun(id, { signal }), getSamples(id, { signal })]);
      else run = await getRun(id, { signal });
    } catch (e) {
      if (e.name === 'AbortError') throw e;
      replace(head, errorBox(e));
      return e.status !== 404;
    }
    lastRun = run;
    if (!job && run.job_id) {
      try {
        job = await getJob(run.job_id, { signal });
      } catch (e) {
        if (e.name === 'AbortError') throw e;
      }
    }
    const active = !TERMINAL_STATES.has(run.state);
    if (source === 'stream' && active && !streaming && run.job_id) {
      await openStream(run.job_id);
      if (source === 'poll') recs = await getSamples(id, { signal }); // refused: poll from now on
    }
    if (source === 'stream' && !active) {
      // The run is over: its records are all stored. One snapshot completes
      // what the stream had not delivered yet, and the stream is closed (it
      // would stay open until the whole job ends).
      try {
        recs = await getSamples(id, { signal });
      } catch (e) {
        if (e.name === 'AbortError') throw e;
      }
      streamCtl.abort();
    }
    const added = series.add(recs);
    const cols = draw(added > 0);
    renderHead(run, cols);
    showStatus(run, cols);
    renderResult(run);
    return active;
  }, POLL_MS);

  return () => {
    p.stop();
    streamCtl.abort();
    chartIops.destroy();
    chartBw.destroy();
    chartLat.destroy();
    if (chartTot) chartTot.destroy();
    for (const hm of heatmaps.values()) hm.destroy();
    if (exChart) exChart.destroy();
    if (blobUrl) URL.revokeObjectURL(blobUrl);
  };
}
