#!/usr/bin/env python3
"""Pacing and distributions, iofleet-agent vs fio 3.33 on the same job files.

  bench/pacing/side_by_side.py [--agent build/bin/iofleet-agent] [--fio fio]
                               [--dir /var/tmp] [--only rate,dist,ss]

rate: achieved IOPS / bandwidth per direction for rate_iops and rate (linear
      and poisson, rwmix with bssplit: fio issues 333 and 1290).
dist: block hit concentration (share of hits on the hottest 1/5/10/20 % of
      blocks) and distinct blocks touched, from the offsets each tool really
      issued (strace of pread64 with psync), next to the law's values.
ss:   fio's JSON steadystate block of both tools on a rated job.
Prints a markdown table per part (for bench/RESULTS.md)."""
import argparse
import collections
import json
import math
import os
import re
import subprocess
import sys
import tempfile


def run_json(cmd):
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    return json.loads(out[out.index("{"):])


def both(args, text, tag):
    with tempfile.NamedTemporaryFile("w", suffix=".fio", delete=False) as f:
        f.write(text)
        path = f.name
    try:
        fio = run_json([args.fio, "--output-format=json", path])
        iof = run_json([args.agent, "run", "--output-format=json", path])
    finally:
        os.unlink(path)
    return fio, iof


def rate_part(args):
    data = os.path.join(args.dir, "sbs_rate.dat")
    cases = [
        ("rate_iops=2000 libaio qd4", "ioengine=libaio\niodepth=4\nrw=randread\nbs=4k\nrate_iops=2000\n"),
        ("rate_iops=2000 psync", "ioengine=psync\nrw=randread\nbs=4k\nrate_iops=2000\n"),
        ("rate=8m libaio qd4", "ioengine=libaio\niodepth=4\nrw=randread\nbs=4k\nrate=8m\n"),
        ("rate_iops=2000 poisson libaio qd4",
         "ioengine=libaio\niodepth=4\nrw=randread\nbs=4k\nrate_iops=2000\nrate_process=poisson\n"),
        ("rate_iops=1000,500 randrw 50/50 bssplit 4k/50:16k/50 psync",
         "ioengine=psync\nrw=randrw\nrwmixread=50\nbssplit=4k/50:16k/50\nrate_iops=1000,500\n"),
        ("rate=4m,2m randrw 50/50 bssplit 4k/50:16k/50 psync",
         "ioengine=psync\nrw=randrw\nrwmixread=50\nbssplit=4k/50:16k/50\nrate=4m,2m\n"),
        ("rate_iops=1000,500 randrw poisson psync",
         "ioengine=psync\nrw=randrw\nrwmixread=50\nrate_iops=1000,500\nrate_process=poisson\n"),
    ]
    print("| job (runtime=5, 64 MiB file) | asked | fio 3.33 | iofleet |")
    print("|---|---|---|---|")
    for name, body in cases:
        text = f"[r]\nfilename={data}\nsize=64m\ntime_based=1\nruntime=5\n{body}"
        fio, iof = both(args, text, name)
        cells = []
        for j in (fio, iof):
            job = j["jobs"][0]
            parts = []
            for d in ("read", "write"):
                if job[d]["total_ios"] == 0:
                    continue
                if "rate=" in name:
                    parts.append(f"{d[0]} {job[d]['bw_bytes'] / 1048576:.3f} MiB/s")
                else:
                    parts.append(f"{d[0]} {job[d]['iops']:.1f}")
            cells.append(", ".join(parts))
        asked = re.search(r"rate(_iops)?=[^ ]+", name).group(0)
        print(f"| {name} | {asked} | {cells[0]} | {cells[1]} |")
    os.unlink(data)


