// The run telemetry page (src/pages/telemetry.js) in headless Chromium against
// a small fake of /api/v1 with known numbers: an IOPS dip at the seconds the
// device saturates lines up on the shared time axis; a result from an agent
// without the clock stamp says it is not aligned; a run still running waits;
// a result without telemetry shows the API's reason.
// Screenshots: ui-run-telemetry.png, ui-run-telemetry-unaligned.png.
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { serveStatic, DIST } from '../testlib/static.mjs';
import { launch, chromiumMissing } from '../testlib/browser.mjs';

const skip = chromiumMissing() || (existsSync(join(DIST, 'index.html')) ? null : 'dashboard/dist is not built (run dashboard/build.sh)');

const START = 1700000000000; // the sampler's first snapshot
const LAYOUT_MS = 700; // the run laid out its file for 0.7 s before the first I/O
const N = 10;
const DIP = new Set([5, 6]); // seconds (1-based window ends) where the device saturates

// 10 one-second windows from START + LAYOUT_MS; IOPS 20k, 3k in the dip.
const RECORDS = Array.from({ length: N }, (_, k) => {
  const ios = DIP.has(k + 1) ? 3000 : 20000;
  return {
    run_id: 'r1', job_index: 0, seq: k,
    t_start_ms: START + LAYOUT_MS + 1000 * k, t_end_ms: START + LAYOUT_MS + 1000 * (k + 1),
    read: { ios, bytes: ios * 4096, errors: 0, clat_hist: [[300, ios]] },
    write: { ios: 0, bytes: 0, errors: 0 }, trim: { ios: 0, bytes: 0, errors: 0 },
  };
});

// 11 samples of 1 s from START (covering layout and the 10 windows): util 100 %,
// await 40 ms and IRQs down in the samples that overlap the dip.
const SECONDS = Array.from({ length: N + 1 }, (_, i) => {
  const dip = DIP.has(i) || DIP.has(i + 1) ? (DIP.has(i) && DIP.has(i + 1) ? 1 : 0.5) : 0;
  return {
    t_s: i + 1, dur_ms: 1000,
    devices: { nvme0n1: { util_pct: 40 + 60 * dip, await_ms: 0.2 + 39.8 * dip, aqu_sz: 1 + 30 * dip, rrqm_s: 0, wrqm_s: 0 } },
    cpu: { usr_pct: 5, sys_pct: 20 - 10 * dip, irq_pct: 1, softirq_pct: 8 - 6 * dip, iowait_pct: 10 + 40 * dip },
    dev_irq_s: 20000 - 17000 * dip, ctxt_s: 40000 - 30000 * dip, intr_s: 21000 - 17000 * dip,
  };
});
const MEANS = { 'dev.nvme0n1.util_pct': 52, 'dev.nvme0n1.await_ms': 7.4, 'cpu.iowait_pct': 17, 'cpu.softirq_pct': 6.8, dev_irq_s: 16600, ctxt_s: 34000, intr_s: 17800, 'cpu0.usr_pct': 5, 'cpu1.usr_pct': 5 };
const TELE = { run_id: 'r1', host: 'h1', interval_ms: 1000, start_unix_ms: START, irq_lines: ['nvme0q1', 'nvme0q2'], seconds: SECONDS, means: MEANS };

// Per CPU in the stored result (the agent's shape): the device's interrupts
// land on CPU 0, and on CPU 2 in the samples that overlap the dip (IRQs moved).
const DIPPED = SECONDS.map((s) => s.dev_irq_s < 20000);
const CPUS = [0, 1, 2].map((cpu) => ({
  cpu,
  usr_pct: SECONDS.map(() => 5), sys_pct: SECONDS.map(() => 10), irq_pct: SECONDS.map(() => 1), iowait_pct: SECONDS.map(() => 10),
  softirq_pct: SECONDS.map((s, i) => (cpu === (DIPPED[i] ? 2 : 0) ? 20 : cpu === 1 ? 0 : 1)),
  dev_irq_s: SECONDS.map((s, i) => (cpu === (DIPPED[i] ? 2 : 0) ? s.dev_irq_s : 0)),
}));
const RESULT = { jobs: [], iofleet: { telemetry: { interval_ms: 1000, sample_ms: SECONDS.map(() => 1000), cpus: CPUS } } };
const run = (id, state) => ({ id, job_id: 'j1', host: 'h1', state, repetition: 0, result: state === 'succeeded' ? RESULT : undefined });

