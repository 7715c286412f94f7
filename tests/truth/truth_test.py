#!/usr/bin/env python3
"""Truth suite: A/B comparisons whose right answer is known, end to end with a
real iofleet-controller and real iofleet-agent processes on loopback (two agents
on one machine are two hosts), through REST and the `iofleet` CLI.

Usage: truth_test.py --build-dir BUILD CASE [CASE...]   (or "all")

Each case gets its own controller, agents and temp dir (the shared harness,
tests/lib/iofleet_harness.py). Workloads are psync reads
of a 4 MiB page-cached file in each agent's allowed directory, 1 s runs, so the
whole suite takes a few minutes.

Adding a case: write `def case_NAME(fleet)` decorated with `@case(agents=N)`,
use fleet.submit()/fleet.wait()/fleet.compare()/fleet.cli(), and add NAME to
IOFLEET_TRUTH_CASES in tests/truth/CMakeLists.txt.

Arm audit: every run a job of this suite makes is honest (it runs its arm's
options), so every succeeded run must carry a passing arm audit (Run.audit "ok"
or "ok; normalised: ..."), checked after each job. Comparisons admit audited runs
only (the controller's default).
"""
import argparse
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import iofleet_harness as h  # noqa: E402  (the one harness of tests/*)
from iofleet_harness import TestFailure, check  # noqa: E402

FILE_SIZE = 4 << 20
CASES = {}


def log(msg):
    print(msg, flush=True)


def case(agents):
    def register(fn):
        CASES[fn.__name__[len("case_"):]] = (agents, fn)
        return fn
    return register


class Fleet(h.Env):
    """A controller and `n` agents (agent-1, agent-2, ...) with a 4 MiB data file each."""

    rest_timeout = 120

    def __init__(self, n):
        super().__init__("truth", tmp_root="/var/tmp", tail_lines=20)
        self.agents = []  # a list here: cases index it
        self.controller = h.Controller(self)
        for i in range(n):
            a = h.Agent(self, f"agent-{i + 1}", labels={"suite": "truth"}, target_size=0,
                        backoff_max_ms=500)
            self.agents.append(a)

    def __enter__(self):
        self.controller.start()
        for a in self.agents:
            a.start()
            a.make_target("data.dat", FILE_SIZE)
        self.wait_agents_up([a.name for a in self.agents], timeout=30)
        return self

    # Jobs ---------------------------------------------------------------
    def body(self, name, variants, repeat=5, runtime=1, options=None):
        """A job on every agent: psync randread of its data file, one variant per arm."""
        # invalidate=0: the file stays in the page cache. fio (and the agent, as
        # fio) drops a file's cached pages each time a time_based job wraps it, so
        # with the default a 4 MiB file is read from the disk and 4k and 256k
        # reads differ by a few times, not tens (the premise of large_*).
        opts = {"ioengine": "psync", "rw": "randread", "bs": "4k", "size": str(FILE_SIZE),
                "runtime": str(runtime), "time_based": "1", "filename": "data.dat",
                "invalidate": "0"}
        opts.update(options or {})
        return {"name": name, "options": opts, "repeat": repeat,
                "hosts": [a.name for a in self.agents],
                "host_overrides": {a.name: {"filename": os.path.join(a.allow, "data.dat")}
                                   for a in self.agents},
                "variants": [{"name": n, "options": o} for n, o in variants]}

    def submit(self, body):
        status, _, text = self.request("POST", "/jobs", body)
        check(status == 201, f"POST /jobs -> {status}: {text}")
        return json.loads(text)["id"]

    def wait(self, job_id, timeout=180):
        job = h.wait_for(
            lambda: (lambda j: j if j["runs"] and all(
                r["state"] in ("succeeded", "failed", "cancelled", "lost") for r in j["runs"])
                else None)(self.get(f"/jobs/{job_id}")),
            timeout, f"job {job_id}", interval=0.3)
        self.check_audit(job["runs"])
        return job["runs"]

    def check_audit(self, runs):
        audits = [r.get("audit", "") for r in runs if r["state"] == "succeeded"]
        bad = [a for a in audits if not (a == "ok" or a.startswith("ok; "))]
        check(not bad, f"honest arms without a passing arm audit: {bad[:3]}")

    def compare(self, job_id, query=""):
        status, _, text = self.request("GET", f"/jobs/{job_id}/compare" +
                                    (f"?{query}" if query else ""))
        return status, text

    def compare_json(self, job_id, query=""):
        status, text = self.compare(job_id, query)
        check(status == 200, f"compare {job_id} -> {status}: {text[:500]}")
        return json.loads(text)

    def cli(self, *args, rc=None, timeout=300):
        p = subprocess.run([h.bin_path("bin", "iofleet"),
                            f"--controller=http://{self.controller.http}", *args],
                           capture_output=True, text=True, timeout=timeout)
        if rc is not None:
            check(p.returncode == rc, f"iofleet {' '.join(args)} exited {p.returncode}, want {rc}"
                                      f"\nstdout: {p.stdout[-1500:]}\nstderr: {p.stderr[-1500:]}")
        return p

    def write(self, name, obj):
        path = os.path.join(self.dir, name)
        with open(path, "w") as f:
            json.dump(obj, f)
        return path


