#!/usr/bin/env python3
"""Buffered sequential reads, fio 3.33 vs iofleet-agent run, with the device's view.

For each case and round, both tools run the same job (the order alternates
each round: fio first on even rounds, the agent first on odd ones). Each run
records the tool's own figure (read bandwidth, MiB/s) and what the device and
the kernel saw during the run:

  slow_pct     % of the reads that took 1 ms or more (fio's latency_ms buckets):
               the reads that waited for the device, not the page cache
  clat_us      mean completion latency of a read
  read_MiB     what the tool's processes read from the storage (ru_inblock of
               getrusage: readahead included, page-cache hits not)
  disk_MiB     sectors read from the block device (/sys/block/DEV/stat; the
               whole machine: other tenants' reads land here too)
  reqs         read requests completed by the device
  ticks_ms     the device's summed read time (field 4)
  busy_ms      time the device had any request in flight (field 10)
  cpu_ms       user + system CPU of the tool's processes (getrusage children)
  nvcsw/nivcsw voluntary / involuntary context switches of the tool's processes

and prints per case the medians and the pairwise-median ratio agent/fio.

  bench/engine/buffered_read_vs_fio.py --agent build/bin/iofleet-agent
      [--rounds 5] [--dir /var/tmp] [--dev vda] [--only SUBSTRING] [--raw]

Files: a case whose name says "fresh" removes its file before each run (each
tool lays it out, as bench/engine/cpu_share_vs_fio.py does); the other cases
write their file once (dd-style, fsynced) and reuse it. Exit 0 when every run
gave a figure.
"""

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time


def cases(d):
    f1 = os.path.join(d, "seq1g.dat")
    f256 = os.path.join(d, "seq256m.dat")
    fresh = os.path.join(d, "fresh.dat")
    return [
        ("read 128k size=1g (file written first)", f1, 1 << 30, False,
         ["--rw=read", "--bs=128k", "--size=1g", f"--filename={f1}"]),
        ("read 128k size=1g numjobs=4 (file written first)", f1, 1 << 30, False,
         ["--rw=read", "--bs=128k", "--size=1g", f"--filename={f1}", "--numjobs=4",
          "--group_reporting"]),
        ("read 128k size=256m time_based 2s (file written first)", f256, 256 << 20, False,
         ["--rw=read", "--bs=128k", "--size=256m", f"--filename={f256}", "--time_based",
          "--runtime=2"]),
        ("read 128k size=256m time_based 2s fresh (tool lays out)", fresh, 0, True,
         ["--rw=read", "--bs=128k", "--size=256m", f"--filename={fresh}", "--time_based",
          "--runtime=2", "--ioengine=psync"]),
    ]


def write_file(path, size):
    if os.path.exists(path) and os.path.getsize(path) == size:
        return
    with open(path, "wb") as f:
        left = size
        while left:
            n = min(left, 1 << 20)
            f.write(os.urandom(n))
            left -= n
        f.flush()
        os.fsync(f.fileno())


def dev_stat(dev):
    with open(f"/sys/block/{dev}/stat") as f:
        v = [int(x) for x in f.read().split()]
    return v


def parse(text):
    """(read MiB/s, % of reads that took >= 1 ms, mean clat us) from the JSON."""
    i = text.find("{")
    if i < 0:
        return None, None, None
    try:
        d = json.loads(text[i:])
    except ValueError:
        return None, None, None
    jobs = d["jobs"]
    ios = sum(j["read"].get("total_ios", 0) for j in jobs)
    bw = sum(j.get("read", {}).get("bw", 0) for j in jobs) / 1024.0
    # latency_ms: % of the job's I/Os per bucket from 2 ms up ("2" = 1-2 ms):
    # the reads that waited for the device rather than finding the page cached.
    slow = sum(sum(v for v in j.get("latency_ms", {}).values()) * j["read"].get("total_ios", 0)
               for j in jobs) / ios if ios else None
    clat = sum(j["read"]["clat_ns"]["mean"] * j["read"].get("total_ios", 0) for j in jobs) / ios / 1000 \
        if ios else None
    return bw, slow, clat


