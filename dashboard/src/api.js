// Client of the controller's REST API (/api/v1), and the one place that turns its
// JSON into the plain objects the pages use.
//
// The controller serializes protobuf messages (controller.proto, job.proto), so the
// normalizers accept both snake_case and lowerCamelCase keys, 64-bit integers as
// strings, enum names such as "RUN_STATE_RUNNING", and JSON documents carried as
// strings (result_json, inventory_json, table_json).

// Relative, so the dashboard also works when served below a path prefix.
export const API_BASE = 'api/v1';

export class ApiError extends Error {
  constructor(status, code, message, field) {
    super(message || `HTTP ${status}`);
    this.name = 'ApiError';
    this.status = status;
    this.code = code || '';
    this.field = field || '';
  }
}

function query(params) {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params || {})) {
    if (v !== undefined && v !== null && v !== '') q.set(k, String(v));
  }
  const s = q.toString();
  return s ? `?${s}` : '';
}

// ------------------------------------------------------------------ API token
//
// With --api-token-file on the controller every /api/v1 call needs
// "Authorization: Bearer <token>". The token is kept in sessionStorage: it lasts
// while the tab is open (reloads included) and is gone when the tab closes, so it
// is never left on disk of a shared machine, nor readable by other tabs; the cost
// is one prompt per new tab. On a 401 the stored token is dropped and the user is
// asked again (setTokenPrompt installs the dialog); the request is then retried.
export const TOKEN_KEY = 'iofleet.api_token';

function storage() {
  try {
    return globalThis.sessionStorage || null;
  } catch {
    return null; // storage disabled
  }
}

export function getToken() {
  const s = storage();
  return (s && s.getItem(TOKEN_KEY)) || '';
}

export function setToken(token) {
  const s = storage();
  if (!s) return;
  if (token) s.setItem(TOKEN_KEY, token);
  else s.removeItem(TOKEN_KEY);
  if (globalThis.dispatchEvent && globalThis.Event) globalThis.dispatchEvent(new Event('iofleet-token'));
}

// Headers every API call carries (also for fetches outside request()).
export function authHeaders() {
  const t = getToken();
  return t ? { Authorization: `Bearer ${t}` } : {};
}

let tokenPrompt = null; // (message) => Promise<string|null>
let pendingPrompt = null; // one dialog for all requests that got 401 at once

export function setTokenPrompt(fn) {
  tokenPrompt = fn;
}

// Asks for a token (once for concurrent callers). Resolves true when one was given.
async function askToken(message, rejected) {
  if (!tokenPrompt) return false;
  // Another request may already have stored a newer token while this one ran.
  if (getToken() && getToken() !== rejected) return true;
  if (!pendingPrompt) {
    setToken('');
    pendingPrompt = Promise.resolve(tokenPrompt(message)).finally(() => {
      pendingPrompt = null;
    });
  }
  const t = await pendingPrompt;
  if (t) setToken(t);
  return !!t;
}

export async function request(method, path, opts = {}) {
  for (;;) {
    const sent = getToken();
    try {
      return await requestOnce(method, path, opts);
    } catch (e) {
      if (!(e instanceof ApiError) || e.status !== 401 || (opts.signal && opts.signal.aborted)) throw e;
      const msg = sent ? `The controller refused the API token: ${e.message}` : `The controller needs an API token: ${e.message}`;
      if (!(await askToken(msg, sent))) throw e;
    }
  }
}

async function requestOnce(method, path, { params, body, signal, raw = false } = {}) {
  const init = { method, headers: { Accept: 'application/json', ...authHeaders() }, signal };
  if (body !== undefined) {
    init.headers['Content-Type'] = 'application/json';
    init.body = JSON.stringify(body);
  }
  let resp;
  try {
    resp = await fetch(`${API_BASE}${path}${query(params)}`, init);
  } catch (e) {
    if (e.name === 'AbortError') throw e;
    throw new ApiError(0, 'UNAVAILABLE', `cannot reach the controller: ${e.message}`);
  }
  const text = await resp.text();
  if (raw && resp.ok) return text;
  let data = null;
  if (text) {
    try {
      data = JSON.parse(text);
    } catch {
      data = null;
    }
  }
  if (!resp.ok) {
    const err = (data && data.error) || {};
    throw new ApiError(
      resp.status,
      err.code,
      err.message || (text && !data ? text.slice(0, 300) : `HTTP ${resp.status} ${resp.statusText}`),
      err.field,
    );
  }
  if (data === null && text) throw new ApiError(resp.status, 'BAD_RESPONSE', 'response is not JSON');
  return data;
}

