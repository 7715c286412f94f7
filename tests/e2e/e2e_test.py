#!/usr/bin/env python3
"""iofleet end-to-end tests: a real controller and two agents over loopback.

Usage: e2e_test.py --build-dir BUILD CASE [CASE...]   (or "all")

Each case starts its own iofleet-controller (port 0, the ports it bound read
from its log; reserved ports where it restarts the controller: see
tests/lib/iofleet_harness.py, the harness every suite shares) and two `iofleet-agent serve` processes with different
names, labels and --allow-path directories, in a fresh temp dir. Jobs use the
psync engine on small temp files. Only the Python standard library is used; the
SQLite file is opened read-only with the sqlite3 module. On failure the temp dir
is kept and the tails of the process logs are printed.
"""
import argparse
import json
import os
import shutil
import signal
import socket
import sqlite3
import stat
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import iofleet_harness as h  # noqa: E402  (the one harness of tests/*)
from iofleet_harness import TestFailure, check, wait_for  # noqa: E402  (history_e2e_test imports them from here)

BUILD = None  # kept for the suites that set e2e_test.BUILD; Env hands it to the harness
Controller = h.Controller  # noqa: F841  (the names other suites import from here)


# fio's log-linear bucket index -> value (ns), as common/stats/histogram.h.
def plat_idx_to_val(idx):
    if idx < 128:
        return idx
    e = (idx >> 6) - 1
    return (1 << (e + 6)) + int((idx % 64 + 0.5) * (1 << e))


class Agent(h.Agent):
    """An agent with this suite's labels and a 500 ms reconnect backoff cap."""

    def __init__(self, env, name, labels):
        super().__init__(env, name, labels=labels, backoff_max_ms=500)


class Env(h.Env):
    """One controller + agents a (rack=r1) and b (rack=r2), both tier=gold.
    restartable: the controller gets reserved ports (it is restarted while the
    agents dial it); otherwise it binds port 0."""

    def __init__(self, fixed_ports=False):
        if BUILD and h.BUILD != BUILD:
            h.set_build(BUILD)
        super().__init__("e2e", tail_lines=25)
        self.controller = h.Controller(self, reserve_ports=fixed_ports)

    def __enter__(self):
        self.controller.start()
        for name, labels in (("agent-a", {"rack": "r1", "tier": "gold"}),
                             ("agent-b", {"rack": "r2", "tier": "gold"})):
            a = Agent(self, name, labels)
            a.start()
            self.agents[name] = a
        self.wait_agents_up(list(self.agents), timeout=20)
        return self

    def submit(self, fio, name="e2e", hosts=None, selector=None, repeat=None, tags=None):
        body = {"name": name, "fio": fio}
        if hosts:
            body["hosts"] = hosts
        if selector:
            body["selector"] = selector
        if repeat:
            body["repeat"] = repeat
        if tags:
            body["tags"] = tags
        return self.post_job(body)

    def wait_job(self, job_id, timeout=60):
        return self.wait_runs_done(job_id, timeout)

    def grpc(self, *args, timeout=60):
        p = subprocess.run([h.bin_path("tests", "iofleet-e2e-grpc"),
                            f"--controller={self.controller.grpc}", *args],
                           capture_output=True, text=True, timeout=timeout)
        if p.returncode != 0:
            raise TestFailure(f"iofleet-e2e-grpc {' '.join(args)} exited {p.returncode}: "
                              f"{p.stderr}")
        return p.stdout


def fio_job(target, runtime=2, rw="randread", numjobs=1, extra=""):
    return h.fio_job(target, runtime=runtime, rw=rw, numjobs=numjobs, extra=extra)


def run_of(job):
    runs = job["runs"]
    check(len(runs) == 1, f"want 1 run, got {len(runs)}: {runs}")
    return runs[0]


def check_intervals_add_up(env, run_id):
    """Interval records of a finished run sum to its final result, bucket for bucket."""
    run = env.get(f"/runs/{run_id}")
    result = run["result"]
    check(isinstance(result, dict) and result.get("jobs"), f"run {run_id} has no result: {run}")
    recs = env.samples(run_id)
    check(recs, f"run {run_id} has no interval records")
    by_job = {}
    for r in recs:
        by_job.setdefault(r["job_index"], []).append(r)
    jobs = result["jobs"]
    check(len(by_job) == len(jobs),
          f"records cover job indexes {sorted(by_job)} but result has {len(jobs)} jobs")
    for idx, rs in by_job.items():
        seqs = sorted(r["seq"] for r in rs)
        check(seqs == list(range(len(seqs))), f"job {idx}: seqs not contiguous: {seqs}")
        fj = jobs[idx]
        for d in ("read", "write", "trim"):
            ios = sum(r[d]["ios"] for r in rs)
            nbytes = sum(r[d]["bytes"] for r in rs)
            fd = fj.get(d, {})
            check(nbytes == fd.get("io_bytes", 0),
                  f"job {idx} {d}: interval bytes {nbytes} != result io_bytes {fd.get('io_bytes')}")
            check(ios == fd.get("total_ios", 0),
                  f"job {idx} {d}: interval ios {ios} != result total_ios {fd.get('total_ios')}")
            merged = {}
            for r in rs:
                for b, c in r[d]["clat_hist"]:
                    v = plat_idx_to_val(b)
                    merged[v] = merged.get(v, 0) + c
            merged = {k: v for k, v in merged.items() if v}
            bins = {int(k): v for k, v in fd.get("clat_ns", {}).get("bins", {}).items() if v}
            if ios:
                check(bins, f"job {idx} {d}: result has no json+ clat_ns.bins")
            check(merged == bins,
                  f"job {idx} {d}: merged interval histogram differs from json+ bins "
                  f"({len(merged)} vs {len(bins)} buckets; "
                  f"sum {sum(merged.values())} vs {sum(bins.values())})")
            check_total_latency_adds_up(idx, d, rs, fd)
    return recs


def check_total_latency_adds_up(idx, d, rs, fd):
    """Total latency (issue 18): records that carry lat_hist count every I/O the
    result's lat_ns counts, and match its json+ bins when it has them
    (lat_percentiles=1); a job that measures none (lat_ns.N == 0 with I/O done:
    gtod_reduce, disable_lat) has no lat_hist key at all."""
    lat = fd.get("lat_ns", {})
    have = [r for r in rs if "lat_hist" in r[d]]
    if not have:
        check(not lat.get("N") or not fd.get("total_ios"),
              f"job {idx} {d}: no record has lat_hist but the result measured lat_ns N={lat.get('N')}")
        return
    check(len(have) == len(rs), f"job {idx} {d}: lat_hist in {len(have)} of {len(rs)} records")
    merged = {}
    for r in rs:
        for b, c in r[d]["lat_hist"]:
            v = plat_idx_to_val(b)
            merged[v] = merged.get(v, 0) + c
    merged = {k: v for k, v in merged.items() if v}
    check(sum(merged.values()) == lat.get("N", 0),
          f"job {idx} {d}: interval lat_hist counts {sum(merged.values())} != lat_ns N {lat.get('N')}")
    bins = {int(k): v for k, v in lat.get("bins", {}).items() if v}
    if bins:
        check(merged == bins, f"job {idx} {d}: merged lat_hist differs from json+ lat_ns bins")


