// The run page's tail views: the percentile (exceedance) plot of a finished run
// and the latency heatmap over time. Each chart box carries the numbers it drew
// (data-values / data-cells) so tests and people can check them against the API.
import uPlot from 'uplot';
import { h, replace, fmtNs } from './dom.js';
import { COLORS, tickLabels } from './charts.js';
import { exceedance, ninesLabel, heatmap } from './latency.js';

const DASH = { clat: undefined, lat: [6, 4] };

function widthOf(box) {
  return Math.max(280, Math.floor((box.clientWidth || 640) - 10));
}

// Latency (y, log10) vs percentile on a "nines" axis (x: 90%, 99%, 99.9% ...),
// one curve per direction and kind (clat solid, total lat dashed).
export function exceedanceChart(container, result, recordLat = null, recordsIncomplete = false) {
  const ex = exceedance(result, recordLat, recordsIncomplete);
  const box = h('div', {
    class: 'chart',
    role: 'img',
    'aria-label': 'Latency percentiles (exceedance)',
    dataset: {
      chart: 'Latency percentiles',
      values: JSON.stringify({ x: ex.x, series: ex.series.map((s) => ({ label: s.label, n: s.n, y: s.y, source: s.source })) }),
    },
  });
  container.appendChild(box);
  const notes = ex.missing.length ? h('ul', { class: 'muted small', 'data-testid': 'exceedance-missing' }, ex.missing.map((m) => h('li', null, m))) : null;
  if (!ex.series.length) {
    box.appendChild(h('p', { class: 'muted' }, 'No latency histogram bins in this result.'));
    if (notes) box.appendChild(notes);
    return { destroy() {} };
  }
  const top = Math.ceil(ex.x[ex.x.length - 1]);
  const plot = new uPlot(
    {
      title: 'Latency percentiles (exceedance)',
      width: widthOf(box),
      height: 300,
      scales: { x: { time: false, range: [0, Math.max(1, top)] }, y: { distr: 3, log: 10 } },
      axes: [
        {
          label: 'percentile',
          stroke: '#555',
          splits: () => Array.from({ length: Math.max(1, top) + 1 }, (_, i) => i),
          values: tickLabels(ninesLabel),
        },
        { label: 'latency', stroke: '#555', size: 70, values: tickLabels(fmtNs, box) },
      ],
      series: [
        { label: 'percentile', value: (u, v) => (v === null || v === undefined ? '–' : ninesLabel(v)) },
        ...ex.series.map((s) => ({
          label: s.label,
          stroke: COLORS[s.dir],
          width: 2,
          dash: DASH[s.kind],
          value: (u, v) => fmtNs(v),
        })),
      ],
    },
    [ex.x, ...ex.series.map((s) => s.y)],
    box,
  );
  if (notes) box.appendChild(notes);
  return {
    plot,
    destroy() {
      plot.destroy();
    },
  };
}

// Colour of a cell holding `frac` of its column's I/Os (log scale, 1e-4 .. 1).
function heatColour(frac) {
  const t = Math.max(0, Math.min(1, (Math.log10(frac) + 4) / 4));
  // light yellow -> orange -> dark purple
  const stops = [
    [255, 247, 188],
    [254, 153, 41],
    [204, 76, 2],
    [84, 39, 143],
  ];
  const pos = t * (stops.length - 1);
  const i = Math.min(stops.length - 2, Math.floor(pos));
  const f = pos - i;
  const c = stops[i].map((a, k) => Math.round(a + (stops[i + 1][k] - a) * f));
  return `rgb(${c[0]},${c[1]},${c[2]})`;
}

// A latency heatmap of one direction: x = time (1 s windows), y = latency in
// powers of two (log), colour = share of the window's I/Os in that band.
export class Heatmap {
  // kind: 'clat' (completion latency) or 'lat' (total latency, slat + clat).
  constructor(container, dir, kind = 'clat') {
    this.dir = dir;
    this.kind = kind;
    const what = kind === 'lat' ? 'total' : 'completion';
    this.canvas = h('canvas', { height: '240', style: { width: '100%', height: '240px', display: 'block' } });
    this.box = h(
      'div',
      {
        class: 'chart heatmap',
        role: 'img',
        'aria-label': `${dir} ${what} latency heatmap`,
        dataset: { chart: kind === 'lat' ? `${dir} total latency heatmap` : `${dir} latency heatmap`, kind, cells: '[]' },
      },
      h('div', { class: 'u-title' }, `${dir} ${what} latency over time`),
      this.canvas,
      h('p', { class: 'muted small' }, 'Colour: share of the window’s I/Os in each latency band (log scale, 0.01 % to 100 %).'),
    );
    container.appendChild(this.box);
    this.last = null;
    let lastW = 0;
    this.ro = new ResizeObserver(() => {
      const w = this.canvas.clientWidth;
      if (w !== lastW && this.last) this.draw(this.last);
      lastW = w;
    });
    this.ro.observe(this.box);
  }

  update(records, t0) {
    const hm = heatmap(records, this.dir, t0, this.kind);
    this.last = hm;
    const list = [];
    for (const [k, c] of hm.cells) {
      const [ci, row] = k.split('/').map(Number);
      list.push([hm.cols[ci].seq, row, c]);
    }
    this.box.dataset.cells = JSON.stringify(list);
    this.box.dataset.points = String(hm.cols.length);
    this.draw(hm);
  }

  draw(hm) {
    const W = Math.max(280, this.canvas.clientWidth || widthOf(this.box));
    const H = 240;
    const cv = this.canvas;
    cv.width = W;
    cv.height = H;
    const g = cv.getContext('2d');
    g.clearRect(0, 0, W, H);
    const left = 72;
    const bottom = 28;
    const pw = W - left - 8;
    const ph = H - bottom - 6;
    g.font = '11px system-ui, sans-serif';
    g.fillStyle = '#555';
    if (!hm.cols.length) {
      g.fillText('no samples yet', left + 8, ph / 2);
      return;
    }
    const rows = hm.rowMax - hm.rowMin + 1;
    const rh = ph / rows;
    const cw = pw / hm.cols.length;
    const totals = hm.cols.map(() => 0);
    for (const [k, c] of hm.cells) totals[Number(k.split('/')[0])] += c;
    for (const [k, c] of hm.cells) {
      const [ci, row] = k.split('/').map(Number);
      g.fillStyle = heatColour(c / totals[ci]);
      g.fillRect(left + ci * cw, 6 + (hm.rowMax - row) * rh, Math.ceil(cw), Math.ceil(rh));
    }
    g.fillStyle = '#555';
    g.textAlign = 'right';
    const step = Math.max(1, Math.ceil(rows / 8));
    for (let r = hm.rowMin; r <= hm.rowMax; r += step) {
      g.fillText(fmtNs(2 ** r), left - 4, 6 + (hm.rowMax - r + 0.5) * rh + 4);
    }
    g.textAlign = 'center';
    const cstep = Math.max(1, Math.ceil(hm.cols.length / 10));
    for (let i = 0; i < hm.cols.length; i += cstep) {
      g.fillText(`${hm.cols[i].t.toFixed(0)} s`, left + (i + 0.5) * cw, H - 10);
    }
  }

  destroy() {
    this.ro.disconnect();
    replace(this.box);
    this.box.remove();
  }
}
