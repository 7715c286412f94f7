#!/usr/bin/env python3
"""fio vs iofleet-agent run (one or two builds) on the same jobs, interleaved.

Buffered writes that never wait for the disk are CPU-bound; fio's job
processes are sessions of their own (setsid) and, with the kernel's autogroup
scheduling, each gets a CPU share of its own. This bench runs a matrix of
jobs with fio and with each agent given, round after round
(fio, agent A, agent B, fio, ...), and prints per case the median IOPS and
each agent's pairwise-median ratio to fio.

  bench/engine/cpu_share_vs_fio.py --agent build/bin/iofleet-agent
      [--agent OLD_BUILD/iofleet-agent] [--rounds 3] [--runtime 2]
      [--hogs N] [--dir /var/tmp] [--only SUBSTRING]

--hogs N starts N busy loops in this script's own session (as a build running
beside the benchmark in the same shell session would be), stopped at the end.
Every file is removed after each run. Exit 0 when every run gave a figure.
"""

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile


def cases(runtime):
    base = ["--time_based", f"--runtime={runtime}", "--group_reporting"]
    # size=1g, as in the report that found the gap; then 64m files (4 jobs x
    # 1g of dirty pages reach the kernel's dirty limits, and every tool then
    # writes at the disk's speed: a disk figure, not a CPU one).
    out = [(f"write psync bs={bs} size=1g numjobs=1",
            ["--rw=write", f"--bs={bs}", "--size=1g", "--ioengine=psync"] + base)
           for bs in ("4k", "128k")]
    for nj in (1, 4):
        for eng in ("psync", "libaio"):
            for bs in ("4k", "128k"):
                a = ["--rw=write", f"--bs={bs}", "--size=64m", f"--ioengine={eng}",
                     f"--numjobs={nj}"]
                if eng == "libaio":
                    a.append("--iodepth=16")
                out.append((f"write {eng} bs={bs} size=64m numjobs={nj}", a + base))
    out.append(("randread direct psync 4k", ["--rw=randread", "--bs=4k", "--size=256m",
                                              "--direct=1", "--ioengine=psync"] + base))
    out.append(("randread direct libaio qd32 4k", ["--rw=randread", "--bs=4k", "--size=256m",
                                                    "--direct=1", "--ioengine=libaio",
                                                    "--iodepth=32"] + base))
    out.append(("read buffered psync 128k", ["--rw=read", "--bs=128k", "--size=256m",
                                             "--ioengine=psync"] + base))
    out.append(("write direct libaio qd16 128k", ["--rw=write", "--bs=128k", "--size=256m",
                                                   "--direct=1", "--ioengine=libaio",
                                                   "--iodepth=16"] + base))
    return out


def iops(text):
    i = text.find("{")
    if i < 0:
        return None
    try:
        d = json.loads(text[i:])
    except ValueError:
        return None
    return sum(j.get("read", {}).get("iops", 0) + j.get("write", {}).get("iops", 0)
               for j in d["jobs"])


def clean(d):
    for f in os.listdir(d):
        os.unlink(os.path.join(d, f))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--agent", action="append", required=True)
    ap.add_argument("--fio", default="fio")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--runtime", type=int, default=2)
    ap.add_argument("--hogs", type=int, default=0)
    ap.add_argument("--dir", default="/var/tmp")
    ap.add_argument("--only", default="")
    args = ap.parse_args()
    d = tempfile.mkdtemp(prefix="iofleet-cpushare-", dir=args.dir)
    hogs = [subprocess.Popen(["sh", "-c", "while :; do :; done"]) for _ in range(args.hogs)]
    tools = [("fio", [args.fio])] + [(f"agent{i}", [a, "run"]) for i, a in enumerate(args.agent)]
    ok = True
    try:
        print(f"# rounds={args.rounds} runtime={args.runtime}s hogs={args.hogs} dir={d}")
        for i, a in enumerate(args.agent):
            print(f"# agent{i} = {a}")
        hdr = "| case | fio IOPS | " + " | ".join(
            f"agent{i} IOPS | agent{i}/fio" for i in range(len(args.agent))) + " |"
        print(hdr)
        print("|" + "---|" * (2 + 2 * len(args.agent)))
        for name, a in cases(args.runtime):
            if args.only and args.only not in name:
                continue
            res = {t: [] for t, _ in tools}
            for _ in range(args.rounds):
                for t, cmd in tools:
                    p = subprocess.run(cmd + ["--name=w", f"--directory={d}"] + a +
                                       ["--output-format=json"], capture_output=True, text=True,
                                       timeout=300)
                    v = iops(p.stdout)
                    if v is None:
                        ok = False
                        print(f"# {name}: {t} gave no figure: {p.stderr.strip()[:300]}")
                    res[t].append(v)
                    clean(d)
            f = [x for x in res["fio"] if x]
            row = f"| {name} | {statistics.median(f):.0f} |" if f else f"| {name} | - |"
            for t, _ in tools[1:]:
                o = res[t]
                pairs = [b / x for x, b in zip(res["fio"], o) if x and b is not None]
                good = [x for x in o if x is not None]
                row += (f" {statistics.median(good):.0f} | {statistics.median(pairs):.2f} |"
                        if good and pairs else " - | - |")
            print(row, flush=True)
    finally:
        for h in hogs:
            h.kill()
            h.wait()
        shutil.rmtree(d, ignore_errors=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