def row(cmp, metric, cell="all"):
    for r in cmp["rows"]:
        if r["metric"] == metric and r["cell"] == cell:
            return r
    raise TestFailure(f"no row {metric} @ {cell}: {[(r['metric'], r['cell']) for r in cmp['rows']]}")


def show(cmp):
    log(f"  {cmp['headline']}; outcome {cmp['outcome']}")
    for r in cmp["rows"]:
        ci = r.get("delta_ci_pct") or [None, None]
        d = r.get("delta_pct")
        log(f"    {r['metric']:<13} {r['verdict']:<12} "
            f"Δ {'-' if d is None else f'{d:+.1f}%'} "
            f"[{'-' if ci[0] is None else f'{ci[0]:+.1f}'}, "
            f"{'-' if ci[1] is None else f'{ci[1]:+.1f}'}]  {r.get('design')} "
            f"pairs={r.get('pairs')} hosts={r.get('hosts_used')}")


# -------------------------------------------------------------------- cases

def aa_once(fleet, n):
    """One A/A job: both arms the same options. Returns the decided rows."""
    job = fleet.submit(fleet.body(f"truth-aa-{n}", [("A", {}), ("A2", {})]))
    runs = fleet.wait(job)
    check(all(r["state"] == "succeeded" for r in runs), f"runs: {[r['state'] for r in runs]}")
    cmp = fleet.compare_json(job)
    show(cmp)
    # One warm-up run per host (docs/ab-method.md, "The first run"): run, stored,
    # left out of the compare with its reason; everything else usable.
    warm = [r for r in runs if r.get("warmup")]
    check(sorted(r["host"] for r in warm) == sorted(a.name for a in fleet.agents),
          f"warm-up runs: {[(r['id'], r['host']) for r in warm]}")
    w = len(warm)
    check(cmp["usable"]["runs_usable"] == len(runs) - w and
          cmp["usable"]["runs_total"] == len(runs), f"usable {cmp['usable']}")
    check(cmp["headline"].startswith(
        f"{len(runs) - w} of {len(runs)} runs usable; {w} runs: warm-up"), cmp["headline"])
    iops = row(cmp, "iops")
    check(iops["design"] == "paired" and iops["pairs"] == 5 * len(fleet.agents),
          f"design {iops['design']} pairs {iops['pairs']}")
    decided = [f"{r['metric']} {r['verdict']}" for r in cmp["rows"]
               if r["verdict"] in ("regression", "improvement")]
    if not decided:
        check(cmp["outcome"] != "fail", f"A/A outcome {cmp['outcome']}")
        fleet.cli("compare", job, rc=0)
    return job, decided


