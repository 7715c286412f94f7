// The compare page's additions in headless Chromium against the fake REST API:
// IOPS and p99 vs iodepth (numbers checked against the REST table), the per-host
// breakdown, "compare with..." (two jobs as arms), clone and re-run.
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startFake } from '../testlib/fake_api.mjs';
import { launch, chromiumMissing } from '../testlib/browser.mjs';

const DIST = join(dirname(fileURLToPath(import.meta.url)), '..', 'dist', 'index.html');
const skip = chromiumMissing() || (existsSync(DIST) ? null : 'dashboard/dist is not built (run dashboard/build.sh)');

describe('compare page', { skip: skip || false, timeout: 60000 }, () => {
  let fake;
  let b;
  let page;

  before(async () => {
    fake = await startFake({ seedJobs: 2 });
    b = await launch();
    page = b.page;
    page.setDefaultTimeout(15000);
  });

  after(async () => {
    if (b) await b.close();
    if (fake) await fake.close();
  });

  it('plots IOPS and p99 vs iodepth from the table and shows Δ per host', async () => {
    const id = fake.api.sweepJob.id;
    await page.goto(`${fake.url}#/jobs/${id}/compare`);
    await page.locator('.sweep .chart').nth(1).waitFor();
    const table = await (await fetch(`${fake.url}api/v1/jobs/${id}/compare`)).json();
    for (const [metric, title] of [
      ['iops', 'IOPS vs iodepth'],
      ['p99_ns', 'clat p99 vs iodepth'],
    ]) {
      const drawn = JSON.parse(await page.locator(`.sweep .chart[data-chart="${title}"]`).getAttribute('data-values'));
      const rows = table.rows.filter((r) => r.metric === metric);
      const depth = (r) => Number(/iodepth=(\d+)/.exec(r.cell)[1]);
      rows.sort((x, y) => depth(x) - depth(y));
      assert.deepEqual(drawn[0], rows.map(depth), `${metric} x`);
      assert.deepEqual(drawn[1], rows.map((r) => r.a.median), `${metric} A median`);
      assert.deepEqual(drawn[2], rows.map((r) => r.a.ci[0]), `${metric} A CI low`);
      assert.deepEqual(drawn[4], rows.map((r) => r.b.median), `${metric} B median`);
      assert.deepEqual(drawn[6], rows.map((r) => r.b.ci[1]), `${metric} B CI high`);
    }
    // Per-run points: every finished run of the cell, per arm, with its result's IOPS.
    const strip = page.locator('table.points[data-metric="iops"] tr[data-cell="iodepth=16"]');
    await strip.waitFor();
    const pts = JSON.parse(await strip.getAttribute('data-values'));
    const runsOf = (variant) => fake.api.sweepJob.runs.filter((r) => r.cell === 'iodepth=16' && r.variant === variant).map((r) => r.id).sort();
    assert.deepEqual(pts.a.map(([id]) => id).sort(), runsOf('A'));
    assert.deepEqual(pts.b.map(([id]) => id).sort(), runsOf('B'));
    for (const [rid, v] of [...pts.a, ...pts.b]) {
      const run = await (await fetch(`${fake.url}api/v1/runs/${rid}`)).json();
      assert.equal(v, JSON.parse(run.result_json).jobs[0].read.iops, rid);
    }
    assert.equal(await page.locator('table.points[data-metric="iops"] tr[data-cell="iodepth=16"] circle').count(), pts.a.length + pts.b.length);
    const row = await page.locator('table.compare[data-metric="iops"] tr[data-cell="iodepth=16"] td.per-host').innerText();
    assert.equal(row, 'a1: -11.61% (n=3); a2: -10.61% (n=3)');
    await b.shot('ui-compare-sweeps');
  });

  it('compares with another job as arm B', async () => {
    const id = fake.api.sweepJob.id;
    const other = fake.api.jobs[0].id;
    await page.goto(`${fake.url}#/jobs/${id}/compare`);
    await page.locator('#compare-with').fill(other);
    await page.getByRole('button', { name: 'Compare', exact: true }).click();
    await page.waitForURL(new RegExp(`#/compare\\?a=${id}&b=${other}$`));
    await page.locator('table.compare').first().waitFor();
    assert.match(await page.locator('h1').innerText(), new RegExp(`${id} vs ${other}`));
    const req = fake.api.requests.filter((r) => r.path === '/compare').at(-1);
    assert.equal(new URLSearchParams(req.query).get('a'), id);
    assert.equal(new URLSearchParams(req.query).get('b'), other);
    await b.shot('ui-compare-jobs');
  });

  it('clones a job into the submit form and re-runs it as a new job', async () => {
    const src = fake.api.sweepJob;
    await page.goto(`${fake.url}#/jobs/${src.id}`);
    await page.getByTestId('clone').click();
    await page.waitForURL(/#\/submit\?clone=/);
    await page.getByTestId('clone-note').getByText('A copy of job').waitFor();
    assert.equal(await page.getByLabel('Job name').inputValue(), `${src.name} (clone)`);
    assert.equal(await page.getByLabel('fio job file').inputValue(), src.spec.fio);
    assert.equal(await page.getByLabel('Sweep').inputValue(), 'iodepth=1,4,16,64');
    assert.equal(await page.getByLabel('Variants (A/B arms)').inputValue(), 'A: hosts=a1\nB: hosts=a2');
    await b.shot('ui-submit-clone');

    await page.goto(`${fake.url}#/jobs/${src.id}`);
    const before = fake.api.jobs.length;
    await page.getByTestId('rerun').click();
    await page.waitForFunction((n) => !location.hash.endsWith(n), src.id);
    assert.equal(fake.api.jobs.length, before + 1);
    const post = JSON.parse(fake.api.requests.filter((r) => r.method === 'POST' && r.path === '/jobs').at(-1).body);
    assert.equal(post.fio, src.spec.fio);
    assert.deepEqual(post.sweep, src.spec.sweep);
    assert.deepEqual(post.variants.map((v) => [v.name, v.hosts]), [['A', ['a1']], ['B', ['a2']]]);
    assert.match(page.url(), new RegExp(`#/jobs/${fake.api.jobs.at(-1).id}$`));
  });

  it('links a run to its neighbours and to the other arm of its cell', async () => {
    const runs = fake.api.sweepJob.runs;
    const r = runs.find((x) => x.variant === 'A' && x.cell === 'iodepth=16');
    await page.goto(`${fake.url}#/runs/${r.id}`);
    const other = page.locator('a[data-related="variant B"]');
    await other.waitFor();
    const href = await other.getAttribute('href');
    const b = runs.find((x) => x.variant === 'B' && x.cell === 'iodepth=16');
    assert.equal(href, `#/runs/${b.id}`);
    const i = runs.indexOf(r);
    assert.equal(await page.locator('a[data-related="next →"]').getAttribute('href'), `#/runs/${runs[i + 1].id}`);
  });

  it('logged no page errors', () => {
    assert.deepEqual(b.errors, []);
  });
});
