#!/usr/bin/env python3
"""Is the first run of a job on an agent slower than the runs after it?

The compare_aa job shape (4k randread QD32 direct=1, io_uring, a fallocated 256M
file, runtime 2 s, time_based) on a real controller and agent over loopback
(tests/lib/iofleet_harness.py). Per round, a fresh environment (new controller, new
agent process, new file) runs, one after the other:

  fresh  a single-arm job of `--repeat` runs on the just-started agent, file just
         made: its run 0 is the first I/O the agent (and the file) ever did;
  warm   the same job again at once: run 0 follows the last run of `fresh`;
  idle   after `--idle` seconds with nothing running, the same job again;
  alone  `--repeat` back-to-back `iofleet-agent run` processes (each a new
         process, same file): process start without the agent's serve loop.

Runs of a job execute one at a time (one agent, one file), in started_ms order.
For each job the ratio run0 / median(runs 1..) is printed per round, and the
median of those ratios over rounds. Rounds interleave the kinds, so the shared
machine's load drift hits them alike.

Usage: first_run.py --build-dir BUILD [--rounds 4] [--repeat 6] [--idle 20]
                    [--json OUT]
       first_run.py --analyse OUT1.json [OUT2.json ...]   (pool earlier batches:
                    geometric mean of run0 / median(runs 1..) with a bootstrap
                    95 % CI, and a sign test, per kind of job)
"""
import argparse
import json
import math
import random
import os
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                "tests", "lib"))
import iofleet_harness as h  # noqa: E402

AGENT = "fr-agent"


def options(path, runtime):
    return {"rw": "randread", "bs": "4k", "iodepth": "32", "direct": "1",
            "ioengine": "io_uring", "filename": path, "runtime": str(runtime),
            "time_based": "1", "norandommap": "1"}


def run_job(env, name, path, repeat, runtime):
    job_id = env.post_job({"name": name, "options": options(path, runtime),
                           "hosts": [AGENT], "repeat": repeat})
    env.wait_runs_done(job_id, timeout=60 + repeat * (runtime + 10))
    runs = sorted(env.runs(job_id), key=lambda r: int(r["started_ms"]))
    out = []
    for r in runs:
        h.check(r["state"] == "succeeded", f"run {r['id']}: {r['state']} {r.get('error')}")
        res = env.get(f"/runs/{r['id']}")["result"]
        out.append(res["jobs"][0]["read"]["iops"])
    return out


def alone(path, repeat, runtime):
    out = []
    for _ in range(repeat):
        args = [h.bin_path("bin", "iofleet-agent"), "run", "--name=alone",
                "--output-format=json"]
        args += [f"--{k}={v}" for k, v in options(path, runtime).items()]
        p = subprocess.run(args, capture_output=True, text=True, timeout=120)
        h.check(p.returncode == 0, p.stderr)
        out.append(json.loads(p.stdout)["jobs"][0]["read"]["iops"])
    return out


def ratio(xs):
    return xs[0] / statistics.median(xs[1:])


def analyse(paths):
    rounds = []
    for p in paths:
        with open(p) as f:
            rounds += json.load(f)
    rng = random.Random(1)
    for kinds in (("fresh", "warm", "idle"), ("fresh",), ("warm",), ("idle",), ("alone",)):
        v = [math.log(ratio(r[k])) for r in rounds for k in kinds]
        boot = sorted(statistics.mean(rng.choices(v, k=len(v))) for _ in range(5000))
        below = sum(x < 0 for x in v)
        p = sum(math.comb(len(v), i) for i in range(below, len(v) + 1)) / 2 ** len(v)
        print(f"  {'+'.join(kinds):<16} n={len(v):<3} run0/median(rest) geometric mean "
              f"{math.exp(statistics.mean(v)):.3f}, 95 % CI [{math.exp(boot[125]):.3f}, "
              f"{math.exp(boot[4875]):.3f}]; {below} of {len(v)} below 1 "
              f"(one-sided sign test p = {p:.3f})")


def main():
    if len(sys.argv) > 2 and sys.argv[1] == "--analyse":
        analyse(sys.argv[2:])
        return
    ap = argparse.ArgumentParser()
    ap.add_argument("--build-dir", required=True)
    ap.add_argument("--rounds", type=int, default=4)
    ap.add_argument("--repeat", type=int, default=6)
    ap.add_argument("--runtime", type=int, default=2)
    ap.add_argument("--idle", type=int, default=20)
    ap.add_argument("--json")
    a = ap.parse_args()
    h.BUILD = os.path.abspath(a.build_dir)
    rounds = []
    for rnd in range(a.rounds):
        with h.Env("first-run", tmp_root="/var/tmp") as env:
            env.controller = h.Controller(env)
            env.controller.start()
            agent = h.Agent(env, AGENT, labels={"role": "fr"}, target_size=0)
            env.agents[AGENT] = agent
            path = os.path.join(agent.allow, "engine-bound.dat")
            subprocess.run(["fallocate", "-l", "256M", path], check=True)
            agent.start()
            env.wait_agents_up([AGENT], timeout=30)
            got = {}
            got["fresh"] = run_job(env, "fresh", path, a.repeat, a.runtime)
            got["warm"] = run_job(env, "warm", path, a.repeat, a.runtime)
            time.sleep(a.idle)
            got["idle"] = run_job(env, "idle", path, a.repeat, a.runtime)
            got["alone"] = alone(path, a.repeat, a.runtime)
        rounds.append(got)
        print(f"round {rnd}: " + "  ".join(
            f"{k} run0/med(rest) {ratio(v):.3f} [{', '.join(f'{x/1e3:.0f}k' for x in v)}]"
            for k, v in got.items()), flush=True)
    print("per kind, over rounds: median of run0 / median(runs 1..), rounds where run0 was "
          "the slower, run0/run1 (adjacent runs share the machine's load), and the same "
          "for run1 / median(runs 2..) as a control:")
    pooled = []
    for k in ("fresh", "warm", "idle", "alone"):
        rs = [ratio(r[k]) for r in rounds]
        adj = [r[k][0] / r[k][1] for r in rounds]
        pos1 = [r[k][1] / statistics.median(r[k][2:]) for r in rounds]
        pooled += rs
        print(f"  {k:<6} run0 {statistics.median(rs):.3f} ({sum(x < 1 for x in rs)} of "
              f"{len(rs)} below 1; rounds: {', '.join(f'{x:.3f}' for x in rs)});  "
              f"run0/run1 {statistics.median(adj):.3f};  control run1/median(2..) "
              f"{statistics.median(pos1):.3f} ({sum(x < 1 for x in pos1)} of {len(pos1)} below 1)")
    below = sum(x < 1 for x in pooled)
    # One-sided sign test: P(at least `below` of n below 1) when run0 is no slower.
    n = len(pooled)
    p = sum(math.comb(n, i) for i in range(below, n + 1)) / 2 ** n
    print(f"  all    run0 {statistics.median(pooled):.3f}; {below} of {n} below 1 "
          f"(one-sided sign test p = {p:.3f})")
    cvs = [statistics.stdev(v[1:]) / statistics.mean(v[1:]) for r in rounds for v in r.values()]
    print(f"  run-to-run CV within a job (runs 1..): median {statistics.median(cvs):.1%}")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(rounds, f, indent=1)


if __name__ == "__main__":
    main()