@case(agents=2)
def case_aa(fleet):
    """A/A on two hosts: no regression or improvement. A false verdict happens at a
    rate of at most α (5 %) per comparison by design, so one is tolerated if a
    second, independent A/A job has none (a false alarm then needs two, ~0.25 %)."""
    job, decided = aa_once(fleet, 1)
    if decided:
        log(f"  A/A job {job} gave {decided}: running a second, independent A/A job")
        job2, decided2 = aa_once(fleet, 2)
        check(not decided2, f"two A/A jobs both gave false verdicts: {decided}, {decided2}")


def large_difference(fleet):
    """B reads 256k per I/O, A 4k, from the same page-cached file: B's IOPS are a
    small fraction of A's (known: tens of times fewer), its bandwidth higher."""
    body = fleet.body("truth-large", [("small", {"bs": "4k"}), ("big", {"bs": "256k"})])
    path = fleet.write("large.json", body)
    p = fleet.cli("submit", path, "--wait", rc=3)
    job = p.stdout.split()[0]
    fleet.check_audit(fleet.get(f"/jobs/{job}")["runs"])
    last = p.stderr.strip().splitlines()[-1]
    check("regression" in last and "iops" in last, f"submit --wait said: {last}")
    check("runs usable" in p.stderr, f"no usable-runs headline on stderr: {p.stderr[-800:]}")
    cmp = fleet.compare_json(job)
    show(cmp)
    n = 5 * len(fleet.agents)
    iops = row(cmp, "iops")
    check(iops["verdict"] == "regression", f"iops verdict {iops['verdict']}: {iops['reason']}")
    check(iops["delta_pct"] < -80 and iops["delta_ci_pct"][1] < -50, f"iops Δ {iops['delta_pct']}")
    check(iops["design"] == "paired" and iops["pairs"] == n and
          iops["hosts_used"] == len(fleet.agents), f"{iops['design']} {iops['pairs']}")
    # B's bandwidth is higher, by less than its IOPS are lower (memory copies
    # dominate 256k reads), so under heavy load a 5-pair row may stay
    # inconclusive: never the wrong way.
    bw = row(cmp, "bw_bytes")
    check(bw["verdict"] in ("improvement", "inconclusive") and bw["delta_pct"] > 0,
          f"bandwidth verdict {bw['verdict']}: {bw['reason']}")
    check(cmp["outcome"] == "fail", cmp["outcome"])
    check(not iops["confounded"], f"confounded: {iops['confounders']}")
    # The CLI gate: compare exits 3 on fail; --fail-on=none reports without failing.
    fleet.cli("compare", job, rc=3)
    p = fleet.cli("compare", job, "--fail-on=none", "--format=json", rc=0)
    check(p.stdout.startswith('{\n  "headline": "'), p.stdout[:200])
    return cmp


@case(agents=1)
def case_large_1host(fleet):
    """A large known difference on one host, repeat 5: a verdict (regression)."""
    large_difference(fleet)


@case(agents=2)
def case_large_2hosts(fleet):
    """The same on two hosts, repeat 5 (the per-host-median pairing could never go
    below p = 0.5 here): a verdict."""
    large_difference(fleet)


