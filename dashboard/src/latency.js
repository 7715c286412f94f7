// Latency math for the run page's tail views (no DOM): the percentile
// (exceedance) curve from a stored result's histogram bins, and the latency
// heatmap over time from the 1 s interval histograms.
import { bucketValue } from './stats.js';

export const LAT_DIRS = ['read', 'write', 'trim'];

// A fio JSON latency object's "bins" ({"<ns>": count}, json+ output) as a sorted
// array [[ns, count], ...]; empty when the result has no bins.
export function binsOf(lat) {
  const b = lat && lat.bins;
  if (!b || typeof b !== 'object') return [];
  return Object.entries(b)
    .map(([k, v]) => [Number(k), Number(v)])
    .filter(([k, v]) => Number.isFinite(k) && v > 0)
    .sort((x, y) => x[0] - y[0]);
}

// Merges several sorted bin arrays (one per job of the result) into one.
export function mergeBins(list) {
  const m = new Map();
  for (const bins of list) for (const [k, v] of bins) m.set(k, (m.get(k) || 0) + v);
  return [...m.entries()].sort((x, y) => x[0] - y[0]);
}

// Percentile p (0..100) of sorted bins by fio's rule: the value of the first bin
// whose running count reaches p/100 * N. null when empty.
export function binsPercentile(bins, p) {
  let n = 0;
  for (const [, c] of bins) n += c;
  if (n <= 0) return null;
  const need = (p / 100) * n;
  let run = 0;
  for (const [v, c] of bins) {
    run += c;
    if (run >= need) return v;
  }
  return bins[bins.length - 1][0];
}

// "Nines" of a percentile: 90 -> 1, 99 -> 2, 99.9 -> 3 (x of the exceedance plot).
export function nines(p) {
  return -Math.log10(1 - p / 100);
}
export function percentileOfNines(x) {
  return 100 * (1 - 10 ** -x);
}
// Axis label of a nines value: 0 -> "0%", 1 -> "90%", 3 -> "99.9%".
export function ninesLabel(x) {
  const p = percentileOfNines(x);
  const digits = Math.max(0, Math.ceil(x) - 2);
  return `${p.toFixed(digits)}%`;
}

// The x grid of the exceedance plot: every 0.05 nines, plus the usual
// percentiles exactly, up to the resolution of the largest sample (1 - 1/N).
export function ninesGrid(maxN) {
  const top = Math.min(7, Math.log10(Math.max(maxN, 2)));
  const xs = new Set();
  for (let x = 0; x <= top + 1e-9; x += 0.05) xs.add(Math.round(x * 100) / 100);
  for (const p of [50, 90, 95, 99, 99.5, 99.9, 99.95, 99.99, 99.999, 99.9999]) {
    const x = nines(p);
    if (x <= top + 1e-9) xs.add(x);
  }
  return [...xs].sort((a, b) => a - b);
}

// The run's total-latency (lat) bins per direction from its interval records
// (each record's lat_hist delta, all clones and windows summed: the whole run's
// histogram, fio's buckets): {dir: [[ns, count], ...]}; a direction no record
// measured is left out.
export function recordLatBins(records) {
  const per = {};
  for (const r of records || []) {
    for (const dir of LAT_DIRS) {
      const lh = r[dir] && r[dir].latHist;
      if (!lh) continue;
      if (!per[dir]) per[dir] = new Map();
      for (const [idx, c] of lh) if (c > 0) per[dir].set(idx, (per[dir].get(idx) || 0) + c);
    }
  }
  const out = {};
  for (const [dir, m] of Object.entries(per)) {
    out[dir] = mergeBins([[...m.entries()].map(([idx, c]) => [bucketValue(idx), c])]);
  }
  return out;
}

