// Turning interval records into time series: IOPS, bandwidth and clat percentiles.
// Percentiles come from the merged histogram deltas of a window, never from
// averaging percentiles.

// fio's plat_idx_to_val: bucket index -> representative latency in ns (the bucket
// midpoint, truncated). Indexes below 128 are exact.
export function bucketValue(idx) {
  if (idx < 128) return idx;
  const e = (idx >> 6) - 1;
  return Math.floor(2 ** (e + 6) + ((idx % 64) + 0.5) * 2 ** e);
}

// Percentile p (0..100] of a histogram given as a Map idx -> count: the value of
// the first bucket whose running count reaches p/100 * N (fio's rule). null when empty.
export function histPercentile(hist, p) {
  let total = 0;
  for (const c of hist.values()) total += c;
  if (total <= 0) return null;
  const idxs = [...hist.keys()].sort((a, b) => a - b);
  const need = (p / 100) * total;
  let run = 0;
  for (const i of idxs) {
    run += hist.get(i);
    if (run >= need) return bucketValue(i);
  }
  return bucketValue(idxs[idxs.length - 1]);
}

export function histPercentiles(hist, ps) {
  const out = {};
  let total = 0;
  for (const c of hist.values()) total += c;
  if (total <= 0) {
    for (const p of ps) out[p] = null;
    return out;
  }
  const idxs = [...hist.keys()].sort((a, b) => a - b);
  const sorted = [...ps].sort((a, b) => a - b);
  let k = 0;
  let run = 0;
  for (const i of idxs) {
    run += hist.get(i);
    while (k < sorted.length && run >= (sorted[k] / 100) * total) out[sorted[k++]] = bucketValue(i);
  }
  while (k < sorted.length) out[sorted[k++]] = bucketValue(idxs[idxs.length - 1]);
  return out;
}

const DIRS = ['read', 'write', 'trim'];

// Accumulates interval records (each delivered possibly many times, as the run
// page re-polls /samples) into per-window points. A window is one seq number:
// every job clone publishes seq 0, 1, 2 ... about once a second.
export class SeriesBuilder {
  constructor() {
    this.seen = new Set(); // "job_index/seq"
    this.windows = new Map(); // seq -> {records: []}
    this.dirty = new Set();
    this.points = new Map(); // seq -> computed point
    this.t0 = null; // ms of the earliest window start
  }

  // Adds records; returns the number that were new.
  add(records) {
    let added = 0;
    for (const r of records) {
      const key = `${r.job_index}/${r.seq}`;
      if (this.seen.has(key)) continue;
      this.seen.add(key);
      added++;
      let w = this.windows.get(r.seq);
      if (!w) {
        w = { records: [] };
        this.windows.set(r.seq, w);
      }
      w.records.push(r);
      this.dirty.add(r.seq);
      if (r.t_start_ms > 0 && (this.t0 === null || r.t_start_ms < this.t0)) this.t0 = r.t_start_ms;
    }
    return added;
  }

  get size() {
    return this.windows.size;
  }

  _compute(w) {
    let tEnd = 0;
    let dur = 0;
    const pt = { tEnd: 0, dirs: {}, errors: 0 };
    const merged = new Map();
    const perDir = {};
    const perDirLat = {}; // total latency; a direction stays null unless a record has it
    for (const d of DIRS) {
      pt.dirs[d] = { ios: 0, bytes: 0 };
      perDir[d] = new Map();
      perDirLat[d] = null;
    }
    for (const r of w.records) {
      tEnd = Math.max(tEnd, r.t_end_ms);
      dur = Math.max(dur, r.t_end_ms - r.t_start_ms);
      for (const d of DIRS) {
        const x = r[d];
        pt.dirs[d].ios += x.ios;
        pt.dirs[d].bytes += x.bytes;
        pt.errors += x.errors;
        for (const [i, c] of x.hist) {
          merged.set(i, (merged.get(i) || 0) + c);
          perDir[d].set(i, (perDir[d].get(i) || 0) + c);
        }
        if (x.latHist) {
          if (!perDirLat[d]) perDirLat[d] = new Map();
          for (const [i, c] of x.latHist) perDirLat[d].set(i, (perDirLat[d].get(i) || 0) + c);
        }
      }
    }
    const secs = Math.max(dur, 1) / 1000;
    pt.tEnd = tEnd;
    for (const d of DIRS) {
      pt.dirs[d].iops = pt.dirs[d].ios / secs;
      pt.dirs[d].bw = pt.dirs[d].bytes / secs;
    }
    const pc = histPercentiles(merged, [50, 99]);
    pt.p50 = pc[50];
    pt.p99 = pc[99];
    // Per direction (reads and writes have different latencies).
    pt.lat = {};
    for (const d of DIRS) {
      const q = histPercentiles(perDir[d], [50, 99]);
      pt.lat[d] = { p50: q[50], p99: q[99] };
    }
    // Total latency (lat = slat + clat) where the records carry it.
    pt.tlat = {};
    pt.hasTotal = false;
    for (const d of DIRS) {
      if (perDirLat[d]) pt.hasTotal = true;
      const q = perDirLat[d] ? histPercentiles(perDirLat[d], [50, 99]) : { 50: null, 99: null };
      pt.tlat[d] = { p50: q[50], p99: q[99] };
    }
    return pt;
  }