// ------------------------------------------------------------------ helpers

function camel(snake) {
  return snake.replace(/_([a-z0-9])/g, (_, c) => c.toUpperCase());
}

// obj[snake] or obj[camelCase(snake)].
export function pick(obj, key, dflt = undefined) {
  if (!obj || typeof obj !== 'object') return dflt;
  if (obj[key] !== undefined && obj[key] !== null) return obj[key];
  const c = camel(key);
  if (obj[c] !== undefined && obj[c] !== null) return obj[c];
  return dflt;
}

export function num(x, dflt = 0) {
  if (x === undefined || x === null || x === '') return dflt;
  const n = typeof x === 'number' ? x : Number(x);
  return Number.isFinite(n) ? n : dflt;
}

// A JSON document that may arrive as a string, an object, or not at all.
function jsonDoc(x) {
  if (x === undefined || x === null || x === '') return null;
  if (typeof x === 'object') return x;
  try {
    return JSON.parse(x);
  } catch {
    return null;
  }
}

const RUN_STATES = ['unspecified', 'queued', 'assigned', 'running', 'succeeded', 'failed', 'cancelled', 'lost'];
export const TERMINAL_STATES = new Set(['succeeded', 'failed', 'cancelled', 'lost']);

export function normState(s) {
  if (typeof s === 'number') return RUN_STATES[s] || 'unspecified';
  if (!s) return 'unspecified';
  return String(s).toLowerCase().replace(/^run_state_/, '');
}

function stringMap(x) {
  const out = {};
  if (!x || typeof x !== 'object') return out;
  for (const [k, v] of Object.entries(x)) out[k] = v === null || v === undefined ? '' : String(v);
  return out;
}

function stringList(x) {
  return Array.isArray(x) ? x.map(String) : [];
}

// ------------------------------------------------------------------ normalizers

export function normRun(r) {
  r = r || {};
  return {
    id: String(pick(r, 'id', '')),
    job_id: String(pick(r, 'job_id', '')),
    host: pick(r, 'host', ''),
    target: pick(r, 'target', ''),
    state: normState(pick(r, 'state')),
    variant: pick(r, 'variant', ''),
    cell: pick(r, 'cell', ''),
    repetition: num(pick(r, 'repetition')),
    // A host's warm-up run (docs/ab-method.md "The first run"): never compared.
    warmup: pick(r, 'warmup', false) === true,
    attempt: num(pick(r, 'attempt')),
    retry_of: pick(r, 'retry_of', ''),
    created_ms: num(pick(r, 'created_ms')),
    assigned_ms: num(pick(r, 'assigned_ms')),
    started_ms: num(pick(r, 'started_ms')),
    finished_ms: num(pick(r, 'finished_ms')),
    error: pick(r, 'error', ''),
    waiting_for: pick(r, 'waiting_for', ''),
    result: jsonDoc(pick(r, 'result')) || jsonDoc(pick(r, 'result_json')),
  };
}

export function normSpec(s) {
  s = s || {};
  const variants = (pick(s, 'variants') || []).map((v) => ({
    name: pick(v, 'name', ''),
    options: stringMap(pick(v, 'options')),
    hosts: stringList(pick(v, 'hosts')),
    selector: stringMap(pick(v, 'selector')),
  }));
  const sweep = {};
  for (const [k, v] of Object.entries(pick(s, 'sweep') || {})) {
    sweep[k] = Array.isArray(v) ? v.map(String) : stringList(pick(v, 'values'));
  }
  let hosts = pick(s, 'hosts');
  let selector = stringMap(pick(s, 'selector'));
  if (hosts && !Array.isArray(hosts) && typeof hosts === 'object') {
    // {"hosts": {"names": [...], "selector": {...}}}
    selector = { ...selector, ...stringMap(pick(hosts, 'selector')) };
    hosts = pick(hosts, 'names') || [];
  }
  return {
    name: pick(s, 'name', ''),
    fio: pick(s, 'fio_text') ?? pick(s, 'fio') ?? '',
    options: jsonDoc(pick(s, 'options_json')) || jsonDoc(pick(s, 'options')),
    hosts: stringList(hosts),
    selector,
    repeat: num(pick(s, 'repeat'), 1) || 1,
    tags: stringMap(pick(s, 'tags')),
    variants,
    sweep,
    retries: num(pick(s, 'retries')),
    // Set only when the job said so (absent = the default: on for 2+ variants).
    warmup: typeof pick(s, 'warmup') === 'boolean' ? pick(s, 'warmup') : undefined,
  };
}

