// Submit form: POST /jobs. A 400 naming a field (error.field) is shown next to
// that field.
import { submitJob, getJob } from '../api.js';
import { h, replace, errorBox } from '../dom.js';
import { specToForm } from '../job_actions.js';

const EXAMPLE = `[global]
ioengine=io_uring
direct=1
bs=4k
time_based
runtime=30

[randread]
rw=randread
iodepth=32
filename=/dev/nvme0n1`;

// Form fields; `server` lists the first path segment of error.field values that
// belong to the field.
const FIELDS = [
  { id: 'name', label: 'Job name', server: ['name'] },
  { id: 'fio', label: 'fio job file', server: ['fio', 'fio_text', 'options', 'options_json', 'jobs', 'global'] },
  { id: 'hosts', label: 'Hosts', server: ['hosts', 'host_overrides'] },
  { id: 'selector', label: 'Label selector', server: ['selector'] },
  { id: 'repeat', label: 'Repeat', server: ['repeat'] },
  { id: 'tags', label: 'Tags', server: ['tags'] },
  { id: 'variants', label: 'Variants (A/B arms)', server: ['variants'] },
  { id: 'sweep', label: 'Sweep', server: ['sweep'] },
];

// The form field an API error.field refers to ("variants[1].options.bs" -> variants).
// Placement errors name "hosts" even when the label selector matched nobody.
export function formFieldFor(field, message = '') {
  if (!field) return null;
  const head = String(field).split(/[.[\s(]/)[0];
  if (head === 'hosts' && /selector/.test(message) && !/host name/.test(message)) return 'selector';
  for (const f of FIELDS) if (f.server.includes(head)) return f.id;
  return null;
}

class FieldError extends Error {
  constructor(field, message) {
    super(message);
    this.field = field;
  }
}

// "k=v, k2=v2" -> {k: v, k2: v2}
export function parseKv(text, field) {
  const out = {};
  for (const part of text.split(/[,\n]/)) {
    const s = part.trim();
    if (!s) continue;
    const eq = s.indexOf('=');
    if (eq <= 0) throw new FieldError(field, `"${s}" is not key=value`);
    out[s.slice(0, eq).trim()] = s.slice(eq + 1).trim();
  }
  return out;
}

// One variant per line: "NAME: opt=value opt=value [hosts=h1,h2]".
export function parseVariants(text) {
  const out = [];
  for (const [i, raw] of text.split('\n').entries()) {
    const line = raw.trim();
    if (!line) continue;
    const colon = line.indexOf(':');
    const name = (colon < 0 ? line : line.slice(0, colon)).trim();
    if (!name || /\s/.test(name)) throw new FieldError('variants', `line ${i + 1}: start with the variant name, e.g. "B: iodepth=64"`);
    const v = { name, options: {} };
    for (const tok of (colon < 0 ? '' : line.slice(colon + 1)).trim().split(/\s+/).filter(Boolean)) {
      const eq = tok.indexOf('=');
      if (eq <= 0) throw new FieldError('variants', `line ${i + 1}: "${tok}" is not option=value`);
      const k = tok.slice(0, eq);
      const val = tok.slice(eq + 1);
      if (k === 'hosts') v.hosts = val.split(',').filter(Boolean);
      else v.options[k] = val;
    }
    out.push(v);
  }
  return out;
}

// One option per line: "iodepth=1,2,4,8".
export function parseSweep(text) {
  const out = {};
  for (const [i, raw] of text.split('\n').entries()) {
    const line = raw.trim();
    if (!line) continue;
    const eq = line.indexOf('=');
    if (eq <= 0) throw new FieldError('sweep', `line ${i + 1}: write option=value1,value2,...`);
    const values = line
      .slice(eq + 1)
      .split(',')
      .map((s) => s.trim())
      .filter(Boolean);
    if (!values.length) throw new FieldError('sweep', `line ${i + 1}: no values`);
    out[line.slice(0, eq).trim()] = values;
  }
  return out;
}

// The POST /jobs body from the form's values (throws FieldError).
export function buildBody(v) {
  const body = { name: v.name.trim(), fio: v.fio };
  if (!v.fio.trim()) throw new FieldError('fio', 'write a fio job file');
  const hosts = v.hosts.split(/[\s,]+/).filter(Boolean);
  if (hosts.length) body.hosts = hosts;
  const selector = parseKv(v.selector, 'selector');
  if (Object.keys(selector).length) body.selector = selector;
  if (v.repeat.trim()) {
    const n = Number(v.repeat);
    if (!Number.isInteger(n) || n < 1) throw new FieldError('repeat', 'must be a whole number ≥ 1');
    body.repeat = n;
  }
  const tags = parseKv(v.tags, 'tags');
  if (Object.keys(tags).length) body.tags = tags;
  const variants = parseVariants(v.variants);
  if (variants.length) body.variants = variants;
  const sweep = parseSweep(v.sweep);
  if (Object.keys(sweep).length) body.sweep = sweep;
  return body;
}

export function submitPage(main, { params } = {}) {
  document.title = 'Submit a job · iofleet';
  const inputs = {};
  const errors = {};
  const general = h('div', { role: 'alert', class: 'form-error', hidden: true });

  function field(id, label, control, help) {
    const err = h('p', { class: 'field-error', id: `err-${id}`, role: 'alert', hidden: true });
    errors[id] = err;
    inputs[id] = control;
    control.id = `f-${id}`;
    control.name = id;
    const helpEl = help ? h('p', { class: 'help', id: `help-${id}` }, help) : null;
    control.setAttribute('aria-describedby', [help ? `help-${id}` : '', `err-${id}`].filter(Boolean).join(' '));
    return h('div', { class: 'field', dataset: { field: id } }, h('label', { for: `f-${id}` }, label), control, helpEl, err);
  }

  function clearErrors() {
    general.hidden = true;
    general.textContent = '';
    for (const [id, el] of Object.entries(errors)) {
      el.hidden = true;
      el.textContent = '';
      inputs[id].removeAttribute('aria-invalid');
    }
  }

  function showError(fieldName, message, formField = formFieldFor(fieldName, message)) {
    if (formField && errors[formField]) {
      errors[formField].textContent = message;
      errors[formField].hidden = false;
      inputs[formField].setAttribute('aria-invalid', 'true');
      if (inputs[formField].closest('details')) inputs[formField].closest('details').open = true;
      inputs[formField].focus();
    } else {
      general.textContent = fieldName ? `${fieldName}: ${message}` : message;
      general.hidden = false;
    }
  }

  const submitBtn = h('button', { type: 'submit', class: 'btn primary' }, 'Submit job');
  const form = h(
    'form',
    {
      class: 'submit-form',
      novalidate: true,
      onsubmit: async (e) => {
        e.preventDefault();
        clearErrors();
        const values = Object.fromEntries(FIELDS.map((f) => [f.id, inputs[f.id].value]));
        let body;
        try {
          body = buildBody(values);
        } catch (err) {
          showError(err.field, err.message, err.field);
          return;
        }
        submitBtn.disabled = true;
        submitBtn.textContent = 'Submitting…';
        try {
          const id = await submitJob(body);
          location.hash = `#/jobs/${encodeURIComponent(id)}`;
        } catch (err) {
          showError(err.field, err.message);
        } finally {
          submitBtn.disabled = false;
          submitBtn.textContent = 'Submit job';
        }
      },
    },
    general,
    field('name', 'Job name', h('input', { type: 'text', autocomplete: 'off', placeholder: 'nvme-randread-4k' })),
    field(
      'fio',
      'fio job file',
      h('textarea', { rows: '14', spellcheck: 'false', class: 'mono', placeholder: EXAMPLE }),
      'The same grammar as fio: [global] and job sections, key=value options.',
    ),
    h(
      'div',
      { class: 'row' },
      field('hosts', 'Hosts', h('input', { type: 'text', placeholder: 'host-a, host-b' }), 'Agent names, comma-separated.'),
      field('selector', 'Label selector', h('input', { type: 'text', placeholder: 'rack=r1, kernel=6.8*' }), 'key=value, all must match; a value ending in * matches a prefix.'),
    ),
    h(
      'div',
      { class: 'row' },
      field('repeat', 'Repeat', h('input', { type: 'number', min: '1', step: '1', value: '1', inputmode: 'numeric' }), 'Runs per host, variant and cell.'),
      field('tags', 'Tags', h('input', { type: 'text', placeholder: 'branch=main, build=1234' }), 'key=value, comma-separated.'),
    ),
    h(
      'details',
      { class: 'advanced' },
      h('summary', null, 'A/B variants and sweep (optional)'),
      field('variants', 'Variants (A/B arms)', h('textarea', { rows: '3', spellcheck: 'false', class: 'mono', placeholder: 'A: hosts=old-kernel-host\nB: hosts=new-kernel-host' }), 'One per line: NAME: option=value … (hosts=h1,h2 places the arm).'),
      field('sweep', 'Sweep', h('textarea', { rows: '3', spellcheck: 'false', class: 'mono', placeholder: 'iodepth=1,4,16,64' }), 'One option per line with its values; the cells are crossed.'),
    ),
    h('div', { class: 'actions' }, submitBtn),
  );
  main.append(h('h1', null, 'Submit a job'), form);
  inputs.name.focus();
  // #/submit?clone=JOB: the form filled in from that job's spec.
  const cloneOf = params && params.get('clone');
  if (cloneOf) {
    const note = h('p', { class: 'muted', 'data-testid': 'clone-note' }, `Loading job ${cloneOf}…`);
    form.before(note);
    getJob(cloneOf)
      .then((job) => {
        for (const [k, v] of Object.entries(specToForm(job.spec))) if (inputs[k]) inputs[k].value = v;
        if (job.spec.variants.length || Object.keys(job.spec.sweep).length) form.querySelector('details.advanced').open = true;
        replace(note, 'A copy of job ', h('a', { href: `#/jobs/${encodeURIComponent(cloneOf)}` }, cloneOf), ': change what you need and submit.');
      })
      .catch((err) => replace(note, errorBox(err)));
  }
}