# ---------------------------------------------------------------------------
# Cases.

def case_agents_register():
    with Env() as env:
        ags = env.agents_json()
        for name, want in (("agent-a", {"rack": "r1", "tier": "gold"}),
                           ("agent-b", {"rack": "r2", "tier": "gold"})):
            a = ags[name]
            check(a["labels"] == want, f"{name} labels {a['labels']}")
            inv = a["inventory"]
            check(inv.get("hostname") == socket.gethostname(), f"{name} hostname {inv}")
            check(inv.get("kernel_release") == os.uname().release, f"{name} kernel {inv}")
            check(inv.get("agent_version"), f"{name} has no agent_version")
            check(inv.get("cpu_count", 0) >= 1, f"{name} cpu_count {inv.get('cpu_count')}")
            check("psync" in inv.get("engines", []) and "null" in inv.get("engines", []),
                  f"{name} engines {inv.get('engines')}")
            check(a["protocol_version"] == 2, f"{name} protocol {a['protocol_version']}")
            check(env.agents[name].allow in a.get("allow_paths", []),
                  f"{name} allow_paths {a.get('allow_paths')}")
        out = env.cli("agents", check_rc=0).stdout
        check("agent-a" in out and "agent-b" in out and "rack=r2" in out, f"agents output:\n{out}")


def case_submit_rest():
    with Env() as env:
        target = env.agents["agent-a"].target
        jf = env.write("job.fio", fio_job(target, runtime=2))
        p = env.cli("submit", jf, "--hosts", "agent-a", "--tag", "suite=e2e", "--wait",
                    check_rc=0)
        job_id = p.stdout.split()[0]
        job = env.job(job_id)
        run = run_of(job)
        check(run["host"] == "agent-a", f"run host {run['host']}")
        check(run["state"] == "succeeded", f"run state {run['state']}: {run.get('error')}")
        check(job["state"] == "succeeded", f"job state {job['state']}")
        check(job.get("tags", {}).get("suite") == "e2e", f"job tags {job.get('tags')}")
        full = env.get(f"/runs/{run['id']}")
        check(full["result"]["jobs"][0]["read"]["total_ios"] > 0, "no I/O in result")
        check(full["started_ms"] > 0 and full["finished_ms"] >= full["started_ms"], "timings")


def case_submit_grpc():
    with Env() as env:
        target = env.agents["agent-b"].target
        jf = env.write("job.fio", fio_job(target, runtime=2))
        job_id = env.grpc("submit", f"--fio-file={jf}", "--hosts=agent-b", "--name=grpc").strip()
        check(job_id, "no job id from gRPC SubmitJob")
        job = env.wait_job(job_id)
        run = run_of(job)
        check(run["host"] == "agent-b" and run["state"] == "succeeded",
              f"run {run['host']} {run['state']}: {run.get('error')}")
        gj = json.loads(env.grpc("get-job", job_id))
        check(gj["id"] == job_id and gj["name"] == "grpc", f"gRPC GetJob: {gj}")
        check(gj["runs"][0]["state"] == "RUN_STATE_SUCCEEDED", f"gRPC run state {gj['runs']}")
        gr = json.loads(env.grpc("get-run", run["id"]))
        check(gr["host"] == "agent-b" and gr["result_json"], f"gRPC GetRun: {gr}")
        check(json.loads(gr["result_json"]) == env.get(f"/runs/{run['id']}")["result"],
              "gRPC result differs from REST")
        # Live records over gRPC WatchJob while a second job runs.
        j2 = env.grpc("submit", f"--fio-file={jf}", "--hosts=agent-b").strip()
        n = env.grpc("watch", j2, "--count=2", "--timeout-s=20").strip()
        check(int(n) >= 2, f"WatchJob delivered {n} records")
        env.wait_job(j2)


def case_selectors():
    with Env() as env:
        t_b = env.agents["agent-b"].target
        jb = env.write("b.fio", fio_job(t_b, runtime=1))
        p = env.cli("submit", jb, "--selector", "rack=r2", "--wait", check_rc=0)
        run = run_of(env.job(p.stdout.split()[0]))
        check(run["host"] == "agent-b", f"rack=r2 placed on {run['host']}")
        # tier=gold matches both: one run per host, each in its own allow dir
        # through per-host overrides.
        text = "[global]\nioengine=psync\nsize=1m\ntime_based=1\nruntime=1\n[job]\nrw=read\n"
        _, res = env.api("POST", "/jobs", {
            "name": "gold", "fio": text, "selector": {"tier": "gold"},
            "host_overrides": {n: {"directory": a.allow} for n, a in env.agents.items()}})
        job = env.wait_job(res["id"])
        hosts = sorted(r["host"] for r in job["runs"])
        check(hosts == ["agent-a", "agent-b"], f"tier=gold placed on {hosts}")
        check(all(r["state"] == "succeeded" for r in job["runs"]),
              f"states {[(r['host'], r['state'], r['error']) for r in job['runs']]}")
        # Several selector terms must all match.
        t_a = env.agents["agent-a"].target
        one = env.submit(fio_job(t_a, runtime=1), selector={"rack": "r1", "tier": "gold"})
        job = env.wait_job(one)
        check([r["host"] for r in job["runs"]] == ["agent-a"], f"rack=r1,tier=gold: {job['runs']}")
        check(job["runs"][0]["state"] == "succeeded", f"{job['runs']}")


def case_lease_wait():
    with Env() as env:
        target = env.agents["agent-a"].target
        j1 = env.submit(fio_job(target, runtime=3), name="first", hosts=["agent-a"])
        j2 = env.submit(fio_job(target, runtime=1), name="second", hosts=["agent-a"])

        def overlap():
            r1, r2 = run_of(env.job(j1)), run_of(env.job(j2))
            check(r2["state"] not in ("running", "succeeded") or r1["state"] == "succeeded",
                  f"second run {r2['state']} while first is {r1['state']}")
            return r1["state"] == "running" and r2["state"] == "queued"
        wait_for(overlap, 15, "first running while second queued")
        r2 = run_of(env.wait_job(j2))
        r1 = run_of(env.job(j1))
        check(r1["state"] == "succeeded" and r2["state"] == "succeeded",
              f"states {r1['state']} {r2['state']}")
        check(r2["started_ms"] >= r1["finished_ms"],
              f"second started {r2['started_ms']} before first finished {r1['finished_ms']}")


