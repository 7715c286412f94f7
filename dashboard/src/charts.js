// uPlot wrappers: a live time-series chart and an iodepth sweep chart with CI bands.
import uPlot from 'uplot';
import { h } from './dom.js';

export const COLORS = {
  read: '#1f77b4',
  write: '#d62728',
  trim: '#2ca02c',
  p50: '#1f77b4',
  p99: '#ff7f0e',
  a: '#1f77b4',
  b: '#d62728',
};

// Plot width that fits inside `box` (its padding and border included).
export function widthOf(box) {
  const cs = getComputedStyle(box);
  const pad = parseFloat(cs.paddingLeft) + parseFloat(cs.paddingRight) + parseFloat(cs.borderLeftWidth) + parseFloat(cs.borderRightWidth);
  return Math.max(280, Math.floor((box.clientWidth || 640) - (pad || 0)));
}

// Re-fits `plot` to `box` whenever the box changes width.
export function fit(box, plot, height) {
  let last = 0;
  const ro = new ResizeObserver(() => {
    const w = widthOf(box);
    if (w !== last) {
      last = w;
      plot.setSize({ width: w, height });
    }
  });
  ro.observe(box);
  return ro;
}

// An axis' tick labels by `fmt`. uPlot passes null for the ticks it leaves
// unlabelled (on a log axis the minor ones between the labelled powers): they
// stay null, drawn as nothing. Formatted, they were drawn as '–' beside the
// ticks of every latency chart. `box` (optional) records the labels drawn in
// its data-y-ticks (nulls included), for tests and people.
export function tickLabels(fmt, box = null) {
  return (u, vals) => {
    const labels = vals.map((v) => (v === null || v === undefined ? null : fmt(v)));
    if (box) box.dataset.yTicks = JSON.stringify(labels);
    return labels;
  };
}

// Live series start at 0 on both axes: x shows at least 5 s, y at least [0, max].
const fromZero = (u, min, max) => [0, max > 0 ? max * 1.08 : 1];
const xFromZero = (u, min, max) => [0, Math.max(5, max || 0)];

// A chart whose data grows. The container carries data-points (the number of x
// values plotted) so tests and people can see it update.
export class LiveChart {
  // series: [{label, color, key}], fmt: value formatter for the y axis / legend.
  // yLog: log10 y axis (latencies; zero and missing values are gaps).
  constructor(container, { title, series, fmt, yLabel, yLog = false }) {
    this.container = container;
    this.series = series;
    this.fmt = fmt;
    this.box = h('div', { class: 'chart', role: 'img', 'aria-label': title, dataset: { points: '0', chart: title } });
    container.appendChild(this.box);
    const opts = {
      title,
      width: widthOf(this.box),
      height: 240,
      scales: { x: { time: false, range: xFromZero }, y: yLog ? { distr: 3, log: 10 } : { range: fromZero } },
      axes: [
        { label: 'seconds', stroke: '#555' },
        { label: yLabel, stroke: '#555', size: 70, values: tickLabels(fmt, this.box) },
      ],
      series: [
        { label: 't', value: (u, v) => (v === null || v === undefined ? '–' : `${v.toFixed(1)} s`) },
        ...series.map((s) => ({
          label: s.label,
          stroke: s.color,
          width: 2,
          spanGaps: true,
          value: (u, v) => fmt(v),
        })),
      ],
    };
    this.plot = new uPlot(opts, [[], ...series.map(() => [])], this.box);
    this.ro = fit(this.box, this.plot, 240);
  }

  // data: [x[], y1[], y2[], ...]
  setData(data) {
    this.plot.setData(data);
    this.box.dataset.points = String(data[0].length);
    // Without a cursor over the plot, the legend shows the latest values.
    if (data[0].length && this.plot.cursor.idx == null) this.plot.setLegend({ idx: data[0].length - 1 });
  }

  destroy() {
    this.ro.disconnect();
    this.plot.destroy();
  }
}

function fade(hex, alpha) {
  const n = parseInt(hex.slice(1), 16);
  return `rgba(${(n >> 16) & 255},${(n >> 8) & 255},${n & 255},${alpha})`;
}

// Median per arm vs iodepth (log2 x axis) with the median CI as a shaded band.
// arms: [{name, color, points: [{x, median, lo, hi}]}]
export function sweepChart(container, { title, xLabel, yLabel, fmt, arms }) {
  const xs = [...new Set(arms.flatMap((a) => a.points.map((p) => p.x)))].sort((a, b) => a - b);
  const data = [xs];
  const series = [{ label: xLabel }];
  const bands = [];
  for (const arm of arms) {
    const byX = new Map(arm.points.map((p) => [p.x, p]));
    const col = (k) => xs.map((x) => (byX.has(x) && Number.isFinite(byX.get(x)[k]) ? byX.get(x)[k] : null));
    const base = data.length;
    data.push(col('median'), col('lo'), col('hi'));
    series.push(
      { label: `${arm.name} median`, stroke: arm.color, width: 2, points: { show: true, size: 6 }, value: (u, v) => fmt(v) },
      { label: `${arm.name} CI low`, stroke: fade(arm.color, 0.5), width: 1, dash: [4, 4], value: (u, v) => fmt(v) },
      { label: `${arm.name} CI high`, stroke: fade(arm.color, 0.5), width: 1, dash: [4, 4], value: (u, v) => fmt(v) },
    );
    bands.push({ series: [base + 2, base + 1], fill: fade(arm.color, 0.15) });
  }
  // data-values: the columns drawn ([x, A median, A lo, A hi, B median, ...]).
  const box = h('div', { class: 'chart', role: 'img', 'aria-label': title, dataset: { points: String(xs.length), chart: title, values: JSON.stringify(data) } });
  container.appendChild(box);
  const plot = new uPlot(
    {
      title,
      width: widthOf(box),
      height: 300,
      scales: { x: { time: false, distr: 3, log: 2 } },
      axes: [
        { label: xLabel, stroke: '#555' },
        { label: yLabel, stroke: '#555', size: 70, values: tickLabels(fmt, box) },
      ],
      series,
      bands,
    },
    data,
    box,
  );
  const ro = fit(box, plot, 300);
  return {
    plot,
    destroy() {
      ro.disconnect();
      plot.destroy();
    },
  };
}
