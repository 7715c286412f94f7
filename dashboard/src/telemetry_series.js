// A run's host telemetry (api.js normTelemetry) as chart columns on the time
// axis of the run's IOPS charts: seconds since the run's first interval window
// started (SeriesBuilder.t0, unix ms), each point at the END of its window or
// sample, as the run page plots IOPS.
//
// The agent stamps the wall clock of its first /proc snapshot (start_unix_ms),
// so sample i ends at start_unix_ms + t_s[i] * 1000. The sampler starts before
// the files are laid out, so samples before the first I/O get x <= 0. Without
// that stamp (results of agents before it) the samples cannot be placed by the
// clock: they are put at their own seconds (first sample's start = 0) and
// `aligned` is false, which the page says above the charts.

export const DISK_METRICS = ['util_pct', 'await_ms', 'aqu_sz', 'rrqm_s', 'wrqm_s'];
export const CPU_CLASSES = ['usr_pct', 'sys_pct', 'irq_pct', 'softirq_pct', 'iowait_pct'];

const r3 = (v) => Math.round(v * 1000) / 1000;

// t0Ms: unix ms of the run's first interval window start (null when the run has
// no interval records). Returns {x, aligned, devices, dev: {NAME: {metric: []}},
// cpu: {class: []}, dev_irq_s, ctxt_s, intr_s}.
export function telemetryColumns(tele, t0Ms) {
  const secs = (tele && tele.seconds) || [];
  const aligned = !!(tele && tele.start_unix_ms > 0 && t0Ms > 0);
  const x = secs.map((s) => (aligned ? r3((tele.start_unix_ms + s.t_s * 1000 - t0Ms) / 1000) : r3(s.t_s)));
  const devices = [...new Set(secs.flatMap((s) => Object.keys(s.devices)))].sort();
  const dev = {};
  for (const d of devices) {
    dev[d] = Object.fromEntries(DISK_METRICS.map((m) => [m, secs.map((s) => (s.devices[d] ? s.devices[d][m] : null))]));
  }
  return {
    x,
    aligned,
    devices,
    dev,
    cpu: Object.fromEntries(CPU_CLASSES.map((c) => [c, secs.map((s) => s.cpu[c])])),
    dev_irq_s: secs.map((s) => s.dev_irq_s),
    ctxt_s: secs.map((s) => s.ctxt_s),
    intr_s: secs.map((s) => s.intr_s),
  };
}

// [lo, hi] covering every x of every column set (at least 5 s wide), so all the
// charts of the page share one time axis.
export function sharedRange(...xs) {
  let lo = Infinity;
  let hi = -Infinity;
  for (const a of xs) {
    for (const v of a) {
      if (!Number.isFinite(v)) continue;
      lo = Math.min(lo, v);
      hi = Math.max(hi, v);
    }
  }
  if (lo === Infinity) return [0, 5];
  lo = Math.min(0, Math.floor(lo));
  hi = Math.max(lo + 5, Math.ceil(hi));
  return [lo, hi];
}

// Readable names of the means' keys (telemetry.h TelemetryMeans):
// "dev.vda.util_pct" -> "vda util %", "cpu.softirq_pct" -> "CPU softirq % (mean over CPUs)".
const METRIC_NAMES = {
  util_pct: 'util %',
  await_ms: 'await (ms)',
  aqu_sz: 'queue size (aqu-sz)',
  rrqm_s: 'read merges/s',
  wrqm_s: 'write merges/s',
  usr_pct: 'usr %',
  sys_pct: 'sys %',
  irq_pct: 'irq %',
  softirq_pct: 'softirq %',
  iowait_pct: 'iowait %',
  dev_irq_s: 'device IRQs/s',
};

export function meanLabel(key) {
  let m = /^dev\.(.+)\.([a-z_]+)$/.exec(key);
  if (m) return `${m[1]} ${METRIC_NAMES[m[2]] || m[2]}`;
  m = /^cpu\.([a-z_]+)$/.exec(key);
  if (m) return `CPU ${METRIC_NAMES[m[1]] || m[1]} (mean over CPUs)`;
  m = /^cpu(\d+)\.([a-z_]+)$/.exec(key);
  if (m) return `CPU ${m[1]} ${METRIC_NAMES[m[2]] || m[2]}`;
  if (key === 'dev_irq_s') return 'device IRQs/s (all CPUs)';
  if (key === 'ctxt_s') return 'context switches/s';
  if (key === 'intr_s') return 'interrupts/s (all lines)';
  return key;
}

// Order of the means table: devices, CPU means, rates, then per-CPU rows.
export function meanOrder(key) {
  if (key.startsWith('dev.')) return 0;
  if (key.startsWith('cpu.')) return 1;
  if (!/^cpu\d/.test(key)) return 2;
  return 3;
}

// One line per CPU of metric `key` (telemetryCpusOfResult), for the `max` CPUs
// with the largest total; the others summed as one "other CPUs" line. CPUs
// whose values are all 0 are left out. null when the per-CPU arrays do not have
// one value per sample (`n`), so they cannot share the samples' time axis.
export function perCpuColumns(cpus, key, n, max = 8) {
  if (!cpus.length || cpus.some((c) => c[key].length !== n)) return null;
  const total = (c) => c[key].reduce((a, v) => a + v, 0);
  const busy = cpus.filter((c) => total(c) > 0).sort((a, b) => total(b) - total(a) || a.cpu - b.cpu);
  const top = busy.slice(0, max).sort((a, b) => a.cpu - b.cpu);
  const rest = busy.slice(max);
  const series = top.map((c) => ({ label: `CPU ${c.cpu}`, values: c[key] }));
  if (rest.length) {
    series.push({ label: `other ${rest.length} CPUs (sum)`, values: Array.from({ length: n }, (_, i) => r3(rest.reduce((a, c) => a + c[key][i], 0))) });
  }
  return series;
}