def case_cancel():
    with Env() as env:
        target = env.agents["agent-a"].target
        job_id = env.submit(fio_job(target, runtime=60), hosts=["agent-a"])
        wait_for(lambda: run_of(env.job(job_id))["state"] == "running", 15, "run running")
        wait_for(lambda: env.samples(run_of(env.job(job_id))["id"]), 10, "first interval")
        t0 = time.time()
        env.cli("cancel", job_id, check_rc=0)
        job = env.wait_job(job_id, timeout=20)
        run = run_of(job)
        check(run["state"] == "cancelled", f"run state {run['state']}")
        check(job["state"] == "cancelled", f"job state {job['state']}")
        check(time.time() - t0 < 15, "cancel took too long")
        # The controller marks the run cancelled when it asks; the agent's own
        # word follows (later on a loaded machine).
        def agent_saw_cancel():
            with open(env.agents["agent-a"].log_path) as f:
                return "cancel requested" in f.read()
        wait_for(agent_saw_cancel, 10, "agent log has no cancel")
        # The lease is released: the same target runs again.
        again = env.submit(fio_job(target, runtime=1), hosts=["agent-a"])
        check(run_of(env.wait_job(again))["state"] == "succeeded", "target not reusable")
        p = env.cli("submit", env.write("j.fio", fio_job(target, runtime=1)), "--hosts",
                    "agent-a", "--wait", check_rc=0)
        check(p.stdout.strip(), "submit printed no id")


def case_allow_path():
    with Env() as env:
        outside = os.path.join(env.dir, "outside.dat")
        with open(outside, "wb") as f:
            f.write(b"\0" * (1 << 20))
        jf = env.write("bad.fio", fio_job(outside, runtime=1))
        p = env.cli("submit", jf, "--hosts", "agent-a", "--wait", check_rc=1)
        err = p.stderr.strip().splitlines()
        check(err and "allow" in err[-1], f"--wait reason: {p.stderr}")
        run = run_of(env.job(p.stdout.split()[0]))
        check(run["state"] == "failed" and "allow" in run["error"], f"run {run}")
        # A directory-based job outside the allow path is refused by the agent itself.
        jd = env.write("dir.fio", "[global]\nioengine=psync\nsize=1m\nruntime=1\n"
                       f"directory={env.dir}\n[job]\nrw=write\n")
        p = env.cli("submit", jd, "--hosts", "agent-b", "--wait", check_rc=1)
        run = run_of(env.job(p.stdout.split()[0]))
        check(run["state"] == "failed" and "allow" in run["error"], f"run {run}")
        check(not [f for f in os.listdir(env.dir) if f.startswith("job.")],
              "agent created files outside --allow-path")


def case_results_match_sqlite():
    with Env() as env:
        target = env.agents["agent-b"].target
        job_id = env.submit(fio_job(target, runtime=2, rw="randrw", numjobs=2), hosts=["agent-b"])
        job = env.wait_job(job_id)
        run = run_of(job)
        check(run["state"] == "succeeded", f"run {run}")
        api_run = env.get(f"/runs/{run['id']}")
        recs = env.samples(run["id"])

        def compare():
            db = env.db()
            try:
                db.row_factory = sqlite3.Row
                row = db.execute("SELECT * FROM runs WHERE id=?", (run["id"],)).fetchone()
                res = db.execute("SELECT * FROM results WHERE run_id=?", (run["id"],)).fetchone()
                ivs = db.execute("SELECT * FROM intervals WHERE run_id=? ORDER BY job_index, seq",
                                 (run["id"],)).fetchall()
                jrow = db.execute("SELECT * FROM jobs WHERE id=?", (job_id,)).fetchone()
            finally:
                db.close()
            if row is None or res is None or jrow is None:
                return None
            return row, res, ivs, jrow
        row, res, ivs, jrow = wait_for(compare, 10, "rows in SQLite")
        check(row["host"] == api_run["host"] and row["job_id"] == job_id, "run host/job")
        check(row["state"] == api_run["state"], f"state {row['state']} vs {api_run['state']}")
        for k in ("started_ms", "finished_ms", "created_ms"):
            check(row[k] == api_run[k], f"{k}: db {row[k]} vs api {api_run[k]}")
        check(row["error"] == api_run["error"], "error text")
        check(jrow["state"] == job["state"] and jrow["name"] == job["name"], "job row")
        check(bool(res["ok"]) is True, "results.ok")
        check(json.loads(res["result_json"]) == api_run["result"], "result_json differs")
        check(res["last_seq_total"] == len(recs),
              f"last_seq_total {res['last_seq_total']} vs {len(recs)} records")
        check(len(ivs) == len(recs), f"{len(ivs)} interval rows vs {len(recs)} samples")
        api_by_key = {(r["job_index"], r["seq"]): r for r in recs}
        for iv in ivs:
            r = api_by_key.get((iv["job_index"], iv["seq"]))
            check(r is not None, f"row {iv['job_index']}/{iv['seq']} not in API samples")
            for d in ("read", "write", "trim"):
                check(iv[f"{d}_ios"] == r[d]["ios"] and iv[f"{d}_bytes"] == r[d]["bytes"],
                      f"row {iv['job_index']}/{iv['seq']} {d} differs")
            check(iv["t_start_ms"] == r["t_start_ms"] and iv["t_end_ms"] == r["t_end_ms"],
                  "interval times differ")
        # And the gRPC view agrees with REST.
        gr = json.loads(env.grpc("get-run", run["id"]))
        check(json.loads(gr["result_json"]) == api_run["result"], "gRPC result differs")


def case_controller_restart_queue():
    with Env(fixed_ports=True) as env:
        target = env.agents["agent-a"].target
        j1 = env.submit(fio_job(target, runtime=5), name="running", hosts=["agent-a"])
        j2 = env.submit(fio_job(target, runtime=1), name="queued", hosts=["agent-a"])
        wait_for(lambda: run_of(env.job(j1))["state"] == "running", 15, "first running")
        check(run_of(env.job(j2))["state"] == "queued", "second not queued")
        env.controller.stop(signal.SIGKILL)
        env.controller.start()
        jobs = {j["id"]: j for j in env.get("/jobs")["jobs"]}
        check(j1 in jobs and j2 in jobs, f"jobs after restart: {list(jobs)}")
        r2 = run_of(env.job(j2))
        check(r2["state"] in ("queued", "assigned", "running"),
              f"queued run is {r2['state']} after restart")
        env.wait_agents_up(["agent-a", "agent-b"])
        for j in (j1, j2):
            run = run_of(env.wait_job(j, timeout=40))
            check(run["state"] == "succeeded", f"{j}: {run['state']} {run.get('error')}")
        check_intervals_add_up(env, run_of(env.job(j1))["id"])


def case_spool_replay():
    with Env(fixed_ports=True) as env:
        target = env.agents["agent-b"].target
        job_id = env.submit(fio_job(target, runtime=6, numjobs=2), hosts=["agent-b"])
        wait_for(lambda: run_of(env.job(job_id))["state"] == "running", 15, "run running")
        run_id = run_of(env.job(job_id))["id"]
        wait_for(lambda: env.samples(run_id), 10, "first samples")
        env.controller.stop(signal.SIGKILL)
        time.sleep(3)  # the run goes on; records pile up in the agent's spool
        spooled = os.listdir(env.agents["agent-b"].spool)
        check(any(f.endswith(".spool") for f in spooled), f"spool dir: {spooled}")
        env.controller.start()
        run = run_of(env.wait_job(job_id, timeout=40))
        check(run["state"] == "succeeded", f"run {run['state']}: {run.get('error')}")
        recs = check_intervals_add_up(env, run_id)
        check(len(recs) >= 2 * 5, f"only {len(recs)} records for a 6 s, 2-clone run")


