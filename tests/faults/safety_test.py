#!/usr/bin/env python3
"""State-safety tests (issue 11): real controller, agent and CLI processes.

Usage: safety_test.py --build-dir BUILD CASE...

Cases (each its own ctest test, label "faults"; RELIABILITY.md has the figures):
  datadir_lock      a second controller on a running controller's data dir exits
                    non-zero at once naming the first one's pid; the first one's
                    run goes on untouched and succeeds.
  clock_step        the controller's wall clock jumps +1 h mid-run (libfaketime):
                    the run is not lost, the job succeeds, every record is stored.
  slow_http         50 slow-loris connections: /healthz and GET /jobs still answer
                    in well under 1 s; the slow ones get 408; past
                    --max-http-connections a new connection gets a clear 503.
  cancel_finished   cancel of a finished job answers 409 (REST), FAILED_PRECONDITION
                    (gRPC), exit 1 (CLI) and changes nothing.
  unknown_host      an unknown host name is 400 naming it and the known agents;
                    with wait_for_hosts the run waits and says why (also lease held,
                    agent down), in REST and `iofleet status`.
  empty_store       a controller will not start on an empty or mistyped data dir
                    without --init; one started with --init on an empty dir does
                    not cancel or drop the agents' runs of the other store; the
                    first store gets them, whole, when its controller returns.
  duplicate_name    a second agent with a live agent's --name is refused with the
                    live session's peer and start, and does not evict it; it takes
                    the name once the first is gone.
  control_chars     names, tags, variant names with control characters are 400
                    naming the field; names already in a store (older data) are
                    printed escaped by the CLI, whole, exit 0.

Uses faults_test.py's harness (Env, Controller, Agent, check_records, ...).
"""
import json
import os
import re
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import faults_test as ft  # noqa: E402
from faults_test import (Env, TestSkip, check, check_records, fio_job, log,  # noqa: E402
                         wait_for)

FAKETIME_LIB = "/usr/lib/x86_64-linux-gnu/faketime/libfaketimeMT.so.1"


def cli(env, *args, timeout=30):
    """Runs the iofleet CLI; returns (rc, stdout bytes, stderr bytes)."""
    p = subprocess.run([ft.h.bin_path("bin", "iofleet"),
                        f"--controller=http://{env.controller.http}"] + list(args),
                       capture_output=True, timeout=timeout)
    return p.returncode, p.stdout, p.stderr


def http_get(addr, path, timeout=5):
    """GET over a fresh connection; returns (status, body text, seconds)."""
    t = time.time()
    try:
        with urllib.request.urlopen(f"http://{addr}{path}", timeout=timeout) as r:
            status, body = r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        status, body = e.code, e.read().decode()
    return status, body, time.time() - t


def wait_exit(proc, timeout):
    try:
        return proc.wait(timeout)
    except subprocess.TimeoutExpired:
        return None


# ---------------------------------------------------------------------------

def case_datadir_lock():
    with Env("datadir_lock") as env:
        a_ctl = env.add_controller(heartbeat_timeout="3s")
        a = env.add_agent("agent-a")
        env.wait_agents_up(["agent-a"])
        j = env.submit(fio_job(a.target, runtime=10), ["agent-a"], name="held")
        r = env.wait_state(j, "running", 15)
        wait_for(lambda: len(env.samples(r["id"])) >= 2, 10, "samples")
        leases = env.query("SELECT run_id FROM leases")

        # A second controller on the same data dir (its own ports).
        second = ft.Controller(env, heartbeat_timeout="3s")
        t0 = time.time()
        path = second.start(init=False, wait=False)
        rc = wait_exit(second.proc, 10)
        took = time.time() - t0
        with open(path) as f:
            out = f.read()
        check(rc is not None, "second controller still running on a locked data dir")
        check(rc != 0, f"second controller exited {rc}")
        check(f"pid {a_ctl.proc.pid}" in out, f"message does not name pid {a_ctl.proc.pid}: {out}")
        check("in use by another controller" in out, f"message: {out}")
        # What the second one would have done (lose the run within 3 s) did not happen.
        time.sleep(4)
        check(env.run(j)["state"] == "running", f"run {env.run(j)}")
        check(env.query("SELECT run_id FROM leases") == leases, "lease changed")
        job = env.wait_job(j, 30)
        check(job["state"] == "succeeded", f"job {job}")
        n = check_records(env, r["id"], 1, 9)
        # Once the first controller stops, the lock is free (no --init: the store exists).
        a_ctl.stop()
        third = ft.Controller(env, heartbeat_timeout="3s")
        third.start(init=False)
        check(third.alive(), "controller could not take the freed data dir")
        third.stop()
        check(env.integrity() == "ok", "integrity_check")
        env.figures = {"second_exit_code": rc, "second_exited_after_s": round(took, 2),
                       "message": out.strip().splitlines()[-1], "records": n,
                       "run_state_4s_later": "running", "lost": 0}


