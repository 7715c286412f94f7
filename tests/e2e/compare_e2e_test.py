#!/usr/bin/env python3
"""A/B comparison end to end: a real iofleet-controller and one iofleet-agent
over loopback, GET /api/v1/jobs/{id}/compare (REST), `iofleet compare` (CLI).

Usage: compare_e2e_test.py --build-dir BUILD CASE [CASE...]   (or "all")

Cases (each with its own controller, agent and temp dir):
  engines  io_uring vs libaio, 4k randread QD32 direct=1 on a `fallocate -l 256M`
           file (reads of unwritten extents never reach the device, so the engine
           is the bottleneck), runtime 2 s, repeat 5: io_uring IOPS must not be a
           regression, and its delta must be near what the two engines measure
           alone (`iofleet-agent run`, same options, alternating).
  aa       the same arm twice (io_uring vs io_uring), repeat 5, runtime 2 s: every
           row no_change or inconclusive (or noisy), never regression/improvement.
  sweep    iodepth 1,8,32,128 x {libaio, io_uring}, repeat 5, runtime 1 s: one row
           per depth for IOPS, mean latency and p99, both arms' medians, a verdict.

Only the Python standard library is used. --keep keeps the temp dir; --report FILE
appends the measured tables (markdown) to FILE.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time
import traceback

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import iofleet_harness as h  # noqa: E402  (the one harness of tests/*)
from iofleet_harness import TestFailure, check  # noqa: E402

BUILD = None
REPORT = None
AGENT = "cmp-agent"


def log(msg):
    print(msg, flush=True)


class Env(h.Env):
    """One controller and one agent, started with the shared harness's classes."""

    rest_timeout = 120

    def __init__(self, keep=False):
        super().__init__("cmp-e2e", keep=keep, tmp_root="/var/tmp")
        self.controller = h.Controller(self)
        self.agent = h.Agent(self, AGENT, labels={"role": "compare"}, target_size=0,
                             backoff_max_ms=500)
        self.agents[AGENT] = self.agent
        self.allow = self.agent.allow
        self.http = None

    def __enter__(self):
        self.controller.start()
        self.http = self.controller.http
        self.agent.start()
        self.wait_agents_up([AGENT], timeout=30)
        return self

    def submit(self, body):
        return self.post_job(body)

    def wait_job(self, job_id, timeout):
        deadline = time.time() + timeout
        saw_409 = False
        while time.time() < deadline:
            runs = self.get(f"/jobs/{job_id}")["runs"]
            if runs and all(r["state"] in ("succeeded", "failed", "cancelled", "lost")
                            for r in runs):
                return runs, saw_409
            if not saw_409:
                status, _, text = self.request("GET", f"/jobs/{job_id}/compare")
                if status == 409:
                    saw_409 = True
                    check("still queued or running" in text, f"409 body: {text}")
            time.sleep(0.5)
        raise TestFailure(f"job {job_id} not finished after {timeout}s")

    def cli(self, *args):
        p = subprocess.run([h.bin_path("bin", "iofleet"),
                            f"--controller=http://{self.http}", *args],
                           capture_output=True, text=True, timeout=120)
        return p.returncode, p.stdout, p.stderr

    def target(self):
        path = os.path.join(self.allow, "engine-bound.dat")
        subprocess.run(["fallocate", "-l", "256M", path], check=True)
        return path


def base_options(path, runtime):
    return {"rw": "randread", "bs": "4k", "iodepth": "32", "direct": "1",
            "filename": path, "runtime": str(runtime), "time_based": "1",
            "norandommap": "1"}


def ab_job(name, path, arms, repeat, runtime, sweep=None):
    body = {"name": name, "options": base_options(path, runtime), "hosts": [AGENT],
            "repeat": repeat,
            "variants": [{"name": n, "options": {"ioengine": e}} for n, e in arms]}
    if sweep:
        body["sweep"] = sweep
    return body


def rows_of(cmp, metric):
    return [r for r in cmp["rows"] if r["metric"] == metric]


def fmt_row(r):
    def v(x):
        return "-" if x is None else f"{x:,.0f}"
    ci = r.get("delta_ci_pct") or [None, None]
    d = r.get("delta_pct")
    return (f"{r['cell']:<12} {r['metric']:<13} A {v(r['a']['median'])} (n={r['a']['n']})  "
            f"B {v(r['b']['median'])} (n={r['b']['n']})  "
            f"delta {'-' if d is None else f'{d:+.1f}%'} "
            f"[{'-' if ci[0] is None else f'{ci[0]:+.1f}'}, "
            f"{'-' if ci[1] is None else f'{ci[1]:+.1f}'}]  "
            f"p={r.get('p')} q={r.get('q')}  {r['verdict']}")