export function normJob(j) {
  j = j || {};
  return {
    id: String(pick(j, 'id', '')),
    name: pick(j, 'name', ''),
    state: normState(pick(j, 'state')),
    created_ms: num(pick(j, 'created_ms')),
    spec: normSpec(pick(j, 'spec')),
    runs: (pick(j, 'runs') || []).map(normRun),
    run_counts: pick(j, 'run_counts') || null,
  };
}

function normInventory(inv) {
  inv = inv || {};
  return {
    hostname: pick(inv, 'hostname', ''),
    kernel_release: pick(inv, 'kernel_release', ''),
    kernel_cmdline: pick(inv, 'kernel_cmdline', ''),
    cpu_model: pick(inv, 'cpu_model', ''),
    cpu_count: num(pick(inv, 'cpu_count')),
    numa_nodes: (pick(inv, 'numa_nodes') || []).map((n) => ({
      id: num(pick(n, 'id')),
      cpus: (pick(n, 'cpus') || []).map((c) => num(c)),
    })),
    block_devices: (pick(inv, 'block_devices') || []).map((d) => ({
      name: pick(d, 'name', ''),
      model: pick(d, 'model', ''),
      size_bytes: num(pick(d, 'size_bytes')),
      logical_block_size: num(pick(d, 'logical_block_size')),
      rotational: !!pick(d, 'rotational', false),
      numa_node: num(pick(d, 'numa_node'), -1),
    })),
    engines: stringList(pick(inv, 'engines')),
    agent_version: pick(inv, 'agent_version', ''),
  };
}

export function normAgent(a) {
  a = a || {};
  return {
    name: pick(a, 'name', ''),
    state: String(pick(a, 'state', 'down')).toLowerCase(),
    last_seen_ms: num(pick(a, 'last_seen_ms')),
    labels: stringMap(pick(a, 'labels')),
    inventory: normInventory(jsonDoc(pick(a, 'inventory')) || jsonDoc(pick(a, 'inventory_json'))),
    protocol_version: num(pick(a, 'protocol_version')),
    allow_paths: stringList(pick(a, 'allow_paths')),
  };
}

// A sparse clat histogram in any of the shapes it may be serialized in:
// parallel arrays clat_bucket/clat_count, [[idx, count], ...], [{bucket, count}], or
// {"idx": count}. Returns [[idx, count], ...].
function normHist(d) {
  return sparseHist(pick(d, 'clat_bucket'), pick(d, 'clat_count'), pick(d, 'clat_hist') ?? pick(d, 'hist'));
}

// The total-latency (lat) histogram of a record direction, same shapes as clat
// (REST: "lat_hist"; protobuf JSON: lat_bucket/lat_count with lat_measured).
// null when the record has none (the job set gtod_reduce or disable_lat, or an
// older agent sent the record): absent, not an empty window.
function normLatHist(d) {
  const buckets = pick(d, 'lat_bucket');
  const counts = pick(d, 'lat_count');
  const measured = pick(d, 'lat_measured');
  if (measured === false) return null;
  if (Array.isArray(buckets) && Array.isArray(counts)) {
    return measured === true || buckets.length ? sparseHist(buckets, counts, null) : null;
  }
  const h = pick(d, 'lat_hist');
  if (h === undefined || h === null) return measured === true ? [] : null;
  return sparseHist(null, null, h);
}

function sparseHist(buckets, counts, h) {
  if (Array.isArray(buckets) && Array.isArray(counts)) {
    const out = [];
    for (let i = 0; i < buckets.length && i < counts.length; i++) out.push([num(buckets[i]), num(counts[i])]);
    return out;
  }
  if (Array.isArray(h)) {
    return h.map((e) =>
      Array.isArray(e) ? [num(e[0]), num(e[1])] : [num(pick(e, 'bucket') ?? pick(e, 'idx')), num(pick(e, 'count'))],
    );
  }
  if (h && typeof h === 'object') return Object.entries(h).map(([k, v]) => [num(k), num(v)]);
  return [];
}

