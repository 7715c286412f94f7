"""The one harness of iofleet's multi-process tests (tests/e2e, tests/truth,
tests/faults, tests/metrics): checks, waits, processes with log capture and
guaranteed teardown, the controller and agent processes, a REST client, a
test environment (temp dir + processes + cleanups) and the case runner.

python3, standard library only. A suite imports it with

    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
    import iofleet_harness as h

and sets h.BUILD (the build dir) before it starts a process (run_main does).

Ports: a controller binds port 0 by default and the harness reads the ports it
bound from its log ("grpc listening on HOST:PORT"), so no port is picked
before the process binds it. A restart reuses the ports the first start bound.
Where an address must be known before the process starts (controllers that
advertise their address for high availability, a restart that must not find
its port taken), reserve_port() hands out a port below the kernel's ephemeral
range (which the kernel never hands to a bind of port 0 or an outgoing
connection) held under a lock file for the life of this process, so no other
iofleet test process on the machine takes it either.
"""

import ctypes
import fcntl
import json
import os
import random
import re
import shutil
import signal
import socket
import sqlite3
import subprocess
import sys
import tempfile
import time
import traceback
import urllib.error
import urllib.request

BUILD = None  # the build dir (absolute); set by the suite or by run_main
TERMINAL = ("succeeded", "failed", "cancelled", "lost")
SKIP = 77  # ctest SKIP_RETURN_CODE of every suite


# ---------------------------------------------------------------------------
# Checks and waits.

class TestFailure(Exception):
    pass


class TestSkip(Exception):
    """The case cannot run here (not root, a tool missing): ctest SKIP (exit 77)."""


def check(cond, msg):
    if not cond:
        raise TestFailure(msg)


def log(msg):
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", flush=True)


def wait_for(pred, timeout, what, interval=0.2, retry_errors=False):
    """Calls pred until it returns something true (returned) or `timeout`
    seconds pass (TestFailure naming `what` and pred's last answer).
    retry_errors: an exception pred raises counts as a false answer."""
    deadline = time.time() + timeout
    last = None
    while time.time() < deadline:
        try:
            last = pred()
        except Exception as e:  # noqa: BLE001
            if not retry_errors:
                raise
            last = e
        if last and not isinstance(last, Exception):
            return last
        time.sleep(interval)
    raise TestFailure(f"timed out after {timeout}s waiting for {what} (last: {last!r})")


def sh(*args, check_rc=True):
    p = subprocess.run(list(args), capture_output=True, text=True)
    if check_rc and p.returncode != 0:
        raise TestFailure(f"{' '.join(args)} exited {p.returncode}: {p.stderr.strip()}")
    return p


def bin_path(*parts):
    return os.path.join(BUILD, *parts)


# ---------------------------------------------------------------------------
# Processes.

_libc = ctypes.CDLL(None, use_errno=True)


def die_with_parent():
    """preexec_fn: the child gets SIGKILL when the test process dies (ctest's
    timeout kills with SIGKILL and runs no cleanup)."""
    _libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG


