// #/runs/ID/telemetry: what the host did beside one run, second by second, on
// the time axis of the run's IOPS (so a dip in IOPS lines up with the device
// saturating, await growing, or IRQs moving), and a table of the means.
//
// Data: GET /runs/{id}/telemetry (stored with the run's result by its agent, so
// there is none until the run is over; the page polls the run's state until
// then), GET /runs/{id}/samples for IOPS, GET /runs/{id} for state and host.
// All through api.js request(), so the API token is asked for and sent.
// Each chart box carries the columns it drew (data-values: [x, y1, y2, ...]).
import uPlot from 'uplot';
import { getRun, getSamples, getRunTelemetry, telemetryCpusOfResult, TERMINAL_STATES } from '../api.js';
import { h, replace, fmtNum, stateBadge, errorBox, poller } from '../dom.js';
import { COLORS, widthOf, fit, tickLabels } from '../charts.js';
import { SeriesBuilder } from '../stats.js';
import { telemetryColumns, sharedRange, meanLabel, meanOrder, perCpuColumns, CPU_CLASSES } from '../telemetry_series.js';

const POLL_MS = 2000;
const HEIGHT = 200;
const SYNC_KEY = 'iofleet-telemetry';
const PALETTE = ['#1f77b4', '#d62728', '#2ca02c', '#ff7f0e', '#9467bd', '#8c564b', '#e377c2', '#17becf'];
const CPU_COLORS = { usr_pct: '#1f77b4', sys_pct: '#d62728', irq_pct: '#ff7f0e', softirq_pct: '#9467bd', iowait_pct: '#7f7f7f' };

// One chart of a shared time axis. series: [{label, color, values}].
function timeChart(container, { title, yLabel, fmt, x, series, range }) {
  const data = [x, ...series.map((s) => s.values)];
  const box = h('div', {
    class: 'chart',
    role: 'img',
    'aria-label': title,
    dataset: { chart: title, points: String(x.length), values: JSON.stringify(data), labels: JSON.stringify(series.map((s) => s.label)) },
  });
  container.appendChild(box);
  const plot = new uPlot(
    {
      title,
      width: widthOf(box),
      height: HEIGHT,
      cursor: { sync: { key: SYNC_KEY } },
      scales: { x: { time: false, range: () => range }, y: { range: (u, min, max) => [Math.min(0, min), max > 0 ? max * 1.08 : 1] } },
      axes: [
        { label: 'seconds since the run’s first interval', stroke: '#555' },
        { label: yLabel, stroke: '#555', size: 70, values: tickLabels(fmt, box) },
      ],
      series: [
        { label: 't', value: (u, v) => (v === null || v === undefined ? '–' : `${v.toFixed(1)} s`) },
        ...series.map((s) => ({ label: s.label, stroke: s.color, width: 2, spanGaps: false, points: { show: x.length < 30 }, value: (u, v) => fmt(v) })),
      ],
    },
    data,
    box,
  );
  const ro = fit(box, plot, HEIGHT);
  return () => {
    ro.disconnect();
    plot.destroy();
  };
}

const fmt3 = (v) => fmtNum(v, 3);
const fmtPctAxis = (v) => (v === null || v === undefined ? '–' : `${fmtNum(v, 3)}%`);

function meansTable(means) {
  const keys = Object.keys(means).sort((a, b) => meanOrder(a) - meanOrder(b) || a.localeCompare(b, 'en', { numeric: true }));
  if (!keys.length) return h('p', { class: 'muted' }, 'No means (the telemetry has no samples).');
  const perCpu = keys.filter((k) => meanOrder(k) === 3);
  const row = (k) => h('tr', { dataset: { metric: k } }, h('th', { scope: 'row' }, meanLabel(k)), h('td', { class: 'num' }, fmtNum(means[k], 4)), h('td', null, h('code', null, k)));
  const head = h('thead', null, h('tr', null, ['Metric', 'Mean over the run', 'Key'].map((c) => h('th', { scope: 'col' }, c))));
  return h(
    'div',
    { class: 'table-wrap' },
    h('table', { class: 'grid', 'aria-label': 'telemetry means' }, head, h('tbody', null, keys.filter((k) => meanOrder(k) < 3).map(row))),
    perCpu.length
      ? h('details', null, h('summary', null, `Per CPU (${perCpu.length} rows)`), h('table', { class: 'grid', 'aria-label': 'telemetry means per CPU' }, head.cloneNode(true), h('tbody', null, perCpu.map(row))))
      : null,
  );
}

