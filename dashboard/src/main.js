// Entry point: layout, hash router and page lifecycle. Routes:
//   #/jobs            jobs list (default)         #/jobs/ID           job and its runs
//   #/jobs/ID/compare A/B comparison             #/runs/ID           run: live charts, result
//   #/agents          agent inventory             #/submit            submit form
//   #/series          history series              #/series/KEY        one series, change points
//   #/alerts          regression alerts, triage  #/runs/ID/telemetry host telemetry beside a run
import 'uplot/dist/uPlot.min.css';
import './style.css';
import { h, replace } from './dom.js';
import { setTokenPrompt, getToken, setToken } from './api.js';
import { agentsPage } from './pages/agents.js';
import { jobsPage, jobPage } from './pages/jobs.js';
import { runPage } from './pages/run.js';
import { comparePage } from './pages/compare.js';
import { submitPage } from './pages/submit.js';
import { seriesListPage, seriesPage, alertsPage } from './pages/history.js';
import { telemetryPage } from './pages/telemetry.js';

const routes = [
  [/^\/?$/, () => jobsPage],
  [/^\/jobs\/?$/, () => jobsPage],
  [/^\/jobs\/([^/]+)\/compare\/?$/, () => comparePage],
  [/^\/jobs\/([^/]+)\/?$/, () => jobPage],
  [/^\/compare\/?$/, () => comparePage], // ?a=JOB&b=JOB: two jobs as arms
  [/^\/runs\/([^/]+)\/?$/, () => runPage],
  [/^\/runs\/([^/]+)\/telemetry\/?$/, () => telemetryPage],
  [/^\/agents\/?$/, () => agentsPage],
  [/^\/submit\/?$/, () => submitPage],
  [/^\/series\/?$/, () => seriesListPage],
  [/^\/series\/([^/]+)\/?$/, () => seriesPage],
  [/^\/alerts\/?$/, () => alertsPage],
];

const NAV = [
  ['#/jobs', 'Jobs', (p) => !/^\/(submit|agents|series|alerts)/.test(p)],
  ['#/submit', 'Submit', (p) => /^\/submit/.test(p)],
  ['#/agents', 'Agents', (p) => /^\/agents/.test(p)],
  ['#/alerts', 'History', (p) => /^\/(series|alerts)/.test(p)],
];

let cleanup = null;
let navLinks = [];

function parseHash() {
  const raw = location.hash.replace(/^#/, '') || '/';
  const qi = raw.indexOf('?');
  const path = qi < 0 ? raw : raw.slice(0, qi);
  const params = new URLSearchParams(qi < 0 ? '' : raw.slice(qi + 1));
  return { path, params };
}

function render() {
  if (cleanup) {
    try {
      cleanup();
    } catch (e) {
      console.error(e);
    }
    cleanup = null;
  }
  const { path, params } = parseHash();
  const main = document.getElementById('main');
  replace(main);
  for (const [a, , isActive] of navLinks) {
    if (isActive(path)) a.setAttribute('aria-current', 'page');
    else a.removeAttribute('aria-current');
  }
  for (const [re, page] of routes) {
    const m = re.exec(path);
    if (m) {
      const args = m.slice(1).map(decodeURIComponent);
      const ret = page()(main, { args, params });
      cleanup = typeof ret === 'function' ? ret : null;
      return;
    }
  }
  document.title = 'Not found · iofleet';
  main.appendChild(h('h1', null, 'Not found'));
  main.appendChild(h('p', null, 'No page at ', h('code', null, path), '. ', h('a', { href: '#/jobs' }, 'Go to jobs')));
}

function layout() {
  const root = document.getElementById('root');
  navLinks = NAV.map(([href, label, re]) => [h('a', { href }, label), label, re]);
  replace(
    root,
    h('a', { class: 'skip', href: '#main', onclick: (e) => { e.preventDefault(); document.getElementById('main').focus(); } }, 'Skip to content'),
    h(
      'header',
      { class: 'top' },
      h('a', { class: 'brand', href: '#/jobs' }, 'iofleet'),
      h('nav', { 'aria-label': 'main' }, navLinks.map(([a]) => a)),
    ),
    h('main', { id: 'main', tabindex: '-1' }),
  );
}

// The API token dialog: shown when a call gets 401, resolves with the token typed
// (or null on "Cancel"). The calls waiting on it are retried with the token.
function promptToken(message) {
  return new Promise((resolve) => {
    const input = h('input', { id: 'api-token', type: 'password', autocomplete: 'off', required: true, spellcheck: 'false' });
    let box = null;
    const done = (v) => {
      box.remove();
      resolve(v);
    };
    box = h(
      'div',
      { class: 'token-backdrop' },
      h(
        'form',
        {
          class: 'token-dialog',
          role: 'dialog',
          'aria-modal': 'true',
          'aria-labelledby': 'token-h',
          'data-testid': 'token-dialog',
          onsubmit: (e) => {
            e.preventDefault();
            const v = input.value.trim();
            if (v) done(v);
          },
        },
        h('h2', { id: 'token-h' }, 'API token'),
        h('p', { class: 'error-text', 'data-testid': 'token-reason' }, message),
        h('p', { class: 'muted small' }, 'The token (the controller\'s --api-token-file) is kept in this tab\'s sessionStorage until the tab closes.'),
        h('label', { for: 'api-token' }, 'API token'),
        input,
        h(
          'p',
          null,
          h('button', { type: 'submit', class: 'btn' }, 'Use token'),
          ' ',
          h('button', { type: 'button', class: 'btn', onclick: () => done(null) }, 'Cancel'),
        ),
      ),
    );
    document.body.appendChild(box);
    input.focus();
  });
}

const tokenNav = h('span', { class: 'token-nav' });
function renderTokenNav() {
  replace(
    tokenNav,
    getToken()
      ? h('button', { type: 'button', class: 'linkish', 'data-testid': 'forget-token', onclick: () => setToken('') }, 'Forget token')
      : null,
  );
}

setTokenPrompt(promptToken);
layout();
document.querySelector('header.top').appendChild(tokenNav);
renderTokenNav();
window.addEventListener('iofleet-token', renderTokenNav);
window.addEventListener('hashchange', render);
render();
