// A fake of the controller's REST API (/api/v1) for the dashboard's UI test, plus
// the static dashboard at `/`. It speaks the way the controller serializes its
// protobuf messages (snake_case, 64-bit integers as strings, RUN_STATE_* enums,
// result_json / inventory_json as strings) and derives every run's state from the
// clock: queued for QUEUE_MS, then running with one interval record per second,
// then succeeded with a fio-compatible result.
import http from 'node:http';
import { serveStatic } from './static.mjs';
import { bucketValue } from '../src/stats.js';

export const QUEUE_MS = 1000;
const DEFAULT_RUN_MS = 6000;

const AGENTS = [
  {
    name: 'a1',
    state: 'up',
    labels: { rack: 'r1', kernel: '6.8.0' },
    inventory: {
      hostname: 'a1.lab',
      kernel_release: '6.8.0-31-generic',
      kernel_cmdline: 'BOOT_IMAGE=/vmlinuz root=/dev/sda1',
      cpu_model: 'AMD EPYC 7763 64-Core Processor',
      cpu_count: 16,
      numa_nodes: [
        { id: 0, cpus: [0, 1, 2, 3, 4, 5, 6, 7] },
        { id: 1, cpus: [8, 9, 10, 11, 12, 13, 14, 15] },
      ],
      block_devices: [
        { name: 'nvme0n1', model: 'Samsung SSD 990 PRO', size_bytes: '2000398934016', logical_block_size: 512, rotational: false, numa_node: 0 },
        { name: 'sda', model: 'ST4000NM000A', size_bytes: '4000787030016', logical_block_size: 4096, rotational: true, numa_node: -1 },
      ],
      engines: ['io_uring', 'libaio', 'psync', 'sync', 'null'],
      agent_version: '0.1.0',
    },
  },
  {
    name: 'a2',
    state: 'down',
    labels: { rack: 'r2' },
    inventory: {
      hostname: 'a2.lab',
      kernel_release: '6.1.0-18-amd64',
      cpu_model: 'Intel(R) Xeon(R) Gold 6338 CPU @ 2.00GHz',
      cpu_count: 8,
      numa_nodes: [{ id: 0, cpus: [0, 1, 2, 3, 4, 5, 6, 7] }],
      block_devices: [{ name: 'nvme0n1', model: 'INTEL SSDPE2KX040T8', size_bytes: '4000787030016', logical_block_size: 512, rotational: false, numa_node: 0 }],
      engines: ['io_uring', 'psync', 'null'],
      agent_version: '0.1.0',
    },
  },
];

// Deterministic noise in [0, 1).
function rand(seed) {
  let x = Math.sin(seed * 12.9898 + 78.233) * 43758.5453;
  return x - Math.floor(x);
}

// fio bucket index of a latency in ns (plat_val_to_idx).
export function bucketIndex(v) {
  if (v < 128) return Math.floor(v);
  const msb = Math.floor(Math.log2(v));
  const e = msb - 6;
  return Math.min(1855, (e + 1) * 64 + (Math.floor(v / 2 ** e) & 63));
}

function runtimeMs(fio) {
  const m = /^\s*runtime\s*=\s*([0-9.]+)\s*$/m.exec(fio || '');
  return m ? Math.min(30000, Number(m[1]) * 1000) : DEFAULT_RUN_MS;
}

function cross(sweep) {
  let cells = [{}];
  for (const [k, v] of Object.entries(sweep || {})) {
    const values = Array.isArray(v) ? v : v.values || [];
    cells = cells.flatMap((c) => values.map((x) => ({ ...c, [k]: String(x) })));
  }
  return cells.map((c) =>
    Object.entries(c)
      .map(([k, v]) => `${k}=${v}`)
      .join(','),
  );
}

function percentiles(mean) {
  return {
    '1.000000': Math.round(mean * 0.5),
    '50.000000': Math.round(mean * 0.95),
    '90.000000': Math.round(mean * 1.4),
    '99.000000': Math.round(mean * 2.1),
    '99.900000': Math.round(mean * 3.3),
  };
}

// json+ "bins" of the run: the interval histograms summed (keys: bucket values
// in ns), or a fixed spread when the run has no records; total latency adds 2 µs.
function resultBins(records) {
  const bins = {};
  const add = (ns, c) => {
    bins[ns] = (bins[ns] || 0) + c;
  };
  if (records.length) {
    for (const r of records) for (const [idx, c] of r.hist) add(bucketValue(idx), c);
  } else {
    add(bucketValue(bucketIndex(60000)), 60000);
    add(bucketValue(bucketIndex(100000)), 180000);
    add(bucketValue(bucketIndex(180000)), 57000);
    add(bucketValue(bucketIndex(700000)), 3000);
  }
  const lat = {};
  for (const [k, v] of Object.entries(bins)) lat[Number(k) + 2000] = v;
  return { clat: bins, lat };
}

