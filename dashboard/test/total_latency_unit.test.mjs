// Total latency (lat, issue 18) in node: reading it from the REST shapes
// (absent, not empty, when the job measured none), per-window percentiles next
// to clat, the total-latency heatmap, and the exceedance curve from the records
// when the result has no lat_ns bins.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { normRecord } from '../src/api.js';
import { SeriesBuilder, bucketValue } from '../src/stats.js';
import { exceedance, heatmap, recordLatBins, heatRow } from '../src/latency.js';
import { bucketIndex } from '../testlib/fake_api.mjs';

describe('total latency', () => {
  it('reads lat_hist where measured and nothing where not', () => {
    const rest = normRecord({ seq: 1, read: { ios: 3, clat_hist: [[100, 3]], lat_hist: [[110, 3]] }, write: { ios: 0, clat_hist: [], lat_hist: [] }, trim: { ios: 0, clat_hist: [] } });
    assert.deepEqual(rest.read.latHist, [[110, 3]]);
    assert.deepEqual(rest.write.latHist, []); // measured, nothing done
    assert.equal(rest.trim.latHist, null); // not measured: absent
    // protobuf's JSON mapping: parallel arrays and the flag.
    const pb = normRecord({ seq: '2', read: { latBucket: [5], latCount: ['7'], latMeasured: true }, write: { lat_bucket: [], lat_count: [], lat_measured: false } });
    assert.deepEqual(pb.read.latHist, [[5, 7]]);
    assert.equal(pb.write.latHist, null);
  });

  it('gives per-window lat percentiles next to clat, null where not measured', () => {
    const b = new SeriesBuilder();
    const clat = [[bucketIndex(100000), 99], [bucketIndex(900000), 1]];
    const lat = [[bucketIndex(102000), 99], [bucketIndex(950000), 1]];
    b.add([
      normRecord({ seq: 0, t_start_ms: 1000, t_end_ms: 2000, read: { ios: 100, clat_hist: clat, lat_hist: lat } }),
      normRecord({ seq: 1, t_start_ms: 2000, t_end_ms: 3000, read: { ios: 100, clat_hist: clat } }),
    ]);
    const cols = b.columns();
    assert.equal(cols.hasTotal, true);
    assert.deepEqual(cols.tlat.read.p50, [bucketValue(bucketIndex(102000)), null]);
    assert.deepEqual(cols.tlat.read.p99, [bucketValue(bucketIndex(102000)), null]);
    assert.deepEqual(cols.lat.read.p99, [bucketValue(bucketIndex(100000)), bucketValue(bucketIndex(100000))]);
    const none = new SeriesBuilder();
    none.add([normRecord({ seq: 0, read: { ios: 1, clat_hist: clat } })]);
    assert.equal(none.columns().hasTotal, false);
  });

  it('bins the total latency heatmap from lat_hist only', () => {
    const r = normRecord({ seq: 0, t_start_ms: 0, t_end_ms: 1000, read: { ios: 4, clat_hist: [[bucketIndex(1000), 4]], lat_hist: [[bucketIndex(70000), 4]] } });
    const old = normRecord({ seq: 1, t_start_ms: 1000, t_end_ms: 2000, read: { ios: 4, clat_hist: [[bucketIndex(1000), 4]] } });
    const hm = heatmap([r, old], 'read', 0, 'lat');
    assert.deepEqual(hm.cols.map((c) => c.seq), [0]); // the window without lat is not drawn
    assert.equal(hm.cells.get(`0/${heatRow(bucketIndex(70000))}`), 4);
    assert.equal(heatmap([r, old], 'read', 0).cols.length, 2); // clat as before
  });

  it('draws total latency from the records when the result has no lat_ns bins', () => {
    const recs = [
      normRecord({ seq: 0, read: { ios: 90, lat_hist: [[bucketIndex(120), 90]] } }),
      normRecord({ seq: 1, job_index: 1, read: { ios: 10, lat_hist: [[bucketIndex(120), 5], [bucketIndex(5000), 5]] } }),
    ];
    const latBins = recordLatBins(recs);
    assert.deepEqual(latBins.read, [[bucketValue(bucketIndex(120)), 95], [bucketValue(bucketIndex(5000)), 5]]);
    assert.equal(latBins.write, undefined);
    const result = { jobs: [{ read: { total_ios: 100, clat_ns: { bins: { 100: 100 } }, lat_ns: { N: 100 } } }] };
    const ex = exceedance(result, latBins);
    const lat = ex.series.find((s) => s.label === 'read lat');
    assert.equal(lat.source, 'records');
    assert.equal(lat.n, 100);
    assert.match(ex.missing[0], /read total latency: from the run's 1 s interval records/);
    // Records that miss windows are not passed off as the whole run.
    const inc = exceedance(result, latBins, true);
    assert.equal(inc.series.find((s) => s.label === 'read lat'), undefined);
    assert.match(inc.missing[0], /records are incomplete/);
    // A result with lat_ns bins keeps them.
    const withBins = exceedance({ jobs: [{ read: { total_ios: 1, clat_ns: { bins: { 100: 1 } }, lat_ns: { bins: { 130: 1 } } } }] }, latBins);
    assert.equal(withBins.series.find((s) => s.label === 'read lat').source, 'result');
  });
});
