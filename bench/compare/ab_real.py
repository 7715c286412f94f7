#!/usr/bin/env python3
"""A/A false-verdict rate and power for a small true shift, measured with real
runs: a real iofleet-controller and 1 or 2 iofleet-agent processes on this
machine (two agents on one machine are two hosts), jobs submitted over REST,
verdicts read from GET /jobs/{id}/compare under several within-run CV policies.

  ab_real.py calibrate --build-dir B [--pairs 12] [--runtime 5] [--b-opt K=V]...
      Alternates standalone `iofleet-agent run` of arm A (bs=4k) and arm B (bs=4k
      overridden by the --b-opt options; default bssplit=4k/85:8k/15, i.e. 15 % of
      the reads are 8k) on a page-cached file and prints the IOPS effect of B with a
      95 % CI (paired t on log ratios of adjacent runs), from IOPS and from the CPU
      time per I/O (usr + sys of the run / its I/Os): under CPU contention the
      latter is the steadier estimate of the true effect.

  ab_real.py run --build-dir B --data DIR --agents 1|2 --experiments N
                 [--repeat 10] [--runtime 2] [--b-opt K=V]...
      Starts a controller (data in DIR) and the agents, then submits N A/A jobs
      and N shift jobs, alternating (aa, shift, aa, shift ...) so both see the same
      machine. Each job: variants A and B (A/A: both bs=4k; shift: B with the
      --b-opt options), psync randread of a 4 MiB page-cached file, time_based,
      `repeat` runs per arm per agent. Writes DIR/manifest.json.

  ab_real.py eval --build-dir B --data DIR [--policies none,0.15,0.30] [--json OUT]
      Starts a controller on DIR (no agents) and reads each job's comparison
      under each policy (none = no within-run CV gate; a number = the gate, as
      max_cv=), admitting unaudited runs (this branch stores no audit); "raw" asks
      with no parameters at all (for an older controller build: --build-dir of
      that build reads the same data dir). Prints a
      markdown table: A/A experiments with any regression/improvement row, A/A
      IOPS rows regression/improvement, shift experiments whose IOPS row is a
      regression (power), runs usable, median Δ.

Only the Python standard library is used; process handling is the e2e harness's.
"""
import argparse
import json
import math
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "tests", "e2e"))
import e2e_test as harness  # noqa: E402

FILE_SIZE = 4 << 20


class Env:
    """A controller on `data_dir` and `agents` agents, the e2e harness's classes."""

    def __init__(self, build, data_dir, agents):
        harness.BUILD = build
        self.dir = data_dir
        self.data_dir = os.path.join(data_dir, "data")
        os.makedirs(self.dir, exist_ok=True)
        self.controller = harness.Controller(self)
        self.agents = [harness.Agent(self, f"agent-{i + 1}", {"bench": "ab"})
                       for i in range(agents)]

    def __enter__(self):
        self.controller.start()
        for a in self.agents:
            a.start()
        names = [a.name for a in self.agents]
        deadline = time.time() + 30
        while names and time.time() < deadline:
            try:
                up = {a["name"] for a in self.get("/agents")["agents"] if a["state"] == "up"}
                if all(n in up for n in names):
                    break
            except Exception:
                pass
            time.sleep(0.2)
        return self

    def __exit__(self, *exc):
        for a in self.agents:
            a.stop()
        self.controller.stop()
        return False

    def request(self, method, path, body=None):
        url = f"http://{self.controller.http}/api/v1{path}"
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(url, data=data, method=method,
                                     headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=300) as r:
                return r.status, json.loads(r.read().decode())
        except urllib.error.HTTPError as e:
            return e.code, json.loads(e.read().decode() or "{}")

    def get(self, path):
        status, body = self.request("GET", path)
        if status != 200:
            raise RuntimeError(f"GET {path} -> {status}: {body}")
        return body


# 15 % of the reads 8k: ~5 % fewer IOPS (an 8k read of a cached page costs ~1.35x
# a 4k read here; bench/RESULTS.md has the calibration).
DEFAULT_B = ["bssplit=4k/85:8k/15"]


def b_options(pairs):
    out = {}
    for kv in pairs or DEFAULT_B:
        k, _, v = kv.partition("=")
        out[k] = v
    return out


