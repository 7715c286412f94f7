// Every page of the dashboard has a screenshot saved by the browser tests
// (testlib/screenshots.mjs PAGES): each route of src/main.js has a row, a test
// takes each file, dashboard/README.md lists each. A page added without a
// screenshot fails here. Also takes the "not found" page's own screenshot.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import { readFileSync, readdirSync, existsSync } from 'node:fs';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { PAGES } from '../testlib/screenshots.mjs';
import { serveStatic, DIST } from '../testlib/static.mjs';
import { launch, chromiumMissing } from '../testlib/browser.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const read = (p) => readFileSync(join(here, '..', p), 'utf8');

describe('screenshots of every page', () => {
  it('lists every route of main.js', () => {
    const src = read('src/main.js');
    const block = src.slice(src.indexOf('const routes = ['), src.indexOf('];', src.indexOf('const routes = [')));
    const routes = [...block.matchAll(/^\s*\[\/(.+)\/, \(\) =>/gm)].map((m) => m[1]);
    assert.ok(routes.length >= 12, `routes parsed from main.js: ${routes.length}`);
    const listed = new Set(PAGES.map((p) => p.route));
    for (const r of routes) assert.ok(listed.has(r), `route /${r}/ has no screenshot in testlib/screenshots.mjs PAGES`);
    for (const p of PAGES) if (p.route !== null) assert.ok(routes.includes(p.route), `PAGES lists /${p.route}/, which main.js does not route`);
  });

  it('has a test that takes each file, and the README lists it', () => {
    const tests = readdirSync(here)
      .filter((f) => f.endsWith('.mjs'))
      .map((f) => readFileSync(join(here, f), 'utf8'))
      .join('\n');
    const readme = read('README.md');
    for (const p of PAGES) {
      for (const f of [...p.files, ...(p.optional || [])]) {
        assert.ok(tests.includes(`shot('${f}')`), `no test takes ${f}.png (${p.page})`);
        assert.ok(readme.includes(`\`${f}.png\``) || readme.includes(`\`${f}.png\`,`), `dashboard/README.md does not list ${f}.png`);
      }
    }
  });

  const skip = chromiumMissing() || (existsSync(join(DIST, 'index.html')) ? null : 'dashboard/dist is not built (run dashboard/build.sh)');
  it('shows a page that does not exist as such', { skip: skip || false, timeout: 60000 }, async () => {
    const server = http.createServer(async (req, res) => {
      if (await serveStatic(req, res)) return;
      res.writeHead(404);
      res.end();
    });
    await new Promise((r) => server.listen(0, '127.0.0.1', r));
    const b = await launch();
    try {
      await b.page.goto(`http://127.0.0.1:${server.address().port}/#/no/such/page`);
      await b.page.getByRole('heading', { name: 'Not found' }).waitFor();
      assert.match(await b.page.locator('main').innerText(), /No page at \/no\/such\/page/);
      await b.shot('ui-not-found');
      assert.deepEqual(b.errors, []);
    } finally {
      await b.close();
      server.close();
    }
  });
});
