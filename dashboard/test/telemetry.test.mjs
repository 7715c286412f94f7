// The run's host telemetry page (src/pages/telemetry.js) against the REAL
// controller (with --api-token-file) and agent: a psync run on a temp file, then
// the run page asks for the token once, links to the telemetry page, and every
// chart there draws the numbers of GET /runs/{id}/telemetry and /samples, on one
// time axis placed by the agent's clock. Skips when the binaries are not built.
// Screenshot: build/dashboard-screenshots/e2e-run-telemetry.png.
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { launch, chromiumMissing } from '../testlib/browser.mjs';
import { startProxy, DIST } from '../testlib/static.mjs';
import { start, stop, sleep, CONTROLLER, AGENT } from '../testlib/procs.mjs';
import { normJob, normRecord } from '../src/api.js';

const skip =
  chromiumMissing() ||
  (!existsSync(join(DIST, 'index.html')) && 'dashboard/dist is not built (run dashboard/build.sh)') ||
  (!existsSync(CONTROLLER) && `${CONTROLLER} is not built yet; the telemetry page test needs it`) ||
  (!existsSync(AGENT) && `${AGENT} is not built yet; the telemetry page test needs it`) ||
  false;

const TOKEN = 'e2e-telemetry-token-0123456789';
const close = (a, b, eps = 1e-6) => Math.abs(a - b) <= eps;