def case_agent_restart():
    """An agent killed mid-run re-adopts its spool on restart: the records it
    had are replayed and the run is closed as failed with a clear error."""
    with Env() as env:
        agent = env.agents["agent-a"]
        target = agent.target
        job_id = env.submit(fio_job(target, runtime=30), hosts=["agent-a"])
        wait_for(lambda: run_of(env.job(job_id))["state"] == "running", 15, "run running")
        run_id = run_of(env.job(job_id))["id"]
        wait_for(lambda: len(env.samples(run_id)) >= 2, 10, "two samples")
        agent.kill()
        agent.start()
        run = run_of(env.wait_job(job_id, timeout=30))
        check(run["state"] == "failed" and "restarted" in run["error"], f"run {run}")
        recs = env.samples(run_id)
        seqs = sorted(r["seq"] for r in recs)
        check(seqs == list(range(len(seqs))) and len(seqs) >= 2, f"seqs {seqs}")
        # The agent is usable again and the lease was released.
        again = env.submit(fio_job(target, runtime=1), hosts=["agent-a"])
        check(run_of(env.wait_job(again))["state"] == "succeeded", "agent not usable after restart")


def case_intervals_add_up():
    with Env() as env:
        target = env.agents["agent-a"].target
        job_id = env.submit(fio_job(target, runtime=3, rw="randrw", numjobs=2),
                            hosts=["agent-a"])
        run = run_of(env.wait_job(job_id))
        check(run["state"] == "succeeded", f"run {run}")
        recs = check_intervals_add_up(env, run["id"])
        nonzero = [len(r["read"]["clat_hist"]) for r in recs if r["read"]["ios"]]
        check(nonzero and max(nonzero) > 1, "histograms look degenerate")
        check(all("lat_hist" in r["read"] for r in recs), "records without lat_hist")


def format_ns(ns):
    """cli/format.cc FormatNs: 850ns, 12.3us, 4.10ms, 1.20s."""
    if ns < 1000:
        return f"{ns}ns"
    if ns < 1000000:
        return f"{ns / 1e3:.1f}us"
    if ns < 1000000000:
        return f"{ns / 1e6:.2f}ms"
    return f"{ns / 1e9:.2f}s"


def case_interval_total_latency():
    """Total latency in the records end to end (issue 18): with lat_percentiles=1
    the records' lat_hist sum to the result's lat_ns bins bucket for bucket; with
    disable_lat=1 the records carry no lat_hist (absent, not zero)."""
    with Env() as env:
        target = env.agents["agent-a"].target
        for extra, want in (("lat_percentiles=1\n", True), ("disable_lat=1\n", False)):
            job_id = env.submit(fio_job(target, runtime=2, rw="randrw", extra=extra),
                                hosts=["agent-a"])
            run = run_of(env.wait_job(job_id))
            check(run["state"] == "succeeded", f"run {run}")
            recs = check_intervals_add_up(env, run["id"])
            for r in recs:
                for d in ("read", "write"):
                    check(("lat_hist" in r[d]) == want,
                          f"{extra.strip()}: record {r['seq']} {d} lat_hist present={not want}")
            if want:
                lat = env.get(f"/runs/{run['id']}")["result"]["jobs"][0]["read"]["lat_ns"]
                check(lat.get("bins"), f"lat_percentiles=1 result has no lat_ns bins: {lat}")
            # `iofleet watch` prints total latency (lat) beside clat: the
            # result's lat_ns mean over both directions (N-weighted) and p99,
            # "-" where the job did not measure it.
            w = env.cli("watch", job_id, check_rc=0).stdout
            lines = [l for l in w.splitlines() if l.split()[:1] == [run["id"]]]
            check(len(lines) == 1 and "CLAT-P99" in w and "LAT-MEAN" in w and "LAT-P99" in w,
                  f"watch output:\n{w}")
            # Columns by the header's positions (cells are left-aligned and
            # may hold spaces: "succeeded (final)").
            head = next(l for l in w.splitlines() if l.startswith("RUN "))
            starts = [i for i, c in enumerate(head) if c != " " and (i == 0 or head[i - 1] == " ")]
            cols = {head[a:b].strip(): lines[0][a:b].strip()
                    for a, b in zip(starts, starts[1:] + [None])}
            job = env.get(f"/runs/{run['id']}")["result"]["jobs"][0]
            if want:
                n = sum(job[d]["lat_ns"]["N"] for d in ("read", "write"))
                mean = sum(job[d]["lat_ns"]["N"] * job[d]["lat_ns"]["mean"]
                           for d in ("read", "write")) / n
                p99 = max(int(job[d]["lat_ns"]["percentile"]["99.000000"])
                          for d in ("read", "write") if job[d]["lat_ns"]["N"] > 0)
                check(cols["LAT-MEAN"] == format_ns(int(mean + 0.5)),
                      f"LAT-MEAN {cols['LAT-MEAN']} != {format_ns(int(mean + 0.5))}:\n{w}")
                check(cols["LAT-P99"] == format_ns(p99),
                      f"LAT-P99 {cols['LAT-P99']} != {format_ns(p99)}:\n{w}")
            else:
                check(cols["LAT-MEAN"] == "-" and cols["LAT-P99"] == "-",
                      f"disable_lat=1: watch printed a total latency:\n{w}")


def case_cli_commands():
    with Env() as env:
        target = env.agents["agent-a"].target
        jf = env.write("job.fio", fio_job(target, runtime=2))
        job_id = env.cli("submit", jf, "--hosts=agent-a", "--repeat=2", check_rc=0).stdout.strip()
        w = env.cli("watch", job_id, check_rc=0)
        check("IOPS" in w.stdout and "succeeded" in w.stdout, f"watch output:\n{w.stdout}")
        job = env.job(job_id)
        check(len(job["runs"]) == 2, f"--repeat=2 gave {len(job['runs'])} runs")
        out = env.cli("status", check_rc=0).stdout
        check(job_id in out, f"status:\n{out}")
        out = env.cli("status", job_id, check_rc=0).stdout
        check(all(r["id"] in out for r in job["runs"]), f"status JOB:\n{out}")
        out = env.cli("runs", "--job", job_id, check_rc=0).stdout
        check(all(r["id"] in out for r in job["runs"]), f"runs --job:\n{out}")
        check(job["runs"][0]["id"] in env.cli("runs", check_rc=0).stdout, "runs")
        rid = job["runs"][0]["id"]
        res = json.loads(env.cli("result", rid, check_rc=0).stdout)
        check(res["jobs"][0]["jobname"] == "job", f"result json {res.get('jobs')}")
        out = env.cli("result", rid, "--format=normal", check_rc=0).stdout
        check("IOPS=" in out, f"result normal:\n{out}")
        p = env.cli("compare", job_id)
        check(p.returncode in (0, 1) and (p.returncode == 0 or p.stderr.startswith("iofleet:")),
              f"compare rc {p.returncode}: {p.stderr}")
        p = env.cli("submit", jf, "--bogus", check_rc=2)
        check("--bogus" in p.stderr, f"bad flag message: {p.stderr}")
        p = env.cli("status", "no-such-job", check_rc=1)
        check("no-such-job" in p.stderr or "not found" in p.stderr.lower(), p.stderr)