function fioResult(run, records, latBins = false) {
  const ios = records.length ? records.reduce((s, r) => s + r.ios, 0) : 300000;
  const bins = resultBins(records);
  const secs = Math.max(1, records.length || 6);
  return {
    'fio version': 'iofleet-0.1.0',
    timestamp: Math.floor(Date.now() / 1000),
    'global options': {},
    jobs: [
      {
        jobname: 'randread',
        groupid: 0,
        error: 0,
        read: {
          io_bytes: ios * 4096,
          io_kbytes: (ios * 4096) / 1024,
          bw_bytes: Math.round((ios * 4096) / secs),
          bw: Math.round((ios * 4) / secs),
          iops: ios / secs,
          runtime: secs * 1000,
          total_ios: ios,
          short_ios: 0,
          drop_ios: 0,
          clat_ns: { min: 20000, max: 900000, mean: 101234.5, stddev: 12000, N: ios, percentile: percentiles(101234.5), bins: bins.clat },
          lat_ns: latBins
            ? { min: 22000, max: 902000, mean: 103234.5, stddev: 12000, N: ios, percentile: percentiles(103234.5), bins: bins.lat }
            : { min: 22000, max: 902000, mean: 103234.5, stddev: 12000, N: ios },
        },
        write: { io_bytes: 0, total_ios: 0, iops: 0, bw: 0, bw_bytes: 0, clat_ns: { N: 0, mean: 0 } },
        trim: { io_bytes: 0, total_ios: 0, iops: 0, bw: 0, bw_bytes: 0, clat_ns: { N: 0, mean: 0 } },
      },
    ],
  };
}

// The seeded A/B sweep table (controller/compare/render.cc ToJson shape).
function compareTable() {
  const arm = (median, spread, n = 6) => ({ n, hosts: 1, median, ci: [median * (1 - spread), median * (1 + spread)], cv: spread / 2, outliers: [] });
  const rows = [];
  const cells = ['iodepth=1', 'iodepth=4', 'iodepth=16', 'iodepth=64'];
  const iops = [
    [14000, 13950, 'no_change', 0.61],
    [52000, 55600, 'improvement', 0.002],
    [180000, 160000, 'regression', 0.001],
    [410000, 415000, 'inconclusive', 0.2],
  ];
  cells.forEach((cell, i) => {
    const [a, b, verdict, p] = iops[i];
    const d = (b / a - 1) * 100;
    rows.push({
      cell,
      metric: 'iops',
      higher_is_better: true,
      threshold: 0.02,
      a: arm(a, 0.01),
      b: arm(b, 0.012),
      paired: false,
      pairs: 0,
      delta_pct: d,
      delta_ci_pct: [d - 1.5, d + 1.5],
      ci_method: 'bootstrap',
      test: 'mann-whitney-exact',
      p,
      q: Math.min(1, p * 2),
      noisy: false,
      confounded: false,
      confounders: [],
      verdict,
      statistical_verdict: verdict,
      reason: `${verdict} (fake)`,
      per_host: [
        { host: 'a1', n: 3, delta_pct: d - 0.5 },
        { host: 'a2', n: 3, delta_pct: d + 0.5 },
      ],
      n_needed: verdict === 'inconclusive' ? 12 : null,
    });
  });
  cells.forEach((cell, i) => {
    const noisy = i === 3;
    rows.push({
      cell,
      metric: 'p99_ns',
      higher_is_better: false,
      threshold: 0.05,
      a: arm(90000 * (i + 1), 0.02),
      b: arm(91000 * (i + 1), 0.02),
      paired: false,
      pairs: 0,
      delta_pct: 1.1,
      delta_ci_pct: [-0.8, 3.0],
      ci_method: 'bootstrap',
      test: 'mann-whitney-exact',
      p: 0.4,
      q: 0.6,
      noisy,
      confounded: false,
      confounders: [],
      verdict: noisy ? 'noisy' : 'no_change',
      statistical_verdict: 'no_change',
      reason: noisy ? 'over 20 % outliers in B' : 'CI inside ±τ',
      n_needed: null,
    });
  });
  return {
    headline: '47 of 48 runs usable; 1 run: fio error: see the run\'s result (iofleet result RUN)',
    usable: {
      runs_total: 48,
      runs_usable: 47,
      groups: [{ kind: 'error', label: 'fio error', advice: "see the run's result (iofleet result RUN)", runs: 1, admitted: false, details: ['error=5'] }],
      advice: [],
      headline: '47 of 48 runs usable; 1 run: fio error: see the run\'s result (iofleet result RUN)',
    },
    arm_a: 'A',
    arm_b: 'B',
    compared_attributes: ['kernel'],
    seed: 1,
    bootstrap_resamples: 10000,
    alpha: 0.05,
    outcome: 'fail',
    outcome_reasons: ['iops iodepth=16: regression'],
    rows,
    geomean: [
      { metric: 'iops', cells: 4, delta_pct: -1.9, delta_ci_pct: [-3.1, -0.7], verdict: 'inconclusive' },
      { metric: 'p99_ns', cells: 4, delta_pct: 1.1, delta_ci_pct: [-0.5, 2.7], verdict: 'no_change' },
    ],
    excluded: [{ run: 'r-excluded', arm: 'B', host: 'a1', cell: 'iodepth=64', order: 7, reasons: ['error=5'] }],
    ignored_runs: 0,
  };
}

