// The API token in headless Chromium against a fake REST API that requires one
// (as the controller with --api-token-file): the dashboard asks once, keeps it in
// sessionStorage, sends it on every call (polling included), and asks again on 401.
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startFake } from '../testlib/fake_api.mjs';
import { launch, chromiumMissing } from '../testlib/browser.mjs';

const DIST = join(dirname(fileURLToPath(import.meta.url)), '..', 'dist', 'index.html');
const skip = chromiumMissing() || (existsSync(DIST) ? null : 'dashboard/dist is not built (run dashboard/build.sh)');

describe('API token', { skip: skip || false, timeout: 60000 }, () => {
  let fake;
  let b;
  let page;

  before(async () => {
    fake = await startFake({ seedJobs: 3, token: 'tok-1' });
    b = await launch();
    page = b.page;
    page.setDefaultTimeout(15000);
  });

  after(async () => {
    if (b) await b.close();
    if (fake) await fake.close();
  });

  it('asks for the token once, sends it on every call and keeps it for the tab', async () => {
    await page.goto(`${fake.url}#/jobs`);
    const dialog = page.getByTestId('token-dialog');
    await dialog.waitFor();
    assert.match(await page.getByTestId('token-reason').innerText(), /needs an API token: missing "Authorization: Bearer <token>" header/);
    await b.shot('ui-token-dialog');
    // A wrong token is refused and the dialog comes back saying so.
    await page.locator('#api-token').fill('wrong');
    await page.getByRole('button', { name: 'Use token' }).click();
    await page.waitForFunction(() => /refused the API token/.test(document.querySelector('[data-testid=token-reason]')?.textContent || ''));
    await page.locator('#api-token').fill('tok-1');
    await page.getByRole('button', { name: 'Use token' }).click();
    await page.locator('table[aria-label="jobs"] tbody tr').first().waitFor();
    assert.equal(await dialog.count(), 0);
    assert.equal(await page.evaluate(() => sessionStorage.getItem('iofleet.api_token')), 'tok-1');
    assert.equal(await page.evaluate(() => localStorage.length), 0, 'nothing in localStorage');

    // After a reload (same tab) no question; every call carries the token.
    const from = fake.api.requests.length;
    await page.reload();
    await page.locator('table[aria-label="jobs"] tbody tr').first().waitFor();
    assert.equal(await dialog.count(), 0);
    // A running job: its page polls; every poll carries the token too.
    await page.goto(`${fake.url}#/submit`);
    await page.getByLabel('Job name').fill('tok job');
    await page.getByLabel('fio job file').fill('[rr]\nrw=randread\nruntime=3\n');
    await page.getByLabel('Hosts', { exact: true }).fill('a1');
    await page.getByRole('button', { name: 'Submit job' }).click();
    await page.waitForURL(/#\/jobs\/j\d+$/);
    const row = page.locator('table[aria-label="runs"] tbody tr').first();
    await row.waitFor();
    await row.locator('a').first().click();
    await page.waitForFunction(() => Number(document.querySelector('.chart[data-chart="IOPS"]')?.dataset.points) >= 1);
    const calls = fake.api.requests.slice(from);
    assert.ok(calls.length >= 5, `${calls.length} calls`);
    assert.deepEqual(calls.filter((r) => r.auth !== 'Bearer tok-1'), [], 'every call carries the token');
    assert.ok(calls.some((r) => /\/samples$/.test(r.path)), 'the live samples poll is among them');
  });

  it('asks again when the token stops working (401), then carries on', async () => {
    fake.api.token = 'tok-2'; // rotated on the controller
    await page.goto(`${fake.url}#/agents`);
    await page.getByTestId('token-dialog').waitFor();
    assert.match(await page.getByTestId('token-reason').innerText(), /refused the API token: invalid bearer token/);
    await page.locator('#api-token').fill('tok-2');
    await page.getByRole('button', { name: 'Use token' }).click();
    await page.locator('tr[data-agent="a1"]').waitFor();
    assert.equal(await page.evaluate(() => sessionStorage.getItem('iofleet.api_token')), 'tok-2');
    // "Forget token" drops it.
    await page.getByTestId('forget-token').click();
    assert.equal(await page.evaluate(() => sessionStorage.getItem('iofleet.api_token')), null);
  });

  it('logged no page errors', () => {
    assert.deepEqual(b.errors, []);
  });
});