def case_logs_and_normal():
    """A run's fio logs stay on its agent, under --log-dir (default
    <spool-dir>/logs) in a directory of the run's own, with fio's names; the
    stored result lists them, and `iofleet result --format=normal` prints the
    agent's own text (pid and all) on stdout and the log files on stderr."""
    with Env() as env:
        agent = env.agents["agent-a"]
        target = agent.target
        extra = "write_bw_log=b\nwrite_lat_log=l\nlog_avg_msec=500\n"
        jf = env.write("logs.fio", fio_job(target, runtime=2, extra=extra))
        job_id = env.cli("submit", jf, "--hosts=agent-a", check_rc=0).stdout.strip()
        run = run_of(env.wait_job(job_id))
        check(run["state"] == "succeeded", f"run {run}")
        rid = run["id"]
        res = json.loads(env.cli("result", rid, check_rc=0).stdout)
        logs = res.get("iofleet", {}).get("logs", {})
        want = [os.path.join(agent.spool, "logs", rid, n)
                for n in ("l_lat.1.log", "l_slat.1.log", "l_clat.1.log", "b_bw.1.log")]
        check(sorted(logs.get("files", [])) == sorted(want), f"logs {logs}, want {want}")
        for f in want:
            with open(f) as fh:
                lines = fh.read().splitlines()
            # "time, value, ddir, bs, prio"; psync writes no submission latency.
            check(all(len(l.split(", ")) == 5 for l in lines), f"{f}: {lines[:3]}")
            check(bool(lines) == (not f.endswith("_slat.1.log")), f"{f}: {len(lines)} lines")
        with open(want[3]) as fh:
            n = len(fh.read().splitlines())
        # 500 ms windows over 2 s: 3 lines (none after the runtime), fewer on a stall.
        check(1 <= n <= 3, f"bw log has {n} lines")
        p = env.cli("result", rid, "--format=normal", check_rc=0)
        check("job: (groupid=0, jobs=1): err= 0: pid=" in p.stdout and ": pid=0:" not in p.stdout,
              f"result normal:\n{p.stdout}")
        check("Run status group 0 (all jobs):" in p.stdout, f"result normal:\n{p.stdout}")
        check(all(f in p.stderr for f in want), f"stderr:\n{p.stderr}")


def case_run_logs_upload():
    """A run's fio log files reach the controller (docs/logs.md): the agent
    uploads each after the run, REST lists them (GET /runs/{id}/logs) and serves
    each byte for byte as the agent wrote it (GET /runs/{id}/logs/{name}), and
    `iofleet logs RUN [NAME | --type=T]` prints the list or the files. A run
    without logs lists none; bad input is refused naming it."""
    with Env() as env:
        agent = env.agents["agent-a"]
        extra = "write_lat_log=l\nwrite_bw_log=b\nwrite_iops_log=i\n"
        # Per-I/O lat logs (no log_avg_msec): thousands of lines, a real upload.
        jf = env.write("logs.fio", fio_job(agent.target, runtime=1, extra=extra))
        job_id = env.cli("submit", jf, "--hosts=agent-a", check_rc=0).stdout.strip()
        run = run_of(env.wait_job(job_id))
        check(run["state"] == "succeeded", f"run {run}")
        rid = run["id"]
        names = ["b_bw.1.log", "i_iops.1.log", "l_clat.1.log", "l_lat.1.log", "l_slat.1.log"]
        types = {"b_bw.1.log": "bw", "i_iops.1.log": "iops", "l_clat.1.log": "clat",
                 "l_lat.1.log": "lat", "l_slat.1.log": "slat"}
        listing = env.get(f"/runs/{rid}/logs")
        check(listing["run_id"] == rid, f"listing {listing}")
        logs = {l["name"]: l for l in listing["logs"]}
        check(sorted(logs) == names, f"logs {sorted(logs)}, want {names}")
        for name in names:
            path = os.path.join(agent.spool, "logs", rid, name)
            with open(path, "rb") as fh:
                on_agent = fh.read()
            l = logs[name]
            check(l["type"] == types[name] and l["path"] == path, f"{name}: {l}")
            check(l.get("size_bytes", 0) == len(on_agent) and l.get("stored_bytes", 0) == len(on_agent)
                  and not l.get("truncated", False), f"{name}: {l} vs {len(on_agent)} bytes")
            st, ctype, text = env.request("GET", f"/runs/{rid}/logs/{name}")
            check(st == 200 and ctype.startswith("text/plain"), f"GET {name}: {st} {ctype}")
            check(text.encode() == on_agent, f"{name}: served {len(text)} bytes, agent has "
                                             f"{len(on_agent)}")
        lat = logs["l_lat.1.log"]["size_bytes"]
        check(lat > 1000, f"a per-I/O lat log of a 1 s run has {lat} bytes")
        # The CLI: the list, one type, one name.
        out = env.cli("logs", rid, check_rc=0).stdout
        check(all(n in out for n in names) and "TYPE" in out, f"iofleet logs:\n{out}")
        listed = json.loads(env.cli("logs", rid, "-o", "json", check_rc=0).stdout)
        check(sorted(l["name"] for l in listed["logs"]) == names, f"-o json: {listed}")
        with open(os.path.join(agent.spool, "logs", rid, "l_lat.1.log")) as fh:
            lat_text = fh.read()
        p = env.cli("logs", rid, "--type=lat", check_rc=0)
        check(p.stdout == lat_text, f"--type=lat printed {len(p.stdout)} bytes, want {len(lat_text)}")
        check("==> l_lat.1.log <==" in p.stderr, f"stderr: {p.stderr}")
        p = env.cli("logs", rid, "b_bw.1.log", check_rc=0)
        check(p.stdout.splitlines()[0].count(", ") == 4, f"bw log: {p.stdout[:200]}")
        p = env.cli("logs", rid, "--type=nope", check_rc=2)
        check("--type" in p.stderr and "nope" in p.stderr, f"bad --type: {p.stderr}")
        p = env.cli("logs", rid, "x.log", check_rc=1)
        check("x.log" in p.stderr and "l_lat.1.log" in p.stderr, f"unknown name: {p.stderr}")
        p = env.cli("logs", "no-such-run", check_rc=1)
        check("no-such-run" in p.stderr, f"unknown run: {p.stderr}")
        st, _ = env.api("GET", "/runs/no-such-run/logs", ok=False)
        check(st == 404, f"GET logs of an unknown run: {st}")
        st, _ = env.api("GET", f"/runs/{rid}/logs/nope.log", ok=False)
        check(st == 404, f"GET an unknown log: {st}")
        # A run that writes no logs has none.
        jf2 = env.write("nologs.fio", fio_job(agent.target, runtime=1))
        job2 = env.cli("submit", jf2, "--hosts=agent-a", check_rc=0).stdout.strip()
        run2 = run_of(env.wait_job(job2))
        check(env.get(f"/runs/{run2['id']}/logs")["logs"] == [], "a run without logs")


