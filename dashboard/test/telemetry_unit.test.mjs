// The telemetry page's math in node: the REST body normalized, samples put on
// the IOPS time axis by the agent's wall-clock stamp (and not when there is
// none), the shared x range, and readable names for the means.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { normTelemetry, telemetryCpusOfResult } from '../src/api.js';
import { telemetryColumns, sharedRange, meanLabel, meanOrder, perCpuColumns } from '../src/telemetry_series.js';
import { SeriesBuilder } from '../src/stats.js';

// The shape GET /runs/{id}/telemetry answers (controller/history/query.cc).
const BODY = {
  run_id: 'r1',
  host: 'h1',
  interval_ms: 1000,
  start_unix_ms: 1700000000000,
  irq_lines: ['nvme0q1'],
  seconds: [
    { t_s: 1, dur_ms: 1000, devices: { nvme0n1: { util_pct: 10, await_ms: 0.1, aqu_sz: 0.5, rrqm_s: 0, wrqm_s: 1 } }, cpu: { usr_pct: 1, sys_pct: 2, irq_pct: 0, softirq_pct: 3, iowait_pct: 4 }, dev_irq_s: 100, ctxt_s: 1000, intr_s: 500 },
    { t_s: 2.002, dur_ms: 1002, devices: { nvme0n1: { util_pct: 99, await_ms: 2.5, aqu_sz: 7, rrqm_s: 0, wrqm_s: 0 } }, cpu: { usr_pct: 5, sys_pct: 20, irq_pct: 1, softirq_pct: 9, iowait_pct: 30 }, dev_irq_s: 9000, ctxt_s: 5000, intr_s: 9500 },
  ],
  means: { 'dev.nvme0n1.util_pct': 54.5, 'cpu.softirq_pct': 6, 'cpu1.usr_pct': 2, ctxt_s: 3000 },
};

// One job's interval records: window k covers [t0 + 1500 + 1000k, +1000) (the
// files were laid out for 1.5 s after the sampler started).
function records(n, t0) {
  const dir = (ios) => ({ ios, bytes: ios * 4096, errors: 0, hist: [] });
  return Array.from({ length: n }, (_, k) => ({
    job_index: 0,
    seq: k,
    t_start_ms: t0 + 1500 + 1000 * k,
    t_end_ms: t0 + 2500 + 1000 * k,
    read: dir(1000 * (k + 1)),
    write: dir(0),
    trim: dir(0),
  }));
}

describe('run telemetry', () => {
  it('normalizes the REST body', () => {
    const t = normTelemetry(BODY);
    assert.equal(t.start_unix_ms, 1700000000000);
    assert.equal(t.seconds.length, 2);
    assert.equal(t.seconds[1].devices.nvme0n1.util_pct, 99);
    assert.equal(t.seconds[1].cpu.iowait_pct, 30);
    assert.deepEqual(t.irq_lines, ['nvme0q1']);
    // A body from a controller before start_unix_ms: 0, never NaN.
    assert.equal(normTelemetry({ ...BODY, start_unix_ms: undefined }).start_unix_ms, 0);
  });

  it('puts samples on the IOPS time axis by the agent’s clock', () => {
    const sb = new SeriesBuilder();
    sb.add(records(3, BODY.start_unix_ms));
    const io = sb.columns();
    // IOPS points at the end of each window, from the first window's start.
    assert.deepEqual(io.x, [1, 2, 3]);
    const c = telemetryColumns(normTelemetry(BODY), sb.t0);
    assert.equal(c.aligned, true);
    // Sample ends at start + 1 s and start + 2.002 s; the first window started
    // at start + 1.5 s: -0.5 s (during layout) and 0.502 s.
    assert.deepEqual(c.x, [-0.5, 0.502]);
    assert.deepEqual(c.devices, ['nvme0n1']);
    assert.deepEqual(c.dev.nvme0n1.util_pct, [10, 99]);
    assert.deepEqual(c.cpu.softirq_pct, [3, 9]);
    assert.deepEqual(c.dev_irq_s, [100, 9000]);
    assert.deepEqual(sharedRange(io.x, c.x), [-1, 4]);
  });

  it('does not pretend to align without the stamp', () => {
    const old = normTelemetry({ ...BODY, start_unix_ms: 0 });
    const c = telemetryColumns(old, 1700000001500);
    assert.equal(c.aligned, false);
    assert.deepEqual(c.x, [1, 2.002]); // its own seconds
    assert.equal(telemetryColumns(normTelemetry(BODY), null).aligned, false); // no records
    assert.deepEqual(sharedRange([], []), [0, 5]);
  });

  it('names the means', () => {
    assert.equal(meanLabel('dev.nvme0n1.util_pct'), 'nvme0n1 util %');
    assert.equal(meanLabel('dev.dm-0.await_ms'), 'dm-0 await (ms)');
    assert.equal(meanLabel('cpu.softirq_pct'), 'CPU softirq % (mean over CPUs)');
    assert.equal(meanLabel('cpu12.dev_irq_s'), 'CPU 12 device IRQs/s');
    assert.equal(meanLabel('ctxt_s'), 'context switches/s');
    const keys = Object.keys(BODY.means).sort((a, b) => meanOrder(a) - meanOrder(b));
    assert.deepEqual(keys, ['dev.nvme0n1.util_pct', 'cpu.softirq_pct', 'ctxt_s', 'cpu1.usr_pct']);
  });

  it('draws per CPU the busiest CPUs and sums the rest', () => {
    // The agent's shape (iofleet.telemetry.cpus), 2 samples, 4 CPUs.
    const result = { iofleet: { telemetry: { cpus: [
      { cpu: 0, dev_irq_s: [100, 0], softirq_pct: [1, 1] },
      { cpu: 1, dev_irq_s: [0, 0], softirq_pct: [0, 0] },
      { cpu: 2, dev_irq_s: [0, 900], softirq_pct: [2, 9] },
      { cpu: 3, dev_irq_s: [5, 5], softirq_pct: [0, 0] },
    ] } } };
    const cpus = telemetryCpusOfResult(result);
    assert.equal(cpus.length, 4);
    assert.deepEqual(cpus[2].dev_irq_s, [0, 900]);
    assert.deepEqual(cpus[1].usr_pct, []); // absent in the result
    // CPU 1 never took one: left out; in CPU order.
    assert.deepEqual(perCpuColumns(cpus, 'dev_irq_s', 2), [
      { label: 'CPU 0', values: [100, 0] },
      { label: 'CPU 2', values: [0, 900] },
      { label: 'CPU 3', values: [5, 5] },
    ]);
    // max 1: the busiest (CPU 2) and the rest summed.
    assert.deepEqual(perCpuColumns(cpus, 'dev_irq_s', 2, 1), [
      { label: 'CPU 2', values: [0, 900] },
      { label: 'other 2 CPUs (sum)', values: [105, 5] },
    ]);
    // Not one value per sample: not drawn on the samples' axis.
    assert.equal(perCpuColumns(cpus, 'dev_irq_s', 3), null);
    assert.deepEqual(telemetryCpusOfResult({ jobs: [] }), []);
  });
});