  // Column arrays for the charts: x in seconds since the run's first window start.
  columns() {
    for (const seq of this.dirty) this.points.set(seq, this._compute(this.windows.get(seq)));
    this.dirty.clear();
    const seqs = [...this.points.keys()].sort((a, b) => a - b);
    const t0 = this.t0 ?? 0;
    const cols = {
      x: [],
      readIops: [],
      writeIops: [],
      trimIops: [],
      readBw: [],
      writeBw: [],
      trimBw: [],
      p50: [],
      p99: [],
      // Per direction: lat.read.p50[i] ... (null where the direction did no I/O).
      lat: Object.fromEntries(DIRS.map((d) => [d, { p50: [], p99: [] }])),
      // Total latency (lat), the same shape; hasTotal: some record carried it.
      tlat: Object.fromEntries(DIRS.map((d) => [d, { p50: [], p99: [] }])),
      hasTotal: false,
      errors: 0,
      activeDirs: new Set(),
    };
    for (const s of seqs) {
      const p = this.points.get(s);
      cols.x.push((p.tEnd - t0) / 1000);
      cols.readIops.push(p.dirs.read.iops);
      cols.writeIops.push(p.dirs.write.iops);
      cols.trimIops.push(p.dirs.trim.iops);
      cols.readBw.push(p.dirs.read.bw);
      cols.writeBw.push(p.dirs.write.bw);
      cols.trimBw.push(p.dirs.trim.bw);
      cols.p50.push(p.p50);
      cols.p99.push(p.p99);
      for (const d of DIRS) {
        cols.lat[d].p50.push(p.lat[d].p50);
        cols.lat[d].p99.push(p.lat[d].p99);
        cols.tlat[d].p50.push(p.tlat[d].p50);
        cols.tlat[d].p99.push(p.tlat[d].p99);
      }
      if (p.hasTotal) cols.hasTotal = true;
      cols.errors += p.errors;
      for (const d of DIRS) if (p.dirs[d].ios > 0) cols.activeDirs.add(d);
    }
    return cols;
  }

  // Measured seconds so far: the longest span of any one clone's windows.
  elapsedSeconds() {
    let lo = Infinity;
    let hi = 0;
    for (const w of this.windows.values()) {
      for (const r of w.records) {
        lo = Math.min(lo, r.t_start_ms);
        hi = Math.max(hi, r.t_end_ms);
      }
    }
    return hi > lo ? (hi - lo) / 1000 : 0;
  }
}

// fio time value -> seconds (default unit: seconds; suffixes us, ms, s, m, h, d).
export function parseFioTime(v) {
  const m = /^\s*([0-9]+(?:\.[0-9]+)?)\s*(us|usec|ms|msec|s|sec|m|min|h|d)?\s*$/i.exec(String(v));
  if (!m) return null;
  const n = Number(m[1]);
  const unit = (m[2] || 's').toLowerCase();
  const mult = { us: 1e-6, usec: 1e-6, ms: 1e-3, msec: 1e-3, s: 1, sec: 1, m: 60, min: 60, h: 3600, d: 86400 }[unit];
  return n * mult;
}

// Expected wall time of a fio job file in seconds (ramp_time + runtime, longest
// job; stonewalled jobs add up), or null when it is not time-bounded.
export function expectedRuntime(fioText, overrides = {}) {
  if (!fioText) return null;
  const sections = [];
  let cur = null;
  const global = {};
  for (const raw of fioText.split(/\r?\n/)) {
    const line = raw.replace(/[;#].*$/, '').trim();
    if (!line) continue;
    const sec = /^\[(.+)\]$/.exec(line);
    if (sec) {
      if (sec[1].startsWith('global')) cur = global;
      else {
        cur = { ...global };
        sections.push(cur);
      }
      continue;
    }
    if (!cur) continue;
    const eq = line.indexOf('=');
    const key = (eq < 0 ? line : line.slice(0, eq)).trim().toLowerCase();
    const val = eq < 0 ? '' : line.slice(eq + 1).trim();
    cur[key === 'timeout' ? 'runtime' : key] = val;
  }
  if (!sections.length) sections.push({ ...global });
  let total = 0;
  let group = 0;
  let any = false;
  for (const s of sections) {
    const o = { ...s, ...overrides };
    const rt = o.runtime !== undefined ? parseFioTime(o.runtime) : null;
    const ramp = o.ramp_time !== undefined ? parseFioTime(o.ramp_time) || 0 : 0;
    if (rt === null) continue;
    any = true;
    const t = rt + ramp;
    if ('stonewall' in s || 'wait_for_previous' in s) {
      total += group;
      group = t;
    } else group = Math.max(group, t);
  }
  return any ? total + group : null;
}

// Options a run's cell ("iodepth=32,rw=randread") sets.
export function parseCell(cell) {
  const out = {};
  if (!cell) return out;
  for (const part of cell.split(',')) {
    const eq = part.indexOf('=');
    if (eq > 0) out[part.slice(0, eq).trim()] = part.slice(eq + 1).trim();
  }
  return out;
}
