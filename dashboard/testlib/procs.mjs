// Real processes for the end-to-end browser tests: start one and wait for the
// lines that say it is ready, stop it (SIGTERM, then SIGKILL after 5 s).
import { spawn } from 'node:child_process';
import { join, dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// Spawns `cmd`; resolves with {proc, lines} once every regexp in `waitFor` matched
// a stdout line (each match's group 1 is returned in order).
export function start(cmd, args, waitFor = [], timeoutMs = 20000) {
  return new Promise((resolveStart, reject) => {
    const proc = spawn(cmd, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    const found = new Array(waitFor.length).fill(null);
    const log = [];
    let buf = '';
    const timer = setTimeout(() => reject(new Error(`${cmd} did not print ${waitFor.join(', ')} in ${timeoutMs} ms:\n${log.join('\n')}`)), timeoutMs);
    const check = () => {
      if (found.every((x) => x !== null)) {
        clearTimeout(timer);
        resolveStart({ proc, found, log });
      }
    };
    proc.stdout.on('data', (d) => {
      buf += d;
      let nl;
      while ((nl = buf.indexOf('\n')) >= 0) {
        const line = buf.slice(0, nl);
        buf = buf.slice(nl + 1);
        log.push(line);
        waitFor.forEach((re, i) => {
          const m = re.exec(line);
          if (m && found[i] === null) found[i] = m[1];
        });
        check();
      }
    });
    proc.stderr.on('data', (d) => {
      log.push(String(d).trimEnd());
      if (log.length > 400) log.splice(0, log.length - 400);
    });
    proc.on('exit', (code, sig) => {
      clearTimeout(timer);
      reject(new Error(`${cmd} exited (${code ?? sig}) before it was ready:\n${log.join('\n')}`));
    });
    check();
  });
}

export async function stop(proc) {
  if (!proc || proc.exitCode !== null || proc.signalCode !== null) return;
  const exited = new Promise((r) => proc.once('exit', r));
  proc.kill('SIGTERM');
  const t = setTimeout(() => proc.kill('SIGKILL'), 5000);
  await exited;
  clearTimeout(t);
}

// The binaries under test: build/bin, or IOFLEET_BIN_DIR.
export const BIN_DIR = resolve(process.env.IOFLEET_BIN_DIR || join(dirname(fileURLToPath(import.meta.url)), '..', '..', 'build', 'bin'));
export const CONTROLLER = join(BIN_DIR, 'iofleet-controller');
export const AGENT = join(BIN_DIR, 'iofleet-agent');