class Screen:
    """A terminal of `rows` x `cols` as far as `iofleet watch` drives one:
    text, CR, LF, ESC[nA (up), ESC[2K (clear line), ESC[J (clear below).
    Records every line's width as written and the lowest row reached."""

    def __init__(self, rows, cols):
        self.rows, self.cols = rows, cols
        self.lines = {}
        self.row = self.col = 0
        self.max_row = 0
        self.widest = 0
        self.ups = 0

    def feed(self, data):
        i = 0
        while i < len(data):
            c = data[i]
            if c == "\x1b":
                j = i + 2
                check(data[i + 1:i + 2] == "[", f"escape at {i}: {data[i:i + 8]!r}")
                while j < len(data) and not data[j].isalpha():
                    j += 1
                arg, op = data[i + 2:j], data[j]
                if op == "A":
                    self.row = max(0, self.row - int(arg or 1))
                    self.ups += 1
                elif op == "K":
                    self.lines[self.row] = ""
                elif op == "J":
                    for r in list(self.lines):
                        if r >= self.row:
                            self.lines[r] = ""
                else:
                    raise TestFailure(f"unexpected escape {data[i:j + 1]!r}")
                i = j + 1
                continue
            if c == "\r":
                self.col = 0
            elif c == "\n":
                self.row += 1
                self.max_row = max(self.max_row, self.row)
            else:
                line = self.lines.get(self.row, "")
                line = line[:self.col].ljust(self.col) + c + line[self.col + 1:]
                self.lines[self.row] = line
                self.col += 1
                self.widest = max(self.widest, self.col)
            i += 1

    def text(self):
        return "\n".join(self.lines.get(r, "") for r in range(self.max_row + 1))


def case_watch_pty():
    """`iofleet watch` on a terminal (a real pty of 12 rows x 72 columns):
    it redraws in place (cursor up, clear line) instead of scrolling, no line
    is wider than the terminal, the drawing never takes more rows than the
    terminal has, and the last screen holds each run's final result."""
    import fcntl
    import pty
    import struct
    import termios
    rows, cols = 12, 72
    with Env() as env:
        target = env.agents["agent-a"].target
        jf = env.write("job.fio", fio_job(target, runtime=2))
        job_id = env.cli("submit", jf, "--hosts=agent-a", "--repeat=4",
                         check_rc=0).stdout.strip()
        master, slave = pty.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))
        penv = dict(os.environ, IOFLEET_CONTROLLER=f"http://{env.controller.http}", TERM="xterm")
        p = subprocess.Popen([h.bin_path("bin", "iofleet"), "watch", job_id, "--interval-ms=200"],
                             stdin=slave, stdout=slave, stderr=slave, env=penv, close_fds=True)
        os.close(slave)
        chunks = []
        deadline = time.time() + 90
        while time.time() < deadline:
            try:
                b = os.read(master, 65536)
            except OSError:  # EIO: the child closed the pty
                break
            if not b:
                break
            chunks.append(b)
        os.close(master)
        rc = p.wait(timeout=30)
        out = b"".join(chunks).decode("utf-8", "replace")
        check(rc == 0, f"watch exited {rc}:\n{out[-2000:]}")
        screen = Screen(rows, cols)
        screen.feed(out)
        check(screen.ups >= 2, f"no in-place redraw (cursor-up sequences: {screen.ups}):\n{out[:1500]!r}")
        check(screen.widest <= cols, f"a line is {screen.widest} columns on a {cols}-column terminal")
        final = screen.text()
        # The last frame replaces the live one: the summary and every run's final result.
        check(screen.max_row < rows, f"the drawing scrolled to row {screen.max_row}:\n{final}")
        job = env.job(job_id)
        check(len(job["runs"]) == 4, f"{len(job['runs'])} runs")
        check(final.count("(final)") == 4 and "succeeded" in final,
              f"the last screen lacks the final results:\n{final}")
        check("IOPS" in final, f"last screen:\n{final}")


def case_cli_exit_codes():
    """The CLI's documented exit codes and -o json over a real controller: 4 for
    an unreachable controller (with the URL and how to set it), 1 for a failed
    run and an unknown job (with the controller's message), 0 and parseable JSON
    from every list command; a late gRPC watcher gets every stored record once."""
    with Env() as env:
        p = env.cli("--controller=http://127.0.0.1:1", "agents", check_rc=4)
        check("connection refused: http://127.0.0.1:1 (set IOFLEET_CONTROLLER or --controller)"
              in p.stderr, f"unreachable: {p.stderr}")
        p = env.cli("status", "no-such-job", check_rc=1)
        check("not found" in p.stderr and "HTTP 404" in p.stderr, f"404: {p.stderr}")
        env.cli("status", "--state=bogus", check_rc=2)

        target = env.agents["agent-a"].target
        ok = env.write("ok.fio", fio_job(target, runtime=1))
        job_id = env.cli("submit", ok, "--hosts=agent-a", "--tag", "suite=exit", "--wait",
                         check_rc=0).stdout.split()[0]
        outside = os.path.join(env.dir, "outside.dat")
        with open(outside, "wb") as f:
            f.write(b"\0" * (1 << 20))
        bad = env.write("bad.fio", fio_job(outside, runtime=1))
        p = env.cli("submit", bad, "--hosts=agent-a", "--wait", check_rc=1)
        bad_id = p.stdout.split()[0]
        check("did not succeed" in p.stderr, f"failed run: {p.stderr}")
        env.cli("watch", bad_id, check_rc=1)

        jobs = json.loads(env.cli("status", "-o", "json", check_rc=0).stdout)
        check([j["id"] for j in jobs][:2] == [bad_id, job_id], f"newest first: {jobs}")
        check(jobs[1]["run_counts"] == {"succeeded": 1} and jobs[0]["run_counts"] == {"failed": 1},
              f"run counts: {jobs}")
        tagged = json.loads(env.cli("status", "--tag=suite=exit", "-o", "json").stdout)
        check([j["id"] for j in tagged] == [job_id], f"--tag: {tagged}")
        one = json.loads(env.cli("status", "--limit=1", "-o", "json").stdout)
        check([j["id"] for j in one] == [bad_id], f"--limit=1: {one}")
        table = env.cli("status", check_rc=0).stdout
        check("QUEUED" in table and "FAILED" in table and job_id in table, f"status:\n{table}")
        wide = env.cli("status", "-o", "wide", check_rc=0).stdout
        check("suite=exit" in wide, f"status -o wide:\n{wide}")
        runs = json.loads(env.cli("runs", "-o", "json", check_rc=0).stdout)
        check(len(runs) == 2, f"runs -o json: {runs}")
        agents = json.loads(env.cli("agents", "-o", "json", check_rc=0).stdout)
        check(len(agents["agents"]) == 2, f"agents -o json: {agents}")
        check("CPU MODEL" in env.cli("agents", "-o", "wide", check_rc=0).stdout, "agents -o wide")

        # `result --format=normal` is the agent's own rendering of the stored JSON,
        # the disk stats block included when the agent measured one.
        rid = run_of(env.job(job_id))["id"]
        res = json.loads(env.cli("result", rid, check_rc=0).stdout)
        normal = env.cli("result", rid, "--format=normal", check_rc=0).stdout
        check("Run status group 0 (all jobs):" in normal, f"normal:\n{normal}")
        check(("Disk stats (read/write):" in normal) == bool(res.get("disk_util")),
              f"disk stats block vs disk_util {res.get('disk_util')}:\n{normal}")

        # WatchJob attached after the job ended: the whole run, each record once.
        stored = len(env.samples(rid))
        check(stored >= 1, "no records stored")
        n = int(env.grpc("watch", job_id, "--count=0", "--timeout-s=20").strip())
        check(n == stored, f"late WatchJob got {n} records, {stored} stored")


