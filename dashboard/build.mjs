// Bundles src/ into dist/: index.html, app.js (one ES module with uPlot inside)
// and app.css. No network access is needed once node_modules is installed.
import { build } from 'esbuild';
import { mkdir, rm, copyFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const dist = join(here, 'dist');
const dev = process.argv.includes('--dev');

await rm(dist, { recursive: true, force: true });
await mkdir(dist, { recursive: true });
await build({
  entryPoints: { app: join(here, 'src/main.js') },
  outdir: dist,
  bundle: true,
  format: 'esm',
  target: ['es2020', 'chrome100', 'firefox100', 'safari15'],
  minify: !dev,
  sourcemap: dev ? 'inline' : false,
  legalComments: 'eof',
  logLevel: 'info',
});
await copyFile(join(here, 'src/index.html'), join(dist, 'index.html'));
