// The run page's latency views in headless Chromium against the fake REST API:
// per-direction clat percentiles on a log axis, the latency heatmap from the 1 s
// histograms and the percentile (exceedance) plot from the result's bins. Every
// number drawn is checked against the REST data it came from, recomputed here.
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startFake } from '../testlib/fake_api.mjs';
import { launch, chromiumMissing } from '../testlib/browser.mjs';
import { bucketValue } from '../src/stats.js';

const DIST = join(dirname(fileURLToPath(import.meta.url)), '..', 'dist', 'index.html');
const skip = chromiumMissing() || (existsSync(DIST) ? null : 'dashboard/dist is not built (run dashboard/build.sh)');

// fio's percentile rule over a window's sparse [[idx, count], ...] (bucket values).
function histPct(pairs, p) {
  const bins = {};
  for (const [idx, c] of pairs) bins[bucketValue(idx)] = (bins[bucketValue(idx)] || 0) + c;
  return Object.keys(bins).length ? expectedPercentile(bins, p) : null;
}

async function getJson(url) {
  const r = await fetch(url);
  assert.equal(r.status, 200, url);
  return r.json();
}

// fio's percentile rule over {ns: count}, written out independently.
function expectedPercentile(bins, p) {
  const entries = Object.entries(bins).map(([k, v]) => [Number(k), Number(v)]).sort((a, b) => a[0] - b[0]);
  const n = entries.reduce((s, e) => s + e[1], 0);
  let run = 0;
  for (const [v, c] of entries) {
    run += c;
    if (run >= (p / 100) * n) return v;
  }
  return entries.at(-1)[0];
}

