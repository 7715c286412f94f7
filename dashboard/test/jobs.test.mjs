// The jobs list in headless Chromium against the fake REST API: newest first,
// search by name, state and tag filters kept in the URL, and each job's run counts.
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startFake } from '../testlib/fake_api.mjs';
import { launch, chromiumMissing } from '../testlib/browser.mjs';

const DIST = join(dirname(fileURLToPath(import.meta.url)), '..', 'dist', 'index.html');
const skip = chromiumMissing() || (existsSync(DIST) ? null : 'dashboard/dist is not built (run dashboard/build.sh)');

describe('jobs list', { skip: skip || false, timeout: 60000 }, () => {
  let fake;
  let b;
  let page;

  before(async () => {
    fake = await startFake({ seedJobs: 60 });
    fake.api.submit({ name: 'tagged nvme run', fio: '[j]\nrw=read\nruntime=1\n', hosts: ['a1'], tags: { branch: 'main' } });
    b = await launch();
    page = b.page;
    page.setDefaultTimeout(15000);
  });

  after(async () => {
    if (b) await b.close();
    if (fake) await fake.close();
  });

  const rowIds = () => page.$$eval('table[aria-label="jobs"] tbody tr', (trs) => trs.map((t) => t.dataset.job));

  it('lists the newest job first', async () => {
    await page.goto(`${fake.url}#/jobs`);
    await page.locator('table[aria-label="jobs"] tbody tr').first().waitFor();
    const ids = await rowIds();
    assert.equal(ids[0], fake.api.jobs.at(-1).id);
    const seqs = ids.map((id) => fake.api.jobs.find((j) => j.id === id).seq);
    assert.deepEqual(seqs, [...seqs].sort((x, y) => y - x));
    await b.shot('ui-jobs-newest');
  });

  it('searches by name and filters by state and tag, in the URL', async () => {
    await page.locator('#job-search').fill('old-job-4');
    await page.getByRole('button', { name: 'Filter' }).click();
    await page.waitForURL(/#\/jobs\?q=old-job-4$/);
    await page.waitForFunction(() => document.querySelectorAll('table[aria-label="jobs"] tbody tr').length === 11);
    const names = await page.$$eval('table[aria-label="jobs"] tbody tr th', (ths) => ths.map((t) => t.textContent));
    assert.deepEqual(names, ['old-job-49', 'old-job-48', 'old-job-47', 'old-job-46', 'old-job-45', 'old-job-44', 'old-job-43', 'old-job-42', 'old-job-41', 'old-job-40', 'old-job-4']);
    const req = fake.api.requests.filter((r) => r.path === '/jobs').at(-1);
    assert.equal(new URLSearchParams(req.query).get('name'), 'old-job-4');

    await page.goto(`${fake.url}#/jobs?tag=branch%3Dmain`);
    await page.waitForFunction(() => document.querySelectorAll('table[aria-label="jobs"] tbody tr').length === 1);
    assert.match(await page.locator('table[aria-label="jobs"] tbody tr').innerText(), /tagged nvme run/);
    assert.equal(await page.locator('#job-tag').inputValue(), 'branch=main');

    await page.goto(`${fake.url}#/jobs`);
    await page.locator('table[aria-label="jobs"] tbody tr').first().waitFor();
    await page.locator('#job-state').selectOption('queued');
    await page.waitForURL(/#\/jobs\?state=queued$/);
    // At least one row: while the filtered list loads the table may be empty,
    // and an empty list is 'every row queued' too.
    await page.waitForFunction(() => {
      const badges = [...document.querySelectorAll('table[aria-label="jobs"] tbody tr .badge')];
      return badges.length >= 1 && badges.every((b) => /queued/.test(b.textContent));
    });
    const states = await page.$$eval('table[aria-label="jobs"] tbody tr .badge', (bs) => bs.map((x) => x.textContent));
    assert.ok(states.length >= 1 && states.every((s) => /queued/.test(s)), states.join());
    await b.shot('ui-jobs-filtered');
  });

  it('shows per-run IOPS, bandwidth and p99, and the job’s progress and ETA', async () => {
    const job = fake.api.submit({ name: 'two runs', fio: '[j]\nrw=randread\nruntime=3\n', hosts: ['a1'], repeat: 2 });
    await page.goto(`${fake.url}#/jobs/${job.id}`);
    await page.getByTestId('job-progress').waitFor();
    // While running: a live IOPS figure and a job ETA.
    await page.waitForFunction(() => /ETA ≈/.test(document.querySelector('[data-testid=job-progress]')?.textContent || ''));
    await page.waitForSelector('tr[data-state="running"] td.live[data-metric="iops"]');
    await b.shot('ui-job-running-metrics');
    // Finished: the numbers of each run's stored result.
    const id = job.runs[0].id;
    await page.waitForSelector(`tr[data-run="${id}"][data-state="succeeded"] td[data-metric="iops"]:not(.live)`, { timeout: 20000 });
    const run = await (await fetch(`${fake.url}api/v1/runs/${id}`)).json();
    const read = JSON.parse(run.result_json).jobs[0].read;
    const cell = (m) => page.locator(`tr[data-run="${id}"] td[data-metric="${m}"]`).innerText();
    const { fmtIops, fmtBytesRate, fmtNs } = await import('../src/dom.js');
    assert.equal(await cell('iops'), fmtIops(read.iops));
    assert.equal(await cell('bw'), fmtBytesRate(read.bw_bytes));
    const bins = Object.entries(read.clat_ns.bins).map(([k, v]) => [Number(k), v]).sort((x, y) => x[0] - y[0]);
    const n = bins.reduce((a, [, c]) => a + c, 0);
    let acc = 0;
    const p99 = bins.find(([, c]) => (acc += c) >= 0.99 * n)[0];
    assert.equal(await cell('p99'), fmtNs(p99));
    await page.waitForFunction(() => /100% of the job/.test(document.querySelector('[data-testid=job-progress]')?.textContent || ''));
  });

  it('logged no page errors', () => {
    assert.deepEqual(b.errors, []);
  });
});