def strace_offsets(cmd, bs):
    with tempfile.NamedTemporaryFile(suffix=".st", delete=False) as t:
        tpath = t.name
    subprocess.run(["strace", "-f", "-qq", "-s", "0", "-e", "trace=pread64", "-o", tpath] + cmd,
                   check=True, capture_output=True)
    blocks = []
    pat = re.compile(r"pread64\(\d+, \"\"\.*, (\d+), (\d+)\)")
    with open(tpath) as f:
        for line in f:
            m = pat.search(line)
            if m and int(m.group(1)) == bs:
                blocks.append(int(m.group(2)) // bs)
    os.unlink(tpath)
    return blocks


def concentration(blocks, n):
    c = collections.Counter(blocks)
    counts = sorted(c.values(), reverse=True)
    m = len(blocks)
    out = []
    for pct in (1, 5, 10, 20):
        k = max(1, n * pct // 100)
        out.append(100.0 * sum(counts[:k]) / m)
    return out, len(c)


def zipf_law(theta, n, m):
    w = [k ** -theta for k in range(1, n + 1)]
    s = sum(w)
    p = [x / s for x in w]
    return law_from_p(p, n, m)


def pareto_law(h, n, m):
    # fio's pareto: rank = n x u^a, a = log(h)/log(1-h), so P(rank < x n) = x^(1/a)
    a = math.log(h) / math.log(1 - h)
    p = [((k + 1) / n) ** (1 / a) - (k / n) ** (1 / a) for k in range(n)]
    return law_from_p(p, n, m)


def law_from_p(p, n, m):
    """The law's values for a sample of m draws: the top-k shares of a simulated
    sample of that size (an empirical top-k share is biased up against the
    law's own, so the law is sampled the same way), and the expected number of
    distinct blocks (exact)."""
    import itertools
    import random
    rng = random.Random(1)
    cum = list(itertools.accumulate(p))
    sample = rng.choices(range(n), cum_weights=cum, k=m)
    out, _ = concentration(sample, n)
    distinct = sum(1 - (1 - x) ** m for x in p)
    return out, distinct


def dist_part(args):
    data = os.path.join(args.dir, "sbs_dist.dat")
    n = 65536  # 256 MiB of 4k blocks
    m = 200000
    print(f"| distribution ({m} 4k reads over {n} blocks) | source | top 1 % | top 5 % | top 10 % | top 20 % | distinct blocks |")
    print("|---|---|---|---|---|---|---|")
    for dist, law in (("zipf:1.2", lambda: zipf_law(1.2, n, m)),
                      ("zipf:0.8", lambda: zipf_law(0.8, n, m)),
                      ("pareto:0.9", lambda: pareto_law(0.9, n, m)),
                      ("normal", None), ("zoned:60/10:30/20:10/70", None)):
        text = (f"[d]\nioengine=psync\nrw=randread\nbs=4k\nfilename={data}\nsize=256m\n"
                f"norandommap=1\nio_size={m * 4}k\nrandom_distribution={dist}\n")
        with tempfile.NamedTemporaryFile("w", suffix=".fio", delete=False) as f:
            f.write(text)
            path = f.name
        # lay the file out first so both tools only read
        subprocess.run([args.fio, "--output-format=json", "--io_size=4k", path], check=True,
                       capture_output=True)
        rows = [("fio 3.33", strace_offsets([args.fio, "--output-format=json", path], 4096)),
                ("iofleet", strace_offsets([args.agent, "run", "--output-format=json", path], 4096))]
        os.unlink(path)
        if law is not None:
            conc, distinct = law()
            print(f"| {dist} | law | " + " | ".join(f"{x:.1f}" for x in conc) + f" | {distinct:.0f} |")
        for src, blocks in rows:
            conc, distinct = concentration(blocks, n)
            print(f"| {dist} | {src} ({len(blocks)} I/Os) | " + " | ".join(f"{x:.1f}" for x in conc) +
                  f" | {distinct} |")
    os.unlink(data)


def ss_part(args):
    text = ("[ss]\nioengine=null\nrw=randread\nbs=4k\nsize=1g\ntime_based=1\nruntime=60\n"
            "rate_iops=2000\nss=iops_slope:0.1%\nss_dur=5\n")
    fio, iof = both(args, text, "ss")
    print("| field | fio 3.33 | iofleet |")
    print("|---|---|---|")
    fs, is_ = fio["jobs"][0]["steadystate"], iof["jobs"][0]["steadystate"]
    for k in ("ss", "duration", "attained", "criterion", "max_deviation", "slope"):
        print(f"| {k} | {fs.get(k)} | {is_.get(k)} |")
    for k in ("bw_mean", "iops_mean", "iops", "bw"):
        print(f"| data.{k} | {fs['data'].get(k)} | {is_['data'].get(k)} |")
    print(f"| job_runtime (ms) | {fio['jobs'][0]['job_runtime']} | {iof['jobs'][0]['job_runtime']} |")
    print(f"| keys | {sorted(fs)} / {sorted(fs['data'])} | {sorted(is_)} / {sorted(is_['data'])} |")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--agent", default="build/bin/iofleet-agent")
    ap.add_argument("--fio", default="fio")
    ap.add_argument("--dir", default="/var/tmp")
    ap.add_argument("--only", default="rate,dist,ss")
    args = ap.parse_args()
    parts = args.only.split(",")
    if "rate" in parts:
        rate_part(args)
        print()
    if "dist" in parts:
        dist_part(args)
        print()
    if "ss" in parts:
        ss_part(args)


if __name__ == "__main__":
    sys.exit(main())