def job_body(name, agents, repeat, runtime, b_opts):
    return {
        "name": name,
        "options": {"ioengine": "psync", "rw": "randread", "size": str(FILE_SIZE),
                    "runtime": str(runtime), "time_based": "1", "filename": "target.dat"},
        "hosts": [a.name for a in agents],
        # Each agent reads a file in its own allow dir.
        "host_overrides": {a.name: {"filename": os.path.join(a.allow, "target.dat")}
                           for a in agents},
        "repeat": repeat,
        "variants": [{"name": "A", "options": {"bs": "4k"}},
                     {"name": "B", "options": dict({"bs": "4k"}, **b_opts)}],
    }


def wait_job(env, job_id, timeout):
    deadline = time.time() + timeout
    while time.time() < deadline:
        runs = env.get(f"/jobs/{job_id}")["runs"]
        if runs and all(r["state"] in ("succeeded", "failed", "cancelled", "lost") for r in runs):
            return runs
        time.sleep(0.5)
    raise RuntimeError(f"job {job_id} not finished after {timeout}s")


def cmd_run(a):
    os.makedirs(a.data, exist_ok=True)
    manifest_path = os.path.join(a.data, "manifest.json")
    manifest = {"agents": a.agents, "repeat": a.repeat, "runtime": a.runtime,
                "b_options": b_options(a.b_opt), "jobs": []}
    if os.path.exists(manifest_path):
        with open(manifest_path) as f:
            manifest = json.load(f)
    with Env(a.build_dir, a.data, a.agents) as env:
        for ag in env.agents:
            path = os.path.join(ag.allow, "target.dat")
            if not os.path.exists(path):
                with open(path, "wb") as f:
                    f.write(os.urandom(FILE_SIZE))
        for i in range(a.experiments):
            for kind in a.kinds.split(","):
                b = {} if kind == "aa" else manifest["b_options"]
                t0 = time.time()
                status, res = env.request("POST", "/jobs", job_body(
                    f"{kind}-{i}", env.agents, manifest["repeat"],
                    manifest["runtime"], b))
                if status != 201:
                    raise RuntimeError(f"submit: {status} {res}")
                runs = wait_job(env, res["id"], 60 + 4 * a.repeat * (a.runtime + 3) * 2)
                load = os.getloadavg()[0]
                manifest["jobs"].append({"id": res["id"], "kind": kind, "load1": load,
                                         "seconds": round(time.time() - t0, 1),
                                         "states": sorted({r["state"] for r in runs})})
                with open(manifest_path, "w") as f:
                    json.dump(manifest, f, indent=1)
                print(f"{kind}-{i}: job {res['id']} {len(runs)} runs in "
                      f"{time.time() - t0:.0f}s, load {load:.1f}", flush=True)


def policy_query(p):
    if p == "raw":  # no parameters: what the controller does by default (e.g. an older build)
        return ""
    return "unaudited=allow" + ("" if p == "none" else f"&max_cv={p}")


def summarise(cmp):
    iops = next((r for r in cmp["rows"] if r["metric"] == "iops"), None)
    false_rows = [r for r in cmp["rows"] if r["verdict"] in ("regression", "improvement")]
    usable = cmp.get("usable") or {
        # Controllers before the usable-runs summary: count the excluded list.
        "runs_total": cmp.get("runs_total"),
        "runs_usable": (cmp.get("runs_total") or 0) - len(cmp.get("excluded", [])),
    }
    return {
        "outcome": cmp["outcome"],
        "iops_verdict": iops["verdict"] if iops else None,
        "iops_delta": iops["delta_pct"] if iops else None,
        "iops_ci": iops["delta_ci_pct"] if iops else None,
        "iops_design": iops.get("design") if iops else None,
        "any_decided": sorted({f"{r['metric']}:{r['verdict']}" for r in false_rows}),
        "rows": len(cmp["rows"]),
        "runs_usable": usable.get("runs_usable"),
        "runs_total": usable.get("runs_total"),
        "within_run_cv_a": iops["a"].get("within_run_cv") if iops else None,
    }


def wilson(k, n):
    if n == 0:
        return (float("nan"), float("nan"))
    z = 1.959964
    p = k / n
    d = 1 + z * z / n
    c = (p + z * z / (2 * n)) / d
    h = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / d
    return (max(0.0, c - h), min(1.0, c + h))


