#!/usr/bin/env python3
"""The REST wire format, pinned: every response and request shape that the CLI,
the dashboard, the Python tests and the README rely on, captured over a real
controller and two real agents (REST over loopback) and compared with
rest_golden.json.

Usage: rest_golden_test.py --build-dir BUILD [--update]

What is pinned, per response: the HTTP status and the whole JSON body: field
names, enum spellings ("succeeded", not "RUN_STATE_SUCCEEDED"), numbers vs
strings (64-bit ints are JSON numbers), fields omitted vs present and empty.
Values that differ from run to run (ids, times, paths under the temp dir, I/O
counts, the fio result and the inventory) are replaced by their JSON type
("<int>", "<str>", "<object>", ...; an empty string stays ""), so the file pins
the shape and every deterministic value. Arrays whose length depends on timing
(interval records, histogram buckets) keep their first element only.

--update rewrites rest_golden.json from the running build (review the diff:
every changed line is a change clients see).
"""
import argparse
import difflib
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import e2e_test  # noqa: E402
from e2e_test import Env, TestFailure, check, wait_for  # noqa: E402

GOLDEN = os.path.join(os.path.dirname(os.path.abspath(__file__)), "rest_golden.json")

# Keys whose values change from run to run: replaced by their JSON type.
VOLATILE = {
    "id", "job_id", "run_id", "retry_of", "created_ms", "assigned_ms", "started_ms",
    "finished_ms", "last_seen_ms", "connected_ms", "t_start_ms", "t_end_ms", "peer",
    "inventory", "result", "device_fingerprint", "store_id", "ios", "bytes", "errors",
    "seq", "keys", "real_path", "protocol_version", "next_page_token", "audit",
    "order_seed",
}
# Arrays whose length depends on timing: their first element stands for all.
FIRST_ONLY = {"records", "clat_hist", "lat_hist"}


def type_of(v):
    if v is None:
        return "<null>"
    if isinstance(v, bool):
        return "<bool>"
    if isinstance(v, int):
        return "<int>"
    if isinstance(v, float):
        return "<float>"
    if isinstance(v, str):
        return "<str>" if v else ""
    if isinstance(v, list):
        return "<array>"
    return "<object>"


class Normalizer:
    def __init__(self, tmpdir, ids):
        self.tmpdir = tmpdir
        self.ids = ids  # id -> stable name ("job1", "job1.run0", ...)

    def scalar(self, v):
        if isinstance(v, str):
            v = v.replace(self.tmpdir, "<dir>")
            for real, name in sorted(self.ids.items(), key=lambda kv: -len(kv[0])):
                v = v.replace(real, f"<{name}>")
        return v

    def __call__(self, v, key=None):
        if key in VOLATILE:
            if key in ("id", "job_id", "run_id", "retry_of") and isinstance(v, str) \
                    and v in self.ids:
                return f"<{self.ids[v]}>"
            if key == "result" and isinstance(v, dict):
                # The fio JSON: pinned as an object with fio's top-level keys.
                return {"<fio result keys>": sorted(v)}
            return type_of(v)
        if isinstance(v, dict):
            return {k: self(x, k) for k, x in v.items()}
        if isinstance(v, list):
            if key in ("clat_hist", "lat_hist"):  # [[bucket, count], ...]: types only
                return [[type_of(x) for x in v[0]]] if v else []
            if key in FIRST_ONLY:
                return [self(v[0])] if v else []
            return [self(x) for x in v]
        return self.scalar(v)