function normDir(d) {
  d = d || {};
  return { ios: num(pick(d, 'ios')), bytes: num(pick(d, 'bytes')), errors: num(pick(d, 'errors')), hist: normHist(d), latHist: normLatHist(d) };
}

export function normRecord(r) {
  const dirs = pick(r, 'dir');
  return {
    run_id: pick(r, 'run_id', ''),
    job_index: num(pick(r, 'job_index')),
    job_name: pick(r, 'job_name', ''),
    seq: num(pick(r, 'seq')),
    t_start_ms: num(pick(r, 't_start_ms')),
    t_end_ms: num(pick(r, 't_end_ms')),
    read: normDir(Array.isArray(dirs) ? dirs[0] : pick(r, 'read')),
    write: normDir(Array.isArray(dirs) ? dirs[1] : pick(r, 'write')),
    trim: normDir(Array.isArray(dirs) ? dirs[2] : pick(r, 'trim')),
  };
}

// The compare table (controller/compare/render.cc ToJson), possibly wrapped in a
// CompareResponse {"table_json": "<json>"}.
export function normCompare(resp) {
  if (!resp) return null;
  const wrapped = jsonDoc(pick(resp, 'table_json')) || jsonDoc(pick(resp, 'table'));
  const t = wrapped || resp;
  const usable = t.usable || {};
  return {
    // "N of M runs usable" and why the others are not (controller/compare/compare.h UsableSummary).
    headline: t.headline || usable.headline || '',
    usable: {
      runs_total: usable.runs_total ?? null,
      runs_usable: usable.runs_usable ?? null,
      groups: usable.groups || [],
      advice: usable.advice || [],
    },
    arm_a: t.arm_a ?? 'A',
    arm_b: t.arm_b ?? 'B',
    compared_attributes: t.compared_attributes || [],
    seed: t.seed,
    bootstrap_resamples: t.bootstrap_resamples,
    alpha: t.alpha ?? 0.05,
    outcome: t.outcome || '',
    outcome_reasons: t.outcome_reasons || [],
    rows: t.rows || [],
    geomean: t.geomean || [],
    excluded: t.excluded || [],
    ignored_runs: t.ignored_runs || 0,
    // Added by the controller (controller/compare/job_compare.h ComparisonJson).
    runs_total: t.runs_total ?? null,
    runs_pending: t.runs_pending ?? 0,
    partial: !!t.partial,
    notes: t.notes || [],
  };
}

// ------------------------------------------------------------------ endpoints

// GET /jobs newest first (order=newest), optionally filtered by state, name
// (contains) and one tag (key=value); the controller answers the filters.
export async function listJobs({ pageSize = 50, pageToken = '', state = '', name = '', tag = '', newest = true, signal } = {}) {
  const d = await request('GET', '/jobs', {
    params: { page_size: pageSize, page_token: pageToken, state, order: newest ? 'newest' : '', name, tag },
    signal,
  });
  return { jobs: (pick(d, 'jobs') || []).map(normJob), next: pick(d, 'next_page_token', '') };
}

// One page of a job's runs (GET /runs?job_id=...), optionally of one state.
export async function listRuns({ jobId = '', pageSize = 100, pageToken = '', state = '', signal } = {}) {
  const d = await request('GET', '/runs', {
    params: { job_id: jobId, page_size: pageSize, page_token: pageToken, state },
    signal,
  });
  return { runs: (pick(d, 'runs') || []).map(normRun), next: pick(d, 'next_page_token', '') };
}

export async function getJob(id, { signal } = {}) {
  return normJob(await request('GET', `/jobs/${encodeURIComponent(id)}`, { signal }));
}

export async function cancelJob(id) {
  const d = await request('POST', `/jobs/${encodeURIComponent(id)}/cancel`, { body: {} });
  return d ? normJob(d) : null;
}

export async function submitJob(body) {
  const d = await request('POST', '/jobs', { body });
  return String(pick(d, 'id', ''));
}

