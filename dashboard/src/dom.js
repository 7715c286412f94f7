import { fioBwOne, fioIops } from './fio_units.js';
// A tiny DOM builder (no innerHTML: every string is inserted as text) and formatters.

// Control characters (C0, DEL, C1) as visible escapes: names from the API are
// inserted as text, so they cannot inject markup, but a NUL or an escape
// sequence would still be invisible or mangled. Newlines and tabs stay.
const CONTROL = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/g;
export function printable(s) {
  return String(s).replace(CONTROL, (c) => {
    const code = c.charCodeAt(0);
    return code >= 0x80 ? `\\u${code.toString(16).padStart(4, '0')}` : `\\x${code.toString(16).padStart(2, '0')}`;
  });
}

// h('a', {href: '#/jobs', class: 'x'}, 'text', child, [more children])
export function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  if (attrs) {
    for (const [k, v] of Object.entries(attrs)) {
      if (v === undefined || v === null || v === false) continue;
      if (k === 'class') el.className = v;
      else if (k === 'style' && typeof v === 'object') Object.assign(el.style, v);
      else if (k.startsWith('on') && typeof v === 'function') el.addEventListener(k.slice(2), v);
      else if (k === 'dataset') Object.assign(el.dataset, v);
      else if (v === true) el.setAttribute(k, '');
      else el.setAttribute(k, printable(v));
    }
  }
  append(el, children);
  return el;
}

function append(el, children) {
  for (const c of children) {
    if (c === undefined || c === null || c === false) continue;
    if (Array.isArray(c)) append(el, c);
    else if (c instanceof Node) el.appendChild(c);
    else el.appendChild(document.createTextNode(printable(c)));
  }
}

export function clear(el) {
  while (el.firstChild) el.removeChild(el.firstChild);
  return el;
}

export function replace(el, ...children) {
  clear(el);
  append(el, children);
  return el;
}

// ------------------------------------------------------------------ formatters

export function fmtNum(v, digits = 4) {
  if (v === null || v === undefined || !Number.isFinite(v)) return '–';
  const a = Math.abs(v);
  if (a >= 1e9) return `${+(v / 1e9).toPrecision(digits)}G`;
  if (a >= 1e6) return `${+(v / 1e6).toPrecision(digits)}M`;
  if (a >= 1e3) return `${+(v / 1e3).toPrecision(digits)}k`;
  return `${+v.toPrecision(digits)}`;
}

// Bandwidth and IOPS as fio prints them (fio_units.js: fio's num2str, the
// CLI's and the agent's normal output's strings): "47.4MiB/s", "12.1k".
export function fmtBytesRate(v, kbBase = 1024) {
  if (v === null || v === undefined || !Number.isFinite(v)) return '–';
  return fioBwOne(v, kbBase);
}

export function fmtIops(v) {
  if (v === null || v === undefined || !Number.isFinite(v)) return '–';
  return fioIops(v);
}

export function fmtBytes(v) {
  if (!Number.isFinite(v) || v <= 0) return '–';
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB', 'PiB'];
  let i = 0;
  while (v >= 1024 && i < units.length - 1) {
    v /= 1024;
    i++;
  }
  return `${+v.toPrecision(3)} ${units[i]}`;
}

export function fmtNs(v) {
  if (v === null || v === undefined || !Number.isFinite(v)) return '–';
  const a = Math.abs(v);
  if (a >= 1e9) return `${+(v / 1e9).toPrecision(4)} s`;
  if (a >= 1e6) return `${+(v / 1e6).toPrecision(4)} ms`;
  if (a >= 1e3) return `${+(v / 1e3).toPrecision(4)} µs`;
  return `${+v.toPrecision(4)} ns`;
}

// A compare-table value in the metric's units.
export function fmtMetric(metric, v) {
  // Compare tables keep 4 significant digits (fio's num2str would print both
  // ends of a 178.2k..181.8k interval as 178k..182k).
  if (metric === 'iops') return fmtNum(v);
  if (metric === 'bw_bytes') return fmtBytesRate(v);
  return fmtNs(v);
}

export function fmtPct(v) {
  if (v === null || v === undefined || !Number.isFinite(v)) return '–';
  return `${v >= 0 ? '+' : ''}${v.toFixed(2)}%`;
}

export function fmtP(p) {
  if (p === null || p === undefined || !Number.isFinite(p)) return '–';
  if (p < 0.0001) return '<0.0001';
  return p.toFixed(4);
}

export function fmtDuration(s) {
  if (s === null || s === undefined || !Number.isFinite(s) || s < 0) return '–';
  s = Math.round(s);
  if (s < 60) return `${s}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m ${String(s % 60).padStart(2, '0')}s`;
  return `${Math.floor(s / 3600)}h ${String(Math.floor((s % 3600) / 60)).padStart(2, '0')}m`;
}

export function fmtTime(ms) {
  if (!ms) return '–';
  const d = new Date(ms);
  const pad = (n) => String(n).padStart(2, '0');
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ${pad(d.getHours())}:${pad(
    d.getMinutes(),
  )}:${pad(d.getSeconds())}`;
}

export function fmtAgo(ms, now = Date.now()) {
  if (!ms) return 'never';
  const s = Math.max(0, (now - ms) / 1000);
  if (s < 5) return 'just now';
  return `${fmtDuration(s)} ago`;
}

export function stateBadge(state) {
  return h('span', { class: `badge state-${state}` }, state);
}

export function kvList(obj) {
  const entries = Object.entries(obj || {});
  if (!entries.length) return h('span', { class: 'muted' }, '–');
  return h(
    'span',
    { class: 'kvs' },
    entries.map(([k, v]) => h('code', { class: 'kv' }, v === '' ? k : `${k}=${v}`)),
  );
}

export function errorBox(err) {
  const msg = err && err.message ? err.message : String(err);
  return h('div', { class: 'error-box', role: 'alert' }, msg);
}

// Previous/next paging over opaque page tokens. `stack` holds the tokens of the
// pages before the current one.
export function pager({ hasPrev, hasNext, onPrev, onNext, label }) {
  return h(
    'nav',
    { class: 'pager', 'aria-label': label || 'pages' },
    h('button', { type: 'button', class: 'btn', disabled: !hasPrev, onclick: onPrev, 'data-testid': 'prev' }, '← Previous'),
    h('button', { type: 'button', class: 'btn', disabled: !hasNext, onclick: onNext, 'data-testid': 'next' }, 'Next →'),
  );
}

// Calls `fn(signal)` now and then `intervalMs` after each call settles, until
// stop() (or until fn returns false). Never overlaps calls.
export function poller(fn, intervalMs) {
  const ctl = new AbortController();
  let timer = null;
  let stopped = false;
  const tick = async () => {
    if (stopped) return;
    let again = true;
    try {
      again = (await fn(ctl.signal)) !== false;
    } catch (e) {
      if (e && e.name === 'AbortError') return;
      console.error(e);
    }
    if (!stopped && again) timer = setTimeout(tick, intervalMs);
  };
  tick();
  return {
    stop() {
      stopped = true;
      ctl.abort();
      if (timer) clearTimeout(timer);
    },
  };
}
