// Actions on a job shared by the job and compare pages: clone (the submit form,
// filled in from the job), re-run (the same spec submitted again as a new job)
// and "compare with..." (this job as arm A against another finished job as B).
import { submitJob } from './api.js';
import { h, errorBox } from './dom.js';

// The POST /jobs body that submits `spec` (a normalized job spec) again.
export function specToBody(spec, name = spec.name) {
  const body = { name, fio: spec.fio };
  if (spec.hosts.length) body.hosts = spec.hosts;
  if (Object.keys(spec.selector).length) body.selector = spec.selector;
  if (spec.repeat > 1) body.repeat = spec.repeat;
  if (Object.keys(spec.tags).length) body.tags = spec.tags;
  if (spec.variants.length) {
    body.variants = spec.variants.map((v) => {
      const out = { name: v.name, options: v.options };
      if (v.hosts.length) out.hosts = v.hosts;
      if (Object.keys(v.selector).length) out.selector = v.selector;
      return out;
    });
  }
  if (Object.keys(spec.sweep).length) body.sweep = spec.sweep;
  if (spec.retries) body.retries = spec.retries;
  // warmup as the job said it; order_seed is not copied: a new job draws its own.
  if (typeof spec.warmup === 'boolean') body.warmup = spec.warmup;
  return body;
}

// The submit form's text fields for `spec` (the inverse of submit.js buildBody).
export function specToForm(spec) {
  const kv = (m) =>
    Object.entries(m)
      .map(([k, v]) => `${k}=${v}`)
      .join(', ');
  return {
    name: spec.name ? `${spec.name} (clone)` : '',
    fio: spec.fio,
    hosts: spec.hosts.join(', '),
    selector: kv(spec.selector),
    repeat: String(spec.repeat || 1),
    tags: kv(spec.tags),
    variants: spec.variants
      .map((v) =>
        [`${v.name}:`, ...Object.entries(v.options).map(([k, x]) => `${k}=${x}`), v.hosts.length ? `hosts=${v.hosts.join(',')}` : '']
          .filter(Boolean)
          .join(' '),
      )
      .join('\n'),
    sweep: Object.entries(spec.sweep)
      .map(([k, vs]) => `${k}=${vs.join(',')}`)
      .join('\n'),
  };
}

// Clone and Re-run buttons for `job` (normalized). Errors land after the buttons.
export function jobActions(job) {
  const box = h('span', { class: 'job-actions' });
  const rerun = h(
    'button',
    {
      type: 'button',
      class: 'btn',
      'data-testid': 'rerun',
      title: 'Submit the same job file, hosts, variants and sweep again as a new job',
      onclick: async () => {
        rerun.disabled = true;
        try {
          const id = await submitJob(specToBody(job.spec));
          location.hash = `#/jobs/${encodeURIComponent(id)}`;
        } catch (err) {
          box.appendChild(errorBox(err));
          rerun.disabled = false;
        }
      },
    },
    'Re-run',
  );
  box.append(
    h('a', { class: 'btn', href: `#/submit?clone=${encodeURIComponent(job.id)}`, 'data-testid': 'clone', title: 'Open the submit form filled in from this job' }, 'Clone'),
    ' ',
    rerun,
  );
  return box;
}

// "Compare with..." form: navigates to #/compare?a=JOB&b=OTHER.
export function compareWithForm(jobId) {
  const input = h('input', { type: 'text', id: 'compare-with', placeholder: 'job ID', size: '14', required: true, autocomplete: 'off' });
  return h(
    'form',
    {
      class: 'compare-with',
      onsubmit: (e) => {
        e.preventDefault();
        const other = input.value.trim();
        if (other) location.hash = `#/compare?a=${encodeURIComponent(jobId)}&b=${encodeURIComponent(other)}`;
      },
    },
    h('label', { for: 'compare-with' }, 'Compare with… '),
    input,
    ' ',
    h('button', { type: 'submit', class: 'btn' }, 'Compare'),
  );
}
