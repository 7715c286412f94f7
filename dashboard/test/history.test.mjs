// The history pages (src/pages/history.js) in headless Chromium against a small
// fake of /api/v1/series and /api/v1/alerts: the series list, one series with its
// change point marked and per-host spread, and triage from the alerts page.
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { serveStatic, DIST } from '../testlib/static.mjs';
import { launch, chromiumMissing } from '../testlib/browser.mjs';

const skip = chromiumMissing() || (existsSync(join(DIST, 'index.html')) ? null : 'dashboard/dist is not built (run dashboard/build.sh)');

const axes = { job_name: 'ci-randread', metric: 'iops', branch: 'main', cpu_model: 'Xeon', device: 'nvme X', workload: 'w', variant: '', cell: '', numa: '1 nodes x [2] cpus', kernel_cmdline: 'quiet' };
// Series order (run seq): warm-up w0 (h1) 0, w1 (h2) 1, r0 2, r1 4, r2 6,
// w2 (h3, a host that joined later) 7, r3 8, r4 10, r5 12.
const points = [100, 101, 99, 90, 91, 89].map((v, i) => ({
  run_id: `r${i}`, job_id: `j${i}`, order: 2 * i + 2, time_ms: 1700000000000 + i, value: v * 1000, cv: 0.01,
  axes: { host: i % 2 ? 'h2' : 'h1', kernel_release: i < 3 ? '6.12' : '6.13', tags: { commit: `c${i}`, build: i < 3 ? 'b1' : 'b2' } },
}));
// Each host's first run: in `warmup_points`, not detected on (page-cache fast).
const warmup = [[0, 'h1', 250], [1, 'h2', 240], [7, 'h3', 245]].map(([order, host, v], i) => ({
  run_id: `w${i}`, job_id: `jw${i}`, order, time_ms: 1700000000000 + order, value: v * 1000,
  axes: { host, kernel_release: '6.12', tags: { commit: `cw${i}`, build: 'b1' } },
}));
// `builds` as controller/history/builds.h writes it: two builds of three points.
const group = (value, idx) => {
  const v = idx.map((i) => points[i].value);
  const mean = v.reduce((a, b) => a + b, 0) / v.length;
  return {
    value, points: v.length, runs: idx.map((i) => points[i].run_id), mean, median: [...v].sort((a, b) => a - b)[1],
    stddev_pct: 1, min: Math.min(...v), max: Math.max(...v), first_order: idx[0], last_order: idx.at(-1),
    hosts: ['h1', 'h2'], kernel_releases: [points[idx[0]].axes.kernel_release],
  };
};
const BUILDS = { tag: 'build', groups: [group('b1', [0, 1, 2]), group('b2', [3, 4, 5])], untagged: 0 };
const SERIES = {
  key: 'k1', metric: 'iops', axes, created_ms: 1, points, warmup_points: warmup,
  change_points: [{ index: 3, first_after_run: 'r3', change_pct: -10, verdict: 'DIFFERENT', decision: 'alert', reason: 'confirmed' }],
  parameters: 'edivisive(...)', note: '', hosts: [{ host: 'h1', points: 3, mean: 95000, median: 95000, stddev_pct: 5.5 }, { host: 'h2', points: 3, mean: 94000, median: 94000, stddev_pct: 6.5 }],
  builds: BUILDS,
};
const ALERT = { id: 'a1', kind: 'change', series: 'k1', metric: 'iops', change_pct: -10, regression: true, state: 'untriaged', status: 'active', first_run: { run_id: 'r3', job_id: 'j3', tags: { commit: 'c3' }, kernel_release: '6.13' }, created_ms: 1700000000000, updated_ms: 1700000000000 };
const WITHDRAWN = {
  ...ALERT, id: 'a2', change_pct: -58, state: 'acknowledged', status: 'withdrawn',
  status_change: { status: 'withdrawn', from: 'active', decision: 'went_away', reason: 'went away: the newest 3 points are nearer the old level than the new', points: 40, last_run: 'r40', at_ms: 1700000100000 },
};
// An alert whose change lies before the analysed part (worker.cc FrozenJson).
const FROZEN = {
  ...ALERT, id: 'a3', change_pct: -20,
  decision_frozen: { reason: 'the change (point 40) lies before the analysed part of the series (its newest 300 of 1000 points, from point 700, run r700; changes before point 775 are not re-checked): its last decision is kept', change_point: 40, window_first_point: 700, window_first_run: 'r700', settled_before_point: 775, points: 1000, at_ms: 1700000200000 },
};
const alertQueries = [];