class ApiError extends Error {
  constructor(status, code, message, field = '') {
    super(message);
    this.status = status;
    this.code = code;
    this.field = field;
  }
}

export class FakeApi {
  // token: when set, every /api/v1 call needs "Authorization: Bearer <token>"
  // (401 otherwise, as the controller with --api-token-file).
  constructor({ seedJobs = 0, token = '' } = {}) {
    this.token = token;
    this.jobs = [];
    this.runs = new Map();
    this.requests = [];
    this.nextJob = 1;
    this.nextRun = 1;
    const now = Date.now();
    for (let i = 0; i < seedJobs; i++) {
      this._addJob({ name: `old-job-${i + 1}`, fio: '[j]\nrw=read\nruntime=1\n', hosts: ['a1'] }, now - 86400000 + i * 1000, true);
    }
    // Queued for good, with the reason the controller gives, and a name from an
    // older store that holds control characters.
    this.waitingJob = this._addJob({ name: 'waits\u001b[2J\u0000here', fio: '[j]\nrw=read\nruntime=1\n', hosts: ['a2'] }, now - 60000);
    this.waitingJob.runs[0].waiting_for = 'agent a2 is down since 2024-05-01T12:00:00.000Z';
    this.bigJob = this._addJob({ name: 'big job', fio: '[j]\nrw=read\nruntime=1\n', hosts: ['a1'], repeat: 250 }, now - 7200000, true);
    this.sweepJob = this._addJob(
      {
        name: 'kernel A/B iodepth sweep',
        fio: '[global]\nioengine=io_uring\nbs=4k\nruntime=10\n[rr]\nrw=randread\n',
        variants: [
          { name: 'A', hosts: ['a1'] },
          { name: 'B', hosts: ['a2'] },
        ],
        sweep: { iodepth: ['1', '4', '16', '64'] },
      },
      now - 3600000,
      true,
    );
  }

  _addJob(spec, createdMs, finished = false) {
    const id = `j${String(this.nextJob++).padStart(4, '0')}`;
    const variants = spec.variants && spec.variants.length ? spec.variants : [{ name: '', hosts: spec.hosts || [] }];
    const runs = [];
    const repeat = spec.repeat || 1;
    for (const v of variants) {
      for (const cell of cross(spec.sweep)) {
        for (const host of v.hosts && v.hosts.length ? v.hosts : spec.hosts || ['a1']) {
          for (let rep = 0; rep < repeat; rep++) {
            const r = {
              id: `r${String(this.nextRun++).padStart(5, '0')}`,
              job_id: id,
              host,
              target: '/tmp/iofleet-test',
              variant: v.name,
              cell,
              repetition: rep,
              created_ms: createdMs,
              run_ms: runtimeMs(spec.fio),
              cancelled_ms: 0,
              finished: finished,
            };
            runs.push(r);
            this.runs.set(r.id, r);
          }
        }
      }
    }
    const job = { id, seq: this.jobs.length + 1, name: spec.name || '', created_ms: createdMs, spec, runs };
    this.jobs.push(job);
    return job;
  }

