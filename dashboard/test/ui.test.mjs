// The dashboard in headless Chromium against a fake REST API (testlib/fake_api.mjs):
// agents, paged jobs, the submit form and its field errors, a run's live charts
// and result, and the A/B compare table's colours. Screenshots: build/dashboard-screenshots/ui-*.png.
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startFake } from '../testlib/fake_api.mjs';
import { launch, chromiumMissing } from '../testlib/browser.mjs';

const DIST = join(dirname(fileURLToPath(import.meta.url)), '..', 'dist', 'index.html');
const skip = chromiumMissing() || (existsSync(DIST) ? null : 'dashboard/dist is not built (run dashboard/build.sh)');

describe('dashboard against a fake API', { skip: skip || false, timeout: 120000 }, () => {
  let fake;
  let b;
  let page;

  before(async () => {
    fake = await startFake({ seedJobs: 120 });
    b = await launch();
    page = b.page;
    page.setDefaultTimeout(15000);
  });

  after(async () => {
    if (b) await b.close();
    if (fake) await fake.close();
  });

  it('lists agents with their inventory', async () => {
    await page.goto(`${fake.url}#/agents`);
    const a1 = page.locator('tr[data-agent="a1"]');
    await a1.waitFor();
    const text = await a1.innerText();
    for (const s of ['a1', 'up', '6.8.0-31-generic', 'AMD EPYC 7763', 'node 0: CPUs 0-7', 'nvme0n1', 'Samsung SSD 990 PRO', 'io_uring', 'rack=r1']) {
      assert.ok(text.includes(s), `agent row lacks "${s}": ${text}`);
    }
    assert.match(await page.locator('tr[data-agent="a2"] .badge').innerText(), /down/);
    await b.shot('ui-agents');
  });

  it('pages through jobs with next/previous tokens', async () => {
    await page.goto(`${fake.url}#/jobs`);
    const rows = page.locator('table[aria-label="jobs"] tbody tr');
    await rows.first().waitFor();
    assert.equal(await rows.count(), 50);
    const first = await rows.first().getAttribute('data-job');
    await page.getByTestId('next').click();
    await page.waitForFunction((f) => document.querySelector('table[aria-label="jobs"] tbody tr')?.dataset.job !== f, first);
    const second = await rows.first().getAttribute('data-job');
    assert.notEqual(second, first);
    assert.match(page.url(), /#\/jobs\?t=\d+$/);
    await page.getByTestId('prev').click();
    await page.waitForFunction((f) => document.querySelector('table[aria-label="jobs"] tbody tr')?.dataset.job === f, first);
    // Only pages were asked for, never the whole table.
    const lists = fake.api.requests.filter((r) => r.method === 'GET' && r.path === '/jobs');
    assert.ok(lists.every((r) => /page_size=50/.test(r.query) && /order=newest/.test(r.query)), JSON.stringify(lists));
    await b.shot('ui-jobs');
  });

  it('pages through a job’s runs through the API', async () => {
    await page.goto(`${fake.url}#/jobs/${fake.api.bigJob.id}`);
    const rows = page.locator('table[aria-label="runs"] tbody tr');
    await rows.first().waitFor();
    assert.equal(await rows.count(), 100);
    assert.match(await page.locator('.counts').innerText(), /250 runs/);
    const first = await rows.first().getAttribute('data-run');
    await page.getByRole('navigation', { name: 'run pages' }).getByTestId('next').click();
    await page.waitForFunction((f) => document.querySelector('table[aria-label="runs"] tbody tr')?.dataset.run !== f, first);
    await page.getByRole('navigation', { name: 'run pages' }).getByTestId('next').click();
    await page.waitForFunction(() => document.querySelectorAll('table[aria-label="runs"] tbody tr').length === 50);
    assert.ok(await page.getByRole('navigation', { name: 'run pages' }).getByTestId('next').isDisabled());
    const runLists = fake.api.requests.filter((r) => r.path === '/runs');
    assert.ok(runLists.length >= 3 && runLists.every((r) => /page_size=100/.test(r.query)), JSON.stringify(runLists));
  });

  it('says why a queued run waits, and shows control characters escaped', async () => {
    await page.goto(`${fake.url}#/jobs/${fake.api.waitingJob.id}`);
    const row = page.locator('table[aria-label="runs"] tbody tr[data-state="queued"]').first();
    await row.waitFor();
    assert.match(await row.innerText(), /waiting: agent a2 is down since 2024-05-01T12:00:00\.000Z/);
    const title = await page.locator('h1').innerText();
    assert.ok(title.includes('waits\\x1b[2J\\x00here'), title);
    assert.ok(!/[\u0000-\u0008\u000b-\u001f]/.test(await page.locator('body').innerText()));
  });

  it('shows a 400 error next to the field it names', async () => {
    await page.goto(`${fake.url}#/submit`);
    await page.getByLabel('Job name').fill('bad job');
    await page.getByLabel('fio job file').fill('[rr]\nrw=randread\nruntime=6\n');
    await page.getByLabel('Hosts', { exact: true }).fill('a1, nope');
    await page.getByRole('button', { name: 'Submit job' }).click();
    const err = page.locator('#err-hosts');
    await err.waitFor({ state: 'visible' });
    assert.match(await err.innerText(), /no registered agent "nope"/);
    assert.equal(await page.getByLabel('Hosts', { exact: true }).getAttribute('aria-invalid'), 'true');
    assert.ok(await page.locator('#err-fio').isHidden());
    await b.shot('ui-submit-error');

    // An error the server puts on the job file lands under the job file.
    await page.getByLabel('Hosts', { exact: true }).fill('a1');
    await page.getByLabel('fio job file').fill('[rr]\nrw=randread\niodepth=0\n');
    await page.getByRole('button', { name: 'Submit job' }).click();
    await page.locator('#err-fio').waitFor({ state: 'visible' });
    assert.match(await page.locator('#err-fio').innerText(), /iodepth/);
    assert.ok(await page.locator('#err-hosts').isHidden(), 'the previous error is cleared');

    // A malformed tag is caught before it is sent.
    const posts = fake.api.requests.filter((r) => r.method === 'POST').length;
    await page.getByLabel('fio job file').fill('[rr]\nrw=randread\n');
    await page.getByLabel('Tags').fill('no-equals-sign');
    await page.getByRole('button', { name: 'Submit job' }).click();
    await page.locator('#err-tags').waitFor({ state: 'visible' });
    assert.equal(fake.api.requests.filter((r) => r.method === 'POST').length, posts);
  });

  let runId;

  it('submits a job and follows it to its run', async () => {
    await page.goto(`${fake.url}#/submit`);
    await page.getByLabel('Job name').fill('ui randread');
    await page.getByLabel('fio job file').fill('[global]\nbs=4k\ntime_based\nruntime=6\n\n[rr]\nrw=randread\niodepth=16\n');
    await page.getByLabel('Hosts', { exact: true }).fill('a1');
    await page.getByLabel('Repeat').fill('1');
    await page.getByLabel('Tags').fill('branch=main, build=42');
    await page.getByRole('button', { name: 'Submit job' }).click();
    await page.waitForURL(/#\/jobs\/j\d+$/);
    const post = fake.api.requests.filter((r) => r.method === 'POST' && r.path === '/jobs').at(-1);
    const body = JSON.parse(post.body);
    assert.equal(body.name, 'ui randread');
    assert.deepEqual(body.hosts, ['a1']);
    assert.equal(body.repeat, 1);
    assert.deepEqual(body.tags, { branch: 'main', build: '42' });
    assert.match(body.fio, /runtime=6/);

    const row = page.locator('table[aria-label="runs"] tbody tr').first();
    await row.waitFor();
    runId = await row.getAttribute('data-run');
    assert.ok(runId);
    assert.match(await page.locator('h1').innerText(), /ui randread/);
    // While it runs the row shows progress and an ETA from samples vs runtime.
    await page.waitForSelector(`tr[data-run="${runId}"][data-state="running"] progress`);
    await page.waitForFunction((id) => Number(document.querySelector(`tr[data-run="${id}"] progress`)?.value) > 0, runId);
    await b.shot('ui-job-running');
    await row.locator('a').first().click();
    await page.waitForURL(new RegExp(`#/runs/${runId}$`));
  });

  it('updates the run charts live and then shows the result', async () => {
    const iops = page.locator('.chart[data-chart="IOPS"]');
    await iops.waitFor();
    await page.waitForFunction(() => Number(document.querySelector('.chart[data-chart="IOPS"]').dataset.points) >= 1);
    const n1 = Number(await iops.getAttribute('data-points'));
    await page.waitForFunction(
      (n) => Number(document.querySelector('.chart[data-chart="IOPS"]').dataset.points) > n,
      n1,
      { timeout: 5000 },
    );
    const n2 = Number(await iops.getAttribute('data-points'));
    assert.ok(n2 > n1, `chart grew from ${n1} to ${n2}`);
    const lat = Number(await page.locator('.chart[data-chart^="Completion latency"]').getAttribute('data-points'));
    assert.ok(lat >= n2 - 1);
    assert.match(await page.getByTestId('live-status').innerText(), /Live/);
    // uPlot's legend shows the latest p50/p99 values computed from the histogram deltas.
    const legend = await page.locator('.chart[data-chart^="Completion latency"] .u-legend').innerText();
    assert.match(legend, /p99/);
    await b.shot('ui-run-live');

    await page.locator('#result h2').waitFor({ timeout: 15000 });
    assert.match(await page.locator('h1 .badge').innerText(), /succeeded/);
    const summary = await page.locator('table[aria-label="result summary"]').innerText();
    assert.match(summary, /randread/);
    assert.match(summary, /µs/);
    await page.getByText('fio JSON', { exact: true }).click();
    const json = page.getByTestId('result-json');
    await json.waitFor({ state: 'visible' });
    const parsed = JSON.parse(await json.innerText());
    assert.equal(parsed.jobs[0].jobname, 'randread');
    await b.shot('ui-run-result');
    // Polling stops once the run is terminal.
    const before = fake.api.requests.length;
    await page.waitForTimeout(2500);
    assert.ok(fake.api.requests.length - before <= 2, 'no polling after the run finished');
  });

  it('colours the A/B verdicts and plots IOPS vs iodepth', async () => {
    await page.goto(`${fake.url}#/jobs/${fake.api.sweepJob.id}/compare`);
    await page.locator('table.compare').first().waitFor();
    const colours = await page.$$eval('table.compare td.verdict', (tds) =>
      tds.map((td) => [td.dataset.verdict, getComputedStyle(td).backgroundColor]),
    );
    const want = {
      regression: 'rgb(251, 213, 210)',
      improvement: 'rgb(205, 238, 213)',
      no_change: 'rgb(227, 230, 234)',
      inconclusive: 'rgb(253, 231, 176)',
      noisy: 'rgb(230, 214, 245)',
    };
    const seen = new Set();
    for (const [v, bg] of colours) {
      assert.equal(bg, want[v], `${v} cell colour`);
      seen.add(v);
    }
    assert.deepEqual([...seen].sort(), Object.keys(want).sort());
    const row = await page.locator('table.compare[data-metric="iops"] tr[data-cell="iodepth=16"]').innerText();
    assert.match(row, /180k \[178\.2k, 181\.8k\]/);
    assert.match(row, /-11\.11%/);
    assert.match(row, /regression/);
    assert.match(await page.getByTestId('outcome').innerText(), /fail/);
    // The page opens with how many runs are usable and why the others are not.
    const usable = page.getByTestId('usable');
    assert.match(await usable.innerText(), /47 of 48 runs usable/);
    assert.match(await usable.innerText(), /1 run: fio error: see the run's result \(iofleet result RUN\) \(error=5\)/);
    const first = await page.$eval('main', (m) => {
      const u = m.querySelector('[data-testid=usable]');
      const t = m.querySelector('h1');
      return !!(u.compareDocumentPosition(t) & Node.DOCUMENT_POSITION_FOLLOWING);
    });
    assert.ok(first, 'the usable-runs summary comes before the title and the tables');
    const sweep = page.locator('.sweep .chart');
    assert.equal(await sweep.count(), 2); // IOPS and p99 vs iodepth
    assert.equal(await sweep.first().getAttribute('data-points'), '4');
    await b.shot('ui-compare');
  });

  it('loaded nothing from outside and logged no errors', () => {
    assert.deepEqual(b.external, []);
    assert.deepEqual(b.errors, []);
  });
});