def case_clock_step():
    if not os.path.exists(FAKETIME_LIB):
        raise TestSkip(f"needs libfaketime ({FAKETIME_LIB}; Debian package faketime)")
    with Env("clock_step") as env:
        rc_file = os.path.join(env.dir, "faketime.rc")
        with open(rc_file, "w") as f:
            f.write("+0\n")
        # The controller's wall clock follows rc_file (re-read every second);
        # its monotonic clock is left alone, as a real clock step leaves it.
        penv = dict(os.environ, LD_PRELOAD=FAKETIME_LIB, FAKETIME_TIMESTAMP_FILE=rc_file,
                    FAKETIME_CACHE_DURATION="1", FAKETIME_DONT_FAKE_MONOTONIC="1")
        env.controller = ft.Controller(env, heartbeat_timeout="3s", proc_env=penv)
        env.controller.start()
        a = env.add_agent("agent-a")
        env.wait_agents_up(["agent-a"])
        runtime = 12
        j = env.submit(fio_job(a.target, runtime=runtime), ["agent-a"], name="stepped", retries=1)
        r = env.wait_state(j, "running", 15)
        wait_for(lambda: len(env.samples(r["id"])) >= 2, 10, "samples before the step")
        with open(rc_file, "w") as f:
            f.write("+1h\n")
        t_step = time.time()
        log("controller clock +1 h")

        # The step took effect: the controller now stamps agents an hour ahead.
        def stepped():
            ag = env.get("/agents")["agents"][0]
            return ag["last_seen_ms"] - time.time() * 1000 > 3500 * 1000
        wait_for(stepped, 10, "the controller's clock to jump")
        t_seen = time.time() - t_step
        states = set()
        while time.time() - t_step < 6:  # two heartbeat timeouts after the jump
            states.add(env.run(j)["state"])
            time.sleep(0.2)
        check(states == {"running"}, f"run states after the step: {states}")
        job = env.wait_job(j, runtime + 30)
        check(job["state"] == "succeeded" and len(job["runs"]) == 1, f"job {job}")
        n = check_records(env, r["id"], 1, runtime - 1)
        check(env.query("SELECT count(*) FROM runs WHERE state='lost'")[0][0] == 0, "a run was lost")
        env.figures = {"step": "+1h", "step_visible_after_s": round(t_seen, 1),
                       "heartbeat_timeout_s": 3, "run_states_6s_after_step": sorted(states),
                       "records": n, "lost_runs": 0, "retries_used": 0}


class SlowClients:
    """`count` slow-loris connections: each sends a request line and then one
    header byte every `every` s, never finishing. A connection the server
    closes is counted (and whether it got a 408) and replaced."""

    def __init__(self, addr, count, every=2.0):
        self.host, port = addr.rsplit(":", 1)
        self.port = int(port)
        self.count, self.every = count, every
        self.socks = {}  # socket -> opened at
        self.closed, self.got_408, self.lifetimes = 0, 0, []
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self.loop, daemon=True)

    def open(self):
        s = socket.create_connection((self.host, self.port), timeout=5)
        s.sendall(b"GET /api/v1/jobs HTTP/1.1\r\nHost: slow\r\nX-Slow: ")
        s.setblocking(False)
        self.socks[s] = time.time()

    def loop(self):
        while not self.stop.is_set():
            for s in list(self.socks):
                try:
                    data = s.recv(4096)
                    gone = True  # data or EOF: the server answered or closed
                except BlockingIOError:
                    data, gone = b"", False
                except OSError:
                    data, gone = b"", True
                if not gone:
                    try:
                        s.send(b"x")
                        continue
                    except OSError:
                        pass
                self.closed += 1
                self.got_408 += data.startswith(b"HTTP/1.1 408")
                self.lifetimes.append(time.time() - self.socks.pop(s))
                s.close()
            while len(self.socks) < self.count and not self.stop.is_set():
                self.open()
            self.stop.wait(self.every)

    def __enter__(self):
        for _ in range(self.count):
            self.open()
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.stop.set()
        self.thread.join(10)
        for s in self.socks:
            s.close()
        return False