describe('run telemetry page against the real controller and agent (API token on)', { skip, timeout: 180000 }, () => {
  let tmp;
  let controller;
  let agent;
  let api;
  let proxy;
  let b;
  let page;

  const getJson = async (path, init = {}) => {
    const r = await fetch(`${api}/api/v1${path}`, { ...init, headers: { ...(init.headers || {}), Authorization: `Bearer ${TOKEN}` } });
    return { status: r.status, body: await r.json().catch(() => null) };
  };

  before(async () => {
    tmp = await mkdtemp(join(tmpdir(), 'iofleet-dash-tele-'));
    const tokenFile = join(tmp, 'api.token');
    await writeFile(tokenFile, `${TOKEN}\n`, { mode: 0o600 });
    const c = await start(
      CONTROLLER,
      [`--data-dir=${join(tmp, 'data')}`, '--init', '--grpc-listen=127.0.0.1:0', '--http-listen=127.0.0.1:0', `--api-token-file=${tokenFile}`],
      [/http listening on (\S+)/, /grpc listening on (\S+)/],
    );
    controller = c.proc;
    const [httpAddr, grpcAddr] = c.found;
    api = `http://${httpAddr}`;
    agent = (await start(AGENT, ['serve', `--controller=${grpcAddr}`, '--name=t1', `--allow-path=${tmp}`])).proc;
    for (let i = 0; ; i++) {
      const { body } = await getJson('/agents');
      if (body && (body.agents || []).some((x) => x.name === 't1' && x.state === 'up')) break;
      if (i > 100) throw new Error(`agent t1 did not register: ${JSON.stringify(body)}`);
      await sleep(200);
    }
    // The API refuses calls without the token.
    assert.equal((await fetch(`${api}/api/v1/agents`)).status, 401);
    // dist/ with /api/v1 forwarded (headers included) works whether or not this
    // controller serves `/`.
    proxy = await startProxy(api);
    b = await launch();
    page = b.page;
    page.setDefaultTimeout(30000);
  });

  after(async () => {
    if (b) await b.close();
    if (proxy) await proxy.close();
    await stop(agent);
    await stop(controller);
    if (tmp) await rm(tmp, { recursive: true, force: true });
  });

  it('charts the run’s disk, CPU and IRQ seconds beside its IOPS, from the real run', async () => {
    const fio = `[global]\nioengine=psync\nfilename=${join(tmp, 'tele.dat')}\nsize=16m\nbs=4k\ntime_based\nruntime=4\n\n[rr]\nrw=randread\n`;
    const sub = await getJson('/jobs', {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ name: 'e2e telemetry', fio, hosts: ['t1'] }),
    });
    assert.equal(sub.status, 201, JSON.stringify(sub.body));
    const jobId = sub.body.id;
    let job;
    for (let i = 0; ; i++) {
      job = (await getJson(`/jobs/${jobId}`)).body;
      if (['succeeded', 'failed', 'cancelled'].includes(job.state)) break;
      if (i > 300) throw new Error(`job ${jobId} did not finish: ${JSON.stringify(job)}`);
      await sleep(300);
    }
    assert.equal(job.state, 'succeeded', JSON.stringify(job));
    const runId = normJob(job).runs[0].id;
    const tele = await getJson(`/runs/${encodeURIComponent(runId)}/telemetry`);
    assert.equal(tele.status, 200, JSON.stringify(tele.body));
    // The records as the page reads them (api.js: either JSON mapping).
    const samples = (await getJson(`/runs/${encodeURIComponent(runId)}/samples`)).body.records.map(normRecord);
    const secs = tele.body.seconds;
    assert.ok(secs.length >= 3, `telemetry seconds: ${secs.length}`);
    assert.ok(samples.length >= 3, `interval records: ${samples.length}`);
    assert.ok(tele.body.start_unix_ms > 0, 'the agent stamps the wall clock of its first sample');

    // Every /api/v1 call the page makes, with its Authorization header.
    const calls = [];
    page.on('request', (r) => {
      if (r.url().includes('/api/v1/')) calls.push({ url: r.url(), auth: r.headers().authorization || '' });
    });
    await page.goto(`${proxy.url}#/runs/${encodeURIComponent(runId)}`);
    // Asked once for the token.
    const dialog = page.getByTestId('token-dialog');
    await dialog.waitFor();
    await page.locator('#api-token').fill(TOKEN);
    await page.getByRole('button', { name: 'Use token' }).click();
    await page.locator('#result h2').waitFor();
    await page.getByTestId('telemetry-link').click();
    await page.waitForURL(/#\/runs\/[^/]+\/telemetry$/);
    await page.locator('table[aria-label="telemetry means"]').waitFor();
    assert.equal(await page.getByTestId('token-dialog').count(), 0, 'asked for the token only once');

    const values = async (title) => JSON.parse(await page.locator(`.chart[data-chart="${title}"]`).getAttribute('data-values'));
    // Placed by the clock: x = (start + t_s - first window start), seconds.
    const charts = page.locator('section.telemetry');
    assert.equal(await charts.getAttribute('data-aligned'), 'true');
    const t0 = Math.min(...samples.map((r) => r.t_start_ms));
    const wantX = secs.map((s) => Math.round(((tele.body.start_unix_ms + s.t_s * 1000 - t0) / 1000) * 1000) / 1000);
    const cpu = await values('CPU (mean over CPUs)');
    assert.deepEqual(cpu[0], wantX);
    for (const [i, k] of ['usr_pct', 'sys_pct', 'irq_pct', 'softirq_pct', 'iowait_pct'].entries()) {
      assert.deepEqual(cpu[i + 1], secs.map((s) => s.cpu[k]), `CPU ${k}`);
    }
    // The run did I/O: some CPU time was spent in each second of it.
    assert.ok(cpu[1].some((v, i) => v + cpu[2][i] > 0), `usr+sys: ${cpu[1]} ${cpu[2]}`);
    const ctx = await values('Context switches and interrupts');
    assert.deepEqual(ctx[1], secs.map((s) => s.ctxt_s));
    assert.deepEqual(ctx[2], secs.map((s) => s.intr_s));
    assert.ok(ctx[1].every((v) => v > 0), `context switches/s: ${ctx[1]}`);
    const irq = await values('Device interrupts');
    assert.deepEqual(irq[1], secs.map((s) => s.dev_irq_s));
    // Per CPU (from the stored result): its lines add up to the REST total each
    // second, when the device has IRQ lines of its own that fired.
    const perCpu = page.locator('.chart[data-chart="Device interrupts per CPU"]');
    if (secs.some((s) => s.dev_irq_s > 0)) {
      const pc = JSON.parse(await perCpu.getAttribute('data-values'));
      assert.deepEqual(pc[0], wantX);
      secs.forEach((s, i) => {
        const sum = pc.slice(1).reduce((a, col) => a + col[i], 0);
        assert.ok(close(sum, s.dev_irq_s, 1e-6 * s.dev_irq_s + 0.01), `second ${i}: per-CPU sum ${sum} vs ${s.dev_irq_s}`);
      });
    } else {
      assert.equal(await perCpu.count(), 0);
    }
    // The devices under the file, when the filesystem has one (not tmpfs/overlay).
    const devs = Object.keys(secs[0].devices).sort();
    if (devs.length) {
      const util = await values('Device utilisation');
      assert.deepEqual(util[0], wantX);
      devs.forEach((d, i) => assert.deepEqual(util[i + 1], secs.map((s) => s.devices[d].util_pct), `util of ${d}`));
      const aw = await values('Device await');
      devs.forEach((d, i) => assert.deepEqual(aw[i + 1], secs.map((s) => s.devices[d].await_ms), `await of ${d}`));
    } else {
      assert.equal(await page.locator('.chart[data-chart="Device utilisation"]').count(), 0);
    }
    // IOPS: a point per stored interval, the same numbers as the run page.
    const iops = await values('IOPS');
    assert.equal(iops[0].length, samples.length);
    const ios = samples.map((r) => r.read.ios);
    // (a last, partial window may hold none)
    assert.ok(ios.slice(0, -1).every((n) => n > 0), `reads per interval: ${ios}`);
    assert.ok(iops[1].every((v, i) => close(v * ((samples[i].t_end_ms - samples[i].t_start_ms) / 1000), ios[i], 1e-6 * ios[i] + 1e-9)), `IOPS ${iops[1]} vs ios ${ios}`);
    // The telemetry covers the run's I/O (no bound on the machine's speed): the
    // sampler starts before the files are laid out, so its first sample starts
    // at or before the first interval window; it stops after the last I/O and
    // takes a last sample unless one ended within 1/5 interval (200 ms) before.
    assert.ok(tele.body.start_unix_ms <= t0, `sampler start ${tele.body.start_unix_ms}, first window ${t0}`);
    assert.ok(wantX.at(-1) >= iops[0].at(-1) - 0.2 - 0.01, `last sample ends at ${wantX.at(-1)} s, last interval at ${iops[0].at(-1)} s`);
    // One time axis for all charts.
    const range = JSON.parse(await charts.getAttribute('data-range'));
    assert.ok(range[0] <= Math.min(wantX[0], iops[0][0]) && range[1] >= Math.max(wantX.at(-1), iops[0].at(-1)), `range ${range}`);

    // The means table: every mean the API gives, with its value.
    const means = tele.body.means;
    const rows = page.locator('tr[data-metric]');
    assert.equal(await rows.count(), Object.keys(means).length);
    assert.match(await page.locator('tr[data-metric="ctxt_s"]').innerText(), /context switches\/s/);

    // Every API call after the token was given carried it.
    const after = calls.slice(calls.findIndex((c) => c.auth));
    assert.ok(after.length >= 4, JSON.stringify(calls));
    for (const c of after) assert.equal(c.auth, `Bearer ${TOKEN}`, c.url);
    assert.ok(calls.some((c) => /\/runs\/[^/]+\/telemetry$/.test(c.url)), 'loaded from GET /runs/{id}/telemetry');
    await b.shot('e2e-run-telemetry');
  });

  it('loaded nothing from outside and logged no errors', () => {
    assert.deepEqual(b.external, []);
    // The first calls' 401 (before the token) is expected; nothing else.
    assert.deepEqual(b.errors, []);
  });
});