export async function getRun(id, { signal } = {}) {
  return normRun(await request('GET', `/runs/${encodeURIComponent(id)}`, { signal }));
}

export async function getSamples(id, { signal } = {}) {
  const d = await request('GET', `/runs/${encodeURIComponent(id)}/samples`, { signal });
  const recs = Array.isArray(d) ? d : pick(d, 'records') || pick(d, 'samples') || [];
  return recs.map(normRecord);
}

// A run's fio log files as its agent uploaded them (GET /runs/{id}/logs):
// [{name, type, size, stored, truncated, path}].
export async function listRunLogs(id, { signal } = {}) {
  const d = await request('GET', `/runs/${encodeURIComponent(id)}/logs`, { signal });
  return (pick(d, 'logs') || []).map((l) => ({
    name: String(pick(l, 'name', '')),
    type: String(pick(l, 'type', '')),
    size: num(pick(l, 'size_bytes', 0)),
    stored: num(pick(l, 'stored_bytes', 0)),
    truncated: Boolean(pick(l, 'truncated', false)),
    path: String(pick(l, 'path', '')),
  }));
}

export async function listAgents({ pageSize = 100, pageToken = '', signal } = {}) {
  const d = await request('GET', '/agents', { params: { page_size: pageSize, page_token: pageToken }, signal });
  return { agents: (pick(d, 'agents') || []).map(normAgent), next: pick(d, 'next_page_token', '') };
}

// partial: compare the finished runs while others still run (otherwise the
// controller answers 409 until every run is done).
export async function getCompare(id, { partial = false, unaudited = false, signal } = {}) {
  const params = {};
  if (partial) params.partial = 1;
  if (unaudited) params.unaudited = 'allow';
  return normCompare(
    await request('GET', `/jobs/${encodeURIComponent(id)}/compare`, { params: Object.keys(params).length ? params : undefined, signal }),
  );
}

// A document of the API as text (exports: Markdown, JUnit XML, JSON), with the
// token, for links that download instead of navigating.
export async function getText(path, params, { signal } = {}) {
  return request('GET', path, { params, signal, raw: true });
}

// Two finished jobs as arms A and B (GET /compare?a=JOB&b=JOB), same table shape.
export async function getCompareJobs(a, b, { partial = false, unaudited = false, signal } = {}) {
  const params = { a, b };
  if (partial) params.partial = 1;
  if (unaudited) params.unaudited = 'allow';
  return normCompare(await request('GET', '/compare', { params, signal }));
}

// ------------------------------------------------------------------ watch stream
//
// GET /jobs/{id}/watch[?run=RUN]: server-sent events (controller/api/rest/
// watch_stream.h): "record" per interval record (the stored ones first, then
// live ones, each once), "replayed" after the stored ones, "end" when the job is
// final, "dropped" when this client fell too far behind. Read through fetch (not
// EventSource) so that it carries the API token. Resolves with how the stream
// ended: {ended: 'end'|'dropped'|'closed', state, error}; rejects (ApiError) when
// the controller refuses it (an old controller without the route answers 404).
export function parseSse(buffer, onEvent) {
  let rest = buffer.replace(/\r\n/g, '\n');
  for (;;) {
    const at = rest.indexOf('\n\n');
    if (at < 0) return rest;
    const block = rest.slice(0, at);
    rest = rest.slice(at + 2);
    let event = 'message';
    const data = [];
    for (const line of block.split('\n')) {
      if (line.startsWith(':')) continue; // comment (keep-alive)
      const colon = line.indexOf(':');
      const field = colon < 0 ? line : line.slice(0, colon);
      const value = colon < 0 ? '' : line.slice(colon + 1).replace(/^ /, '');
      if (field === 'event') event = value;
      else if (field === 'data') data.push(value);
    }
    if (data.length) onEvent(event, data.join('\n'));
  }
}