  // Derived state of a run at `now`.
  _runView(r, now = Date.now()) {
    const start = r.created_ms + QUEUE_MS;
    const end = start + r.run_ms;
    let state;
    if (r.finished) state = 'succeeded';
    else if (r.waiting_for) state = 'queued';
    else if (r.cancelled_ms && r.cancelled_ms < end) state = 'cancelled';
    else if (now < start) state = 'queued';
    else if (now < end) state = 'running';
    else state = 'succeeded';
    const started = r.finished ? r.created_ms : state === 'queued' ? 0 : start;
    const finished = state === 'succeeded' ? (r.finished ? r.created_ms + r.run_ms : end) : state === 'cancelled' ? r.cancelled_ms : 0;
    return { state, started, finished, start, end };
  }

  _records(r, now = Date.now()) {
    const v = this._runView(r, now);
    if (v.state === 'queued') return [];
    const until = Math.min(now, v.finished || now, v.end);
    const n = r.finished ? 0 : Math.max(0, Math.floor((until - v.start) / 1000));
    const out = [];
    for (let i = 0; i < n; i++) {
      const noise = rand(i + r.id.length);
      const ios = Math.round(48000 + 4000 * noise + i * 500);
      const hist = [
        [bucketIndex(60000), Math.round(ios * 0.2)],
        [bucketIndex(100000 + 10000 * noise), Math.round(ios * 0.6)],
        [bucketIndex(180000), Math.round(ios * 0.19)],
        [bucketIndex(700000 + 100000 * noise), ios - Math.round(ios * 0.2) - Math.round(ios * 0.6) - Math.round(ios * 0.19)],
      ];
      out.push({ i, ios, hist, t_start_ms: v.start + i * 1000, t_end_ms: v.start + (i + 1) * 1000 });
    }
    return out;
  }

  runJson(r, withResult) {
    const v = this._runView(r);
    const out = {
      id: r.id,
      job_id: r.job_id,
      host: r.host,
      target: r.target,
      state: `RUN_STATE_${v.state.toUpperCase()}`,
      variant: r.variant,
      cell: r.cell,
      repetition: r.repetition,
      created_ms: String(r.created_ms),
      started_ms: String(v.started),
      finished_ms: String(v.finished),
      error: v.state === 'cancelled' ? 'cancelled' : '',
    };
    if (v.state === 'queued' && r.waiting_for) out.waiting_for = r.waiting_for;
    if (r.repetition === 0) delete out.repetition; // proto JSON omits zero values
    if (withResult && v.state === 'succeeded') {
      const job = this.jobs.find((j) => j.id === r.job_id);
      const latBins = /^\s*lat_percentiles\s*=\s*1\s*$/m.test((job && job.spec.fio) || '');
      out.result_json = JSON.stringify(fioResult(r, this._records(r), latBins));
    }
    return out;
  }

  jobState(job) {
    const states = job.runs.map((r) => this._runView(r).state);
    if (states.every((s) => s === 'succeeded')) return 'succeeded';
    if (states.every((s) => s === 'succeeded' || s === 'cancelled')) return states.includes('succeeded') ? 'cancelled' : 'cancelled';
    if (states.some((s) => s === 'running')) return 'running';
    return states.includes('succeeded') ? 'running' : 'queued';
  }

  jobJson(job, withRuns) {
    const spec = { ...job.spec, fio_text: job.spec.fio };
    delete spec.fio;
    const out = { id: job.id, name: job.name, state: this.jobState(job), created_ms: String(job.created_ms) };
    if (withRuns) {
      out.spec = spec;
      out.runs = job.runs.map((r) => this.runJson(r, false));
    }
    return out;
  }

  submit(body) {
    if (!body || typeof body !== 'object') throw new ApiError(400, 'INVALID_ARGUMENT', 'body must be a JSON object');
    if (!body.fio || !String(body.fio).trim()) throw new ApiError(400, 'INVALID_ARGUMENT', 'fio: give exactly one of "fio" (job file text) or "options"', 'fio');
    if (/^\s*iodepth\s*=\s*0\s*$/m.test(body.fio)) throw new ApiError(400, 'INVALID_ARGUMENT', 'fio: jobs[0].iodepth: must be >= 1', 'fio');
    const hosts = body.hosts || [];
    for (const [i, h] of hosts.entries()) {
      if (!AGENTS.some((a) => a.name === h)) throw new ApiError(400, 'INVALID_ARGUMENT', `hosts[${i}]: no registered agent "${h}"`, `hosts[${i}]`);
    }
    if (!hosts.length && !(body.variants || []).length && !Object.keys(body.selector || {}).length) {
      throw new ApiError(400, 'INVALID_ARGUMENT', 'hosts: no hosts to run on: give host names or a label selector', 'hosts');
    }
    if (body.repeat !== undefined && (!Number.isInteger(body.repeat) || body.repeat > 1000)) {
      throw new ApiError(400, 'INVALID_ARGUMENT', 'repeat: must be <= 1000', 'repeat');
    }
    const spec = { ...body, hosts: hosts.length ? hosts : ['a1'] };
    return this._addJob(spec, Date.now());
  }