def pct(k, n):
    lo, hi = wilson(k, n)
    return f"{k}/{n} = {100 * k / n:.0f} % [{100 * lo:.0f}, {100 * hi:.0f}]" if n else "-"


def run_points(env, job_id, cpu=False):
    """(host, repetition, variant, y) per succeeded run: y = log IOPS, or with `cpu`
    log of the CPU time per I/O (fio's usr_cpu + sys_cpu of the runtime)."""
    job = env.get(f"/jobs/{job_id}")
    pts = []
    for r in job["runs"]:
        if r["state"] != "succeeded":
            continue
        full = env.get(f"/runs/{r['id']}")
        jobs = (full.get("result") or {}).get("jobs", [])
        iops = sum(j.get("read", {}).get("iops", 0) for j in jobs)
        if cpu:
            busy = sum((j.get("usr_cpu", 0) + j.get("sys_cpu", 0)) / 100 * j.get("job_runtime", 0)
                       for j in jobs)
            ios = sum(j.get("read", {}).get("total_ios", 0) for j in jobs)
            if busy > 0 and ios > 0:
                pts.append((r["host"], r.get("repetition", 0), r["variant"], math.log(busy / ios)))
        elif iops > 0:
            pts.append((r["host"], r.get("repetition", 0), r["variant"], math.log(iops)))
    return pts


def pair_diffs(pts):
    by = {}
    for host, rep, var, y in pts:
        by.setdefault((host, rep), {})[var] = y
    return [v["B"] - v["A"] for v in by.values() if "A" in v and "B" in v]


def mean_ci(diffs, sign=1):
    m = sign * statistics.mean(diffs)
    se = statistics.stdev(diffs) / math.sqrt(len(diffs))
    return {"pairs": len(diffs), "delta": 100 * math.expm1(m),
            "lo": 100 * math.expm1(m - 1.97 * se), "hi": 100 * math.expm1(m + 1.97 * se)}


def noise_summary(env, manifest):
    aa = [j for j in manifest["jobs"] if j["kind"] == "aa"]
    sh = [j for j in manifest["jobs"] if j["kind"] == "shift"]
    ss_total = n_total = 0
    diffs = []
    for j in aa:
        pts = run_points(env, j["id"])
        by_host = {}
        for host, rep, var, y in pts:
            by_host.setdefault(host, []).append(y)
        for ys in by_host.values():
            if len(ys) > 1:
                m = statistics.mean(ys)
                ss_total += sum((y - m) ** 2 for y in ys)
                n_total += len(ys) - 1
        diffs += pair_diffs(pts)
    if not diffs or not n_total:
        return None
    sd_total = math.sqrt(ss_total / n_total)
    sd_run = statistics.pstdev(diffs) / math.sqrt(2)
    med = statistics.median(diffs)
    mad = statistics.median(abs(d - med) for d in diffs) * 1.4826
    tail = sum(1 for d in diffs if mad > 0 and abs(d - med) > 3 * mad) / len(diffs)
    out = {"jobs": len(aa), "pairs": len(diffs), "sd_total": sd_total, "sd_run": sd_run,
           "sd_slow": math.sqrt(max(0.0, sd_total ** 2 - sd_run ** 2)), "tail": tail,
           "within_cv_median": float("nan")}
    wcv = []
    for j in manifest["jobs"]:
        samples_cv = env.get(f"/jobs/{j['id']}/compare?unaudited=allow")
        for r in samples_cv["rows"]:
            if r["metric"] == "iops":
                for arm in ("a", "b"):
                    if r[arm].get("within_run_cv") is not None:
                        wcv.append(r[arm]["within_run_cv"])
    if wcv:
        out["within_cv_median"] = statistics.median(wcv)
    sdiffs, cdiffs = [], []
    for j in sh:
        sdiffs += pair_diffs(run_points(env, j["id"]))
        cdiffs += pair_diffs(run_points(env, j["id"], cpu=True))
    if len(sdiffs) > 2:
        out["shift_effect"] = mean_ci(sdiffs)
    if len(cdiffs) > 2:
        # IOPS = CPU share / CPU time per I/O: the share is the machine's noise, the
        # same for both arms in expectation; the per-I/O cost is the true effect.
        out["shift_effect_cpu"] = mean_ci(cdiffs, sign=-1)
    aa_cpu = []
    for j in aa:
        aa_cpu += pair_diffs(run_points(env, j["id"], cpu=True))
    if len(aa_cpu) > 2:
        out["aa_effect_cpu"] = mean_ci(aa_cpu, sign=-1)
    return out


