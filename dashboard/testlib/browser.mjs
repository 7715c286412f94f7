// Headless Chromium (the Debian package) driven by playwright-core, with a fresh
// profile per launch.
import { chromium } from 'playwright-core';
import { mkdtemp, rm, mkdir } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';

export const CHROMIUM = process.env.CHROMIUM_PATH || '/usr/bin/chromium';
// Screenshots of every page go to the build folder for reviewers:
// <repo>/build/dashboard-screenshots (IOFLEET_SCREENSHOT_DIR overrides).
export const ARTIFACTS =
  process.env.IOFLEET_SCREENSHOT_DIR || join(dirname(fileURLToPath(import.meta.url)), '..', '..', 'build', 'dashboard-screenshots');

export function chromiumMissing() {
  return existsSync(CHROMIUM) ? null : `chromium not found at ${CHROMIUM} (apt-get install chromium, or set CHROMIUM_PATH)`;
}

// Returns {context, page, errors, close()}; `errors` collects page errors and
// console errors so a test can assert there were none.
export async function launch() {
  const profile = await mkdtemp(join(tmpdir(), 'iofleet-chromium-'));
  await mkdir(ARTIFACTS, { recursive: true });
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    viewport: { width: 1400, height: 1000 },
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  });
  const page = context.pages()[0] || (await context.newPage());
  const errors = [];
  page.on('pageerror', (e) => errors.push(`pageerror: ${e.message}`));
  page.on('console', (m) => {
    // HTTP error statuses are expected (400 on a bad submit); they surface in the UI.
    if (m.type() === 'error' && !/Failed to load resource/.test(m.text())) errors.push(`console: ${m.text()}`);
  });
  // Nothing outside the server under test may be fetched (no CDN, no fonts).
  const external = [];
  page.on('request', (r) => {
    const u = new URL(r.url());
    if (!['127.0.0.1', 'localhost'].includes(u.hostname) && !['data:', 'blob:'].includes(u.protocol)) external.push(r.url());
  });
  return {
    context,
    page,
    errors,
    external,
    async shot(name) {
      await page.screenshot({ path: join(ARTIFACTS, `${name}.png`), fullPage: true });
    },
    async close() {
      await context.close();
      await rm(profile, { recursive: true, force: true });
    },
  };
}