@case(agents=1)
def case_zero_usable(fleet):
    """Every run fails (both arms read a file that does not exist): no verdict from
    nothing. Every row is inconclusive with the reason, the outcome is not pass,
    every format opens with "0 of 10 runs usable" and the grouped reasons."""
    missing = os.path.join(fleet.agents[0].allow, "no-such-dir", "data.dat")
    body = fleet.body("truth-zero", [("A", {}), ("B", {"bs": "8k"})])
    body["warmup"] = False  # the counts below are the pairs'
    body["host_overrides"] = {fleet.agents[0].name: {"filename": missing}}
    path = fleet.write("zero.json", body)
    p = fleet.cli("submit", path, "--wait", rc=1)
    job = p.stdout.split()[0]
    cmp = fleet.compare_json(job)
    show(cmp)
    check(cmp["outcome"] == "warn", f"outcome {cmp['outcome']}")
    check(cmp["usable"]["runs_usable"] == 0 and cmp["usable"]["runs_total"] == 10,
          f"usable {cmp['usable']}")
    check(cmp["headline"].startswith("0 of 10 runs usable; 10 runs: failed: see each run's error"),
          cmp["headline"])
    check(len(cmp["rows"]) == 6, f"{len(cmp['rows'])} rows")
    for r in cmp["rows"]:
        check(r["verdict"] == "inconclusive", f"{r['metric']}: {r['verdict']}")
        check("no usable run of A in this cell (5 runs: 5 failed)" in r["reason"], r["reason"])
    status, md = fleet.compare(job, "format=markdown")
    check(status == 200 and md.startswith("**0 of 10 runs usable.**\n\n- 10 runs: failed"), md[:300])
    status, xml = fleet.compare(job, "format=junit")
    check(status == 200 and "<!-- 0 of 10 runs usable; 10 runs: failed" in xml, xml[:300])
    # CLI: the default gate (regression) passes a warn outcome, but says it first;
    # --fail-on=inconclusive exits 5.
    p = fleet.cli("compare", job, rc=0)
    check(p.stdout.startswith("**0 of 10 runs usable.**"), p.stdout[:300])
    p = fleet.cli("compare", job, "--fail-on=regression,inconclusive", rc=5)
    check("inconclusive" in p.stderr and "0 of 10 runs usable" in p.stderr, p.stderr)


@case(agents=1)
def case_cv_gate(fleet):
    """The issue's shape of "nothing usable": every run cut by a within-run CV gate
    (asked for with max_cv=, here below any real run's CV). Without the gate (the
    default) the same runs are all usable."""
    body = fleet.body("truth-cv", [("A", {}), ("B", {})], runtime=3)
    body["warmup"] = False  # the counts below are the pairs'
    job = fleet.submit(body)
    runs = fleet.wait(job)
    check(all(r["state"] == "succeeded" for r in runs), f"runs: {[r['state'] for r in runs]}")
    cmp = fleet.compare_json(job, "max_cv=0.000001")
    show(cmp)
    check(cmp["headline"].startswith("0 of 10 runs usable; 10 runs: within-run CV > 0 %: use a "
                                     "longer runtime or ramp_time"), cmp["headline"])
    check(cmp["outcome"] == "warn" and all(r["verdict"] == "inconclusive" for r in cmp["rows"]),
          f"outcome {cmp['outcome']}")
    cmp = fleet.compare_json(job)
    check(cmp["usable"]["runs_usable"] == 10, cmp["headline"])
    check(row(cmp, "iops")["a"]["within_run_cv"] is not None, "no within-run CV measured")


