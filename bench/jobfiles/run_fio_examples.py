#!/usr/bin/env python3
"""Runs a sample of fio's own job files with fio and with iofleet-agent, 2 s each.

Issue 13's bar: "a sample of them runs for 2 s with results within noise of
fio's on the same machine". For every job file in fio's examples/ and t/jobs/
that both `fio --parse-only` and `iofleet-agent run --parse-only` accept and
that only touches files (no /dev paths, no fixed directories, no zones), this
makes a copy whose every job section ends with

    runtime=2s, time_based=1, size=<--size>, directory=<temp dir>,
    filename= dropped (fio's generated names), numjobs capped at 4

(options later in a section win, in fio and in iofleet alike), then runs it
with fio and with iofleet-agent, interleaved fio/iofleet/fio/iofleet...
(--reps rounds), both with --output-format=json, and reports per file the
summed read+write+trim IOPS and bandwidth of each tool (median of the rounds)
and the iofleet/fio ratio. The files are fio's and are not copied into this
repository; the copies live in a temporary directory.

  bench/jobfiles/run_fio_examples.py [--fio-src /work/ref/fio-3.33]
      [--agent build/bin/iofleet-agent] [--fio fio] [--reps 3] [--size 64m]
      [--max-files 12] [--only NAME ...]

Exit status 0; a file either tool fails on is listed with its error.
"""

import argparse
import glob
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile

SKIP_PATTERNS = [
    r"^\s*filename\s*=\s*/dev/",      # raw devices
    r"^\s*zonemode\s*=",               # zones (branch zbd)
    r"^\s*(read|write)_iolog\s*=",     # replay / record
    r"^\s*ioengine\s*=\s*(?!(psync|sync|pvsync2?|libaio|io_uring|null)\b)",
    r"\$\{",                           # environment variables
    r"^\s*(rate|rate_iops|thinktime|flow)\s*=",  # paced: ratio says nothing
    r"^\s*filesize\s*=\s*\d+\s*[gGtT]",  # files of gigabytes (size= does not cap filesize=)
]


def run(cmd, cwd, timeout=120):
    try:
        p = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=timeout)
        return p.returncode, p.stdout, p.stderr
    except subprocess.TimeoutExpired:
        return 124, "", "timed out"


def rewrite(text, tmp, size):
    """The job file with the sample's overrides at the end of every job section."""
    out = []
    extra = ["runtime=2s", "time_based=1", f"size={size}", f"directory={tmp}"]
    section = None

    def close():
        if section is not None and section != "global":
            out.extend(extra)

    for line in text.splitlines():
        m = re.match(r"^\s*\[([^\]]+)\]", line)
        if m:
            close()
            section = m.group(1).strip()
            out.append(line)
            continue
        s = line.strip()
        if re.match(r"^(filename|filename_format|directory|size|io_size|io_limit|"
                    r"runtime|time_based|loops|number_ios|fill_device|filesize|nrfiles|"
                    r"verify_state_load|create_only|unlink)\b", s):
            continue
        m = re.match(r"^numjobs\s*=\s*(\d+)", s)
        if m:
            out.append(f"numjobs={min(int(m.group(1)), 4)}")
            continue
        out.append(line)
    close()
    return "\n".join(out) + "\n"


def totals(doc):
    iops = bw = 0.0
    for j in doc.get("jobs", []):
        for d in ("read", "write", "trim"):
            x = j.get(d, {})
            iops += float(x.get("iops", 0))
            bw += float(x.get("bw_bytes", 0))
    return iops, bw


def parse_json(out):
    i = out.find("{")
    return json.loads(out[i:]) if i >= 0 else None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--fio-src", default="/work/ref/fio-3.33")
    here = os.path.dirname(os.path.abspath(__file__))
    ap.add_argument("--agent", default=os.path.join(here, "..", "..", "build", "bin",
                                                    "iofleet-agent"))
    ap.add_argument("--fio", default="fio")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--size", default="64m")
    ap.add_argument("--max-files", type=int, default=12)
    ap.add_argument("--only", nargs="*", default=None)
    args = ap.parse_args()
    agent = os.path.abspath(args.agent)

    files = sorted(glob.glob(os.path.join(args.fio_src, "examples", "*.fio")) +
                   glob.glob(os.path.join(args.fio_src, "t", "jobs", "*.fio")))
    sample = []
    with tempfile.TemporaryDirectory(dir="/var/tmp") as tmp:
        for f in files:
            rel = os.path.relpath(f, args.fio_src)
            if args.only and not any(o in rel for o in args.only):
                continue
            text = open(f, errors="replace").read()
            if any(re.search(p, text, re.M) for p in SKIP_PATTERNS):
                continue
            copy = os.path.join(tmp, os.path.basename(f))
            with open(copy, "w") as fh:
                fh.write(rewrite(text, tmp, args.size))
            if run([args.fio, "--parse-only", copy], tmp)[0] != 0:
                continue
            if run([agent, "run", "--parse-only", copy], tmp)[0] != 0:
                continue
            sample.append((rel, copy))
            if len(sample) >= args.max_files:
                break
        print(f"sample: {len(sample)} job files ({args.reps} rounds, 2 s per job, "
              f"size={args.size}, interleaved fio/iofleet)")
        print(f"{'file':34} {'fio IOPS':>12} {'iofleet IOPS':>13} {'IOPS ratio':>10} "
              f"{'fio MiB/s':>10} {'iofleet MiB/s':>13} {'bw ratio':>8}  spread fio/iofleet")
        for rel, copy in sample:
            res = {"fio": [], "iofleet": []}
            err = None
            for _ in range(args.reps):
                for tool, cmd in (("fio", [args.fio, "--output-format=json", copy]),
                                  ("iofleet", [agent, "run", "--output-format=json", copy])):
                    rc, out, e = run(cmd, tmp, timeout=300)
                    doc = parse_json(out) if rc == 0 else None
                    if doc is None:
                        err = f"{tool} rc={rc}: {(e or out).strip().splitlines()[-1:]}"
                        break
                    res[tool].append(totals(doc))
                if err:
                    break
            for p in glob.glob(os.path.join(tmp, "*")):
                if os.path.isfile(p) and not p.endswith(".fio"):
                    os.unlink(p)
            if err:
                print(f"{rel:34} error: {err}")
                continue
            fi = statistics.median(x[0] for x in res["fio"])
            oi = statistics.median(x[0] for x in res["iofleet"])
            fb = statistics.median(x[1] for x in res["fio"])
            ob = statistics.median(x[1] for x in res["iofleet"])

            def spread(v):
                v = [x[0] for x in v]
                m = statistics.median(v)
                return (max(v) - min(v)) / m * 100 if m else 0.0

            print(f"{rel:34} {fi:12.0f} {oi:13.0f} {oi / fi if fi else 0:10.3f} "
                  f"{fb / 2**20:10.1f} {ob / 2**20:13.1f} {ob / fb if fb else 0:8.3f}  "
                  f"{spread(res['fio']):.0f}%/{spread(res['iofleet']):.0f}%")
    return 0


if __name__ == "__main__":
    sys.exit(main())