  async handle(req, res) {
    const url = new URL(req.url, 'http://x');
    const path = url.pathname.replace(/^\/api\/v1/, '');
    const send = (status, obj) => {
      res.writeHead(status, { 'Content-Type': 'application/json' });
      res.end(JSON.stringify(obj));
    };
    let body = '';
    for await (const chunk of req) body += chunk;
    const auth = req.headers.authorization || '';
    this.requests.push({ method: req.method, path, query: url.search, body, auth });
    let m;
    try {
      if (this.token && auth !== `Bearer ${this.token}`) {
        throw new ApiError(401, 'UNAUTHENTICATED', auth ? 'invalid bearer token' : 'missing "Authorization: Bearer <token>" header');
      }
      if (req.method === 'GET' && path === '/agents') {
        const now = Date.now();
        return send(200, {
          agents: AGENTS.map((a) => ({
            name: a.name,
            state: a.state,
            last_seen_ms: String(a.state === 'up' ? now - 1500 : now - 3600000),
            labels: a.labels,
            inventory_json: JSON.stringify(a.inventory),
            protocol_version: 1,
            allow_paths: ['/tmp'],
          })),
        });
      }
      if (req.method === 'GET' && path === '/jobs') {
        // As the controller: ?order=newest (page_token = older than), ?name
        // (contains), ?tag=k=v, ?state.
        const size = Math.min(1000, Number(url.searchParams.get('page_size')) || 100);
        const after = Number(url.searchParams.get('page_token') || 0);
        const newest = url.searchParams.get('order') === 'newest';
        const name = url.searchParams.get('name') || '';
        const state = url.searchParams.get('state') || '';
        const tag = url.searchParams.get('tag') || '';
        let all = this.jobs.filter(
          (j) =>
            (!name || j.name.includes(name)) &&
            (!state || this.jobState(j) === state) &&
            (!tag || (j.spec.tags || {})[tag.split('=')[0]] === tag.slice(tag.indexOf('=') + 1)),
        );
        if (newest) all = all.slice().reverse();
        const rest = all.filter((j) => !after || (newest ? j.seq < after : j.seq > after));
        const page = rest.slice(0, size);
        const last = page.length ? page[page.length - 1].seq : after;
        const more = rest.length > size;
        return send(200, { jobs: page.map((j) => this.jobJson(j, false)), ...(more ? { next_page_token: String(last) } : {}) });
      }
      if (req.method === 'POST' && path === '/jobs') {
        let parsed;
        try {
          parsed = JSON.parse(body);
        } catch {
          throw new ApiError(400, 'INVALID_ARGUMENT', 'body is not JSON');
        }
        const job = this.submit(parsed);
        return send(201, { id: job.id });
      }
      if ((m = /^\/jobs\/([^/]+)$/.exec(path)) && req.method === 'GET') {
        const job = this.jobs.find((j) => j.id === m[1]);
        if (!job) throw new ApiError(404, 'NOT_FOUND', `job ${m[1]} not found`);
        return send(200, this.jobJson(job, true));
      }
      if ((m = /^\/jobs\/([^/]+)\/cancel$/.exec(path)) && req.method === 'POST') {
        const job = this.jobs.find((j) => j.id === m[1]);
        if (!job) throw new ApiError(404, 'NOT_FOUND', `job ${m[1]} not found`);
        for (const r of job.runs) if (!r.cancelled_ms && !r.finished) r.cancelled_ms = Date.now();
        return send(200, this.jobJson(job, true));
      }
      if ((m = /^\/jobs\/([^/]+)\/compare$/.exec(path)) && req.method === 'GET') {
        const job = this.jobs.find((j) => j.id === m[1]);
        if (!job) throw new ApiError(404, 'NOT_FOUND', `job ${m[1]} not found`);
        if (job !== this.sweepJob) throw new ApiError(400, 'FAILED_PRECONDITION', 'the job has no A and B variants to compare');
        return send(200, compareTable());
      }
      if (req.method === 'GET' && path === '/compare') {
        const a = this.jobs.find((j) => j.id === url.searchParams.get('a'));
        const b = this.jobs.find((j) => j.id === url.searchParams.get('b'));
        if (!a) throw new ApiError(404, 'NOT_FOUND', `job ${url.searchParams.get('a')} not found`, 'a');
        if (!b) throw new ApiError(404, 'NOT_FOUND', `job ${url.searchParams.get('b')} not found`, 'b');
        return send(200, { ...compareTable(), arm_a: a.id, arm_b: b.id });
      }
      if (req.method === 'GET' && path === '/runs') {
        const size = Math.min(1000, Number(url.searchParams.get('page_size')) || 100);
        const after = Number(url.searchParams.get('page_token') || 0);
        const jobId = url.searchParams.get('job_id') || '';
        const state = url.searchParams.get('state') || '';
        const all = [...this.runs.values()].filter((r) => (!jobId || r.job_id === jobId) && (!state || this._runView(r).state === state));
        const from = all.findIndex((r) => Number(r.id.slice(1)) > after);
        const page = from < 0 ? [] : all.slice(from, from + size);
        const last = page.length ? Number(page[page.length - 1].id.slice(1)) : after;
        const more = from >= 0 && from + size < all.length;
        return send(200, { runs: page.map((r) => this.runJson(r, false)), next_page_token: more ? String(last) : '' });
      }
      if ((m = /^\/runs\/([^/]+)$/.exec(path)) && req.method === 'GET') {
        const r = this.runs.get(m[1]);
        if (!r) throw new ApiError(404, 'NOT_FOUND', `run ${m[1]} not found`);
        return send(200, this.runJson(r, true));
      }
      if ((m = /^\/runs\/([^/]+)\/logs$/.exec(path)) && req.method === 'GET') {
        if (!this.runs.get(m[1])) throw new ApiError(404, 'NOT_FOUND', `run ${m[1]} not found`);
        return send(200, { run_id: m[1], logs: [] });
      }
      if ((m = /^\/runs\/([^/]+)\/samples$/.exec(path)) && req.method === 'GET') {
        const r = this.runs.get(m[1]);
        if (!r) throw new ApiError(404, 'NOT_FOUND', `run ${m[1]} not found`);
        // Total latency as the agent sends it: clat + 2 µs, absent (lat_measured
        // false) when the job sets gtod_reduce or disable_lat.
        const job = this.jobs.find((j) => j.id === r.job_id);
        const noLat = /^\s*(gtod_reduce|disable_lat)\s*=\s*1\s*$/m.test((job && job.spec.fio) || '');
        const latOf = (hist) => hist.map(([idx, c]) => [bucketIndex(bucketValue(idx) + 2000), c]);
        return send(200, {
          records: this._records(r).map((x) => ({
            run_id: r.id,
            job_name: 'randread',
            seq: String(x.i),
            t_start_ms: String(x.t_start_ms),
            t_end_ms: String(x.t_end_ms),
            read: {
              ios: String(x.ios),
              bytes: String(x.ios * 4096),
              clat_bucket: x.hist.map((e) => e[0]),
              clat_count: x.hist.map((e) => String(e[1])),
              lat_bucket: noLat ? [] : latOf(x.hist).map((e) => e[0]),
              lat_count: noLat ? [] : latOf(x.hist).map((e) => String(e[1])),
              lat_measured: !noLat,
            },
            write: {},
            trim: {},
          })),
        });
      }
      throw new ApiError(404, 'NOT_FOUND', `no route ${req.method} ${path}`);
    } catch (e) {
      if (!(e instanceof ApiError)) throw e;
      return send(e.status, { error: { code: e.code, message: e.message, field: e.field } });
    }
  }
}

// Starts the fake on 127.0.0.1:0. Returns {url, api, close()}.
export async function startFake(options) {
  const api = new FakeApi(options);
  const server = http.createServer(async (req, res) => {
    try {
      if (req.url.startsWith('/api/v1/')) return await api.handle(req, res);
      if (await serveStatic(req, res)) return;
      res.writeHead(404, { 'Content-Type': 'text/plain' });
      res.end('not found');
    } catch (e) {
      res.writeHead(500, { 'Content-Type': 'application/json' });
      res.end(JSON.stringify({ error: { code: 'INTERNAL', message: String(e) } }));
    }
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address();
  return {
    url: `http://127.0.0.1:${port}/`,
    api,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections?.();
        server.close(resolve);
      }),
  };
}