describe('run latency views', { skip: skip || false, timeout: 60000 }, () => {
  let fake;
  let b;
  let page;

  before(async () => {
    fake = await startFake({ seedJobs: 0 });
    b = await launch();
    page = b.page;
    page.setDefaultTimeout(15000);
  });

  after(async () => {
    if (b) await b.close();
    if (fake) await fake.close();
  });

  it('draws the heatmap and the exceedance plot from the stored histograms', async () => {
    const job = fake.api.submit({ name: 'lat', fio: '[rr]\nrw=randread\nlat_percentiles=1\nruntime=3\n', hosts: ['a1'] });
    const runId = job.runs[0].id;
    await page.goto(`${fake.url}#/runs/${runId}`);
    // The clat chart has a series per direction; only read did I/O.
    await page.waitForFunction(() => Number(document.querySelector('.chart[data-chart^="Completion latency"]')?.dataset.points) >= 1);
    const legend = await page.locator('.chart[data-chart^="Completion latency"] .u-legend').innerText();
    assert.match(legend, /read p50/);
    assert.match(legend, /read p99/);
    // Total latency next to clat (issue 18): its own chart, same series.
    await page.waitForFunction(() => Number(document.querySelector('.chart[data-chart^="Total latency"]')?.dataset.points) >= 1);
    assert.match(await page.locator('.chart[data-chart^="Total latency"] .u-legend').innerText(), /read p99/);
    assert.equal(await page.getByTestId('total-latency-absent').isHidden(), true);
    // Heatmap of read while live.
    const heat = page.locator('.chart[data-chart="read latency heatmap"]');
    await heat.waitFor();
    await page.waitForFunction(() => Number(document.querySelector('.chart[data-chart="read latency heatmap"]')?.dataset.points) >= 1);
    await b.shot('ui-run-latency-live');
    // A reload mid-run draws the whole run so far (stored records first, then
    // the polls add new windows; duplicates by (job_index, seq) are dropped).
    await page.reload();
    await page.waitForFunction(() => Number(document.querySelector('.chart[data-chart="IOPS"]')?.dataset.points) >= 1);
    const pts = Number(await page.locator('.chart[data-chart="IOPS"]').getAttribute('data-points'));
    const stored = (await getJson(`${fake.url}api/v1/runs/${runId}/samples`)).records.length;
    assert.ok(pts >= 1 && pts <= stored && stored - pts <= 1, `after reload ${pts} points, ${stored} stored`);

    // Finished: the exceedance plot appears.
    const ex = page.locator('.chart[data-chart="Latency percentiles"]');
    await ex.waitFor({ timeout: 15000 });
    await b.shot('ui-run-latency-result');

    // Heatmap cells == the /samples histograms summed per (window, power of two).
    const samples = await getJson(`${fake.url}api/v1/runs/${runId}/samples`);
    const want = new Map();
    for (const r of samples.records) {
      r.read.clat_bucket.forEach((idx, i) => {
        const v = bucketValue(idx);
        const key = `${r.seq}/${Math.floor(Math.log2(v))}`;
        want.set(key, (want.get(key) || 0) + Number(r.read.clat_count[i]));
      });
    }
    const cells = JSON.parse(await heat.getAttribute('data-cells'));
    const got = new Map(cells.map(([seq, row, c]) => [`${seq}/${row}`, c]));
    assert.ok(want.size > 0);
    assert.deepEqual(got, want);

    // Total latency chart: per window p50/p99 of the samples' lat histograms.
    const tot = JSON.parse(await page.locator('.chart[data-chart^="Total latency"]').getAttribute('data-values'));
    assert.equal(tot.x.length, samples.records.length);
    samples.records.forEach((r, i) => {
      const pairs = r.read.lat_bucket.map((idx, k) => [idx, Number(r.read.lat_count[k])]);
      const clat = r.read.clat_bucket.map((idx, k) => [idx, Number(r.read.clat_count[k])]);
      assert.equal(tot.read.p50[i], histPct(pairs, 50), `window ${i} lat p50`);
      assert.equal(tot.read.p99[i], histPct(pairs, 99), `window ${i} lat p99`);
      assert.ok(tot.read.p99[i] >= histPct(clat, 99), `window ${i}: lat p99 >= clat p99`);
    });
    // Total latency heatmap: the samples' lat histograms per (window, power of two).
    const wantLat = new Map();
    for (const r of samples.records) {
      r.read.lat_bucket.forEach((idx, i) => {
        const key = `${r.seq}/${Math.floor(Math.log2(bucketValue(idx)))}`;
        wantLat.set(key, (wantLat.get(key) || 0) + Number(r.read.lat_count[i]));
      });
    }
    const latCells = JSON.parse(await page.locator('.chart[data-chart="read total latency heatmap"]').getAttribute('data-cells'));
    assert.ok(wantLat.size > 0);
    assert.deepEqual(new Map(latCells.map(([seq, row, c]) => [`${seq}/${row}`, c])), wantLat);

    // Exceedance curves == percentiles of the result's bins, at 50/90/99/99.9 %.
    const run = await getJson(`${fake.url}api/v1/runs/${runId}`);
    const read = JSON.parse(run.result_json).jobs[0].read;
    const drawn = JSON.parse(await ex.getAttribute('data-values'));
    assert.deepEqual(drawn.series.map((s) => s.label), ['read clat', 'read lat']);
    assert.deepEqual(drawn.series.map((s) => s.source), ['result', 'result']); // lat_percentiles=1: the result's bins
    for (const [label, bins] of [
      ['read clat', read.clat_ns.bins],
      ['read lat', read.lat_ns.bins],
    ]) {
      const s = drawn.series.find((x) => x.label === label);
      assert.equal(s.n, Object.values(bins).reduce((a, c) => a + c, 0));
      for (const p of [50, 90, 99, 99.9]) {
        const xi = drawn.x.findIndex((x) => Math.abs(x + Math.log10(1 - p / 100)) < 1e-9);
        assert.ok(xi >= 0, `grid has ${p}%`);
        assert.equal(s.y[xi], expectedPercentile(bins, p), `${label} p${p}`);
      }
      // No point past the resolution of N samples.
      const lastX = drawn.x[s.y.findLastIndex((y) => y !== null)];
      assert.ok(lastX <= Math.log10(s.n) + 1e-9);
    }
    // The legend reads the x value as a percentile (nines axis).
    assert.match(await ex.locator('.u-legend').innerText(), /percentile/);

    // The log latency axes label some ticks and leave the others blank: an
    // unlabelled tick was drawn as '–' beside the axis of the clat, total
    // latency and exceedance charts (the '–' seen on the total-latency chart).
    for (const chart of ['Completion latency (clat) percentiles', 'Total latency (lat) percentiles', 'Latency percentiles']) {
      const ticks = JSON.parse(await page.locator(`.chart[data-chart="${chart}"]`).getAttribute('data-y-ticks'));
      assert.ok(ticks.some((t) => t !== null), `${chart}: no labelled tick in ${JSON.stringify(ticks)}`);
      assert.deepEqual(ticks.filter((t) => t !== null && !/\d/.test(t)), [], `${chart}: ticks ${JSON.stringify(ticks)}`);
    }
  });

  it('says when total latency is not measured', async () => {
    const job = fake.api.submit({ name: 'nolat', fio: '[rr]\nrw=randread\nruntime=2\ndisable_lat=1\n', hosts: ['a1'] });
    await page.goto(`${fake.url}#/runs/${job.runs[0].id}`);
    await page.getByTestId('exceedance-missing').waitFor({ timeout: 15000 });
    assert.match(await page.getByTestId('exceedance-missing').innerText(), /read total latency: no bins stored \(the job did not set lat_percentiles=1, and its records carry none\)/);
    // No total latency chart or heatmap; the page says why.
    assert.equal(await page.getByTestId('total-latency-absent').isVisible(), true);
    assert.equal(await page.locator('.chart[data-chart^="Total latency"]').count(), 0);
    assert.equal(await page.locator('.chart[data-chart="read total latency heatmap"]').count(), 0);
  });

  it('draws total latency in the exceedance plot from the records without lat_percentiles', async () => {
    const job = fake.api.submit({ name: 'reclat', fio: '[rr]\nrw=randread\nruntime=2\n', hosts: ['a1'] });
    const runId = job.runs[0].id;
    await page.goto(`${fake.url}#/runs/${runId}`);
    const ex = page.locator('.chart[data-chart="Latency percentiles"]');
    await ex.waitFor({ timeout: 15000 });
    const samples = await getJson(`${fake.url}api/v1/runs/${runId}/samples`);
    const bins = {};
    for (const r of samples.records) {
      r.read.lat_bucket.forEach((idx, i) => {
        bins[bucketValue(idx)] = (bins[bucketValue(idx)] || 0) + Number(r.read.lat_count[i]);
      });
    }
    assert.ok(Object.keys(bins).length > 0);
    const drawn = JSON.parse(await ex.getAttribute('data-values'));
    const s = drawn.series.find((x) => x.label === 'read lat');
    assert.ok(s, JSON.stringify(drawn.series.map((x) => x.label)));
    assert.equal(s.source, 'records');
    assert.equal(s.n, Object.values(bins).reduce((a, c) => a + c, 0));
    for (const p of [50, 90, 99]) {
      const xi = drawn.x.findIndex((x) => Math.abs(x + Math.log10(1 - p / 100)) < 1e-9);
      assert.equal(s.y[xi], expectedPercentile(bins, p), `read lat p${p}`);
    }
    assert.match(await page.getByTestId('exceedance-missing').innerText(), /read total latency: from the run's 1 s interval records/);
  });

  it('logged no page errors', () => {
    assert.deepEqual(b.errors, []);
  });
});