describe('history pages', { skip: skip || false, timeout: 120000 }, () => {
  let server;
  let base;
  let b;
  let page;
  const posts = [];

  before(async () => {
    server = http.createServer(async (req, res) => {
      const url = new URL(req.url, 'http://x');
      const reply = (obj) => {
        res.writeHead(200, { 'Content-Type': 'application/json' });
        res.end(JSON.stringify(obj));
      };
      if (url.pathname === '/api/v1/series') return reply({ series: [{ key: 'k1', metric: 'iops', axes, created_ms: 1 }] });
      if (url.pathname === '/api/v1/series/k1') return reply(SERIES);
      if (url.pathname === '/api/v1/alerts') {
        alertQueries.push(url.search);
        const st = url.searchParams.get('status');
        return reply({ alerts: st === 'all' ? [ALERT, WITHDRAWN, FROZEN] : st === 'withdrawn' ? [WITHDRAWN] : [ALERT, FROZEN] });
      }
      if (url.pathname === '/api/v1/alerts/a1/state' && req.method === 'POST') {
        let body = '';
        for await (const c of req) body += c;
        posts.push(JSON.parse(body));
        return reply({ ...ALERT, state: JSON.parse(body).state });
      }
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

  it('lists series and shows one with its change point and per-host spread', async () => {
    await page.goto(`${base}#/series`);
    await page.locator('tr[data-series="k1"]').waitFor();
    assert.match(await page.locator('tr[data-series="k1"]').innerText(), /ci-randread/);
    await b.shot('ui-series-list');
    await page.goto(`${base}#/series/k1`);
    const chart = page.locator('.chart[data-points="6"][data-changes="1"]');
    await chart.waitFor();
    // Points, change marks and warm-up points in series order (by `order`).
    const _ = null;
    assert.deepEqual(JSON.parse(await chart.getAttribute('data-values')), [
      [0, 1, 2, 3, 4, 5, 6, 7, 8],
      [_, _, 100000, 101000, 99000, _, 90000, 91000, 89000],
      [_, _, _, _, _, _, 90000, _, _],
      [250000, 240000, _, _, _, 245000, _, _, _],
    ]);
    assert.equal(await chart.getAttribute('data-warmup'), '3');
    // The warm-up points are drawn (hollow orange rings: #ff7f0e) and labelled.
    const orange = (loc) => loc.locator('canvas').evaluate((cv) => {
      const d = cv.getContext('2d').getImageData(0, 0, cv.width, cv.height).data;
      let n = 0;
      for (let i = 0; i < d.length; i += 4) if (d[i] === 255 && d[i + 1] === 127 && d[i + 2] === 14) n++;
      return n;
    });
    const rings = await orange(chart);
    assert.ok(rings > 30, `orange (warm-up) pixels in the series chart: ${rings}`);
    const legend = await chart.locator('.u-legend').innerText();
    assert.match(legend, /warm-up \(not detected on\)/, legend);
    const text = await page.locator('main').innerText();
    for (const s of ['r3', '-10.0%', 'DIFFERENT', 'h1', '±5.5%']) assert.ok(text.includes(s), `series page lacks "${s}": ${text}`);
    // Per build: each build's mean with a min..max whisker, from `builds`.
    const builds = page.locator('section[aria-label="per build"] .chart');
    await builds.waitFor();
    assert.deepEqual(JSON.parse(await builds.getAttribute('data-builds')), ['b1', 'b2']);
    assert.deepEqual(JSON.parse(await builds.getAttribute('data-values')), [
      [0, 1],
      BUILDS.groups.map((g) => g.mean),
      [99000, 89000],
      [101000, 91000],
    ]);
    // The whiskers are drawn: pixels of the series colour in the plot's canvas.
    const painted = await builds.locator('canvas').evaluate((cv) => {
      const ctx = cv.getContext('2d');
      const d = ctx.getImageData(0, 0, cv.width, cv.height).data;
      let n = 0;
      for (let i = 0; i < d.length; i += 4) if (d[i] === 31 && d[i + 1] === 119 && d[i + 2] === 180) n++;
      return n;
    });
    assert.equal(await builds.getAttribute('data-whiskers'), '2');
    // The two mean dots alone paint ~96 such pixels, with the whiskers ~150.
    assert.ok(painted > 120, `blue pixels in the per-build chart: ${painted}`);
    // Per host: each host's points in series order (h1 r0 r2 r4, h2 r1 r3 r5),
    // then each host's warm-up points, hollow in the host's colour.
    const hosts = page.locator('section[aria-label="per host"] .chart');
    assert.deepEqual(JSON.parse(await hosts.getAttribute('data-hosts')), ['h1', 'h2', 'h3']);
    assert.deepEqual(JSON.parse(await hosts.getAttribute('data-warmup-hosts')), ['h1', 'h2', 'h3']);
    const hv = JSON.parse(await hosts.getAttribute('data-values'));
    assert.deepEqual(hv[1], [_, _, 100000, _, 99000, _, _, 91000, _]);
    assert.deepEqual(hv[2], [_, _, _, 101000, _, _, 90000, _, 89000]);
    assert.deepEqual(hv[3], [_, _, _, _, _, _, _, _, _]); // h3 has only its warm-up
    assert.deepEqual(hv[4], [250000, _, _, _, _, _, _, _, _]);
    assert.deepEqual(hv[5], [_, 240000, _, _, _, _, _, _, _]);
    assert.deepEqual(hv[6], [_, _, _, _, _, 245000, _, _, _]);
    const hostLegend = await hosts.locator('.u-legend').innerText();
    for (const hname of ['h1', 'h2', 'h3']) assert.ok(hostLegend.includes(`${hname} warm-up (not detected on)`), hostLegend);
    assert.match(text, /3 warm-up/);
    await b.shot('ui-series');
  });

  it('triages an alert', async () => {
    await page.goto(`${base}#/alerts`);
    const row = page.locator('tr[data-alert="a1"]');
    await row.waitFor();
    assert.match(await row.innerText(), /-10\.0%/);
    await b.shot('ui-alerts');
    await row.locator('select').selectOption('acknowledged');
    for (let i = 0; i < 50 && posts.length === 0; i++) await new Promise((r) => setTimeout(r, 100));
    assert.deepEqual(posts, [{ state: 'acknowledged' }]);
  });

  it('lists withdrawn alerts only when asked, with why', async () => {
    const row = page.locator('tr[data-alert="a1"]');
    assert.equal(await row.locator('td[data-status]').getAttribute('data-status'), 'active');
    assert.equal(await page.locator('tr[data-alert="a2"]').count(), 0);
    await page.locator('p[aria-label="status filter"] a', { hasText: 'all' }).click();
    const w = page.locator('tr[data-alert="a2"]');
    await w.waitFor();
    assert.match(await w.innerText(), /withdrawn/);
    assert.match(await w.innerText(), /went_away at 40 points/);
    assert.ok(alertQueries.some((q) => q.includes('status=all')), alertQueries.join(' '));
    await b.shot('ui-alerts-all');
  });

  it('says when an alert\'s decision is not re-checked (its change is older than the analysed part)', async () => {
    await page.goto(`${base}#/alerts`);
    const f = page.locator('tr[data-alert="a3"]');
    await f.waitFor();
    assert.equal(await f.locator('[data-frozen]').getAttribute('data-frozen'), '700');
    assert.match(await f.innerText(), /not re-checked: older than the analysed part \(from point 700, run r700\)/);
    assert.equal(await page.locator('tr[data-alert="a1"] [data-frozen]').count(), 0);
  });
});