def report(title, lines):
    if REPORT:
        with open(REPORT, "a") as f:
            f.write(f"\n#### {title}\n\n" + "\n".join(lines) + "\n")


def run_compare_job(env, body, timeout):
    t0 = time.time()
    job_id = env.submit(body)
    runs, saw_409 = env.wait_job(job_id, timeout)
    elapsed = time.time() - t0
    bad = [r for r in runs if r["state"] != "succeeded"]
    check(not bad, f"runs not succeeded: {[(r['id'], r['state'], r.get('error')) for r in bad]}")
    cmp = env.get(f"/jobs/{job_id}/compare")
    log(f"job {job_id}: {len(runs)} runs in {elapsed:.0f}s; outcome {cmp['outcome']}; "
        f"excluded {len(cmp['excluded'])}; compared {cmp['compared_attributes']}")
    for e in cmp["excluded"]:
        log(f"  excluded {e['run']}: {e['reasons']}")
    return job_id, cmp, saw_409


def standalone_iops(path, engine, runtime):
    args = [h.bin_path("bin", "iofleet-agent"), "run", "--name=alone",
            f"--ioengine={engine}", "--output-format=json"]
    args += [f"--{k}={v}" for k, v in base_options(path, runtime).items()]
    p = subprocess.run(args, capture_output=True, text=True, timeout=120)
    check(p.returncode == 0, f"agent run {engine}: {p.stderr}")
    return json.loads(p.stdout)["jobs"][0]["read"]["iops"]


# ---------------------------------------------------------------------- cases

def case_engines(env):
    path = env.target()
    body = ab_job("cmp-engines", path, [("libaio", "libaio"), ("io_uring", "io_uring")],
                  repeat=5, runtime=2)
    job_id, cmp, saw_409 = run_compare_job(env, body, timeout=240)
    check(saw_409, "compare did not answer 409 while the job was running")
    check(cmp["arm_a"] == "libaio" and cmp["arm_b"] == "io_uring", str(cmp["arm_a"]))
    check("ioengine" in cmp["compared_attributes"], str(cmp["compared_attributes"]))
    for r in cmp["rows"]:
        log("  " + fmt_row(r))
    iops = rows_of(cmp, "iops")
    check(len(iops) == 1 and iops[0]["cell"] == "all", f"iops rows: {iops}")
    row = iops[0]
    check(row["a"]["n"] == 5 and row["b"]["n"] == 5, f"n per arm: {row['a']['n']}/{row['b']['n']}")
    check(row["verdict"] != "regression", f"io_uring IOPS verdict {row['verdict']}")
    check(not row["confounded"], f"confounded: {row['confounders']}")

    # The engines alone, alternating, 3 runs each, same options.
    alone = {"libaio": [], "io_uring": []}
    for _ in range(3):
        for e in ("libaio", "io_uring"):
            alone[e].append(standalone_iops(path, e, 2))
    med = {e: statistics.median(v) for e, v in alone.items()}
    alone_delta = (med["io_uring"] / med["libaio"] - 1) * 100
    delta = row["delta_pct"]
    log(f"  standalone medians: libaio {med['libaio']:,.0f}  io_uring {med['io_uring']:,.0f}  "
        f"delta {alone_delta:+.1f}%; compare delta {delta:+.1f}% ({row['verdict']})")
    # The same direction as the engines measured alone when that effect is clear.
    # Not the same size: on a shared machine the load moves between the job and
    # the standalone runs (seen: +42 % in the job, +92 % alone, both right).
    if abs(alone_delta) > 25:
        check((delta > 0) == (alone_delta > 0),
              f"compare delta {delta:+.1f}% vs standalone {alone_delta:+.1f}%: opposite signs")
    if alone_delta > 10:
        check(row["verdict"] in ("improvement", "inconclusive", "noisy"), row["verdict"])

    # Formats over REST and the CLI.
    status, ctype, md = env.request("GET", f"/jobs/{job_id}/compare?format=markdown")
    check(status == 200 and "markdown" in ctype and "| all" in md, f"markdown: {status} {ctype}")
    check(md.startswith("**10 of 11 runs usable.**"), f"markdown opening: {md[:200]}")
    status, ctype, xml = env.request("GET", f"/jobs/{job_id}/compare?format=junit")
    # One testcase per row, plus "usable runs".
    check(status == 200 and "<testsuites" in xml and
          xml.count("<testcase") == len(cmp["rows"]) + 1, f"junit: {status} {xml[:200]}")
    # `iofleet compare` exits 3 exactly when the outcome is fail.
    want_rc = 3 if cmp["outcome"] == "fail" else 0
    rc, out, err = env.cli("compare", job_id)
    check(rc == want_rc and "iops" in out and "libaio" in out,
          f"iofleet compare: rc {rc} (outcome {cmp['outcome']}) {out} {err}")
    rc, out, err = env.cli("compare", job_id, "--format=junit")
    check(rc == want_rc and "<testsuite" in out, f"iofleet compare --format=junit: rc {rc} {err}")

    report("io_uring vs libaio (4k randread QD32, direct=1, fallocated 256M file, 2 s, repeat 5)", [
        "```", *[fmt_row(r) for r in cmp["rows"]],
        f"standalone (iofleet-agent run, 3 alternating runs each, medians): "
        f"libaio {med['libaio']:,.0f} IOPS, io_uring {med['io_uring']:,.0f} IOPS, "
        f"delta {alone_delta:+.1f}%", f"outcome: {cmp['outcome']}", "```"])


