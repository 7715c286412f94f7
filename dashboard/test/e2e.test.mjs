// The dashboard against the REAL controller and agent (build/bin, or
// IOFLEET_BIN_DIR): agents, a bad and a good submit, a run's live charts and its
// fio result, and an A/B sweep comparison. Skips when the binaries are not built.
// When the controller does not serve the dashboard at `/` yet, the `/` check is
// skipped with a message and the flow still runs with dist/ served by a local
// proxy that forwards /api/v1 to the controller.
// Screenshots: build/dashboard-screenshots/e2e-*.png.
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir, release } from 'node:os';
import { join, dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { launch, chromiumMissing } from '../testlib/browser.mjs';
import { startProxy } from '../testlib/static.mjs';
import { bucketValue } from '../src/stats.js';
import { start, stop, sleep } from '../testlib/procs.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const BIN = resolve(process.env.IOFLEET_BIN_DIR || join(here, '..', '..', 'build', 'bin'));
const CONTROLLER = join(BIN, 'iofleet-controller');
const AGENT = join(BIN, 'iofleet-agent');
const DIST = join(here, '..', 'dist', 'index.html');

const skip =
  chromiumMissing() ||
  (!existsSync(DIST) && 'dashboard/dist is not built (run dashboard/build.sh)') ||
  (!existsSync(CONTROLLER) && `${CONTROLLER} is not built yet; the end-to-end dashboard test needs it`) ||
  (!existsSync(AGENT) && `${AGENT} is not built yet; the end-to-end dashboard test needs it`) ||
  false;

describe('dashboard against the real controller and agent', { skip, timeout: 240000 }, () => {
  let tmp;
  let controller;
  let agent;
  let api; // http://HOST:PORT of the controller's REST API
  let base; // where the browser loads the dashboard
  let servesRoot = false;
  let proxy;
  let b;
  let page;

  const getJson = async (path, init) => {
    const r = await fetch(`${api}/api/v1${path}`, init);
    return { status: r.status, body: await r.json().catch(() => null) };
  };

  before(async () => {
    tmp = await mkdtemp(join(tmpdir(), 'iofleet-dash-e2e-'));
    const c = await start(
      CONTROLLER,
      [`--data-dir=${join(tmp, 'data')}`, '--init', '--grpc-listen=127.0.0.1:0', '--http-listen=127.0.0.1:0'],
      [/http listening on (\S+)/, /grpc listening on (\S+)/],
    );
    controller = c.proc;
    const [httpAddr, grpcAddr] = c.found;
    api = `http://${httpAddr}`;
    const a = await start(AGENT, ['serve', `--controller=${grpcAddr}`, '--name=a1', `--allow-path=${tmp}`]);
    agent = a.proc;
    for (let i = 0; ; i++) {
      const { body } = await getJson('/agents');
      if (body && (body.agents || []).some((x) => x.name === 'a1' && x.state === 'up')) break;
      if (i > 100) throw new Error(`agent a1 did not register: ${JSON.stringify(body)}`);
      await sleep(200);
    }
    const root = await fetch(`${api}/`).catch(() => null);
    const html = root && root.ok ? await root.text() : '';
    servesRoot = html.includes('id="root"') && html.includes('app.js');
    if (servesRoot) base = `${api}/`;
    else {
      proxy = await startProxy(api);
      base = proxy.url;
    }
    b = await launch();
    page = b.page;
    page.setDefaultTimeout(20000);
  });

  after(async () => {
    if (b) await b.close();
    if (proxy) await proxy.close();
    await stop(agent);
    await stop(controller);
    if (tmp) await rm(tmp, { recursive: true, force: true });
  });

  it('controller serves the dashboard at /', (t) => {
    if (!servesRoot) {
      t.skip(`GET ${api}/ does not serve dashboard/dist yet; the rest of this file ran with dist/ behind a local proxy to the real /api/v1`);
      return;
    }
    assert.ok(servesRoot);
  });

  it('shows the registered agent with its inventory', async () => {
    await page.goto(`${base}#/agents`);
    const row = page.locator('tr[data-agent="a1"]');
    await row.waitFor();
    const text = await row.innerText();
    assert.match(text, /\bup\b/);
    assert.ok(text.includes(release()), `kernel ${release()} in: ${text}`);
    assert.match(text, /psync/);
    await b.shot('e2e-agents');
  });

  it('shows the controller’s 400 next to the job file', async () => {
    await page.goto(`${base}#/submit`);
    await page.getByLabel('Job name').fill('e2e bad');
    await page.getByLabel('fio job file').fill('[x]\nrw=randread\niodepth=0\n');
    await page.getByLabel('Hosts', { exact: true }).fill('a1');
    await page.getByRole('button', { name: 'Submit job' }).click();
    const err = page.locator('#err-fio');
    await err.waitFor({ state: 'visible' });
    assert.match(await err.innerText(), /iodepth/);
    assert.equal(await page.getByLabel('fio job file').getAttribute('aria-invalid'), 'true');
    await b.shot('e2e-submit-error');
  });

  it('submits a job, charts its run live and shows the fio result', async () => {
    await page.goto(`${base}#/submit`);
    await page.getByLabel('Job name').fill('e2e psync randread');
    await page
      .getByLabel('fio job file')
      .fill(`[global]\nioengine=psync\nfilename=${join(tmp, 'e2e.dat')}\nsize=16m\nbs=4k\ntime_based\nruntime=10\nwrite_lat_log=l\nlog_avg_msec=1000\n\n[rr]\nrw=randread\n`);
    await page.getByLabel('Hosts', { exact: true }).fill('a1');
    await page.getByLabel('Tags').fill('suite=dashboard-e2e');
    await page.getByRole('button', { name: 'Submit job' }).click();
    await page.waitForURL(/#\/jobs\/[^/]+$/);
    const row = page.locator('table[aria-label="runs"] tbody tr').first();
    await row.waitFor();
    const runId = await row.getAttribute('data-run');
    await b.shot('e2e-job');
    await row.locator('a').first().click();
    await page.waitForURL(/#\/runs\//);

    const iops = page.locator('.chart[data-chart="IOPS"]');
    await iops.waitFor();
    await page.waitForFunction(() => Number(document.querySelector('.chart[data-chart="IOPS"]').dataset.points) >= 1);
    const n1 = Number(await iops.getAttribute('data-points'));
    const state = await page.locator('h1 .badge').innerText();
    // Requests the page makes after the reload below (the live source).
    const api = [];
    const onReq = (r) => {
      const u = r.url();
      if (/\/api\/v1\/(runs\/[^/]+\/samples|jobs\/[^/]+\/watch)/.test(u)) api.push(u);
    };
    let reloaded = false;
    if (state === 'running') {
      await page.waitForFunction((n) => Number(document.querySelector('.chart[data-chart="IOPS"]').dataset.points) > n, n1);
      assert.ok(Number(await iops.getAttribute('data-points')) > n1, 'the chart grew while the run ran');
      await b.shot('e2e-run-live');
      // Reload mid-run: the watch stream replays what is stored, then streams.
      page.on('request', onReq);
      reloaded = (await page.locator('h1 .badge').innerText()) === 'running';
      await page.reload();
      if (reloaded) {
        await page.waitForFunction(() => {
          const c = document.querySelector('section.charts');
          return (c?.dataset.source === 'stream' && Number(c.dataset.streamed) > 0) || document.querySelector('#result h2');
        });
        await b.shot('e2e-run-live-after-reload');
      }
    }
    await page.locator('#result h2').waitFor({ timeout: 30000 });
    assert.match(await page.locator('h1 .badge').innerText(), /succeeded/);
    const summary = await page.locator('table[aria-label="result summary"]').innerText();
    assert.match(summary, /rr\s+read/);
    await page.getByText('fio JSON', { exact: true }).click();
    const parsed = JSON.parse(await page.getByTestId('result-json').innerText());
    assert.equal(parsed.jobs[0].jobname, 'rr');
    assert.ok(Number(await iops.getAttribute('data-points')) >= 3);
    // The latency chart has percentiles from the real histograms.
    const samples = await getJson(`/runs/${encodeURIComponent(runId)}/samples`);
    assert.ok(samples.body.records.length >= 3);
    // Every stored interval is a point of the chart (one job: one record per window).
    assert.equal(Number(await iops.getAttribute('data-points')), samples.body.records.length);
    // Total latency next to clat (issue 18), from the real records' lat_hist:
    // per window p99 as fio's percentile rule gives it, never below clat's.
    const tot = page.locator('.chart[data-chart^="Total latency"]');
    await tot.waitFor();
    const totVals = JSON.parse(await tot.getAttribute('data-values'));
    const p99 = (pairs) => {
      const n = pairs.reduce((a, [, c]) => a + c, 0);
      let run = 0;
      for (const [idx, c] of [...pairs].sort((x, y) => x[0] - y[0])) if ((run += c) >= 0.99 * n) return bucketValue(idx);
      return null;
    };
    assert.equal(totVals.x.length, samples.body.records.length);
    samples.body.records.forEach((r, i) => {
      assert.ok(Array.isArray(r.read.lat_hist) && r.read.lat_hist.length, `record ${i} has lat_hist`);
      assert.equal(totVals.read.p99[i], p99(r.read.lat_hist), `window ${i} lat p99`);
      assert.ok(p99(r.read.lat_hist) >= p99(r.read.clat_hist), `window ${i}: lat p99 >= clat p99`);
    });
    assert.equal(await page.locator('.chart[data-chart="read total latency heatmap"]').count(), 1);
    // No lat_percentiles=1: the exceedance plot's total latency comes from the
    // records, and counts every I/O the result's lat_ns counts.
    const exv = JSON.parse(await page.locator('.chart[data-chart="Latency percentiles"]').getAttribute('data-values'));
    const exLat = exv.series.find((x) => x.label === 'read lat');
    assert.equal(exLat.source, 'records');
    assert.equal(exLat.n, parsed.jobs[0].read.lat_ns.N);
    page.off('request', onReq);
    if (reloaded) {
      assert.ok(api.some((u) => /\/jobs\/[^/]+\/watch\?run=/.test(u)), `the page opened the watch stream: ${api.join(' ')}`);
      assert.ok(Number(await page.locator('section.charts').first().getAttribute('data-streamed')) > 0, 'records came through the stream');
      // While the run ran, records came from the stream only: the one snapshot
      // is the last call, made once the run was over.
      assert.ok(api.filter((u) => /\/samples/.test(u)).length <= 1, `snapshots: ${api.join(' ')}`);
    }
    // The run's fio log files, uploaded by the agent, are linked; a link
    // downloads the file as the API serves it (with the token, if any).
    const logRow = page.locator('table[aria-label="run log files"] tr[data-log="l_clat.1.log"]');
    await logRow.waitFor();
    const logs = await getJson(`/runs/${encodeURIComponent(runId)}/logs`);
    assert.deepEqual(logs.body.logs.map((l) => l.name).sort(), ['l_clat.1.log', 'l_lat.1.log', 'l_slat.1.log']);
    const [download] = await Promise.all([page.waitForEvent('download'), logRow.locator('a').click()]);
    assert.equal(download.suggestedFilename(), 'l_clat.1.log');
    const { readFile } = await import('node:fs/promises');
    const text = await readFile(await download.path(), 'utf8');
    assert.match(text, /^\d+, \d+, 0, \d+, \d+\n/, `clat log: ${text.slice(0, 200)}`);
    await b.shot('e2e-run-result');
  });

  it('compares an A/B iodepth sweep with coloured verdicts', async (t) => {
    const fio = `[global]\nioengine=null\nsize=64m\nbs=4k\ntime_based\nruntime=1\n\n[n]\nrw=randread\n`;
    const sub = await getJson('/jobs', {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({
        name: 'e2e A/B sweep',
        fio,
        hosts: ['a1'],
        repeat: 2,
        variants: [
          { name: 'A', options: { bs: '4k' } },
          { name: 'B', options: { bs: '8k' } },
        ],
        sweep: { iodepth: ['1', '4'] },
      }),
    });
    assert.equal(sub.status, 201, JSON.stringify(sub.body));
    const id = sub.body.id;
    for (let i = 0; ; i++) {
      const { body } = await getJson(`/jobs/${id}`);
      if (['succeeded', 'failed', 'cancelled'].includes(body.state)) break;
      if (i > 300) throw new Error(`job ${id} did not finish: ${JSON.stringify(body.run_counts)}`);
      await sleep(300);
    }
    const probe = await getJson(`/jobs/${id}/compare`);
    if (probe.status === 501) {
      t.skip(`this controller build has no compare yet: ${probe.body?.error?.message}`);
      return;
    }
    assert.equal(probe.status, 200, JSON.stringify(probe.body));
    // Runs with no arm audit on record are excluded unless admitted; the page says
    // so first and links to the comparison that admits them.
    await page.goto(`${base}#/jobs/${id}/compare`);
    await page.getByTestId('usable').waitFor();
    // 8 runs (2 arms x 2 cells x repeat 2) and the host's warm-up run, which is
    // stored and shown but never compared (docs/ab-method.md, "The first run").
    const usable = await page.getByTestId('usable').innerText();
    assert.match(usable, /\d+ of 9 runs usable/);
    assert.match(usable, /1 run: warm-up/);
    if (/unaudited/.test(probe.body.headline || '')) {
      await page.getByText('Compare including unaudited runs').click();
      await page.waitForFunction(() => /unaudited=allow/.test(location.hash));
      await page.waitForFunction(() => /8 of 9 runs usable/.test(document.querySelector('[data-testid=usable]')?.innerText || ''));
    }
    await page.locator('table.compare').first().waitFor();
    const cells = await page.$$eval('table.compare td.verdict', (tds) =>
      tds.map((td) => [td.dataset.verdict, getComputedStyle(td).backgroundColor]),
    );
    const want = {
      regression: 'rgb(251, 213, 210)',
      improvement: 'rgb(205, 238, 213)',
      no_change: 'rgb(227, 230, 234)',
      inconclusive: 'rgb(253, 231, 176)',
      noisy: 'rgb(230, 214, 245)',
    };
    assert.ok(cells.length >= 2, `rows: ${cells.length}`);
    for (const [v, bg] of cells) assert.equal(bg, want[v], `${v} cell colour`);
    assert.equal(await page.locator('.sweep .chart[data-chart="IOPS vs iodepth"]').count(), 1, 'IOPS vs iodepth plot');
    // p99 vs iodepth beside it when the real table has p99 rows for the sweep.
    const real = probe.body && (probe.body.table_json ? JSON.parse(probe.body.table_json) : probe.body);
    const p99Rows = real && (real.rows || []).filter((r) => r.metric === 'p99_ns');
    if (p99Rows && p99Rows.length >= 2) assert.equal(await page.locator('.sweep .chart[data-chart="clat p99 vs iodepth"]').count(), 1);
    await b.shot('e2e-compare');
  });

  it('loaded nothing from outside and logged no errors', () => {
    assert.deepEqual(b.external, []);
    assert.deepEqual(b.errors, []);
  });
});