def stop_proc(proc, timeout=15, sig=signal.SIGTERM):
    """`sig`, then SIGKILL after `timeout` s; a no-op on an exited process."""
    if proc is None or proc.poll() is not None:
        return
    proc.send_signal(sig)
    try:
        proc.wait(timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def spawn(args, log_path, mode="a", env=None, stdin=subprocess.DEVNULL):
    """Starts `args` with stdout and stderr appended to `log_path`, dying with
    this process. Returns the Popen."""
    with open(log_path, mode) as logf:
        return subprocess.Popen(args, stdout=logf, stderr=subprocess.STDOUT, stdin=stdin,
                                preexec_fn=die_with_parent, env=env)


def read_text(path):
    try:
        with open(path, errors="replace") as f:
            return f.read()
    except FileNotFoundError:
        return ""


def proc_status_kb(pid, field):
    """A kB field of /proc/PID/status (VmRSS, VmHWM, ...); 0 when absent."""
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return 0


def rss_kb(pid):
    return proc_status_kb(pid, "VmRSS")


def proc_stat(pid):
    """(state, ppid, sid) of /proc/PID/stat, or None when the process is gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return None
    return fields[0], int(fields[1]), int(fields[3])


def session_child(pid):
    """The child of `pid` that leads a session of its own (the process that
    `iofleet-agent run|serve` forks to run in its own session), or None."""
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        st = proc_stat(int(d))
        if st and st[1] == pid and st[2] == int(d) and st[0] != "Z":
            return int(d)
    return None


def wait_gone(pid, timeout=10):
    """Until `pid` has exited (gone or a zombie); False on timeout."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        st = proc_stat(pid)
        if st is None or st[0] in ("Z", "X"):
            return True
        time.sleep(0.02)
    return False


def finish_dir(path, keep, tail_lines=25):
    """A test's temp dir at its end: removed, or (a failure, or asked to keep
    it) kept and named, with the tail of every process log in it printed."""
    if not keep:
        shutil.rmtree(path, ignore_errors=True)
        return
    print(f"--- kept {path}", file=sys.stderr)
    for f in sorted(os.listdir(path)):
        if f.endswith(".log"):
            with open(os.path.join(path, f), errors="replace") as fh:
                tail = fh.readlines()[-tail_lines:]
            print(f"--- {f} (tail)\n" + "".join(tail), file=sys.stderr)


# ---------------------------------------------------------------------------
# Ports.

_PORT_LOCK_DIR = os.path.join(tempfile.gettempdir(), "iofleet-test-ports")
_held_ports = {}  # port -> open lock file (held until this process exits)


def _ephemeral_low():
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
            return int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768


def reserve_port(ip="127.0.0.1"):
    """A TCP port on `ip` for a process that must be told its port before it
    binds: below the ephemeral range (the kernel hands those to no port-0 bind
    and no outgoing connection), free now, and locked (flock on a file in
    /tmp/iofleet-test-ports) for the life of this process, so no other test
    process reserves it. Bind it with SO_REUSEADDR (the controller does)."""
    os.makedirs(_PORT_LOCK_DIR, exist_ok=True)
    hi = min(_ephemeral_low(), 32768) - 1
    lo = max(1024, hi - 12000)
    for _ in range(500):
        port = random.randint(lo, hi)
        if port in _held_ports:
            continue
        f = open(os.path.join(_PORT_LOCK_DIR, f"{port}.lock"), "w")
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            f.close()
            continue
        with socket.socket() as s:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                s.bind((ip, port))
            except OSError:
                f.close()
                continue
        _held_ports[port] = f
        return port
    raise TestFailure(f"no free port to reserve in {lo}..{hi}")


# ---------------------------------------------------------------------------
# REST.

def http_request(base, method, path, body=None, timeout=15, headers=None):
    """One HTTP request to base + path (body: JSON-encoded when not bytes/str).
    Returns (status, content type, text); HTTP errors are returned, not raised."""
    if body is None or isinstance(body, bytes):
        data = body
    elif isinstance(body, str):
        data = body.encode()
    else:
        data = json.dumps(body).encode()
    hdrs = {"Content-Type": "application/json"}
    hdrs.update(headers or {})
    req = urllib.request.Request(base + path, data=data, method=method, headers=hdrs)
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return r.status, r.headers.get("Content-Type", ""), r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.headers.get("Content-Type", ""), e.read().decode()


class Rest:
    """The REST API of the env's controller (self.controller.http)."""

    rest_timeout = 15

    def request(self, method, path, body=None, timeout=None):
        """(status, content type, text) of /api/v1 + path."""
        return http_request(f"http://{self.controller.http}/api/v1", method, path, body,
                            timeout or self.rest_timeout)

    def api(self, method, path, body=None, ok=True, timeout=None):
        """(status, parsed JSON body); TestFailure on a non-2xx status when ok."""
        status, _, text = self.request(method, path, body, timeout)
        try:
            payload = json.loads(text) if text else None
        except ValueError:
            payload = {"raw": text}
        if ok and not 200 <= status < 300:
            raise TestFailure(f"{method} {path} -> {status}: {text}")
        return status, payload

    def get(self, path):
        return self.api("GET", path)[1]

    def agents_json(self):
        return {a["name"]: a for a in self.get("/agents")["agents"]}

    def agents_up(self, names):
        try:
            ags = self.agents_json()
        except Exception:  # noqa: BLE001 (not answering yet)
            return False
        return all(n in ags and ags[n]["state"] == "up" for n in names)

    def wait_agents_up(self, names, timeout=30):
        wait_for(lambda: self.agents_up(names), timeout, f"agents {list(names)} up")

    def post_job(self, body, ok=True):
        """POST /jobs; the new job's id (ok), else (status, payload)."""
        status, res = self.api("POST", "/jobs", body, ok=ok)
        if ok:
            check(status == 201, f"POST /jobs status {status}: {res}")
            return res["id"]
        return status, res

    def job(self, job_id):
        return self.get(f"/jobs/{job_id}")

    def runs(self, job_id):
        return self.job(job_id)["runs"]

    def wait_runs_done(self, job_id, timeout=60, interval=0.25):
        """The job once it has runs and every one is in a terminal state."""
        def done():
            j = self.job(job_id)
            runs = j.get("runs", [])
            return j if runs and all(r["state"] in TERMINAL for r in runs) else None
        return wait_for(done, timeout, f"job {job_id} to finish", interval=interval)

    def samples(self, run_id):
        return self.get(f"/runs/{run_id}/samples")["records"]


# ---------------------------------------------------------------------------
# The controller and agent processes.

class Controller:
    """The controller process, logging to <env.dir>/<name>.<start>.log. Ports
    0 (the default) are bound by the process, and the ports it bound are read
    from its log; restarts reuse them (reserve_ports: reserved ports instead,
    for a controller restarted while agents dial it). The first start passes --init (a new
    store in the env's data dir); restarts must find that store."""

    def __init__(self, env, ip="127.0.0.1", grpc_port=None, http_port=None,
                 heartbeat_timeout=None, extra_args=(), proc_env=None, store=None,
                 name="controller", netns=None, reserve_ports=False, wrapper=()):
        self.env = env
        # A command the controller runs under (a profiler: ["heaptrack", "-o", F]);
        # pid() is then the controller's, not the wrapper's.
        self.wrapper = list(wrapper)
        self.name = name  # log file prefix (several controllers: ha_test.py)
        self.netns = netns  # run inside this network namespace
        self.store = store  # --store=URI (PostgreSQL) instead of --data-dir
        self.ip = ip
        # reserve_ports: a controller that will be restarted (agents must find
        # it again on the same ports) binds reserved ports, not port 0.
        self.grpc_port = grpc_port or (reserve_port(ip) if reserve_ports else 0)
        self.http_port = http_port or (reserve_port(ip) if reserve_ports else 0)
        self.hb = heartbeat_timeout  # --heartbeat-timeout (None: the default)
        self.extra_args = list(extra_args)
        self.proc_env = proc_env  # environment of the process (None: inherit)
        self.proc = None
        self.starts = 0
        self.log_path = None

    @property
    def grpc(self):
        return f"{self.ip}:{self.grpc_port}"

    @property
    def http(self):
        return f"{self.ip}:{self.http_port}"

    def start(self, init=None, data_dir=None, wait=True):
        """init: pass --init (default: on the first start only). wait: until
        it reports both listen addresses. Returns the log path."""
        self.starts += 1
        if init is None:
            init = self.starts == 1
        path = os.path.join(self.env.dir, f"{self.name}.{self.starts}.log")
        self.log_path = path
        args = ((["ip", "netns", "exec", self.netns] if self.netns else []) + self.wrapper +
                [bin_path("bin", "iofleet-controller"),
                 f"--store={self.store}" if self.store
                 else f"--data-dir={data_dir or self.env.data_dir}",
                 f"--grpc-listen={self.grpc}", f"--http-listen={self.http}"] +
                ([f"--heartbeat-timeout={self.hb}"] if self.hb else []) +
                (["--init"] if init else []) + self.extra_args)
        self.proc = spawn(args, path, mode="w", env=self.proc_env)
        self.env.procs.append(self.proc)
        if wait:
            # A profiler (heaptrack) slows the start several times over on a
            # loaded machine: 20 s was not enough twice at load 18.
            wait_for(self._listening, 90 if self.wrapper else 20, f"{self.name} listening")
        return path

    def _listening(self):
        check(self.proc.poll() is None,
              f"{self.name} exited {self.proc.returncode}: {read_text(self.log_path)[-500:]}")
        t = read_text(self.log_path)
        g = re.search(r"grpc listening on (\S+)", t)
        h = re.search(r"http listening on (\S+)", t)
        if not (g and h):
            return False
        self.grpc_port = int(g.group(1).rsplit(":", 1)[1])
        self.http_port = int(h.group(1).rsplit(":", 1)[1])
        return True

    def log_text(self):
        return read_text(self.log_path)

    def pid(self):
        """The controller process's pid (under a wrapper: its descendant
        running iofleet-controller)."""
        if not self.wrapper:
            return self.proc.pid
        todo = [self.proc.pid]
        while todo:
            p = todo.pop()
            try:
                with open(f"/proc/{p}/comm") as f:
                    if f.read().strip() == "iofleet-control" and p != self.proc.pid:
                        return p
                with open(f"/proc/{p}/task/{p}/children") as f:
                    todo += [int(c) for c in f.read().split()]
            except OSError:
                pass
        return None

    def store_id(self):
        m = re.search(r"^store (\S+) in ", self.log_text(), re.M)
        return m.group(1) if m else None

    def _signal_wrapped(self, sig):
        """Under a wrapper (heaptrack's script) the signal goes to the
        controller itself first: the wrapper may not pass it on, and a
        controller left running after a failed start outlives the test."""
        if self.wrapper and self.proc is not None and self.proc.poll() is None:
            pid = self.pid()
            if pid:
                try:
                    os.kill(pid, sig)
                except ProcessLookupError:
                    pass

    def kill(self):
        self._signal_wrapped(signal.SIGKILL)
        self.proc.kill()
        self.proc.wait()

    def stop(self, sig=signal.SIGTERM):
        self._signal_wrapped(sig)
        stop_proc(self.proc, sig=sig)

    def alive(self):
        return self.proc is not None and self.proc.poll() is None


class Agent:
    """An `iofleet-agent serve` process, logging to <env.dir>/<name>.log, with
    its allow dir (holding a random `target.dat` of target_size bytes unless
    0) and spool dir under env.dir."""

    def __init__(self, env, name, labels=None, netns=None, controller=None,
                 target_size=4 << 20, agent_name=None, extra_args=(), backoff_max_ms=1000):
        self.env = env
        self.extra_args = list(extra_args)
        self.name = name  # the harness's key: log, spool and allow dir names
        self.agent_name = agent_name or name  # --name
        self.labels = labels if labels is not None else {"host": self.agent_name}
        self.netns = netns
        self.controller = controller  # HOST:PORT[,...]; default: env.controller.grpc
        self.backoff_max_ms = backoff_max_ms
        self.allow = os.path.join(env.dir, f"allow-{name}")
        self.spool = os.path.join(env.dir, f"spool-{name}")
        self.log_path = os.path.join(env.dir, f"{name}.log")
        os.makedirs(self.allow, exist_ok=True)
        self.target = os.path.join(self.allow, "target.dat")
        if target_size:
            self.make_target("target.dat", target_size)
        self.proc = None

    def make_target(self, name="target.dat", size=4 << 20):
        """A file of `size` random bytes in the allow dir (kept if there)."""
        path = os.path.join(self.allow, name)
        if not os.path.exists(path):
            with open(path, "wb") as f:
                f.write(os.urandom(size))
        return path

    def start(self):
        cmd = [bin_path("bin", "iofleet-agent"), "serve",
               f"--controller={self.controller or self.env.controller.grpc}",
               f"--name={self.agent_name}"]
        if self.labels:
            cmd.append("--labels=" + ",".join(f"{k}={v}" for k, v in self.labels.items()))
        cmd += [f"--allow-path={self.allow}", f"--spool-dir={self.spool}",
               "--backoff-initial-ms=100", f"--backoff-max-ms={self.backoff_max_ms}"]
        cmd += self.extra_args
        if self.netns:
            cmd = ["ip", "netns", "exec", self.netns] + cmd
        self.proc = spawn(cmd, self.log_path)
        self.env.procs.append(self.proc)

    def worker_pid(self):
        """The pid of the process serving: `iofleet-agent serve` started in
        this (the harness's) session forks a child that leads a session of
        its own and runs the daemon (agent/run/sched_session.h); the pid the
        harness started only forwards signals. Its own pid when it leads its
        session (nothing forked) or before the child exists."""
        if self.proc is None:
            return None
        return session_child(self.proc.pid) or self.proc.pid

    def kill(self):
        """SIGKILL, as a crash: the serving child dies with the parent
        (PR_SET_PDEATHSIG); returns once both are gone, so a restart never
        meets the old process still holding its stream or spool."""
        child = session_child(self.proc.pid)
        self.proc.kill()
        self.proc.wait()
        if child is not None and not wait_gone(child):
            raise TestFailure(f"agent {self.name}: serving child {child} outlived its parent")

    def stop(self):
        stop_proc(self.proc)

    def log_text(self):
        return read_text(self.log_path)

    def reconnects(self):
        return max(0, len(re.findall(r"connected to \S+ as", self.log_text())) - 1)

    def spool_files(self):
        try:
            return [f for f in os.listdir(self.spool) if f.endswith(".spool")]
        except FileNotFoundError:
            return []


# ---------------------------------------------------------------------------
# The environment of one case.

class Env(Rest):
    """A temp dir, a controller, agents, REST and SQLite helpers, and teardown
    that always runs: agents and controllers stopped, any process left killed,
    the cleanups run last-first, the dir removed (kept, with every log's tail
    printed, on a failure or when keep)."""

    def __init__(self, name, data_dir=None, keep=False, tmp_root=None, tail_lines=30):
        self.name = name
        self.dir = tempfile.mkdtemp(prefix=f"iofleet-{name}-", dir=tmp_root)
        self.data_dir = data_dir or os.path.join(self.dir, "data")
        self.keep = keep
        self.tail_lines = tail_lines
        self.procs = []
        self.cleanups = []  # callables run last-first after the processes are gone
        self.controller = None
        self.agents = {}  # name -> Agent (a suite may keep a list instead)
        self.figures = {}

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        agents = self.agents.values() if isinstance(self.agents, dict) else self.agents
        for a in agents:
            try:
                a.stop()
            except Exception:  # noqa: BLE001 (keep tearing down)
                pass
        if self.controller:
            try:
                self.controller.stop()
            except Exception:  # noqa: BLE001
                pass
        for p in self.procs:
            if p.poll() is None:
                p.kill()
                p.wait()
        for fn in reversed(self.cleanups):
            try:
                fn()
            except Exception as e:  # noqa: BLE001 (keep cleaning)
                print(f"cleanup: {e}", file=sys.stderr)
        if self.figures:
            log(f"FIGURES {self.name} {json.dumps(self.figures)}")
        finish_dir(self.dir, keep=exc_type is not None or self.keep, tail_lines=self.tail_lines)
        return False

    def add_controller(self, **kw):
        self.controller = Controller(self, **kw)
        self.controller.start()
        return self.controller

    def add_agent(self, name, start=True, **kw):
        a = Agent(self, name, **kw)
        self.agents[name] = a
        if start:
            a.start()
        return a

    def write(self, name, text):
        path = os.path.join(self.dir, name)
        with open(path, "w") as f:
            f.write(text if isinstance(text, str) else json.dumps(text))
        return path

    # CLI --------------------------------------------------------------------
    def cli(self, *args, check_rc=None, timeout=90):
        """`iofleet ARGS` against this env's controller (IOFLEET_CONTROLLER)."""
        env = dict(os.environ, IOFLEET_CONTROLLER=f"http://{self.controller.http}")
        p = subprocess.run([bin_path("bin", "iofleet"), *args], env=env,
                           capture_output=True, text=True, timeout=timeout)
        if check_rc is not None and p.returncode != check_rc:
            raise TestFailure(f"iofleet {' '.join(args)} exited {p.returncode} (want {check_rc})"
                              f"\nstdout: {p.stdout[-1500:]}\nstderr: {p.stderr[-1500:]}")
        return p

    # SQLite -----------------------------------------------------------------
    def db_path(self):
        return os.path.join(self.data_dir, "iofleet.db")

    def db(self):
        check(os.path.exists(self.db_path()), f"{self.db_path()} missing")
        return sqlite3.connect(f"file:{self.db_path()}?mode=ro", uri=True, timeout=10)

    def query(self, sql, *args):
        db = self.db()
        try:
            return db.execute(sql, args).fetchall()
        finally:
            db.close()

    def integrity(self):
        return self.query("PRAGMA integrity_check")[0][0]


def fio_job(target, runtime=2, rw="randread", numjobs=1, extra=""):
    """A psync 4k job on `target`, time based."""
    return (f"[global]\nioengine=psync\nbs=4k\nsize=4m\ntime_based=1\nruntime={runtime}\n"
            f"filename={target}\n{extra}\n[job]\nrw={rw}\nnumjobs={numjobs}\n")


# ---------------------------------------------------------------------------
# Running cases.

def missing_binaries(binaries):
    """The first of `binaries` (paths under BUILD) missing, or None."""
    for b in binaries:
        if not os.path.exists(bin_path(b)):
            return b
    return None


def run_cases(cases, names, binaries=("bin/iofleet-controller", "bin/iofleet-agent")):
    """Runs the named cases (or "all") of `cases` (name -> callable) in order,
    each printing PASS, SKIP or FAIL; returns the exit status (1 on any failure
    or a missing binary, 77 when every case was skipped, 2 for an unknown
    name)."""
    b = missing_binaries(binaries)
    if b:
        print(f"missing {b} in {BUILD}: build it first", file=sys.stderr)
        return 1
    # ctest's timeout kills us with SIGKILL (children follow via PDEATHSIG); a
    # SIGTERM/SIGINT unwinds through the cases' cleanup.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    names = list(cases) if names == ["all"] else names
    unknown = [n for n in names if n not in cases]
    if unknown:
        print(f"unknown case {unknown[0]}; known: {', '.join(cases)}", file=sys.stderr)
        return 2
    failed, skipped = [], []
    for n in names:
        t0 = time.time()
        try:
            cases[n]()
            print(f"PASS {n} ({time.time() - t0:.1f}s)", flush=True)
        except TestSkip as e:
            skipped.append(n)
            print(f"SKIP {n}: {e}", flush=True)
        except Exception as e:  # noqa: BLE001 (TestFailure or anything unexpected)
            failed.append(n)
            print(f"FAIL {n} ({time.time() - t0:.1f}s): {e}", file=sys.stderr, flush=True)
            if not isinstance(e, TestFailure):
                traceback.print_exc()
    if failed:
        return 1
    return SKIP if skipped and len(skipped) == len(names) else 0


def main(cases, binaries=("bin/iofleet-controller", "bin/iofleet-agent"), argv=None):
    """A suite's main: --build-dir BUILD CASE... (or "all"); run_cases's status."""
    import argparse
    ap = argparse.ArgumentParser()
    ap.add_argument("--build-dir", required=True)
    ap.add_argument("cases", nargs="+")
    args = ap.parse_args(argv)
    set_build(args.build_dir)
    return run_cases(cases, args.cases, binaries)


def set_build(build_dir):
    global BUILD
    BUILD = os.path.abspath(build_dir)
    return BUILD