def case_submit_wait_regression():
    """submit --wait exits 3 with the regressed metric when compare says so; a
    .json job file may be a whole POST /jobs body (here: two variants)."""
    with Env() as env:
        target = env.agents["agent-a"].target
        body = {"hosts": ["agent-a"], "repeat": 5,
                "options": {"global": {"bs": "4k", "size": "4m", "time_based": "1",
                                       "runtime": "1", "filename": target, "rw": "randread"},
                            "jobs": [{"name": "j"}]},
                # B (psync) is ~15x slower than A (null): a sure IOPS regression.
                "variants": [{"name": "fast", "options": {"ioengine": "null"}},
                             {"name": "slow", "options": {"ioengine": "psync"}}]}
        jf = env.write("reg.json", json.dumps(body))
        p = env.cli("submit", jf, "--wait", timeout=150, check_rc=3)
        last = p.stderr.strip().splitlines()[-1]
        check("regression" in last and "iops" in last, f"--wait reason: {last}")
        job_id = p.stdout.split()[0]
        check(env.job(job_id)["name"] == "reg", "name not taken from the file name")
        # compare exits 3 on a fail outcome too, after printing the table.
        md = env.cli("compare", job_id, check_rc=3).stdout
        check("| all |" in md and "regression" in md, f"markdown:\n{md[:800]}")
        xml = env.cli("compare", job_id, "--format=junit", check_rc=3).stdout
        check("<testsuite" in xml and "<failure" in xml, f"junit:\n{xml[:800]}")
        cmp = json.loads(env.cli("compare", job_id, "--format=json",
                                 "--fail-on=none", check_rc=0).stdout)
        check(cmp.get("outcome") == "fail", f"outcome {cmp.get('outcome')}")


def sh(*args, check_rc=True):
    p = subprocess.run(list(args), capture_output=True, text=True)
    if check_rc and p.returncode != 0:
        raise TestFailure(f"{' '.join(args)} exited {p.returncode}: {p.stderr.strip()}")
    return p


def overlaps(a, b):
    return a["started_ms"] < b["finished_ms"] and b["started_ms"] < a["finished_ms"]


