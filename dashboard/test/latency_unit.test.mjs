// The latency views' math in node: percentiles of json+ bins, the nines axis,
// exceedance curves (clat and total, missing bins reported), heatmap rows, the
// job's progress/ETA and a result's per-run numbers, and the clone round trip.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { binsPercentile, mergeBins, nines, ninesLabel, ninesGrid, exceedance, heatmap, heatRow } from '../src/latency.js';
import { bucketValue } from '../src/stats.js';
import { jobProgress, resultMetrics } from '../src/pages/jobs.js';
import { specToBody, specToForm } from '../src/job_actions.js';
import { buildBody } from '../src/pages/submit.js';
import { normSpec } from '../src/api.js';
import { readableReason } from '../src/pages/compare.js';
import { bucketIndex } from '../testlib/fake_api.mjs';

describe('latency math', () => {
  it('takes percentiles of bins by fio’s rule', () => {
    const bins = [[100, 90], [200, 9], [5000, 1]];
    assert.equal(binsPercentile(bins, 50), 100);
    assert.equal(binsPercentile(bins, 90), 100);
    assert.equal(binsPercentile(bins, 90.1), 200);
    assert.equal(binsPercentile(bins, 99), 200);
    assert.equal(binsPercentile(bins, 99.5), 5000);
    assert.equal(binsPercentile([], 50), null);
    assert.deepEqual(mergeBins([[[1, 2]], [[1, 3], [0, 1]]]), [[0, 1], [1, 5]]);
  });

  it('puts percentiles on a nines axis', () => {
    assert.ok(Math.abs(nines(90) - 1) < 1e-12);
    assert.ok(Math.abs(nines(99.9) - 3) < 1e-9);
    assert.equal(ninesLabel(0), '0%');
    assert.equal(ninesLabel(1), '90%');
    assert.equal(ninesLabel(2), '99%');
    assert.equal(ninesLabel(3), '99.9%');
    assert.equal(ninesLabel(5), '99.999%');
    // 1000 samples resolve up to 99.9 %, not beyond.
    const g = ninesGrid(1000);
    assert.ok(g.some((x) => Math.abs(x - 3) < 1e-9));
    assert.ok(g.every((x) => x <= 3 + 1e-9));
  });

  it('draws clat and total curves per direction and says which bins are missing', () => {
    const result = {
      jobs: [
        { read: { total_ios: 100, clat_ns: { bins: { 100: 99, 900: 1 } }, lat_ns: { bins: { 120: 99, 950: 1 } } }, write: { total_ios: 10, clat_ns: { bins: { 300: 10 } }, lat_ns: { N: 10 } } },
        { read: { total_ios: 100, clat_ns: { bins: { 100: 100 } }, lat_ns: { bins: { 120: 100 } } }, write: { total_ios: 0 } },
      ],
    };
    const ex = exceedance(result);
    assert.deepEqual(ex.series.map((s) => [s.label, s.n]), [['read clat', 200], ['read lat', 200], ['write clat', 10]]);
    assert.deepEqual(ex.missing, ['write total latency: no bins stored (the job did not set lat_percentiles=1, and its records carry none)']);
    const at = (s, p) => s.y[ex.x.findIndex((x) => Math.abs(x - nines(p)) < 1e-9)];
    assert.equal(at(ex.series[0], 99), 100);
    assert.equal(at(ex.series[0], 99.5), 100); // 199 of 200 at 100 ns
    assert.equal(at(ex.series[1], 50), 120);
    // write has 10 samples: nothing past 90 %.
    assert.equal(at(ex.series[2], 99), null);
  });

  it('bins a heatmap by window and power of two', () => {
    assert.equal(heatRow(bucketIndex(100)), 6);
    assert.equal(heatRow(bucketIndex(1000)), Math.floor(Math.log2(bucketValue(bucketIndex(1000)))));
    const rec = (seq, hist, t) => ({ seq, job_index: 0, t_start_ms: t, t_end_ms: t + 1000, read: { hist } });
    const hm = heatmap([rec(0, [[bucketIndex(1000), 5]], 1000), rec(1, [[bucketIndex(1000), 2], [bucketIndex(100000), 1]], 2000), { ...rec(1, [[bucketIndex(1000), 3]], 2000), job_index: 1 }], 'read');
    assert.deepEqual(hm.cols.map((c) => [c.seq, c.t]), [[0, 1], [1, 2]]);
    const r1 = heatRow(bucketIndex(1000));
    assert.equal(hm.cells.get(`0/${r1}`), 5);
    assert.equal(hm.cells.get(`1/${r1}`), 5); // both clones' windows merged
    assert.equal(hm.cells.get(`1/${heatRow(bucketIndex(100000))}`), 1);
  });
});

describe('compare wording', () => {
  it('names metrics readably in the verdict reasons', () => {
    assert.equal(readableReason('p99_ns iodepth=16: regression'), 'clat p99 iodepth=16: regression');
    assert.equal(readableReason('iops: improvement'), 'IOPS: improvement');
    assert.equal(readableReason('2 rows inconclusive'), '2 rows inconclusive');
  });
});

describe('job page numbers', () => {
  it('sums a result and takes p99 from merged bins', () => {
    const m = resultMetrics({
      jobs: [
        { read: { total_ios: 10, iops: 100, bw_bytes: 4000, clat_ns: { bins: { 10: 99, 50: 1 }, percentile: { '99.000000': 10 } } } },
        { read: { total_ios: 10, iops: 50, bw_bytes: 2000, clat_ns: { bins: { 20: 100 }, percentile: { '99.000000': 20 } } } },
      ],
    });
    assert.deepEqual(m, { iops: 150, bw: 6000, p99: 20 });
  });

  it('gives the job progress and ETA', () => {
    const runs = [{ id: 'a', state: 'succeeded' }, { id: 'b', state: 'running' }, { id: 'c', state: 'queued' }];
    const prog = { b: { frac: 0.5, eta: 5 }, c: { frac: null, eta: null, expected: 10 } };
    const jp = jobProgress(runs, (r) => prog[r.id]);
    assert.equal(jp.frac, 0.5);
    assert.equal(jp.eta, 15);
    assert.equal(jobProgress(runs, (r) => ({ ...prog[r.id], expected: null, eta: null })).eta, null);
  });

  it('clones a spec through the form into the same body', () => {
    const spec = normSpec({ name: 'ab', fio_text: '[j]\nrw=read\n', hosts: ['h1'], repeat: 3, tags: { b: 'main' }, variants: [{ name: 'A', options: { iodepth: '1' }, hosts: ['h1'] }, { name: 'B', options: { iodepth: '8' } }], sweep: { bs: { values: ['4k', '8k'] } } });
    const direct = specToBody(spec);
    const viaForm = buildBody(specToForm(spec));
    assert.equal(viaForm.name, 'ab (clone)');
    delete viaForm.name;
    delete direct.name;
    assert.deepEqual(viaForm, direct);
  });
});