def case_slow_http():
    with Env("slow_http") as env:
        c = env.add_controller(heartbeat_timeout="15s", reserve_ports=True)
        http = c.http
        latencies = {"/healthz": [], "/api/v1/jobs": []}
        failures = []
        with SlowClients(http, 50) as slow:
            time.sleep(1)
            t_end = time.time() + 15  # past the 10 s request timeout: slow ones recycle
            while time.time() < t_end:
                for path in latencies:
                    try:
                        st, body, secs = http_get(http, path, timeout=5)
                        latencies[path].append(secs)
                        if st != 200:
                            failures.append(f"{path} -> {st} {body[:200]}")
                    except Exception as e:  # noqa: BLE001 (a timeout is the failure)
                        latencies[path].append(5.0)
                        failures.append(f"{path}: {e}")
                time.sleep(0.2)
            open_slow = len(slow.socks)
        check(not failures, f"requests failed with 50 slow clients open: {failures[:5]}")
        worst = {p: max(v) for p, v in latencies.items()}
        check(all(w < 1.0 for w in worst.values()), f"slowest answers {worst}")
        check(slow.got_408 >= 40, f"slow clients answered 408: {slow.got_408} of {slow.closed}")
        life = sorted(slow.lifetimes)
        check(life and 9 <= life[len(life) // 2] <= 14,
              f"slow connections lived {life[:3]}..{life[-3:]} s (request timeout 10 s)")

        # A bounded connection count: past it, a clear 503.
        c.stop()
        c.extra_args = ["--max-http-connections=20"]
        c.start()
        host, port = c.http.rsplit(":", 1)
        idle = [socket.create_connection((host, int(port))) for _ in range(20)]
        time.sleep(0.5)
        st, body, secs = http_get(c.http, "/api/v1/jobs")
        for s in idle:
            s.close()
        check(st == 503, f"connection 21 of 20 -> {st} {body}")
        err = json.loads(body)["error"]
        check(err["code"] == "UNAVAILABLE" and "--max-http-connections" in err["message"],
              f"503 body {body}")
        wait_for(lambda: http_get(c.http, "/api/v1/jobs")[0] == 200, 5,
                 "service after the idle connections closed")
        env.figures = {"slow_connections": 50, "probes": len(latencies["/healthz"]),
                       "healthz_max_ms": round(1000 * worst["/healthz"], 1),
                       "jobs_max_ms": round(1000 * worst["/api/v1/jobs"], 1),
                       "healthz_median_ms": round(1000 * sorted(latencies["/healthz"])[
                           len(latencies["/healthz"]) // 2], 1),
                       "slow_closed_with_408": slow.got_408, "slow_closed": slow.closed,
                       "slow_lifetime_median_s": round(life[len(life) // 2], 1),
                       "still_open_at_end": open_slow,
                       "over_limit_status": st, "over_limit_message": err["message"],
                       "over_limit_answer_ms": round(1000 * secs, 1)}


def case_cancel_finished():
    with Env("cancel_finished") as env:
        env.add_controller(heartbeat_timeout="15s")
        a = env.add_agent("agent-a")
        env.wait_agents_up(["agent-a"])
        j = env.submit(fio_job(a.target, runtime=1), ["agent-a"], name="done")
        job = env.wait_job(j, 30)
        check(job["state"] == "succeeded", f"job {job}")
        before = env.job(j)
        st, body = env.api("POST", f"/jobs/{j}/cancel", {}, ok=False)
        check(st == 409, f"cancel of a succeeded job -> {st} {body}")
        check("already succeeded" in body["error"]["message"], f"body {body}")
        grpc = subprocess.run([ft.h.bin_path("tests", "iofleet-e2e-grpc"),
                               f"--controller={env.controller.grpc}", "cancel", j],
                              capture_output=True, text=True, timeout=30)
        check(grpc.returncode == 1 and "code 9:" in grpc.stderr,  # FAILED_PRECONDITION
              f"gRPC CancelJob: rc {grpc.returncode} {grpc.stderr}")
        rc, out, err = cli(env, "cancel", j)
        check(rc == 1 and b"already succeeded" in err, f"CLI cancel: rc {rc} {err}")
        after = env.job(j)
        check(after == before, f"job changed by cancel:\n{before}\n{after}")
        db = env.query("SELECT state, finished_ms, error FROM runs WHERE job_id=?", j)
        check(db == [("succeeded", before["runs"][0]["finished_ms"], "")], f"run row {db}")
        check(env.query("SELECT state, cancel_requested FROM jobs WHERE id=?", j) ==
              [("succeeded", 0)], "job row changed")
        env.figures = {"rest_status": st, "rest_message": body["error"]["message"],
                       "grpc": grpc.stderr.strip(), "cli_exit": rc, "job_unchanged": True}


def case_unknown_host():
    with Env("unknown_host") as env:
        env.add_controller(heartbeat_timeout="3s")
        a = env.add_agent("agent-a")
        b = env.add_agent("agent-b")
        env.wait_agents_up(["agent-a", "agent-b"])
        st, body = env.api("POST", "/jobs", {"name": "typo", "fio": fio_job(a.target, runtime=1),
                                             "hosts": ["agent-a", "agnet-b"]}, ok=False)
        check(st == 400, f"unknown host -> {st} {body}")
        e = body["error"]
        check(e["field"] == "hosts" and '"agnet-b"' in e["message"] and
              "registered agents: agent-a, agent-b" in e["message"], f"error {e}")
        check(env.get("/jobs")["jobs"] == [], "a job was created")

        # wait_for_hosts: accepted; the run says what it waits for.
        late = ft.Agent(env, "late")  # not started yet
        st, body = env.api("POST", "/jobs", {"name": "later", "fio": fio_job(late.target, runtime=1),
                                             "hosts": ["late"], "wait_for_hosts": True}, ok=False)
        check(st == 201, f"wait_for_hosts -> {st} {body}")
        jl = body["id"]
        run = env.run(jl)
        check(run["state"] == "queued" and "host late is not registered" in run["waiting_for"],
              f"run {run}")
        rc, out, _ = cli(env, "status", jl)
        check(rc == 0 and b"waiting: host late is not registered" in out, f"CLI status: {out}")

        # Held lease: the second job on the same target names the holder.
        j1 = env.submit(fio_job(a.target, runtime=4), ["agent-a"], name="holder")
        j2 = env.submit(fio_job(a.target, runtime=1), ["agent-a"], name="behind")
        r1 = env.wait_state(j1, ("assigned", "running"), 15)
        # The agent resolves the second run's target first ("resolving targets
        # on host agent-a"); then it waits for the lease.
        wait_for(lambda: env.run(j2)["waiting_for"].startswith("lease on"), 15,
                 "the second run waits for the lease")
        r2 = env.run(j2)
        check(r2["waiting_for"].startswith(f"lease on {a.target} (") and
              r2["waiting_for"].endswith(f") held by run {r1['id']}"),
              f"waiting_for {r2['waiting_for']!r}")
        rc, out, _ = cli(env, "runs", "--job", j2)
        check(f"held by run {r1['id']}".encode() in out, f"CLI runs: {out}")

        # Agent down: registered, so accepted; the run says since when.
        b.kill()
        wait_for(lambda: not env.agents_up(["agent-b"]), 15, "agent-b down")
        j3 = env.submit(fio_job(b.target, runtime=1), ["agent-b"], name="down")
        r3 = env.run(j3)
        check(r3["state"] == "queued" and r3["waiting_for"].startswith("agent agent-b is down since "),
              f"run {r3}")

        # The late host registers: its run goes.
        env.agents["late"] = late
        late.start()
        check(env.wait_job(jl, 30)["state"] == "succeeded", "late host's job")
        b.start()
        for jid in (j1, j2, j3):
            check(env.wait_job(jid, 30)["state"] == "succeeded", f"{jid}")
        env.figures = {"unknown_host_status": 400, "message": e["message"],
                       "waiting_not_registered": run["waiting_for"],
                       "waiting_lease": r2["waiting_for"], "waiting_down": r3["waiting_for"]}


def case_empty_store():
    with Env("empty_store") as env:
        c = env.add_controller(heartbeat_timeout="15s")
        store_a = c.store_id()
        a = env.add_agent("agent-a")
        env.wait_agents_up(["agent-a"])
        runtime = 14
        j = env.submit(fio_job(a.target, runtime=runtime, numjobs=2), ["agent-a"], name="precious")
        r = env.wait_state(j, "running", 15)
        wait_for(lambda: len(env.samples(r["id"])) >= 4, 10, "samples")
        c.kill()
        log("controller A SIGKILLed")

        # Told to --init an empty dir: a new store, same address. It must leave
        # agent-a's run (store A) alone.
        empty = os.path.join(env.dir, "empty")
        os.makedirs(empty)
        c.start(init=True, data_dir=empty)
        store_b = c.store_id()
        t_b = time.time()
        wait_for(lambda: a.reconnects() >= 1, 15, "the agent to connect to the new controller")
        while time.time() - t_b < runtime:  # the run ends on the agent meanwhile
            check(a.proc.poll() is None, "agent died")
            time.sleep(0.5)
        alog = open(a.log_path, errors="replace").read()
        check(f"run {r['id']} cancel requested" not in alog,
              "the agent cancelled the run on the word of a controller of another store")
        check(f"run {r['id']} succeeded" in alog, "run did not finish on the agent")
        check(a.spool_files(), "the run's spool was dropped")
        check(store_b and store_b != store_a, f"store ids {store_a} {store_b}")
        check(f"serves store {store_b}" in alog, "no warning about the other store")
        runs_b = json.loads(urllib.request.urlopen(f"http://{c.http}/api/v1/runs").read())["runs"]
        check(runs_b == [], f"store B got runs: {runs_b}")
        c.stop()

        # Without --init: an empty dir, a missing one, an empty iofleet.db are refused.
        refusals = {}
        empty = os.path.join(env.dir, "empty2")
        os.makedirs(empty)
        missing = os.path.join(env.dir, "typo", "data")
        zero = os.path.join(env.dir, "zero")
        os.makedirs(zero)
        open(os.path.join(zero, "iofleet.db"), "w").close()
        for name, d in (("empty", empty), ("missing", missing), ("zero_byte_db", zero)):
            t0 = time.time()
            path = c.start(init=False, data_dir=d, wait=False)
            rc = wait_exit(c.proc, 10)
            with open(path) as f:
                out = f.read()
            check(rc is not None and rc != 0, f"{name}: controller started without --init ({rc})")
            check("--init" in out, f"{name}: message does not mention --init: {out}")
            refusals[name] = {"exit": rc, "after_s": round(time.time() - t0, 2),
                              "message": out.strip().splitlines()[-1]}
        check(not os.path.exists(missing), "a missing data dir was created")

        # Store A's controller returns: the run arrives whole.
        c.start(init=False)
        check(c.store_id() == store_a, "store A's id changed")
        job = env.wait_job(j, 30)
        check(job["state"] == "succeeded", f"job {job}")
        n = check_records(env, r["id"], 2, runtime - 1)
        warn = [ln for ln in alog.splitlines() if "WARNING" in ln][:1]
        env.figures = {"refused_without_init": refusals, "store_a": store_a, "store_b": store_b,
                       "agent_warning": warn[0] if warn else None, "records": n,
                       "cancelled_by_store_b": 0, "lost": 0}


def case_duplicate_name():
    with Env("duplicate_name") as env:
        env.add_controller(heartbeat_timeout="15s")
        first = env.add_agent("dup-1", agent_name="dup")
        env.wait_agents_up(["dup"])
        j = env.submit(fio_job(first.target, runtime=10), ["dup"], name="steady")
        r = env.wait_state(j, "running", 15)
        peer = env.get("/agents")["agents"][0].get("peer")
        second = env.add_agent("dup-2", agent_name="dup")
        time.sleep(6)  # the old behaviour: an eviction about every second
        check(first.reconnects() == 0, f"the first agent was evicted {first.reconnects()} times "
                                       "in 6 s by an agent with its name")
        slog = open(second.log_path, errors="replace").read()
        refusals = slog.count("is in use by a live session")
        check(refusals >= 1, f"second agent not refused: {slog[-800:]}")
        m = re.search(r'agent name "dup" is in use by a live session from (\S+), connected since (\S+)',
                      slog)
        check(m and m.group(1) == peer, f"refusal does not name the live session {peer}: {slog[-500:]}")
        check("connected to" not in slog, "the second agent got in")
        check(first.reconnects() == 0, f"the first agent was evicted {first.reconnects()} times")
        check(env.get("/agents")["agents"][0]["peer"] == peer, "live session changed")
        job = env.wait_job(j, 30)
        check(job["state"] == "succeeded", f"job {job}")
        n = check_records(env, r["id"], 1, 9)
        check(first.reconnects() == 0, "evicted later")
        # The first one goes: the name is free for the second.
        first.kill()
        t0 = time.time()
        wait_for(lambda: "connected to" in open(second.log_path, errors="replace").read(), 20,
                 "the second agent to take the name")
        env.figures = {"refusals_in_6s": refusals, "first_agent_reconnects": 0,
                       "message": m.group(0), "records": n,
                       "second_took_name_after_first_died_s": round(time.time() - t0, 1)}


def case_control_chars():
    with Env("control_chars") as env:
        c = env.add_controller(heartbeat_timeout="15s")
        a = env.add_agent("agent-a")
        env.wait_agents_up(["agent-a"])
        text = fio_job(a.target, runtime=1)
        # Names an older store already holds: written into the file directly.
        ids = [env.submit(text, ["agent-a"], name=f"job{i}") for i in range(3)]
        for i in ids:
            env.wait_job(i, 30)
        c.stop()
        db = __import__("sqlite3").connect(env.db_path())
        db.execute("UPDATE jobs SET name=? WHERE id=?", ("evil\x00tail", ids[0]))
        db.execute("UPDATE jobs SET name=? WHERE id=?", ("\x1b[2J\x1b[Hwiped", ids[1]))
        db.execute("UPDATE runs SET error=? WHERE job_id=?", ("bell\x07\x1b]0;title\x07", ids[1]))
        db.commit()
        db.close()
        c.start(init=False)
        rc, out, err = cli(env, "status")
        check(rc == 0, f"status rc {rc}: {err}")
        check(b"\x00" not in out and b"\x1b" not in out and b"\x07" not in out,
              f"raw control bytes in `iofleet status`: {out!r}")
        check(b"evil\\x00tail" in out and b"\\x1b[2J\\x1b[Hwiped" in out, f"status: {out!r}")
        check(all(i.encode() in out for i in ids), f"rows missing after the NUL: {out!r}")
        rc2, out2, _ = cli(env, "status", ids[1])
        check(rc2 == 0 and b"\x1b" not in out2 and b"\x07" not in out2 and
              b"name=\\x1b[2J\\x1b[Hwiped" in out2, f"status JOB: {out2!r}")
        rc3, out3, _ = cli(env, "status", "--json")
        check(rc3 == 0 and b"\x1b" not in out3 and b"\x00" not in out3, f"--json: {out3!r}")
        bad = [({"name": "nul\x00name"}, "name"),
               ({"name": "\x1b[2J\x1b[Hwiped"}, "name"),
               ({"name": "c1\u009bcsi"}, "name"),
               ({"tags": {"k": "v\x07"}}, "tags.k"),
               ({"variants": [{"name": "A\x1b[31m", "options": {"iodepth": "1"}}]},
                "variants[0].name")]
        answers = []
        for extra, field in bad:
            body = {"name": "ok", "fio": text, "hosts": ["agent-a"], **extra}
            st, res = env.api("POST", "/jobs", body, ok=False)
            check(st == 400 and res["error"]["field"] == field and
                  "control character" in res["error"]["message"], f"{extra} -> {st} {res}")
            answers.append(res["error"]["message"])
        check(len(env.get("/jobs")["jobs"]) == 3, "a job with control characters was created")

        env.figures = {"refused": [[f, m] for (_, f), m in zip(bad, answers)],
                       "status_exit": rc, "status_line": [
                           ln for ln in out.decode().splitlines() if "evil" in ln][0]}


CASES = {name[len("case_"):]: fn for name, fn in globals().items() if name.startswith("case_")}


def main():
    return ft.h.main(CASES, ("bin/iofleet-controller", "bin/iofleet-agent", "bin/iofleet"))


if __name__ == "__main__":
    sys.exit(main())
