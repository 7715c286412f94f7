// Serves dashboard/dist as static files (the way the controller serves it at `/`).
import { readFile } from 'node:fs/promises';
import { join, normalize, extname, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';

export const DIST = join(dirname(fileURLToPath(import.meta.url)), '..', 'dist');

const TYPES = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.json': 'application/json',
  '.txt': 'text/plain; charset=utf-8',
};

// Handles GET of dist files; returns false when the request is not for one.
export async function serveStatic(req, res) {
  if (req.method !== 'GET' && req.method !== 'HEAD') return false;
  const path = new URL(req.url, 'http://x').pathname;
  const rel = path === '/' ? 'index.html' : normalize(decodeURIComponent(path)).replace(/^[/\\]+/, '');
  if (rel.startsWith('..')) return false;
  try {
    const body = await readFile(join(DIST, rel));
    res.writeHead(200, { 'Content-Type': TYPES[extname(rel)] || 'application/octet-stream', 'Cache-Control': 'no-store' });
    res.end(req.method === 'HEAD' ? undefined : body);
    return true;
  } catch {
    return false;
  }
}

// Serves dist at `/` and forwards /api/v1/* to `apiBase` ("http://127.0.0.1:PORT"):
// the dashboard against a real controller that does not serve `/` yet.
export async function startProxy(apiBase) {
  const http = await import('node:http');
  const target = new URL(apiBase);
  const server = http.createServer(async (req, res) => {
    if (req.url.startsWith('/api/')) {
      const up = http.request(
        { host: target.hostname, port: target.port, method: req.method, path: req.url, headers: { ...req.headers, host: target.host } },
        (r) => {
          res.writeHead(r.statusCode, r.headers);
          r.pipe(res);
        },
      );
      up.on('error', (e) => {
        res.writeHead(502, { 'Content-Type': 'application/json' });
        res.end(JSON.stringify({ error: { code: 'UNAVAILABLE', message: `proxy: ${e.message}` } }));
      });
      req.pipe(up);
      return;
    }
    if (await serveStatic(req, res)) return;
    res.writeHead(404);
    res.end();
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${server.address().port}/`,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections?.();
        server.close(resolve);
      }),
  };
}
