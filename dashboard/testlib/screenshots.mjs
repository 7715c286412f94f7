// Which screenshot the browser tests save for every page of the dashboard, so a
// reviewer can look at each page without running it (build/dashboard-screenshots,
// IOFLEET_SCREENSHOT_DIR overrides; listed in dashboard/README.md).
//
// test/screenshots.test.mjs checks that every route of src/main.js has a row
// here, that a test takes each file (`shot('name')`) and that the README lists
// it; test.sh runs `node testlib/screenshots.mjs` after the browser tests, which
// fails when a file of the list was not saved by that run.
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ARTIFACTS } from './browser.mjs';
import { CONTROLLER, AGENT } from './procs.mjs';

// route: the regexp source of the route in src/main.js (null: no route).
// files: saved on every run (e2e-*: when build/bin has the controller and agent);
// optional: saved when the run is caught in that state (a live run page).
export const PAGES = [
  { route: '^\\/?$', page: 'jobs (default route)', files: ['ui-jobs'] },
  { route: '^\\/jobs\\/?$', page: 'jobs list', files: ['ui-jobs', 'ui-jobs-newest', 'ui-jobs-filtered'] },
  { route: '^\\/jobs\\/([^/]+)\\/compare\\/?$', page: 'A/B compare of a job', files: ['ui-compare', 'ui-compare-sweeps', 'e2e-compare'] },
  { route: '^\\/jobs\\/([^/]+)\\/?$', page: 'job', files: ['ui-job-running', 'ui-job-running-metrics', 'e2e-job'] },
  { route: '^\\/compare\\/?$', page: 'two jobs compared', files: ['ui-compare-jobs'] },
  { route: '^\\/runs\\/([^/]+)\\/?$', page: 'run', files: ['ui-run-live', 'ui-run-result', 'ui-run-latency-live', 'ui-run-latency-result', 'e2e-run-result'], optional: ['e2e-run-live', 'e2e-run-live-after-reload'] },
  { route: '^\\/runs\\/([^/]+)\\/telemetry\\/?$', page: 'run telemetry', files: ['ui-run-telemetry', 'ui-run-telemetry-unaligned', 'e2e-run-telemetry'] },
  { route: '^\\/agents\\/?$', page: 'agents', files: ['ui-agents', 'e2e-agents'] },
  { route: '^\\/submit\\/?$', page: 'submit', files: ['ui-submit-error', 'ui-submit-clone', 'e2e-submit-error'] },
  { route: '^\\/series\\/?$', page: 'history series list', files: ['ui-series-list'] },
  { route: '^\\/series\\/([^/]+)\\/?$', page: 'one history series', files: ['ui-series'] },
  { route: '^\\/alerts\\/?$', page: 'regression alerts', files: ['ui-alerts', 'ui-alerts-all'] },
  { route: null, page: 'API token dialog', files: ['ui-token-dialog'] },
  { route: null, page: 'page not found', files: ['ui-not-found'] },
];

// Files of PAGES missing from `dir`; e2e-* only when `e2e` (the binaries exist).
export function missingShots(dir = ARTIFACTS, e2e = existsSync(CONTROLLER) && existsSync(AGENT)) {
  const have = new Set(existsSync(dir) ? readdirSync(dir) : []);
  const want = [...new Set(PAGES.flatMap((p) => p.files))].filter((f) => e2e || !f.startsWith('e2e-'));
  return want.filter((f) => !have.has(`${f}.png`));
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const missing = missingShots();
  if (missing.length) {
    console.error(`screenshots not saved by this run in ${ARTIFACTS}: ${missing.map((f) => `${f}.png`).join(', ')}`);
    process.exit(1);
  }
  console.log(`screenshots of every page: ${join(ARTIFACTS, '*.png')} (${readdirSync(ARTIFACTS).length} files)`);
}