def aa_once(env, path, name):
    body = ab_job(name, path, [("A", "io_uring"), ("A2", "io_uring")], repeat=5, runtime=2)
    job_id, cmp, _ = run_compare_job(env, body, timeout=240)
    for r in cmp["rows"]:
        log("  " + fmt_row(r))
    decided = [f"{r['cell']} {r['metric']}: {r['verdict']}" for r in cmp["rows"]
               if r["verdict"] in ("regression", "improvement")]
    check(not decided or cmp["outcome"] != "pass", f"A/A outcome {cmp['outcome']} with {decided}")
    return job_id, cmp, decided


def case_aa(env):
    """io_uring against io_uring: no regression or improvement. A false verdict
    happens at a rate of at most α (5 %) per comparison by design (docs/ab-method.md,
    "Error rates"), so one is tolerated if a second, independent A/A job has none (a
    false alarm then needs two, ~0.25 %; a bias in the method repeats and fails),
    as truth.aa does."""
    path = env.target()
    job_id, cmp, decided = aa_once(env, path, "cmp-aa")
    if decided:
        log(f"  A/A job {job_id} gave {decided}: running a second, independent A/A job")
        job_id, cmp, decided2 = aa_once(env, path, "cmp-aa-2")
        check(not decided2, f"two A/A jobs both gave false verdicts: {decided}, {decided2}")
    check(cmp["outcome"] != "fail", f"A/A outcome {cmp['outcome']}")
    report("A/A: io_uring vs io_uring (same options, 2 s, repeat 5)", [
        "```", *[fmt_row(r) for r in cmp["rows"]], f"outcome: {cmp['outcome']}", "```"])


def case_sweep(env):
    path = env.target()
    depths = ["1", "8", "32", "128"]
    body = ab_job("cmp-sweep", path, [("libaio", "libaio"), ("io_uring", "io_uring")],
                  repeat=5, runtime=1, sweep={"iodepth": depths})
    job_id, cmp, _ = run_compare_job(env, body, timeout=480)
    lines = []
    for metric in ("iops", "clat_mean_ns", "p99_ns"):
        rows = rows_of(cmp, metric)
        cells = [r["cell"] for r in rows]
        check(cells == [f"iodepth={d}" for d in depths], f"{metric} cells {cells}")
        for r in rows:
            check(r["a"]["n"] == 5 and r["b"]["n"] == 5, f"{metric} {r['cell']} n")
            check(r["a"]["median"] and r["b"]["median"], f"{metric} {r['cell']} medians")
            check(r["verdict"] in ("regression", "improvement", "no_change", "inconclusive",
                                   "noisy"), r["verdict"])
            lines.append(fmt_row(r))
            log("  " + fmt_row(r))
    report("iodepth sweep 1,8,32,128: libaio (A) vs io_uring (B), 1 s, repeat 5", [
        "```", *lines, f"outcome: {cmp['outcome']}", "```"])


CASES = {"engines": case_engines, "aa": case_aa, "sweep": case_sweep}


def main():
    global BUILD, REPORT
    ap = argparse.ArgumentParser()
    ap.add_argument("--build-dir", required=True)
    ap.add_argument("--keep", action="store_true")
    ap.add_argument("--report")
    ap.add_argument("cases", nargs="+")
    a = ap.parse_args()
    BUILD = h.set_build(a.build_dir)
    REPORT = a.report
    names = list(CASES) if a.cases == ["all"] else a.cases
    failed = []
    for name in names:
        if name not in CASES:
            print(f"unknown case {name}", file=sys.stderr)
            return 2
        log(f"=== {name}")
        t0 = time.time()
        try:
            with Env(keep=a.keep) as env:
                CASES[name](env)
            log(f"--- {name}: ok ({time.time() - t0:.0f}s)")
        except Exception as e:  # noqa: BLE001
            traceback.print_exc()
            log(f"--- {name}: FAILED: {e}")
            failed.append(name)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
