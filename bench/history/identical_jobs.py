#!/usr/bin/env python3
"""Identical jobs, repeated: which history series alert, and why (issue 16).

Starts a controller and N real agents (loopback, temp dirs), submits the same
small job to every agent ROUNDS times back to back (the soak's shape: each agent
runs its next job when the last one ended), waits for the history worker to
ingest everything, then prints every series' values and every change the
detector assessed (decision, %change, reason) and the alerts. An identical
workload should raise no alert; whatever alerts here is a false alert.

  bench/history/identical_jobs.py --build-dir build [--agents 2] [--rounds 30]
      [--job soak|randread] [--keep] [--json OUT]

Exit 0 always (a measurement, not a test); the summary line says how many
alerts were raised.
"""

import argparse
import json
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                "tests", "lib"))
import iofleet_harness as h  # noqa: E402

JOBS = {
    # The soak's job (tests/faults/faults_test.py case_soak): 1 MiB sequential
    # 4k psync read, ~256 I/Os.
    "soak": "[global]\nioengine=psync\nbs=4k\nsize=1m\nfilename={target}\n[job]\nrw=read\n",
    # A longer random read of the same file, page cache kept (invalidate=0).
    "randread": ("[global]\nioengine=psync\nbs=4k\nsize=1m\nfilename={target}\n"
                 "invalidate=0\nruntime=1\ntime_based=1\n[job]\nrw=randread\n"),
}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build-dir", required=True)
    ap.add_argument("--agents", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=30)
    ap.add_argument("--job", choices=sorted(JOBS), default="soak")
    ap.add_argument("--keep", action="store_true")
    ap.add_argument("--json", help="write series and assessments here")
    args = ap.parse_args()
    h.set_build(args.build_dir)
    out = {"agents": args.agents, "rounds": args.rounds, "job": args.job, "series": []}
    with h.Env("identical", keep=args.keep) as env:
        env.add_controller()
        names = [f"ident{i}" for i in range(args.agents)]
        for nm in names:
            env.add_agent(nm, target_size=1 << 20)
        env.wait_agents_up(names, timeout=60)
        done = {nm: 0 for nm in names}
        outstanding = {}
        while any(done[nm] < args.rounds for nm in names):
            for nm in names:
                jid = outstanding.get(nm)
                if jid is not None:
                    j = env.job(jid)
                    if j["state"] not in h.TERMINAL:
                        continue
                    h.check(j["state"] == "succeeded", f"{jid}: {j['state']}")
                    done[nm] += 1
                    outstanding.pop(nm)
                if done[nm] >= args.rounds:
                    continue
                res = env.post_job({"name": "identical",
                                    "fio": JOBS[args.job].format(target=env.agents[nm].target),
                                    "hosts": [nm], "tags": {"branch": "main"}})
                outstanding[nm] = res
            time.sleep(0.05)
        # The worker polls every second; wait until every run fed its points.
        want = args.agents * args.rounds

        def ingested():
            series = env.get("/series?metric=iops")["series"]
            n = 0
            for s in series:
                d = env.get(f"/series/{s['key']}")
                n += len(d["points"]) + len(d.get("warmup_points", []))
            return n >= want
        h.wait_for(ingested, 60, "history ingested every run")
        time.sleep(2)
        alerts = env.get("/alerts")["alerts"]
        for s in env.get("/series")["series"]:
            d = env.get(f"/series/{s['key']}")
            vals = [p["value"] for p in d["points"]]
            hosts = [p["axes"].get("host") for p in d["points"]]
            warm = [p["value"] for p in d.get("warmup_points", [])]
            res = [p["axes"].get("resolution", 0) for p in d["points"]]
            changes = [{k: c.get(k) for k in ("index", "change_pct", "verdict", "decision",
                                               "reason")}
                       for c in d.get("change_points", [])]
            out["series"].append({"key": s["key"], "metric": s["metric"], "values": vals,
                                  "hosts": hosts, "warmup": warm, "resolution": res,
                                  "changes": changes})
            print(f"== {s['metric']} {s['key']} ({len(vals)} points, {len(warm)} warm-up: "
                  + " ".join(f"{v:.4g}" for v in warm) + ")")
            print("   " + " ".join(f"{v:.4g}" for v in vals))
            print("   resolution %: " + " ".join(f"{100 * r:.3g}" for r in res))
            for c in changes:
                print(f"   change at {c['index']}: {c['change_pct'] or 0:+.1f}% {c['verdict']} "
                      f"{c['decision']}: {c['reason']}")
        out["alerts"] = [{k: a.get(k) for k in ("series", "metric", "change_pct", "state")}
                         for a in alerts if a.get("kind") != "stoppage"]
        print(f"alerts: {len(out['alerts'])}")
        for a in out["alerts"]:
            print(f"   {a['metric']} {a['change_pct']:+.1f}% series {a['series']}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(out, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
