#!/usr/bin/env python3
"""fio's buffered-write example jobs, fio 3.33 vs iofleet-agent run, with the kernel's view.

The job files of issue 13's sample that write (examples/fio-seq-write,
fio-seq-RW, fio-rand-write, iometer-file-access-server from the fio source
tree), rewritten as bench/jobfiles/run_fio_examples.py does (2 s time_based,
size=--size, a temp directory). Each round runs both tools on the same file
(the order alternates: fio first on even rounds, the agent first on odd ones),
and records for each run the tool's figure and what the kernel saw:

  iops, w_iops   summed read+write IOPS, and writes alone (the tool's JSON)
  runtime_ms     the tool's runtime of its first job
  dirtied_MiB    bytes the tool's processes dirtied in the page cache
                 (ru_oublock of getrusage: the kernel's write_bytes, counted
                 when a clean page becomes dirty; rewriting a dirty page adds 0)
  read_MiB       what the tool's processes read from storage (ru_inblock)
  dev_w, dev_wMiB, dev_wmerge, dev_flush
                 write requests, MiB written, write merges and flushes the
                 device completed (/sys/block/DEV/stat; the whole machine:
                 other tenants' writes land here too)
  cpu_ms         user + system CPU of the tool's processes
  nvcsw, nivcsw  voluntary / involuntary context switches of the tool

and prints per case the medians and the pairwise-median ratio agent/fio.

With --strace, each tool also runs each case once under `strace -f -c` and the
script prints the calls per 1000 I/Os of the syscalls that decide what the
device sees (writes, fadvise, fsync family, fallocate, ftruncate, unlink,
io_submit/io_getevents, open/close). Under strace the speed means nothing; the
counts do.

  bench/engine/buffered_write_vs_fio.py --agent build/bin/iofleet-agent
      [--rounds 6] [--size 64m] [--dev vda] [--only SUBSTRING] [--strace] [--raw]
"""

import argparse
import importlib.util
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
FILES = ["examples/fio-seq-write.fio", "examples/fio-seq-RW.fio", "examples/fio-rand-write.fio",
         "examples/iometer-file-access-server.fio"]
SYSCALLS = ["pwrite64", "pread64", "write", "read", "io_submit", "io_getevents", "fadvise64",
            "fsync", "fdatasync", "sync_file_range", "fallocate", "ftruncate", "unlink", "openat",
            "close"]


def load_rewrite():
    path = os.path.join(HERE, "..", "jobfiles", "run_fio_examples.py")
    spec = importlib.util.spec_from_file_location("run_fio_examples", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.rewrite


def dev_stat(dev):
    with open(f"/sys/block/{dev}/stat") as f:
        v = [int(x) for x in f.read().split()]
    return v + [0] * (17 - len(v))


def loadavg():
    with open("/proc/loadavg") as f:
        return f.read().split()[0]


def parse(out):
    i = out.find("{")
    if i < 0:
        return None
    try:
        d = json.loads(out[i:])
    except ValueError:
        return None
    iops = w_iops = 0.0
    for j in d.get("jobs", []):
        for k in ("read", "write", "trim"):
            iops += float(j.get(k, {}).get("iops", 0))
        w_iops += float(j.get("write", {}).get("iops", 0))
    jobs = d.get("jobs", [])
    rt = jobs[0].get("job_runtime", 0) if jobs else 0
    return {"iops": iops, "w_iops": w_iops, "runtime_ms": rt,
            "ios": sum(j.get(k, {}).get("total_ios", 0) for j in jobs for k in ("read", "write", "trim"))}


def run_one(cmd, cwd, dev):
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    s0 = dev_stat(dev)
    p = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=600)
    s1 = dev_stat(dev)
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    res = parse(p.stdout) if p.returncode == 0 else None
    if res is None:
        return {"err": (p.stderr or p.stdout).strip()[-300:]}
    res.update({
        "dirtied_MiB": (r1.ru_oublock - r0.ru_oublock) * 512 / 2**20,
        "read_MiB": (r1.ru_inblock - r0.ru_inblock) * 512 / 2**20,
        "dev_w": s1[4] - s0[4],
        "dev_wMiB": (s1[6] - s0[6]) * 512 / 2**20,
        "dev_wmerge": s1[5] - s0[5],
        "dev_flush": s1[15] - s0[15],
        "cpu_ms": ((r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)) * 1000,
        "nvcsw": r1.ru_nvcsw - r0.ru_nvcsw,
        "nivcsw": r1.ru_nivcsw - r0.ru_nivcsw,
    })
    return res