def capture(env):
    """Every REST shape, as {name: {"status": N, "body": JSON}} (raw)."""
    out = {}
    ids = {}

    def call(name, method, path, body=None, raw=None):
        if raw is not None:
            url = f"http://{env.controller.http}/api/v1{path}"
            import urllib.request
            import urllib.error
            req = urllib.request.Request(url, data=raw.encode(), method=method,
                                         headers={"Content-Type": "application/json"})
            try:
                with urllib.request.urlopen(req, timeout=15) as r:
                    status, text = r.status, r.read().decode()
            except urllib.error.HTTPError as e:
                status, text = e.code, e.read().decode()
            payload = json.loads(text) if text else None
        else:
            status, payload = env.api(method, path, body, ok=False)
        out[name] = {"request": f"{method} {path}", "status": status, "body": payload}
        return status, payload

    a = env.agents["agent-a"]
    target = a.target
    fio = ("[global]\nioengine=psync\nbs=4k\nsize=1m\ntime_based=1\nruntime=1\n"
           f"filename={target}\n[job]\nrw=randread\n")

    # The shapes the CLI's submit and the README's examples send.
    st, res = call("submit_fio", "POST", "/jobs",
                   {"name": "golden-fio", "fio": fio, "hosts": ["agent-a"],
                    "tags": {"suite": "golden"}, "repeat": 1})
    check(st == 201, f"submit_fio: {st} {res}")
    job1 = res["id"]
    ids[job1] = "job1"
    st, res = call("submit_options", "POST", "/jobs", {
        "name": "golden-ab",
        "options": {"ioengine": "psync", "rw": "randread", "size": "1m", "time_based": True,
                    "runtime": 1},
        "hosts": {"rack": "r1"},
        "host_overrides": {"agent-a": {"filename": target}},
        "variants": [{"name": "A", "options": {"bs": "4k"}},
                     {"name": "B", "options": {"bs": 8192}}],
        "retries": 1,
        # A fixed arm order (docs/ab-method.md "The first run"), so the runs'
        # order is the same every time; the host's warm-up run comes first.
        "order_seed": 1,
        "tags": {"suite": "golden", "arm": "ab"}})
    check(st == 201, f"submit_options: {st} {res}")
    job2 = res["id"]
    ids[job2] = "job2"
    st, res = call("submit_sweep_waiting", "POST", "/jobs", {
        "name": "golden-sweep", "fio": fio, "hosts": ["nohost"], "wait_for_hosts": True,
        "sweep": {"iodepth": [1, "2"]}})
    check(st == 201, f"submit_sweep_waiting: {st} {res}")
    job3 = res["id"]
    ids[job3] = "job3"

    done = lambda j: all(r["state"] in ("succeeded", "failed", "cancelled", "lost")  # noqa: E731
                         for r in env.job(j)["runs"])
    wait_for(lambda: done(job1) and done(job2), 90, "golden jobs to finish", interval=0.25)
    for j, name in ((job1, "job1"), (job2, "job2"), (job3, "job3")):
        for i, r in enumerate(env.job(j)["runs"]):
            ids[r["id"]] = f"{name}.run{i}"
    run1 = env.job(job1)["runs"][0]["id"]
    wait_for(lambda: env.samples(run1), 10, "records of job1's run")

    call("get_job_finished", "GET", f"/jobs/{job1}")
    call("get_job_variants", "GET", f"/jobs/{job2}")
    call("get_job_queued", "GET", f"/jobs/{job3}")
    call("list_jobs", "GET", "/jobs")
    call("list_jobs_newest_page", "GET", "/jobs?order=newest&page_size=2")
    call("list_jobs_filtered", "GET", "/jobs?order=newest&name=golden-ab&tag=arm%3Dab")
    call("list_runs", "GET", f"/runs?job_id={job2}")
    call("get_run_finished", "GET", f"/runs/{run1}")
    call("get_run_queued", "GET", f"/runs/{env.job(job3)['runs'][0]['id']}")
    call("samples", "GET", f"/runs/{run1}/samples")
    call("job_records", "GET", f"/jobs/{job1}/records")
    call("agents", "GET", "/agents")
    call("cancel", "POST", f"/jobs/{job3}/cancel")
    call("cancel_finished_409", "POST", f"/jobs/{job1}/cancel")
    # Errors: each names the field.
    call("err_not_json", "POST", "/jobs", raw="{not json")
    call("err_not_object", "POST", "/jobs", raw="[1,2]")
    call("err_unknown_field", "POST", "/jobs", {"fio": fio, "hosts": ["a"], "repeats": 3})
    call("err_unknown_nested", "POST", "/jobs",
         {"fio": fio, "hosts": ["a"], "variants": [{"name": "A", "extra": 1}]})
    call("err_bad_type", "POST", "/jobs", {"fio": fio, "hosts": 5})
    call("err_bad_count", "POST", "/jobs", {"fio": fio, "hosts": ["a"], "repeat": -1})
    call("err_bad_string", "POST", "/jobs", {"name": 5, "fio": fio, "hosts": ["a"]})
    call("err_bad_bool", "POST", "/jobs", {"fio": fio, "hosts": ["a"], "wait_for_hosts": "yes"})
    call("err_sweep_not_list", "POST", "/jobs", {"fio": fio, "hosts": ["a"], "sweep": {"bs": "4k"}})
    call("err_option_list", "POST", "/jobs",
         {"fio": fio, "hosts": ["a"], "host_overrides": {"a": {"iodepth": [1, 2]}}})
    call("err_no_workload", "POST", "/jobs", {"name": "x", "hosts": ["a"]})
    call("err_both_workloads", "POST", "/jobs", {"fio": fio, "options": {"rw": "read"},
                                                 "hosts": ["a"]})
    call("err_empty_fio", "POST", "/jobs", {"fio": "", "hosts": ["a"]})
    call("err_bad_fio", "POST", "/jobs", {"fio": "[job]\nrw=sideways\n", "hosts": ["a"]})
    call("err_unknown_host", "POST", "/jobs", {"fio": fio, "hosts": ["nohost"]})
    call("err_job_404", "GET", "/jobs/nope")
    call("err_run_404", "GET", "/runs/nope")
    call("err_route_404", "GET", "/nothing")
    call("err_page_size", "GET", "/jobs?page_size=abc")
    call("err_order", "GET", "/jobs?order=sideways")
    call("err_state", "GET", "/runs?state=weird")
    return out, ids


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build-dir", required=True)
    ap.add_argument("--update", action="store_true")
    args = ap.parse_args()
    e2e_test.BUILD = os.path.abspath(args.build_dir)
    t0 = time.time()
    try:
        with Env() as env:
            raw, ids = capture(env)
            got = {k: Normalizer(env.dir, ids)(v) for k, v in raw.items()}
    except TestFailure as e:
        print(f"FAIL rest_golden: {e}", file=sys.stderr)
        return 1
    text = json.dumps(got, indent=1, sort_keys=True) + "\n"
    if args.update:
        with open(GOLDEN, "w") as f:
            f.write(text)
        print(f"wrote {GOLDEN} ({len(got)} responses)")
        return 0
    with open(GOLDEN) as f:
        want = f.read()
    if text != want:
        diff = difflib.unified_diff(want.splitlines(), text.splitlines(), "rest_golden.json",
                                    "this build", lineterm="", n=4)
        print("FAIL rest_golden: the REST wire format changed:\n" + "\n".join(diff),
              file=sys.stderr)
        return 1
    print(f"PASS rest_golden ({len(got)} responses, {time.time() - t0:.1f}s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