export async function watchJob(jobId, { run = '', signal, onOpen, onRecords, onReplayed } = {}) {
  const path = `/jobs/${encodeURIComponent(jobId)}/watch${query({ run })}`;
  let resp;
  try {
    resp = await fetch(`${API_BASE}${path}`, { headers: { Accept: 'text/event-stream', ...authHeaders() }, signal });
  } catch (e) {
    if (e.name === 'AbortError') throw e;
    throw new ApiError(0, 'UNAVAILABLE', `cannot reach the controller: ${e.message}`);
  }
  if (!resp.ok || !resp.body) {
    const text = await resp.text().catch(() => '');
    let err = {};
    try {
      err = JSON.parse(text).error || {};
    } catch {
      err = {};
    }
    throw new ApiError(resp.status, err.code, err.message || `HTTP ${resp.status}`, err.field);
  }
  if (onOpen) onOpen();
  const reader = resp.body.getReader();
  const dec = new TextDecoder();
  let buf = '';
  let out = { ended: 'closed', state: '', error: '' };
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buf += dec.decode(value, { stream: true });
    const recs = [];
    buf = parseSse(buf, (event, data) => {
      const d = JSON.parse(data);
      if (event === 'record') recs.push(normRecord(d));
      else if (event === 'replayed' && onReplayed) onReplayed(num(d.records));
      else if (event === 'end') out = { ended: 'end', state: normState(d.state), error: '' };
      else if (event === 'dropped') out = { ended: 'dropped', state: '', error: (d.error && d.error.message) || 'dropped' };
    });
    if (recs.length && onRecords) onRecords(recs);
  }
  return out;
}

// A run's host telemetry second by second (GET /runs/{id}/telemetry, stored with
// the run's result by its agent; docs/history.md "Run telemetry"):
// {run_id, host, interval_ms, start_unix_ms (0: not recorded), irq_lines,
//  seconds: [{t_s, dur_ms, devices: {NAME: {util_pct, await_ms, aqu_sz, rrqm_s,
//  wrqm_s}}, cpu: {usr_pct, sys_pct, irq_pct, softirq_pct, iowait_pct},
//  dev_irq_s, ctxt_s, intr_s}], means: {metric: mean}}.
export function normTelemetry(d) {
  const seconds = (pick(d, 'seconds') || []).map((s) => {
    const devices = {};
    for (const [name, m] of Object.entries(pick(s, 'devices') || {})) {
      devices[name] = Object.fromEntries(['util_pct', 'await_ms', 'aqu_sz', 'rrqm_s', 'wrqm_s'].map((k) => [k, num(pick(m, k))]));
    }
    const c = pick(s, 'cpu') || {};
    return {
      t_s: num(pick(s, 't_s')),
      dur_ms: num(pick(s, 'dur_ms')),
      devices,
      cpu: Object.fromEntries(['usr_pct', 'sys_pct', 'irq_pct', 'softirq_pct', 'iowait_pct'].map((k) => [k, num(pick(c, k))])),
      dev_irq_s: num(pick(s, 'dev_irq_s')),
      ctxt_s: num(pick(s, 'ctxt_s')),
      intr_s: num(pick(s, 'intr_s')),
    };
  });
  const means = {};
  for (const [k, v] of Object.entries(pick(d, 'means') || {})) means[k] = num(v, null);
  return {
    run_id: String(pick(d, 'run_id', '')),
    host: String(pick(d, 'host', '')),
    interval_ms: num(pick(d, 'interval_ms')),
    start_unix_ms: num(pick(d, 'start_unix_ms')),
    irq_lines: (pick(d, 'irq_lines') || []).map(String),
    seconds,
    means,
  };
}

export async function getRunTelemetry(id, { signal } = {}) {
  return normTelemetry(await request('GET', `/runs/${encodeURIComponent(id)}/telemetry`, { signal }));
}

// Per CPU, from the run's stored result (iofleet.telemetry.cpus, the agent's
// shape: docs/history.md): [{cpu, usr_pct, sys_pct, irq_pct, softirq_pct,
// iowait_pct, dev_irq_s}], each an array with one value per sample (the same
// samples as GET /runs/{id}/telemetry's seconds). [] when the result has none.
export function telemetryCpusOfResult(result) {
  const t = result && result.iofleet && result.iofleet.telemetry;
  const cpus = (t && Array.isArray(t.cpus) && t.cpus) || [];
  const arr = (a) => (Array.isArray(a) ? a.map((v) => num(v)) : []);
  return cpus.map((c) => ({
    cpu: num(pick(c, 'cpu')),
    ...Object.fromEntries(['usr_pct', 'sys_pct', 'irq_pct', 'softirq_pct', 'iowait_pct', 'dev_irq_s'].map((k) => [k, arr(pick(c, k))])),
  }));
}