@case(agents=1)
def case_variants_sweep(fleet):
    """Issue 10's first case with a real agent: variants b1 {iodepth_batch_submit: 1}
    and b8 {iodepth_batch_submit: 8, iodepth_batch_complete_min: 8} with a sweep
    over iodepth (none in the base job). Every run passes its arm audit, each run's
    echoed fio `job options` carry its own arm's values (the arms differ), and the
    comparison has a row per cell."""
    body = fleet.body("truth-sweep",
                      [("b1", {"iodepth_batch_submit": "1"}),
                       ("b8", {"iodepth_batch_submit": "8", "iodepth_batch_complete_min": "8"})],
                      repeat=2, options={"ioengine": "libaio", "direct": "0"})
    body["sweep"] = {"iodepth": ["8", "32"]}
    job = fleet.submit(body)
    runs = fleet.wait(job)
    # 8 arms' runs + the host's warm-up run.
    check(len(runs) == 9 and all(r["state"] == "succeeded" for r in runs),
          f"runs: {[(r['state'], r.get('error')) for r in runs]}")
    seen = set()
    for r in runs:
        full = fleet.get(f"/runs/{r['id']}")
        check(full.get("audit") == "ok", f"run {r['id']} audit {full.get('audit')!r}")
        opts = full["result"]["jobs"][0]["job options"]
        arm = r["variant"]
        want = {"b1": {"iodepth_batch_submit": "1"},
                "b8": {"iodepth_batch_submit": "8", "iodepth_batch_complete_min": "8"}}[arm]
        # iodepth_batch_submit is an alias of iodepth_batch (echoed under that name);
        # an option at fio's default (iodepth_batch=1) is not rendered.
        opts = {("iodepth_batch_submit" if k == "iodepth_batch" else k): v for k, v in opts.items()}
        for k, v in want.items():
            check(opts.get(k, "1" if k == "iodepth_batch_submit" else None) == v, f"run {r['id']} ({arm}): job options {k}={opts.get(k)!r}, "
                                    f"want {v}: {opts}")
        check(opts.get("iodepth") in ("8", "32"), f"run {r['id']}: iodepth {opts.get('iodepth')}")
        if arm == "b8":
            check("iodepth_batch=8" in full["fio_text"].replace("_submit=", "=") and
                  "iodepth_batch_complete_min=8" in full["fio_text"],
                  f"run {r['id']}: effective job text lacks its arm's options:\n{full['fio_text']}")
        seen.add((arm, opts["iodepth"]))
    check(seen == {(a, d) for a in ("b1", "b8") for d in ("8", "32")}, f"cells ran: {seen}")
    cmp = fleet.compare_json(job)
    show(cmp)
    check(cmp["headline"].startswith("8 of 9 runs usable; 1 run: warm-up"), cmp["headline"])
    cells = {r["cell"] for r in cmp["rows"]}
    check(cells == {"iodepth=8", "iodepth=32"}, f"cells {cells}")


@case(agents=1)
def case_path_alias(fleet):
    """Two jobs on one file, one through a symlink to it: the leases serialize them
    (they are keyed on the file's identity, not on the path string), so their runs
    never overlap in time."""
    agent = fleet.agents[0]
    target = os.path.join(agent.allow, "data.dat")
    alias = os.path.join(agent.allow, "alias.dat")
    os.symlink(target, alias)
    jobs = []
    for name, path in (("direct", target), ("alias", alias)):
        body = fleet.body(f"truth-alias-{name}", [("A", {})], repeat=2, runtime=2)
        body["host_overrides"] = {agent.name: {"filename": path}}
        jobs.append(fleet.submit(body))
    spans = []
    for job in jobs:
        for r in fleet.wait(job):
            check(r["state"] == "succeeded", f"run {r['id']}: {r['state']} {r.get('error')}")
            full = fleet.get(f"/runs/{r['id']}")
            spans.append((int(full["started_ms"]), int(full["finished_ms"]), r["id"]))
    spans.sort()
    for (s1, e1, r1), (s2, e2, r2) in zip(spans, spans[1:]):
        check(s2 >= e1, f"runs {r1} [{s1}, {e1}] and {r2} [{s2}, {e2}] overlap on one file")
    log(f"  {len(spans)} runs on one file under two names, one at a time")


def run_case(agents, fn):
    def run():
        with Fleet(agents) as fleet:
            fn(fleet)
    return run


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build-dir", required=True)
    ap.add_argument("cases", nargs="+")
    a = ap.parse_args()
    h.set_build(a.build_dir)
    return h.run_cases({name: run_case(*CASES[name]) for name in CASES}, a.cases,
                       ("bin/iofleet-controller", "bin/iofleet-agent", "bin/iofleet"))


if __name__ == "__main__":
    sys.exit(main())