def run_one(cmd, dev):
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    s0 = dev_stat(dev)
    t0 = time.monotonic()
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    wall = time.monotonic() - t0
    s1 = dev_stat(dev)
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    bw, slow, clat = parse(p.stdout)
    return {
        "bw": bw,
        "slow_pct": slow,
        "clat_us": clat,
        "err": p.stderr.strip()[:300],
        "wall_ms": wall * 1000,
        "read_MiB": (r1.ru_inblock - r0.ru_inblock) * 512 / 2**20,
        "disk_MiB": (s1[2] - s0[2]) * 512 / 2**20,
        "reqs": s1[0] - s0[0],
        "ticks_ms": s1[3] - s0[3],
        "busy_ms": s1[9] - s0[9],
        "cpu_ms": ((r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)) * 1000,
        "nvcsw": r1.ru_nvcsw - r0.ru_nvcsw,
        "nivcsw": r1.ru_nivcsw - r0.ru_nivcsw,
    }


def loadavg():
    with open("/proc/loadavg") as f:
        return f.read().split()[0]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--agent", required=True)
    ap.add_argument("--fio", default="fio")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--dir", default="/var/tmp")
    ap.add_argument("--dev", default="vda")
    ap.add_argument("--only", default="")
    ap.add_argument("--raw", action="store_true", help="print every run")
    args = ap.parse_args()
    d = tempfile.mkdtemp(prefix="iofleet-bufread-", dir=args.dir)
    keys = ["bw", "slow_pct", "clat_us", "read_MiB", "disk_MiB", "reqs", "ticks_ms", "busy_ms", "cpu_ms", "nvcsw", "nivcsw", "wall_ms"]
    ok = True
    loads = []
    try:
        print(f"# rounds={args.rounds} dir={d} dev={args.dev} agent={args.agent} "
              f"start={time.strftime('%H:%M:%S', time.gmtime())}Z load={loadavg()}")
        for name, path, size, fresh, a in cases(d):
            if args.only and args.only not in name:
                continue
            if not fresh:
                write_file(path, size)
            res = {"fio": [], "agent": []}
            for r in range(args.rounds):
                order = ["fio", "agent"] if r % 2 == 0 else ["agent", "fio"]
                for t in order:
                    if fresh and os.path.exists(path):
                        os.unlink(path)
                    cmd = ([args.fio] if t == "fio" else [args.agent, "run"]) + \
                        ["--name=r"] + a + ["--output-format=json"]
                    loads.append(float(loadavg()))
                    m = run_one(cmd, args.dev)
                    if m["bw"] is None:
                        ok = False
                        print(f"# {name}: {t} gave no figure: {m['err']}")
                    res[t].append(m)
                    if args.raw:
                        print(f"#   r{r} {t:5s} " + " ".join(
                            f"{k}={m[k]:.1f}" if m[k] is not None else f"{k}=-" for k in keys))
            print(f"\n{name}")
            print("| tool | " + " | ".join(keys) + " |")
            print("|---|" + "---:|" * len(keys))
            for t in ("fio", "agent"):
                row = f"| {t} |"
                for k in keys:
                    v = [m[k] for m in res[t] if m[k] is not None]
                    row += f" {statistics.median(v):.1f} |" if v else " - |"
                print(row)
            pairs = [b["bw"] / f["bw"] for f, b in zip(res["fio"], res["agent"])
                     if f["bw"] and b["bw"]]
            if pairs:
                print(f"agent/fio bw: pairwise median {statistics.median(pairs):.2f} "
                      f"(each: {' '.join(f'{x:.2f}' for x in pairs)})")
        if loads:
            print(f"\n# load average during the runs: min {min(loads)} median "
                  f"{statistics.median(loads)} max {max(loads)}; "
                  f"end={time.strftime('%H:%M:%S', time.gmtime())}Z")
    finally:
        for f in os.listdir(d):
            os.unlink(os.path.join(d, f))
        os.rmdir(d)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