def cmd_eval(a):
    with open(os.path.join(a.data, "manifest.json")) as f:
        manifest = json.load(f)
    policies = a.policies.split(",")
    out = {"manifest": manifest, "results": {}}
    with Env(a.build_dir, a.data, 0) as env:
        for p in policies:
            res = []
            for j in manifest["jobs"]:
                status, cmp = env.request("GET", f"/jobs/{j['id']}/compare?{policy_query(p)}")
                if status != 200:
                    res.append({"kind": j["kind"], "error": f"{status} {cmp}"})
                    continue
                s = summarise(cmp)
                s["kind"] = j["kind"]
                res.append(s)
            out["results"][p] = res
        out["noise"] = noise_summary(env, manifest)
    if a.json:
        with open(a.json, "w") as f:
            json.dump(out, f, indent=1)
    n_agents = manifest["agents"]
    print(f"\n{n_agents} agent(s), repeat {manifest['repeat']}, runtime {manifest['runtime']} s, "
          f"B {manifest['b_options']}; {len(manifest['jobs'])} jobs; load1 median "
          f"{statistics.median(j['load1'] for j in manifest['jobs']):.1f}\n")
    print("| within-run CV policy | runs usable | A/A: experiments with a false verdict (any "
          "row) | A/A: IOPS false verdict | shift: IOPS regression (power) | shift: IOPS "
          "inconclusive/noisy | shift: median Δ IOPS |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for p in policies:
        res = [r for r in out["results"][p] if "error" not in r]
        aa = [r for r in res if r["kind"] == "aa"]
        sh = [r for r in res if r["kind"] == "shift"]
        usable = sum(r["runs_usable"] or 0 for r in res)
        total = sum(r["runs_total"] or 0 for r in res)
        aa_any = sum(1 for r in aa if r["any_decided"])
        aa_iops = sum(1 for r in aa if r["iops_verdict"] in ("regression", "improvement"))
        power = sum(1 for r in sh if r["iops_verdict"] == "regression")
        undecided = sum(1 for r in sh if r["iops_verdict"] in ("inconclusive", "noisy"))
        deltas = [r["iops_delta"] for r in sh if r["iops_delta"] is not None]
        name = {"none": "no gate (default)",
                "raw": "as served, no parameters"}.get(p) or f"exclude runs with CV > {float(p):.0%}"
        print(f"| {name} | {usable}/{total} | {pct(aa_any, len(aa))} | {pct(aa_iops, len(aa))} "
              f"| {pct(power, len(sh))} | {pct(undecided, len(sh))} | "
              f"{statistics.median(deltas):+.1f} % |" if deltas else "| - |")
    noise = out.get("noise")
    if noise:
        print(f"\nA/A noise (log IOPS, pooled over {noise['jobs']} A/A jobs, {noise['pairs']} ABBA "
              f"pairs): across-run sd {noise['sd_total']:.3f} (CV ~{100 * noise['sd_total']:.0f} %), "
              f"run-to-run sd from pair differences {noise['sd_run']:.3f}, slow (shared by a "
              f"pair) sd {noise['sd_slow']:.3f}; |d| beyond 3 robust sd in "
              f"{100 * noise['tail']:.1f} % of pairs; within-run CV: median over arms of "
              f"the arm's median {100 * noise['within_cv_median']:.1f} % (the runs a 15 % gate "
              f"cuts: see the table's \"runs usable\")")
        for key, what in (("shift_effect", "shift jobs, IOPS B/A"),
                          ("shift_effect_cpu", "shift jobs, IOPS implied by CPU time per I/O"),
                          ("aa_effect_cpu", "A/A jobs, IOPS implied by CPU time per I/O")):
            e = noise.get(key)
            if e:
                print(f"{what}, pooled over {e['pairs']} ABBA pairs: {e['delta']:+.2f} % "
                      f"[{e['lo']:+.2f}, {e['hi']:+.2f}] (mean log ratio, 95 % CI)")
    errors = [r for p in policies for r in out["results"][p] if "error" in r]
    if errors:
        print(f"\n{len(errors)} comparisons answered an error, e.g. {errors[0]['error'][:200]}")


def cmd_calibrate(a):
    tmp = tempfile.mkdtemp(prefix="iofleet-cal-", dir="/var/tmp")
    path = os.path.join(tmp, "target.dat")
    with open(path, "wb") as f:
        f.write(os.urandom(FILE_SIZE))
    agent = os.path.join(a.build_dir, "bin", "iofleet-agent")

    def measure(arm):
        """(IOPS, CPU seconds per I/O) of one standalone run."""
        opts = {"bs": "4k"} if arm == "A" else dict({"bs": "4k"}, **b_options(a.b_opt))
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        p = subprocess.run([agent, "run", "--name=cal", "--ioengine=psync", "--rw=randread",
                            f"--size={FILE_SIZE}", f"--filename={path}",
                            f"--runtime={a.runtime}", "--time_based=1", "--output-format=json"]
                           + [f"--{k}={v}" for k, v in opts.items()],
                           capture_output=True, text=True, check=True)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
        read = json.loads(p.stdout)["jobs"][0]["read"]
        return read["iops"], cpu / read["total_ios"]

    def ci(logs):
        m = statistics.mean(logs)
        se = statistics.stdev(logs) / math.sqrt(len(logs))
        t = {5: 2.571, 7: 2.365, 9: 2.262, 11: 2.201, 15: 2.131, 19: 2.093, 23: 2.069,
             29: 2.045, 39: 2.023}.get(len(logs) - 1, 2.0)
        return (f"{math.expm1(m):+.2%} [{math.expm1(m - t * se):+.2%}, "
                f"{math.expm1(m + t * se):+.2%}]")

    wall, cpu = [], []
    try:
        for i in range(a.pairs):
            order = ("A", "B") if i % 2 == 0 else ("B", "A")
            r = {arm: measure(arm) for arm in order}
            wall.append(math.log(r["B"][0] / r["A"][0]))
            # Under CPU contention IOPS = (CPU share) / (CPU time per I/O); the share is
            # the noise, the same for both arms in expectation: the effect is the CPU
            # time per I/O.
            cpu.append(math.log(r["A"][1] / r["B"][1]))
            print(f"pair {i}: A {r['A'][0]:,.0f} IOPS {r['A'][1] * 1e9:.0f} ns CPU/IO  "
                  f"B {r['B'][0]:,.0f} IOPS {r['B'][1] * 1e9:.0f} ns CPU/IO  "
                  f"IOPS B/A {math.exp(wall[-1]) - 1:+.2%}  CPU A/B {math.exp(cpu[-1]) - 1:+.2%}",
                  flush=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"\nB vs A over {len(wall)} alternating pairs of {a.runtime} s (mean log ratio, "
          f"paired t, 95 % CI): IOPS {ci(wall)}; from CPU time per I/O {ci(cpu)}; "
          f"load1 {os.getloadavg()[0]:.1f}")


def main():
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="cmd", required=True)
    c = sub.add_parser("calibrate")
    c.add_argument("--build-dir", required=True)
    c.add_argument("--pairs", type=int, default=12)
    c.add_argument("--runtime", type=int, default=5)
    c.add_argument("--b-opt", action="append")
    r = sub.add_parser("run")
    r.add_argument("--build-dir", required=True)
    r.add_argument("--data", required=True)
    r.add_argument("--agents", type=int, choices=(1, 2), default=1)
    r.add_argument("--experiments", type=int, default=10)
    r.add_argument("--repeat", type=int, default=10)
    r.add_argument("--runtime", type=int, default=2)
    r.add_argument("--b-opt", action="append")
    r.add_argument("--kinds", default="aa,shift",
                   help="job kinds to alternate: aa (B = A), shift (B with --b-opt)")
    e = sub.add_parser("eval")
    e.add_argument("--build-dir", required=True)
    e.add_argument("--data", required=True)
    e.add_argument("--policies", default="none,0.15,0.30")
    e.add_argument("--json")
    a = ap.parse_args()
    a.build_dir = os.path.abspath(a.build_dir)
    if hasattr(a, "data"):
        a.data = os.path.abspath(a.data)
    {"calibrate": cmd_calibrate, "run": cmd_run, "eval": cmd_eval}[a.cmd](a)


if __name__ == "__main__":
    main()