def strace_counts(cmd, cwd):
    out = os.path.join(cwd, "strace.txt")
    p = subprocess.run(["strace", "-f", "-c", "-o", out] + cmd, cwd=cwd, capture_output=True,
                       text=True, timeout=600)
    res = parse(p.stdout) or {"ios": 0}
    counts = {}
    with open(out) as f:
        for line in f:
            w = line.split()
            # "% time seconds usecs/call calls [errors] syscall"
            if len(w) >= 5 and w[-1] in SYSCALLS and w[3].isdigit():
                counts[w[-1]] = int(w[3])
    os.unlink(out)
    return res["ios"], counts


def clean(d):
    for n in os.listdir(d):
        p = os.path.join(d, n)
        if os.path.isfile(p) and not n.endswith(".fio"):
            os.unlink(p)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--agent", required=True)
    ap.add_argument("--fio", default="fio")
    ap.add_argument("--fio-src", default="/work/ref/fio-3.33")
    ap.add_argument("--rounds", type=int, default=6)
    ap.add_argument("--size", default="64m")
    ap.add_argument("--dev", default="vda")
    ap.add_argument("--only", default="")
    ap.add_argument("--strace", action="store_true")
    ap.add_argument("--raw", action="store_true")
    args = ap.parse_args()
    agent = os.path.abspath(args.agent)
    rewrite = load_rewrite()
    keys = ["iops", "w_iops", "runtime_ms", "dirtied_MiB", "read_MiB", "dev_w", "dev_wMiB",
            "dev_wmerge", "dev_flush", "cpu_ms", "nvcsw", "nivcsw"]
    tmp = tempfile.mkdtemp(prefix="iofleet-bufwrite-", dir="/var/tmp")
    ok = True
    loads = [loadavg()]
    print(f"# rounds={args.rounds} size={args.size} dev={args.dev} agent={agent} "
          f"start={time.strftime('%H:%M:%S', time.gmtime())}Z load={loads[0]}")
    try:
        for rel in FILES:
            if args.only and args.only not in rel:
                continue
            text = open(os.path.join(args.fio_src, rel)).read()
            job = os.path.join(tmp, os.path.basename(rel))
            with open(job, "w") as f:
                f.write(rewrite(text, tmp, args.size))
            cmds = {"fio": [args.fio, "--output-format=json", job],
                    "agent": [agent, "run", "--output-format=json", job]}
            clean(tmp)
            if args.strace and shutil.which("strace"):
                print(f"## {rel}: calls per 1000 I/Os under strace -f -c (one run each)")
                per = {}
                for tool in ("fio", "agent"):
                    ios, c = strace_counts(cmds[tool], tmp)
                    per[tool] = (ios, c)
                names = [s for s in SYSCALLS if any(s in per[t][1] for t in per)]
                print(f"  {'syscall':16} {'fio':>10} {'agent':>10}   (I/Os: fio {per['fio'][0]}, "
                      f"agent {per['agent'][0]})")
                for s in names:
                    row = []
                    for t in ("fio", "agent"):
                        ios, c = per[t]
                        row.append(f"{c.get(s, 0) * 1000 / ios:10.2f}" if ios else f"{'-':>10}")
                    print(f"  {s:16} {row[0]} {row[1]}")
                clean(tmp)
            runs = {"fio": [], "agent": []}
            for rnd in range(args.rounds):
                order = ("fio", "agent") if rnd % 2 == 0 else ("agent", "fio")
                for tool in order:
                    r = run_one(cmds[tool], tmp, args.dev)
                    if "err" in r:
                        ok = False
                        print(f"  {tool} round {rnd}: error {r['err']}")
                        continue
                    runs[tool].append((rnd, r))
                    if args.raw:
                        print(f"  r{rnd} {tool:5} " + " ".join(f"{k}={r[k]:.0f}" for k in keys))
                loads.append(loadavg())
            clean(tmp)
            print(f"## {rel} (medians of {args.rounds} rounds, load now {loadavg()})")
            print(f"  {'':12}" + "".join(f"{k:>12}" for k in keys))
            for tool in ("fio", "agent"):
                v = [r for _, r in runs[tool]]
                if not v:
                    continue
                print(f"  {tool:12}" + "".join(f"{statistics.median(x[k] for x in v):12.1f}" for k in keys))
            pairs = {}
            for rnd, r in runs["fio"]:
                pairs.setdefault(rnd, {})["fio"] = r
            for rnd, r in runs["agent"]:
                pairs.setdefault(rnd, {})["agent"] = r
            ratios = [p["agent"]["iops"] / p["fio"]["iops"] for p in pairs.values()
                      if "fio" in p and "agent" in p and p["fio"]["iops"] > 0]
            if ratios:
                print(f"  agent/fio IOPS: median {statistics.median(ratios):.3f} "
                      f"(min {min(ratios):.3f}, max {max(ratios):.3f}, {len(ratios)} pairs)")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"# end={time.strftime('%H:%M:%S', time.gmtime())}Z load samples: {' '.join(loads)}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