describe('run telemetry page (fake API)', { skip: skip || false, timeout: 120000 }, () => {
  let server;
  let base;
  let b;
  let page;

  before(async () => {
    server = http.createServer(async (req, res) => {
      const url = new URL(req.url, 'http://x');
      const reply = (code, obj) => {
        res.writeHead(code, { 'Content-Type': 'application/json' });
        res.end(JSON.stringify(obj));
      };
      const m = /^\/api\/v1\/runs\/([^/]+)(\/[a-z]+)?$/.exec(url.pathname);
      if (m) {
        const [, id, sub] = m;
        const state = id === 'r3' ? 'running' : 'succeeded';
        if (!sub) return reply(200, run(id, state));
        if (sub === '/samples') return reply(200, { records: RECORDS.map((r) => ({ ...r, run_id: id })) });
        if (sub === '/telemetry') {
          if (id === 'r1') return reply(200, TELE);
          if (id === 'r2') return reply(200, { ...TELE, run_id: 'r2', start_unix_ms: 0 });
          return reply(404, { error: { code: 'NOT_FOUND', message: `run ${id}: its result has no telemetry (iofleet.telemetry; agents before the telemetry sampler do not write it)` } });
        }
      }
      if (url.pathname === '/api/v1/jobs/j1') return reply(200, { id: 'j1', name: 'fake', state: 'succeeded', runs: [] });
      if (await serveStatic(req, res)) return undefined;
      res.writeHead(404);
      res.end();
      return undefined;
    });
    await new Promise((r) => server.listen(0, '127.0.0.1', r));
    base = `http://127.0.0.1:${server.address().port}/`;
    b = await launch();
    page = b.page;
    page.setDefaultTimeout(20000);
  });

  after(async () => {
    if (b) await b.close();
    if (server) server.close();
  });

  const values = async (title) => JSON.parse(await page.locator(`.chart[data-chart="${title}"]`).getAttribute('data-values'));

  it('lines the IOPS dip up with the device saturating', async () => {
    await page.goto(`${base}#/runs/r1/telemetry`);
    await page.locator('table[aria-label="telemetry means"]').waitFor();
    assert.equal(await page.locator('section.telemetry').getAttribute('data-aligned'), 'true');
    const iops = await values('IOPS');
    const util = await values('Device utilisation');
    // IOPS windows end at 1..10 s; samples end 0.7 s before the windows start
    // counting: at 0.3, 1.3, ... 10.3 s (the first one is all layout).
    assert.deepEqual(iops[0], [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
    assert.deepEqual(util[0], SECONDS.map((s) => Math.round((s.t_s - LAYOUT_MS / 1000) * 1000) / 1000));
    // The lowest IOPS and the highest util fall at the same time (within a sample).
    const lowX = iops[0].filter((_, i) => iops[1][i] < 10000);
    const satX = util[0].filter((_, i) => util[1][i] === 100);
    assert.deepEqual(lowX, [5, 6]);
    assert.deepEqual(satX, [5.3]);
    for (const x of satX) assert.ok(lowX.some((l) => Math.abs(l - x) <= 1), `saturation at ${x} s, dip at ${lowX}`);
    assert.deepEqual((await values('Device await'))[1], SECONDS.map((s) => s.devices.nvme0n1.await_ms));
    assert.deepEqual((await values('Device interrupts'))[1], SECONDS.map((s) => s.dev_irq_s));
    const cpu = await values('CPU (mean over CPUs)');
    assert.deepEqual(cpu[5], SECONDS.map((s) => s.cpu.iowait_pct));
    // Per CPU: CPU 0 and CPU 2 took the device's IRQs (CPU 1 none: not drawn);
    // they move to CPU 2 at the dip, on the same time axis.
    const pc = await values('Device interrupts per CPU');
    assert.deepEqual(JSON.parse(await page.locator('.chart[data-chart="Device interrupts per CPU"]').getAttribute('data-labels')), ['CPU 0', 'CPU 2']);
    assert.deepEqual(pc[0], util[0]);
    assert.deepEqual(pc[1], CPUS[0].dev_irq_s);
    assert.deepEqual(pc[2], CPUS[2].dev_irq_s);
    assert.deepEqual(pc[0].filter((_, i) => pc[2][i] > 0), [4.3, 5.3, 6.3]);
    const soft = await values('softirq per CPU');
    assert.deepEqual(soft.slice(1), [CPUS[0].softirq_pct, CPUS[2].softirq_pct]);
    // One axis for all charts: [0, 11] (samples end at 0.3 .. 10.3 s).
    assert.deepEqual(JSON.parse(await page.locator('section.telemetry').getAttribute('data-range')), [0, 11]);
    // Means: every key, readable, per-CPU rows folded.
    assert.equal(await page.locator('tr[data-metric]').count(), Object.keys(MEANS).length);
    assert.match(await page.locator('table[aria-label="telemetry means"] tr[data-metric="dev.nvme0n1.util_pct"]').innerText(), /nvme0n1 util %\s+52/);
    assert.equal(await page.locator('table[aria-label="telemetry means per CPU"] tr[data-metric]').count(), 2);
    const text = await page.locator('main').innerText();
    for (const s of ['nvme0q1 nvme0q2', 'nvme0n1', 'share one time axis']) assert.ok(text.includes(s), `page lacks "${s}"`);
    // Hovering one chart moves the cursor on all (one uPlot sync key): the
    // util chart's legend shows the value under the IOPS chart's cursor.
    const utilValue = page.locator('.chart[data-chart="Device utilisation"] .u-legend .u-series:nth-child(2) .u-value');
    assert.equal(await utilValue.innerText(), '–');
    const over = page.locator('.chart[data-chart="IOPS"] .u-over');
    const box = await over.boundingBox();
    await page.mouse.move(box.x + box.width * 0.48, box.y + box.height / 2); // x ≈ 5.3 s
    await page.waitForFunction(() => document.querySelector('.chart[data-chart="Device utilisation"] .u-legend .u-series:nth-child(2) .u-value')?.textContent !== '–');
    assert.equal(await utilValue.innerText(), '100%');
    await page.mouse.move(0, 0);
    await b.shot('ui-run-telemetry');
  });

  it('says so when the telemetry has no clock stamp', async () => {
    await page.goto(`${base}#/runs/r2/telemetry`);
    await page.locator('table[aria-label="telemetry means"]').waitFor();
    assert.equal(await page.locator('section.telemetry').getAttribute('data-aligned'), 'false');
    assert.match(await page.getByTestId('telemetry-note').innerText(), /Not aligned by the clock/);
    assert.deepEqual((await values('Device utilisation'))[0], SECONDS.map((s) => s.t_s));
    await b.shot('ui-run-telemetry-unaligned');
  });

  it('waits for a running run and shows why a result has none', async () => {
    await page.goto(`${base}#/runs/r3/telemetry`);
    await page.getByText('The run is running').waitFor();
    assert.equal(await page.locator('.chart').count(), 0);
    await page.goto(`${base}#/runs/r4/telemetry`);
    await page.getByText('has no telemetry').waitFor();
    assert.equal(await page.locator('.chart').count(), 0);
  });

  it('is linked from the finished run page', async () => {
    await page.goto(`${base}#/runs/r1`);
    await page.getByTestId('telemetry-link').click();
    await page.waitForURL(/#\/runs\/r1\/telemetry$/);
    await page.locator('.chart[data-chart="IOPS"]').waitFor();
  });

  it('logged no errors', () => {
    assert.deepEqual(b.external, []);
    assert.deepEqual(b.errors, []);
  });
});