def mbr_image(path, size=16 << 20):
    """A disk image with an MBR partition table: one partition from sector 2048."""
    import struct
    with open(path, "wb") as f:
        f.truncate(size)
        mbr = bytearray(512)
        mbr[0x1BE:0x1BE + 16] = struct.pack("<B3sB3sII", 0, b"\0\0\0", 0x83, b"\0\0\0",
                                            2048, size // 512 - 2048)
        mbr[510], mbr[511] = 0x55, 0xAA
        f.seek(0)
        f.write(mbr)


def dev_numbers(sysname):
    with open(f"/sys/class/block/{sysname}/dev") as f:
        return tuple(int(x) for x in f.read().strip().split(":"))


def run_alias_pairs(env, agent, pairs, runtime=2):
    """Submits both jobs of every (label, text_a, text_b) pair at once and checks
    that the two runs of a pair never ran at the same time, and that they share
    an identity key."""
    submitted = []
    for label, ta, tb in pairs:
        ja = env.submit(ta, name=f"{label} A", hosts=[agent])
        jb = env.submit(tb, name=f"{label} B", hosts=[agent])
        submitted.append((label, ja, jb))
    problems = []
    for label, ja, jb in submitted:
        ra, rb = run_of(env.wait_job(ja, 120)), run_of(env.wait_job(jb, 120))
        for r in (ra, rb):
            check(r["state"] == "succeeded", f"{label}: run {r['id']} {r['state']}: {r['error']}")
        if overlaps(ra, rb):
            problems.append(f"{label}: runs overlapped: {ra['target']} {ra['started_ms']}-"
                            f"{ra['finished_ms']} and {rb['target']} {rb['started_ms']}-"
                            f"{rb['finished_ms']}")
            continue
        ka = {k for t in ra.get("target_keys", []) for k in t["keys"]}
        kb = {k for t in rb.get("target_keys", []) for k in t["keys"]}
        if not ka & kb:
            problems.append(f"{label}: no shared identity key: {ra.get('target_keys')} vs "
                            f"{rb.get('target_keys')}")
    check(not problems, f"{len(problems)} of {len(pairs)} alias pairs: " + "; ".join(problems))


def case_lease_alias():
    """Two jobs on one file or device under different names never run at the same
    time: a symlink, a hard link, a missing file and a dangling symlink to it, a
    directory symlink (generated file names); as root also a bind-mounted file and
    directory, a /dev/disk/by-id style symlink and a bind mount of a loop device
    node, and a partition against its whole disk. Leases are keyed on what the
    agent resolves, not on the path string (which gave concurrent leases)."""
    with Env() as env:
        agent = env.agents["agent-a"]
        allow = agent.allow
        j = lambda target, extra="": fio_job(target, runtime=2, extra=extra)
        pairs = []
        f1 = agent.make_target("sym-target.dat", 1 << 20)
        os.symlink(f1, os.path.join(allow, "sym.dat"))
        pairs.append(("symlink", j(f1), j(os.path.join(allow, "sym.dat"))))
        f2 = agent.make_target("hard-target.dat", 1 << 20)
        os.link(f2, os.path.join(allow, "hard.dat"))
        pairs.append(("hard link", j(f2), j(os.path.join(allow, "hard.dat"))))
        # Not there yet when the jobs are resolved: the first run creates it.
        new = os.path.join(allow, "new.dat")
        os.symlink(new, os.path.join(allow, "to-new.dat"))
        pairs.append(("missing file and a dangling link to it",
                      j(new, "size=1m"), j(os.path.join(allow, "to-new.dat"), "size=1m")))
        gen = os.path.join(allow, "gen")
        os.makedirs(gen)
        os.symlink(gen, os.path.join(allow, "gen-link"))
        dir_job = lambda d: ("[global]\nioengine=psync\nbs=4k\nsize=1m\ntime_based=1\nruntime=2\n"
                             f"directory={d}\n[job]\nrw=randread\n")
        pairs.append(("directory symlink", dir_job(gen), dir_job(os.path.join(allow, "gen-link"))))
        cleanups = []
        try:
            if os.geteuid() == 0:
                f3 = agent.make_target("bind-target.dat", 1 << 20)
                bound = agent.make_target("bound.dat", 1)
                sh("mount", "--bind", f3, bound)
                cleanups.append(lambda: sh("umount", bound, check_rc=False))
                pairs.append(("bind-mounted file", j(f3), j(bound)))
                d1, d2 = os.path.join(allow, "bind-src"), os.path.join(allow, "bind-dst")
                os.makedirs(d1)
                os.makedirs(d2)
                sh("mount", "--bind", d1, d2)
                cleanups.append(lambda: sh("umount", d2, check_rc=False))
                pairs.append(("bind-mounted directory", dir_job(d1), dir_job(d2)))
                img = os.path.join(env.dir, "disk.img")
                mbr_image(img)
                loop = sh("losetup", "-f", "--show", img).stdout.strip()
                cleanups.append(lambda: sh("losetup", "-d", loop, check_rc=False))
                name = os.path.basename(loop)
                # Device nodes of the whole disk under distinct names, one per pair,
                # so no two pairs share a path string.
                disk, disk_b, disk_c = (os.path.join(allow, n) for n in ("disk", "disk-b", "disk-c"))
                for node in (disk, disk_b, disk_c):
                    os.mknod(node, 0o600 | stat.S_IFBLK, os.makedev(*dev_numbers(name)))
                os.symlink(disk, os.path.join(allow, "by-id-disk"))
                pairs.append(("by-id symlink to a disk", j(disk), j(os.path.join(allow, "by-id-disk"))))
                node_bind = agent.make_target("disk-bind", 1)
                sh("mount", "--bind", loop, node_bind)
                cleanups.append(lambda: sh("umount", node_bind, check_rc=False))
                pairs.append(("bind-mounted device node", j(disk_b), j(node_bind)))
                # This kernel may not parse partition tables itself: partx adds them.
                if not os.path.exists(f"/sys/class/block/{name}p1") and shutil.which("partx"):
                    sh("partx", "-a", loop, check_rc=False)
                if os.path.exists(f"/sys/class/block/{name}p1"):
                    part = os.path.join(allow, "part1")
                    os.mknod(part, 0o600 | stat.S_IFBLK, os.makedev(*dev_numbers(f"{name}p1")))
                    pairs.append(("partition against its whole disk", j(disk_c), j(part)))
                else:
                    print("partition case skipped: no partition device (no partx?)", file=sys.stderr)
            else:
                print("bind mount and loop device cases skipped: not root", file=sys.stderr)
            run_alias_pairs(env, "agent-a", pairs)
        finally:
            env.agents["agent-a"].stop()  # let go of the device before it is detached
            for fn in reversed(cleanups):
                fn()
        # The agent said what each path is; nothing is left leased.
        db = env.db()
        try:
            check(db.execute("SELECT count(*) FROM leases").fetchone()[0] == 0, "leases left")
        finally:
            db.close()


def case_lease_identity_change():
    """A path whose identity changes after the controller leased it: run B is
    resolved while its symlink points at file 2 (queued behind C there), then the
    link is turned to file 1, which run A is using. The agent resolves again when
    B starts, and B waits for A instead of running on file 1 beside it."""
    with Env() as env:
        agent = env.agents["agent-a"]
        f1 = agent.make_target("one.dat", 1 << 20)
        f2 = agent.make_target("two.dat", 1 << 20)
        link = os.path.join(agent.allow, "moving.dat")
        os.symlink(f2, link)
        ja = env.submit(fio_job(f1, runtime=6), name="A on file 1", hosts=["agent-a"])
        jc = env.submit(fio_job(f2, runtime=2), name="C on file 2", hosts=["agent-a"])
        jb = env.submit(fio_job(link, runtime=1), name="B via the link", hosts=["agent-a"])

        def b_resolved():
            r = run_of(env.job(jb))
            return r["state"] == "queued" and r["target_keys"] and r
        b = wait_for(b_resolved, 10, "B resolved and queued behind C")
        check(run_of(env.job(ja))["state"] in ("assigned", "running"), "A not placed")
        tmp = link + ".new"
        os.symlink(f1, tmp)
        os.replace(tmp, link)  # now the same file as A's
        ra, rb, rc = (run_of(env.wait_job(j, 60)) for j in (ja, jb, jc))
        for r in (ra, rb, rc):
            check(r["state"] == "succeeded", f"run {r['id']}: {r['state']} {r['error']}")
        check(not overlaps(ra, rb), f"B ran on file 1 beside A: A {ra['started_ms']}-"
              f"{ra['finished_ms']}, B {rb['started_ms']}-{rb['finished_ms']}")
        with open(agent.log_path) as f:
            alog = f.read()
        check(f"run {rb['id']}: targets changed identity since leased" in alog,
              "the agent did not say B's target changed identity")
        check(f"run {rb['id']} waits" in alog, "the agent did not say B waits for A")


def case_allow_path_components():
    """--allow-path matches whole path components on resolved paths: DIR/nvme1
    admits DIR/nvme1 but not DIR/nvme10n1 (the controller's raw prefix check let
    that through to the agent), and a symlink out of an allowed directory is
    refused when the agent resolves the job's targets, before the run is placed."""
    with Env() as env:
        nvme1 = os.path.join(env.dir, "nvme1")
        nvme10n1 = os.path.join(env.dir, "nvme10n1")
        for p in (nvme1, nvme10n1):
            with open(p, "wb") as f:
                f.write(os.urandom(1 << 20))
        a = Agent(env, "agent-n", {"rack": "r9"})
        a.allow = nvme1
        a.start()
        env.agents["agent-n"] = a
        env.wait_agents_up(["agent-n"])
        ok = run_of(env.wait_job(env.submit(fio_job(nvme1, runtime=1, extra="size=1m"),
                                            hosts=["agent-n"])))
        check(ok["state"] == "succeeded", f"allowed path: {ok['state']}: {ok['error']}")
        bad = run_of(env.wait_job(env.submit(fio_job(nvme10n1, runtime=1, extra="size=1m"),
                                             hosts=["agent-n"])))
        check(bad["state"] == "failed" and "does not allow " + nvme10n1 in bad["error"],
              f"nvme10n1 under --allow-path={nvme1}: {bad['state']}: {bad['error']}")
        check(bad["assigned_ms"] == 0, f"refused run was placed on the agent: {bad}")
        # A symlink in an allowed directory that leads outside it.
        outside = os.path.join(env.dir, "outside.dat")
        with open(outside, "wb") as f:
            f.write(b"\0" * (1 << 20))
        esc = os.path.join(env.agents["agent-a"].allow, "escape.dat")
        os.symlink(outside, esc)
        run = run_of(env.wait_job(env.submit(fio_job(esc, runtime=1), hosts=["agent-a"])))
        check(run["state"] == "failed" and f'resolves to "{outside}"' in run["error"]
              and "--allow-path" in run["error"], f"symlink escape: {run['state']}: {run['error']}")
        check(run["assigned_ms"] == 0, f"refused run was placed on the agent: {run}")


CASES = {name[len("case_"):]: fn for name, fn in globals().items() if name.startswith("case_")}


def main():
    global BUILD
    ap = argparse.ArgumentParser()
    ap.add_argument("--build-dir", required=True)
    ap.add_argument("cases", nargs="+")
    args = ap.parse_args()
    BUILD = h.set_build(args.build_dir)
    return h.run_cases(CASES, args.cases, ("bin/iofleet-controller", "bin/iofleet-agent",
                                           "bin/iofleet", "tests/iofleet-e2e-grpc"))


if __name__ == "__main__":
    sys.exit(main())