export function telemetryPage(main, { args }) {
  const id = args[0];
  document.title = `Telemetry of run ${id} · iofleet`;
  const head = h('div');
  const note = h('p', { class: 'muted small', 'data-testid': 'telemetry-note', 'aria-live': 'polite' });
  const charts = h('section', { class: 'charts telemetry', 'aria-label': 'telemetry charts' });
  const meansBox = h('section', { 'aria-labelledby': 'means-h' });
  main.append(head, note, charts, meansBox);
  const destroyers = [];
  let drawn = false;

  function renderHead(run, tele) {
    replace(
      head,
      h(
        'p',
        { class: 'crumbs' },
        h('a', { href: '#/jobs' }, 'Jobs'),
        ' / ',
        h('a', { href: `#/jobs/${encodeURIComponent(run.job_id)}` }, run.job_id),
        ' / ',
        h('a', { href: `#/runs/${encodeURIComponent(id)}` }, id),
        ' / telemetry',
      ),
      h('h1', null, 'Telemetry of run ', h('code', null, id), ' ', stateBadge(run.state)),
      h(
        'dl',
        { class: 'meta' },
        h('dt', null, 'Host'),
        h('dd', null, (tele && tele.host) || run.host || '–'),
        tele ? [h('dt', null, 'Devices'), h('dd', null, Object.keys(telemetryColumns(tele, null).dev).join(', ') || 'none found under the run’s files')] : null,
        tele ? [h('dt', null, 'Device IRQ lines'), h('dd', null, tele.irq_lines.length ? h('code', null, tele.irq_lines.join(' ')) : 'none (the device has no IRQ lines of its own: loop, dm, zram, or a filesystem without a block device)')] : null,
        tele ? [h('dt', null, 'Samples'), h('dd', null, `${tele.seconds.length}, every ${tele.interval_ms} ms`)] : null,
      ),
    );
  }

  function draw(run, tele, records) {
    const series = new SeriesBuilder();
    series.add(records);
    const io = series.columns();
    const cols = telemetryColumns(tele, series.t0);
    const range = sharedRange(io.x, cols.x);
    charts.dataset.aligned = String(cols.aligned);
    charts.dataset.range = JSON.stringify(range);
    if (!records.length) note.textContent = 'The run stored no interval records: IOPS is not drawn; telemetry seconds count from its first sample.';
    else if (!cols.aligned) note.textContent = 'Not aligned by the clock: this result’s telemetry has no start time (an agent from before it was recorded), so its seconds count from its first sample and may be offset from the IOPS by the time the run took to lay out its files.';
    else note.textContent = 'Telemetry and IOPS share one time axis (seconds since the run’s first interval window; each point at the end of its second). Samples at or before 0 s were taken while the run laid out its files.';

    const dirs = ['read', 'write', 'trim'].filter((d) => io.activeDirs.has(d));
    const iopsCol = { read: io.readIops, write: io.writeIops, trim: io.trimIops };
    const add = (o) => destroyers.push(timeChart(charts, { ...o, range }));
    add({ title: 'IOPS', yLabel: 'IOPS', fmt: fmt3, x: io.x, series: (dirs.length ? dirs : ['read']).map((d) => ({ label: d, color: COLORS[d], values: iopsCol[d] })) });
    const devs = cols.devices;
    const devSeries = (m) => devs.map((d, i) => ({ label: d, color: PALETTE[i % PALETTE.length], values: cols.dev[d][m] }));
    if (devs.length) {
      add({ title: 'Device utilisation', yLabel: '% util', fmt: fmtPctAxis, x: cols.x, series: devSeries('util_pct') });
      add({ title: 'Device await', yLabel: 'ms', fmt: fmt3, x: cols.x, series: devSeries('await_ms') });
      add({ title: 'Device queue size (aqu-sz)', yLabel: 'requests', fmt: fmt3, x: cols.x, series: devSeries('aqu_sz') });
      add({
        title: 'Device merges',
        yLabel: 'merges/s',
        fmt: fmt3,
        x: cols.x,
        series: devs.flatMap((d, i) => [
          { label: `${d} read`, color: PALETTE[i % PALETTE.length], values: cols.dev[d].rrqm_s },
          { label: `${d} write`, color: PALETTE[(i + 1) % PALETTE.length], values: cols.dev[d].wrqm_s },
        ]),
      });
    }
    add({
      title: 'CPU (mean over CPUs)',
      yLabel: '% of CPU',
      fmt: fmtPctAxis,
      x: cols.x,
      series: CPU_CLASSES.map((c) => ({ label: c.replace(/_pct$/, ''), color: CPU_COLORS[c], values: cols.cpu[c] })),
    });
    add({ title: 'Device interrupts', yLabel: 'IRQs/s', fmt: fmt3, x: cols.x, series: [{ label: 'device IRQs/s (all CPUs)', color: '#ff7f0e', values: cols.dev_irq_s }] });
    // Per CPU (from the stored result): where the device's interrupts and the
    // softirq time land, so IRQs moving between CPUs show.
    const cpus = telemetryCpusOfResult(run.result);
    const perCpu = (key) => perCpuColumns(cpus, key, cols.x.length);
    const irqPerCpu = perCpu('dev_irq_s');
    if (irqPerCpu && irqPerCpu.length) {
      add({ title: 'Device interrupts per CPU', yLabel: 'IRQs/s', fmt: fmt3, x: cols.x, series: irqPerCpu.map((c, i) => ({ ...c, color: PALETTE[i % PALETTE.length] })) });
    }
    const softPerCpu = perCpu('softirq_pct');
    if (softPerCpu && softPerCpu.length) {
      add({ title: 'softirq per CPU', yLabel: '% of the CPU', fmt: fmtPctAxis, x: cols.x, series: softPerCpu.map((c, i) => ({ ...c, color: PALETTE[i % PALETTE.length] })) });
    }
    add({
      title: 'Context switches and interrupts',
      yLabel: 'per second',
      fmt: fmt3,
      x: cols.x,
      series: [
        { label: 'context switches/s', color: '#1f77b4', values: cols.ctxt_s },
        { label: 'interrupts/s (all lines)', color: '#2ca02c', values: cols.intr_s },
      ],
    });
    replace(meansBox, h('h2', { id: 'means-h' }, 'Means'), meansTable(tele.means));
  }

  const p = poller(async (signal) => {
    let run;
    try {
      run = await getRun(id, { signal });
    } catch (e) {
      if (e.name === 'AbortError') throw e;
      replace(head, errorBox(e));
      return e.status !== 404;
    }
    if (!TERMINAL_STATES.has(run.state)) {
      renderHead(run, null);
      note.textContent = `The run is ${run.state}: its telemetry is stored with its result, when it ends. This page checks every ${POLL_MS / 1000} s.`;
      return true;
    }
    let tele;
    let records;
    try {
      [tele, records] = await Promise.all([getRunTelemetry(id, { signal }), getSamples(id, { signal })]);
    } catch (e) {
      if (e.name === 'AbortError') throw e;
      renderHead(run, null);
      replace(note, errorBox(e));
      return false;
    }
    renderHead(run, tele);
    if (!drawn) {
      drawn = true;
      draw(run, tele, records);
    }
    return false;
  }, POLL_MS);

  return () => {
    p.stop();
    for (const d of destroyers) d();
  };
}