// Exceedance curves of a fio JSON result: completion (clat_ns) and total
// (lat_ns) latency per direction, from the bins of all its jobs merged.
// recordLat (optional, recordLatBins of the run's records): total latency for a
// direction whose result has no lat_ns bins (no lat_percentiles=1); each use
// is named in `missing`. recordsIncomplete: the records miss windows, so they
// are not used (a curve from part of the run would pass for the whole).
// Returns {x, series: [{dir, kind, label, n, y, source}], missing: [text]}.
export function exceedance(result, recordLat = null, recordsIncomplete = false) {
  const jobs = (result && result.jobs) || [];
  const curves = [];
  const missing = [];
  for (const dir of LAT_DIRS) {
    const did = jobs.some((j) => j[dir] && j[dir].total_ios > 0);
    if (!did) continue;
    for (const [kind, key] of [
      ['clat', 'clat_ns'],
      ['lat', 'lat_ns'],
    ]) {
      let bins = mergeBins(jobs.map((j) => binsOf(j[dir] && j[dir][key])));
      let source = 'result';
      if (!bins.length && kind === 'lat' && recordLat && recordLat[dir] && recordLat[dir].length) {
        if (recordsIncomplete) {
          missing.push(`${dir} total latency: no bins in the result, and the run's 1 s records are incomplete, so none is drawn`);
          continue;
        }
        bins = recordLat[dir];
        source = 'records';
        missing.push(`${dir} total latency: from the run's 1 s interval records (the result has no lat_ns bins without lat_percentiles=1)`);
      }
      if (!bins.length) {
        missing.push(
          kind === 'lat'
            ? `${dir} total latency: no bins stored (the job did not set lat_percentiles=1, and its records carry none)`
            : `${dir} completion latency: no bins stored in the result`,
        );
        continue;
      }
      const n = bins.reduce((s, [, c]) => s + c, 0);
      curves.push({ dir, kind, label: `${dir} ${kind}`, n, bins, source });
    }
  }
  const x = ninesGrid(Math.max(0, ...curves.map((c) => c.n)));
  const series = curves.map((c) => ({
    dir: c.dir,
    kind: c.kind,
    label: c.label,
    n: c.n,
    source: c.source,
    // Beyond 1 - 1/N the curve has no data: null, not the max repeated.
    y: x.map((xi) => (xi <= Math.log10(c.n) + 1e-9 ? binsPercentile(c.bins, percentileOfNines(xi)) : null)),
  }));
  return { x, series, missing };
}

// Row of the heatmap for a fio bucket: floor(log2(latency ns)), 0 for < 2 ns.
export function heatRow(bucketIdx) {
  const v = bucketValue(bucketIdx);
  return v < 2 ? 0 : Math.floor(Math.log2(v));
}

// Latency heatmap of one direction from interval records: one column per window
// (seq, all clones merged), one row per power of two of latency. kind: 'clat'
// (completion) or 'lat' (total; records without it are skipped).
// Returns {cols: [{seq, t}], rowMin, rowMax, cells: Map "col/row" -> count}.
export function heatmap(records, dir, t0 = null, kind = 'clat') {
  const bySeq = new Map();
  let start = t0;
  for (const r of records) {
    if (start === null || (r.t_start_ms > 0 && r.t_start_ms < start)) start = r.t_start_ms;
  }
  for (const r of records) {
    const d = r[dir];
    const hist = d && (kind === 'lat' ? d.latHist : d.hist);
    if (!hist || !hist.length) continue;
    if (!bySeq.has(r.seq)) bySeq.set(r.seq, { tEnd: 0, rows: new Map() });
    const w = bySeq.get(r.seq);
    w.tEnd = Math.max(w.tEnd, r.t_end_ms);
    for (const [idx, c] of hist) {
      if (!(c > 0)) continue;
      const row = heatRow(idx);
      w.rows.set(row, (w.rows.get(row) || 0) + c);
    }
  }
  const seqs = [...bySeq.keys()].sort((a, b) => a - b);
  const cols = [];
  const cells = new Map();
  let rowMin = Infinity;
  let rowMax = -Infinity;
  seqs.forEach((seq, ci) => {
    const w = bySeq.get(seq);
    cols.push({ seq, t: ((w.tEnd - (start ?? 0)) / 1000) });
    for (const [row, c] of w.rows) {
      cells.set(`${ci}/${row}`, c);
      rowMin = Math.min(rowMin, row);
      rowMax = Math.max(rowMax, row);
    }
  });
  return { cols, rowMin: Number.isFinite(rowMin) ? rowMin : 0, rowMax: Number.isFinite(rowMax) ? rowMax : -1, cells };
}
